"""Our labels on a node, as a server-side apply patch (labels are a map, owned per key)."""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.preflight.facts import GpuFacts, annotation, feature_labels
from gpu_nodes.vocabulary import FACTS_ANNOTATION


def field_manager(group: NodeGroupSpec) -> str:
    """A stable, readable field manager: `kubectl get node -o yaml --show-managed-fields` names us."""
    return f"gpu-nodes-{group.name}"


def node_labels(group: NodeGroupSpec, facts: GpuFacts | None = None) -> dict[str, str]:
    """The group's labels and, from preflight's facts, GPU Feature Discovery's."""
    if facts is None or not group.gpu_feature_labels:
        return group.node_labels
    plugin = group.device_plugin
    return {**group.node_labels, **feature_labels(facts, plugin.mig_strategy, plugin.sharing.as_shared)}


def label_patch(group: NodeGroupSpec, node: str, facts: GpuFacts | None = None) -> dict[str, Any]:
    """NodePatch metadata: no `patchForce`, so a label someone else set to another value is an error.

    With preflight's facts, also our annotation of them, which the readiness checks of the
    group's other nodes compare with theirs."""
    annotations = {"pulumi.com/patchFieldManager": field_manager(group)}
    if facts is not None:
        annotations[FACTS_ANNOTATION] = annotation(facts)
    return {"name": node, "labels": node_labels(group, facts), "annotations": annotations}
