"""The RuntimeClass the device plugin and verification pods run under (one per stack).

`nvidia-ctk runtime configure` without `--set-as-default` (NVIDIA's own instructions) adds a
runtime `nvidia` but leaves runc the default: a pod then gets the NVIDIA hook only when it
names a RuntimeClass whose handler is `nvidia`. Without it the plugin runs under runc, cannot
load NVML and exits, and the Jobs find no `nvidia-smi`. So, as the GPU Operator does, the stack
creates `nvidia` (handler `nvidia`) and every GPU pod of ours names it.

No `scheduling`: the GPU Operator's class has only a handler, and so does ours. The class is
cluster-wide and other teams' pods may name it on GPU nodes we do not manage; a nodeSelector
would bind them to our nodes (and to labels each group may configure differently). Our own
pods already select their group's nodes. No `overhead` either: the hook adds no pod overhead.
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.stack import RuntimeClassSpec
from gpu_nodes.constants import RUNTIME_HANDLER
from gpu_nodes.manifests.naming import claimed_labels


def runtime_class_manifest(spec: RuntimeClassSpec | None, stack: str) -> dict[str, Any] | None:
    """The class to create, or None when it is off or someone else's."""
    if spec is None or not spec.create:
        return None
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": spec.name, "labels": claimed_labels(stack)},
        "handler": RUNTIME_HANDLER,
    }
