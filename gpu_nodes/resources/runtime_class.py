"""The stack's RuntimeClass, created once after its claim (why it exists and what it holds:
gpu_nodes/manifests/runtime_class.py).
"""

from __future__ import annotations

import pulumi_kubernetes as k8s

from gpu_nodes.config.stack import CREATE_RUNTIME_CLASS, RUNTIME_CLASS, StackSpec
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests.runtime_class import runtime_class_manifest
from gpu_nodes.providers.claims import CREATE, Claim
from gpu_nodes.resources.child_names import runtime_class_child
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.registration import register_claimed


def declare_runtime_class(
    stack: StackSpec, children: Children, cluster: ClusterAccess, owner: str
) -> k8s.node.v1.RuntimeClass | None:
    """Register the stack's RuntimeClass once, when the stack creates it (after its claim)."""
    manifest = runtime_class_manifest(stack.runtime_class, owner)
    if manifest is None:
        return None
    name = manifest["metadata"]["name"]
    setting = f"Set {CREATE_RUNTIME_CLASS.key} false to name it as it is, or give {RUNTIME_CLASS.key} another name"
    claim = Claim("RuntimeClass", name, CREATE, owner, setting)
    return register_claimed(manifest, k8s.node.v1.RuntimeClass, children, runtime_class_child(name), claim, cluster)
