"""Namespaces the node groups share, each with the Pod Security level its pods need."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.naming import ownership_labels
from components.specs import StackSpec

# The device plugin mounts hostPath volumes, which only `privileged` admits.
PRIVILEGED = "privileged"
# Verification pods run as non-root with every capability dropped: `restricted` admits that.
RESTRICTED = "restricted"


def namespace_manifest(name: str, pod_security_level: str) -> dict[str, Any]:
    labels = ownership_labels()
    for mode in ("enforce", "audit", "warn"):
        labels[f"pod-security.kubernetes.io/{mode}"] = pod_security_level
        labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def stack_namespaces(stack: StackSpec) -> dict[str, dict[str, Any]]:
    """Every namespace the stack needs, by name, in a stable order."""
    levels: dict[str, str] = {}
    for group in stack.node_groups:
        levels[group.device_plugin.namespace] = PRIVILEGED
        levels[group.verification.namespace] = RESTRICTED
    return {name: namespace_manifest(name, levels[name]) for name in sorted(levels)}


def declare_namespaces(stack: StackSpec, provider: k8s.Provider) -> dict[str, k8s.core.v1.Namespace]:
    """Register each namespace of `stack_namespaces` once, by name."""
    opts = pulumi.ResourceOptions(provider=provider)
    return {
        name: k8s.core.v1.Namespace(f"namespace-{name}", metadata=manifest["metadata"], opts=opts)
        for name, manifest in stack_namespaces(stack).items()
    }
