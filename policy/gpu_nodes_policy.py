"""The device plugin must tolerate every taint its node group puts on its nodes.

A group's nodes carry the group's taints; a plugin DaemonSet that does not tolerate one of
them never lands there, so the GPUs are never registered and every GPU workload waits
until its deadline. The rule reads the stack as the engine plans it: for each node group
(a `GpuNodeGroup` component), the taints of its taint resources against the tolerations of
its device plugin DaemonSet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
# The type of `gpu_nodes.providers.taints.NodeTaints` (its class names it).
TAINTS = "pulumi-python:dynamic/gpu-nodes:NodeTaints"
PLUGIN_NAME = "nvidia-device-plugin"


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' own rule (k8s.io/api core/v1 Toleration.ToleratesTaint)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration["key"] != taint.get("key"):
        return False
    return operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(tolerations: Iterable[Mapping[str, Any]], taints: Iterable[Mapping[str, Any]]) -> list[str]:
    """The taints no toleration covers, as `key=value:Effect`."""
    tolerations = list(tolerations)
    return [
        f"{t['key']}={t.get('value') or ''}:{t['effect']}"
        for t in taints
        if not any(tolerates(toleration, t) for toleration in tolerations)
    ]


def _is_device_plugin(resource: Any) -> bool:
    labels = ((resource.props.get("metadata") or {}).get("labels")) or {}
    return resource.resource_type == DAEMONSET and labels.get("app.kubernetes.io/name") == PLUGIN_NAME


def _is_taints(resource: Any) -> bool:
    return bool(resource.resource_type == TAINTS)


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    plugins: dict[str, list[Any]] = defaultdict(list)
    taints: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for resource in args.resources:
        group = resource.parent.urn if resource.parent is not None else ""
        if _is_device_plugin(resource):
            plugins[group].append(resource)
        elif _is_taints(resource):
            # The readiness gate is a taint the group sets too, until the node is proven.
            # (The readiness check's own `gate` output is its state, "up" or "lifted".)
            gate = [resource.props["gate"]] if isinstance(resource.props.get("gate"), Mapping) else []
            taints[group].extend([*(resource.props.get("taints") or []), *gate])
    for group, daemonsets in plugins.items():
        for daemonset in daemonsets:
            pod = ((daemonset.props.get("spec") or {}).get("template") or {}).get("spec") or {}
            missing = untolerated(pod.get("tolerations") or [], taints[group])
            if missing:
                report_violation(
                    f"{daemonset.name} does not tolerate {', '.join(sorted(set(missing)))}, which its group's "
                    "nodes carry: the plugin would never land there",
                    daemonset.urn,
                )


plugin_tolerates_group_taints = StackValidationPolicy(
    name="device-plugin-tolerates-group-taints",
    description="Each node group's device plugin DaemonSet tolerates every taint the group puts on its nodes.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=validate,
)
