"""Our labels on a node, as a server-side apply patch (labels are a map, owned per key)."""

from __future__ import annotations

from typing import Any

from components.specs import NodeGroupSpec


def field_manager(group: NodeGroupSpec) -> str:
    """A stable, readable field manager: `kubectl get node -o yaml --show-managed-fields` names us."""
    return f"gpu-nodes-{group.name}"


def label_patch(group: NodeGroupSpec, node: str) -> dict[str, Any]:
    """NodePatch metadata: no `patchForce`, so a label someone else set to another value is an error."""
    return {
        "name": node,
        "labels": group.node_labels,
        "annotations": {"pulumi.com/patchFieldManager": field_manager(group)},
    }
