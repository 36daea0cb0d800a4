"""PriorityClasses for a group: one for its GPU workloads, one for its verification pods.

Neither is the cluster's global default. The verification pods must never evict work (a
re-run after a plugin upgrade on a full node would otherwise preempt running GPU pods), so
they run with `preemptionPolicy: Never`. A pod cannot simply say so under the group's class:
the API server's Priority admission plugin copies `preemptionPolicy` from the pod's
PriorityClass and refuses a pod that sets a different one ("the string value of
PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller
computed PreemptLowerPriority from the given PriorityClass name"). Hence a second class with
the same value, so the Jobs queue like the group's workloads, but `preemptionPolicy: Never`.
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.constants import VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.manifests.naming import claimed_labels, standard_labels


def priority_class_manifest(group: NodeGroupSpec, stack: str) -> dict[str, Any]:
    return _manifest(group, group.priority_class_name, "PreemptLowerPriority", f"GPU workloads of node group {group.name}", stack)


def verification_priority_class_name(group: NodeGroupSpec) -> str:
    return f"{group.priority_class_name}{VERIFICATION_PRIORITY_SUFFIX}"


def verification_priority_class_manifest(group: NodeGroupSpec, stack: str) -> dict[str, Any]:
    return _manifest(
        group,
        verification_priority_class_name(group),
        "Never",
        f"Verification Jobs of node group {group.name}: never preempt running pods",
        stack,
    )


def _manifest(group: NodeGroupSpec, name: str, preemption_policy: str, description: str, stack: str) -> dict[str, Any]:
    labels = {**standard_labels("gpu-priority", group.name, "scheduling"), **claimed_labels(stack)}
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": labels},
        "value": group.priority_class.value,
        "globalDefault": False,
        "preemptionPolicy": preemption_policy,
        "description": description,
    }
