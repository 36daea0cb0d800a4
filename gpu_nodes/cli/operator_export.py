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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from gpu_nodes.cli.fleet_file import CONFIG_KEY, Fleet, load_yaml, refuse_unless_mapping
from gpu_nodes.cli.plan import FleetPlan, StackPlan
from gpu_nodes.config.checks import is_dns_label, is_dns_subdomain, is_env_var_name, is_label_value, is_secret_key
from gpu_nodes.config.fields import Check, Parse, at_least, section, setting
from gpu_nodes.config.problems import MISSING, Problems
from gpu_nodes.config.reading import Fields, read_section
from gpu_nodes.config.stack import KUBE_CONTEXT, KUBECONFIG
from gpu_nodes.errors import FleetError
from gpu_nodes.vocabulary import WORKSPACE_LABEL


@dataclass(frozen=True)
class SecretRef:
    """A key of a Kubernetes Secret in the operator's namespace: where a workspace pod reads a value."""

    secret: str
    key: str


def _refs(name_ok: Callable[[str], Any], name_allowed: str) -> Parse[dict[str, SecretRef]]:
    """Reads `NAME: {secret: SECRET, key: KEY}` per entry, each name and reference as Kubernetes takes them."""

    def read(problems: Problems, key: str, raw: dict[Any, Any] | None) -> dict[str, SecretRef]:
        refs = {}
        for name, where in (raw or {}).items():
            at = f"{key}.{name}"
            if not isinstance(name, str) or not name_ok(name):
                problems.add(at, where, name_allowed)
                continue
            fields = Fields(problems, at, where, ("secret", "key"))
            secret = fields.text("secret", MISSING, is_dns_subdomain, "expected a Secret's name")
            ref_key = fields.text("key", MISSING, is_secret_key, "expected a key of the Secret's data")
            if secret is not None and ref_key is not None:
                refs[name] = SecretRef(secret, ref_key)
        return refs

    return read


@section
class OperatorSettings:
    """`--operator-settings`, declared as stack config is (docs/fleet.md, "Past one machine")."""

    repository: str = setting(
        "repository",
        "the program's git repository, as the workspace pods clone it",
        check=Check(bool, "expected a git URL"),
    )
    backend: str = setting(
        "backend",
        "the state backend, reachable from the workspace pods",
        check=Check(
            lambda url: not url.startswith("file:"),
            "expected a backend the pods reach (s3://, azblob://, gs://, https://); a local file backend stays on this machine",
        ),
    )
    branch: str = setting(
        "branch", "the branch the pods check out", default="main", check=Check(bool, "expected a branch name")
    )
    repo_dir: str = setting(
        "repoDir",
        "the program's directory in the repository",
        default=".",
        check=Check(lambda path: bool(path) and not path.startswith("/"), "expected a relative path"),
    )
    namespace: str = setting(
        "namespace",
        "where the Stacks and their workspace pods live",
        default="gpu-nodes-fleet",
        check=Check(is_dns_label, "expected a namespace name (DNS-1123 label: lowercase letters, digits, -)"),
    )
    service_account: str = setting(
        "serviceAccount",
        "the workspace pods' ServiceAccount",
        default="gpu-nodes-fleet",
        check=Check(is_dns_subdomain, "expected a ServiceAccount name (DNS-1123 subdomain)"),
    )
    # The operator's Stack CRD (v2.9.0, tests/e2e/fixtures/pulumi.com_stacks.yaml): "The minimum
    # value is 60 seconds; values below 60 (including 0) are treated as 60."
    resync_frequency_seconds: int = setting(
        "resyncFrequencySeconds",
        "how often each stack is run again (which repairs drift)",
        default=600,
        check=at_least(60, "expected 60 or more (the operator runs no more often)"),
    )
    env: dict[str, SecretRef] = setting(
        "env",
        "environment variables of the workspace pods, each from a Secret: `NAME: {secret, key}`",
        default=None,
        default_text="none",
        written=Mapping[str, Mapping[str, str]],
        parse=_refs(is_env_var_name, "expected an environment variable's name"),
    )
    secrets: dict[str, SecretRef] = setting(
        "secrets",
        "each secret stack setting from a Secret: `gpu-nodes:sshPrivateKey: {secret, key}`",
        default=None,
        default_text="each of the fleet file's secrets from `gpu-nodes-<name>`, key `value`",
        written=Mapping[str, Mapping[str, str]],
        parse=_refs(CONFIG_KEY.fullmatch, "expected a stack setting, <namespace>:<name>"),
    )


_WHAT = "operator settings"
# What the workspace pod reads from the operator's side only: the cluster is its own.
LOCAL_ONLY = (KUBECONFIG.key, KUBE_CONTEXT.key)
# Memory per workspace pod: docs/operations.md, "Large fleets", measured the CLI, program and providers at
# about 4.5 GB for 1000 nodes; a stack of up to 100 nodes stays well under 2 GiB.
WORKSPACE_MEMORY = "2Gi"
# What the program does in the cluster (docs/what-it-creates.md).
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


def read_settings(path: Path | None, fleet: Fleet) -> OperatorSettings:
    """The settings, checked whole; each secret of the fleet without a Secret named gets its default one."""
    raw = load_yaml(path, _WHAT) if path is not None else None
    raw = {} if raw is None else raw  # an empty file: every default
    refuse_unless_mapping(path or _WHAT, raw, OperatorSettings, _WHAT)
    problems = Problems()
    built = read_section(problems, "", raw, OperatorSettings)
    for name in fleet.stacks:
        # Each becomes a Stack object's name and its workspace pods' label value.
        if not (is_dns_subdomain(name) and is_label_value(name)):
            problems.problems.append(
                f"stacks: got stack name {name!r}; the operator's Stack takes a DNS-1123 subdomain of at most 63 "
                "characters (lowercase letters, digits, - and .)"
            )
    if problems or built is None:
        raise FleetError(path or _WHAT, problems.problems, _WHAT)
    defaults = {s.key: SecretRef(secret_name(s.key), "value") for s in fleet.secrets}
    return replace(built, secrets=defaults | built.secrets)


def secret_name(key: str) -> str:
    """The Secret a secret setting is read from by default: `gpu-nodes-sshprivatekey` for gpu-nodes:sshPrivateKey."""
    name = re.sub(r"[^a-z0-9-]+", "-", key.split(":", 1)[1].lower()).strip("-")
    return f"gpu-nodes-{name}"


def _ref(source: SecretRef) -> dict[str, Any]:
    return {"type": "Secret", "secret": {"name": source.secret, "key": source.key}}


def stack_object(stack: StackPlan, owner: str, settings: OperatorSettings) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "stack": stack.name,
        "projectRepo": settings.repository,
        "branch": settings.branch,
        "repoDir": settings.repo_dir,
        "backend": settings.backend,
        "config": {k: v for k, v in stack.config.items() if k not in LOCAL_ONLY},
        "secretsRef": {key: _ref(source) for key, source in sorted(settings.secrets.items())},
        "envRefs": {name: _ref(source) for name, source in sorted(settings.env.items())},
        "serviceAccountName": settings.service_account,
        # Keep reconciling: re-run the stack every resyncFrequencySeconds, which repairs drift.
        "resyncFrequencySeconds": settings.resync_frequency_seconds,
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
        "metadata": {"name": stack.name, "namespace": settings.namespace},
        "spec": spec,
    }


def operator_objects(plan: FleetPlan, settings: OperatorSettings) -> list[dict[str, Any]]:
    namespace, account = settings.namespace, settings.service_account
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
