"""The PriorityClass for a group's GPU workloads (never the cluster's global default)."""

from __future__ import annotations

from typing import Any

from components.config import NodeGroupSpec
from components.naming import standard_labels


def priority_class_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    spec = group.priority_class
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": spec.name, "labels": standard_labels("gpu-priority", group.name, "scheduling")},
        "value": spec.value,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": f"GPU workloads of node group {group.name}",
    }
