"""`gpu-nodes fleet export --operator`: the same fleet as the Pulumi Kubernetes Operator's objects.

One `Stack` (pulumi.com/v1, CRDs of operator v2.9.0) per stack, each run in its own workspace
pod on the cluster and reconciled every `resyncFrequencySeconds`: the owner is the others'
`prerequisites`; the derived config inline (`config`), each secret from a Kubernetes Secret
(`secretsRef`, the SSH key among them), the backend's credentials from Secrets (`envRefs`).
The workspace pods reach the API server with their service account (no kubeconfig: the
program's client falls back to the in-cluster account, gpu_nodes/kube/client.py) and the
machines over SSH from the pod network. Nothing secret is written: the Secrets are named only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from gpu_nodes.cli.fleet_file import Fleet
from gpu_nodes.cli.plan import FleetPlan, StackPlan
from gpu_nodes.config.stack import KUBE_CONTEXT, KUBECONFIG
from gpu_nodes.errors import FleetError
from gpu_nodes.vocabulary import WORKSPACE_LABEL

SETTINGS = (
    "namespace",
    "repository",
    "branch",
    "repoDir",
    "backend",
    "env",
    "secrets",
    "resyncFrequencySeconds",
    "serviceAccount",
)

DEFAULTS: dict[str, Any] = {
    "namespace": "gpu-nodes-fleet",
    "branch": "main",
    "repoDir": ".",
    "resyncFrequencySeconds": 600,
    "serviceAccount": "gpu-nodes-fleet",
    "env": {},
    "secrets": {},
}
# What the workspace pod reads from the operator's side only: the cluster is its own.
LOCAL_ONLY = (KUBECONFIG.key, KUBE_CONTEXT.key)
# Memory per workspace pod: README "Large fleets" measured the CLI, program and providers at
# about 4.5 GB for 1000 nodes; a stack of up to 100 nodes stays well under 2 GiB.
WORKSPACE_MEMORY = "2Gi"
# What the program does in the cluster (README, "What the program creates").
RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
    {"apiGroups": [""], "resources": ["namespaces", "configmaps", "secrets", "serviceaccounts"], "verbs": ["*"]},
    {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["*"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["*"]},
    {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ["*"]},
    {"apiGroups": ["nvidia.com"], "resources": ["clusterpolicies"], "verbs": ["get", "list"]},
]


def read_settings(path: Path | None, fleet: Fleet) -> dict[str, Any]:
    raw = yaml.safe_load(path.read_text()) if path is not None else {}
    raw = raw or {}
    problems = [f"{key}: unknown key; allowed: {', '.join(SETTINGS)}" for key in raw if key not in SETTINGS]
    settings = {**DEFAULTS, **raw}
    for key in ("repository", "backend"):
        if not isinstance(settings.get(key), str):
            problems.append(
                f"{key}: got {settings.get(key)!r}; required: where the workspace pods fetch the program / keep the state"
            )
    for key in (s.key for s in fleet.secrets):
        if key not in settings["secrets"]:
            settings["secrets"][key] = {"secret": secret_name(key), "key": "value"}
    if problems:
        raise FleetError(path or "operator settings", problems)
    return settings


def secret_name(key: str) -> str:
    """The Secret a secret setting is read from by default: `gpu-nodes-sshprivatekey` for gpu-nodes:sshPrivateKey."""
    name = re.sub(r"[^a-z0-9-]+", "-", key.split(":", 1)[1].lower()).strip("-")
    return f"gpu-nodes-{name}"


def _ref(source: dict[str, str]) -> dict[str, Any]:
    return {"type": "Secret", "secret": {"name": source["secret"], "key": source["key"]}}


def stack_object(stack: StackPlan, owner: str, settings: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "stack": stack.name,
        "projectRepo": settings["repository"],
        "branch": settings["branch"],
        "repoDir": settings["repoDir"],
        "backend": settings["backend"],
        "config": {k: v for k, v in stack.config.items() if k not in LOCAL_ONLY},
        "secretsRef": {key: _ref(source) for key, source in sorted(settings["secrets"].items())},
        "envRefs": {name: _ref(source) for name, source in sorted(settings["env"].items())},
        "serviceAccountName": settings["serviceAccount"],
        # Keep reconciling: re-run the stack every resyncFrequencySeconds, which repairs drift.
        "resyncFrequencySeconds": settings["resyncFrequencySeconds"],
        "continueResyncOnCommitMatch": True,
        "refresh": True,
        "workspaceTemplate": {
            "metadata": {"labels": {WORKSPACE_LABEL: stack.name}},
            "spec": {
                "resources": {"requests": {"memory": WORKSPACE_MEMORY}, "limits": {"memory": WORKSPACE_MEMORY}},
                "podTemplate": {"metadata": {"labels": {WORKSPACE_LABEL: stack.name}}},
            },
        },
    }
    if stack.name != owner:
        spec["prerequisites"] = [{"name": owner}]
    return {
        "apiVersion": "pulumi.com/v1",
        "kind": "Stack",
        "metadata": {"name": stack.name, "namespace": settings["namespace"]},
        "spec": spec,
    }


def operator_objects(plan: FleetPlan, settings: dict[str, Any]) -> list[dict[str, Any]]:
    namespace, account = settings["namespace"], settings["serviceAccount"]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": account}, "rules": RULES}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": account},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    # Where default-deny egress is the rule: the workspace pods still reach the machines' sshd.
    ssh_egress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "gpu-nodes-fleet-ssh", "namespace": namespace},
        "spec": {
            "podSelector": {"matchExpressions": [{"key": WORKSPACE_LABEL, "operator": "Exists"}]},
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"protocol": "TCP", "port": 22}]}],
        },
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
        role,
        binding,
        ssh_egress,
        *(stack_object(stack, plan.owner.name, settings) for stack in plan.stacks),
    ]


def export_operator(fleet: Fleet, plan: FleetPlan, out: Path | None, settings_path: Path | None) -> int:
    objects = operator_objects(plan, read_settings(settings_path, fleet))
    text = f"# The Pulumi Kubernetes Operator's objects for {fleet.path}, written by `gpu-nodes fleet export --operator`.\n"
    text += yaml.safe_dump_all(objects, sort_keys=True)
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
    return 0
