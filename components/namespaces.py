"""Namespaces the node groups share, each with the Pod Security level its pods need.

Each is created by the stack (after a claim finds it absent, or already this stack's), or, when
listed in `gpu-nodes:existingNamespaces`, referenced: then the stack never creates or deletes it
(components/claims.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.claims import CREATE, REFERENCE, STACK_LABEL, Claim, ObjectClaim
from components.kube_client import ClusterAccess
from components.naming import ownership_labels
from components.specs import EXISTING_NAMESPACES, StackSpec

# The device plugin mounts hostPath volumes, which only `privileged` admits.
PRIVILEGED = "privileged"
# Verification pods run as non-root with every capability dropped: `restricted` admits that.
RESTRICTED = "restricted"


@dataclass(frozen=True)
class SharedNamespace:
    """A namespace the groups put objects in: the Namespace the stack created, or the claim
    that found someone else's (then nothing of ours is deleted with it)."""

    name: str
    resource: pulumi.Resource
    owned: bool

    @property
    def deleted_with(self) -> pulumi.Resource | None:
        """What our objects in it go with on destroy: the namespace, when it is ours to delete."""
        return self.resource if self.owned else None


def namespace_manifest(name: str, pod_security_level: str, stack: str) -> dict[str, Any]:
    labels = {**ownership_labels(), STACK_LABEL: stack}
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = pod_security_level
        labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def namespace_levels(stack: StackSpec) -> dict[str, str]:
    """Every namespace the stack needs, by name in a stable order, with its Pod Security level."""
    levels: dict[str, str] = {}
    for group in stack.node_groups:
        levels[group.device_plugin.namespace] = PRIVILEGED
        levels[group.verification.namespace] = RESTRICTED
    return dict(sorted(levels.items()))


def namespace_claim(name: str, level: str, stack: StackSpec, owner: str) -> Claim:
    if name in stack.existing_namespaces:
        return Claim("Namespace", name, REFERENCE, owner, EXISTING_NAMESPACES.key, PRIVILEGED if level == PRIVILEGED else None)
    setting = (
        "Give the groups another namespace (devicePlugin.namespace, verification.namespace), "
        f"or list it in {EXISTING_NAMESPACES.key} to use it as it is"
    )
    return Claim("Namespace", name, CREATE, owner, setting)


def declare_namespaces(
    stack: StackSpec, provider: k8s.Provider, cluster: ClusterAccess, owner: str
) -> dict[str, SharedNamespace]:
    """Claim each namespace of `namespace_levels` once, and create those that are ours to create."""
    namespaces: dict[str, SharedNamespace] = {}
    for name, level in namespace_levels(stack).items():
        claim = namespace_claim(name, level, stack, owner)
        checked = ObjectClaim(f"namespace-{name}-claim", claim, cluster)
        if claim.mode == REFERENCE:
            namespaces[name] = SharedNamespace(name, checked, owned=False)
            continue
        metadata = namespace_manifest(name, level, owner)["metadata"]
        created = k8s.core.v1.Namespace(
            f"namespace-{name}", metadata=metadata, opts=pulumi.ResourceOptions(provider=provider, depends_on=[checked])
        )
        namespaces[name] = SharedNamespace(name, created, owned=True)
    return namespaces
