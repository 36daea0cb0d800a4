"""The namespaces the node groups share, each with the Pod Security level its pods need, and the
stack's pull Secret in each."""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.stack import StackSpec
from gpu_nodes.constants import PULL_SECRET_NAME
from gpu_nodes.manifests.naming import claimed_labels
from gpu_nodes.vocabulary import POD_SECURITY_PREFIX

# The device plugin mounts hostPath volumes, which only `privileged` admits.
PRIVILEGED = "privileged"
# Verification pods run as non-root with every capability dropped: `restricted` admits that.
RESTRICTED = "restricted"


def namespace_manifest(name: str, pod_security_level: str, stack: str) -> dict[str, Any]:
    labels = claimed_labels(stack)
    for mode in ("enforce", "audit", "warn"):
        labels[f"{POD_SECURITY_PREFIX}{mode}"] = pod_security_level
        labels[f"{POD_SECURITY_PREFIX}{mode}-version"] = "latest"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def namespace_levels(stack: StackSpec) -> dict[str, str]:
    """Every namespace the stack needs, by name in a stable order, with its Pod Security level."""
    levels: dict[str, str] = {}
    for group in stack.node_groups:
        levels[group.device_plugin.namespace] = PRIVILEGED
        levels[group.verification.namespace] = RESTRICTED
    return dict(sorted(levels.items()))


def pull_secret_manifest(namespace: str, stack: str, login: object) -> dict[str, Any]:
    """The stack's pull Secret in `namespace`; `login` is the .dockerconfigjson (the caller passes
    it as a secret, which the manifest carries as it is)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PULL_SECRET_NAME, "namespace": namespace, "labels": claimed_labels(stack)},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": login},
    }
