"""What a node of a group must show to carry GPU work, read off the objects the API server returns.

The five items of the runbook's final checklist (labelled, tainted, plugin Running, GPUs
registered with the exact count, a GPU workload that succeeded) and the readiness gate: the
taint `gpu-nodes.dev/unverified=true:NoSchedule` that keeps GPU work off a node until its
checks pass. Pure functions over dicts, so that the readiness check, the taints' refresh and
the tests all judge a node the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_nodes.proof.quarantine import quarantine_of
from gpu_nodes.proof.target import NodeTarget
from gpu_nodes.vocabulary import GATE, GPU_RESOURCE, GPU_RESOURCE_PREFIX, Taint

PASS, FAIL = "pass", "fail"
CHECKLIST_ITEMS = ("labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded")


def _taint_ids(taints: Sequence[Mapping[str, Any]]) -> set[Taint]:
    return {Taint.from_k8s(dict(t)) for t in taints}


def node_taints(node: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return list(((node or {}).get("spec") or {}).get("taints") or [])


def gated(node: Mapping[str, Any] | None) -> bool:
    return bool(_taint_ids([GATE.to_k8s()]) & _taint_ids(node_taints(node)))


def missing_labels(target: NodeTarget, node: Mapping[str, Any] | None) -> list[str]:
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    return [f"{key}={value}" for key, value in target.labels.items() if labels.get(key) != value]


def missing_taints(target: NodeTarget, node: Mapping[str, Any] | None) -> list[str]:
    present = _taint_ids(node_taints(node))
    return [str(taint) for taint in map(Taint.from_k8s, map(dict, target.taints)) if taint not in present]


def plugin_pods_on(target: NodeTarget, pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [p for p in pods if (p.get("spec") or {}).get("nodeName") == target.node]


def settled_plugin_pod(target: NodeTarget, pods: Sequence[Mapping[str, Any]], now: float, settle: float) -> str | None:
    """The plugin pod on the node that has been Ready for `settle` seconds (it has registered
    what it will register), or None."""
    for pod in plugin_pods_on(target, pods):
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") != "Ready" or condition.get("status") != "True":
                continue
            since = _timestamp(condition.get("lastTransitionTime"))
            if since is not None and now - since >= settle:
                return str(pod["metadata"]["name"])
    return None


def _timestamp(value: Any) -> float | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def plugin_problem(target: NodeTarget, pods: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the group's device plugin is not Running on the node; None when one of its pods is."""
    mine = plugin_pods_on(target, pods)
    if not mine:
        return f"no device plugin pod on it (DaemonSet pods in {target.plugin_namespace} with {_selector(target)})"
    found = [pod_not_running(p) for p in mine]
    if any(problem is None for problem in found):
        return None
    return f"the device plugin pod is not Running ({', '.join(p for p in found if p)})"


def pod_not_running(pod: Mapping[str, Any]) -> str | None:
    """Why a pod does not run its containers, `<pod> <why>`; None when it does.

    The phase alone does not say: a pod whose container keeps exiting stays `Running` (restartPolicy
    Always) while kubelet waits to restart it (state `waiting`, reason `CrashLoopBackOff`,
    kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go). So every container must be ready
    and running. Between two crashes a container runs and is ready for a moment (the plugin has no
    readiness probe); the GPUs it has not registered, and the verification, catch that moment."""
    name = (pod.get("metadata") or {}).get("name", "?")
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    if phase != "Running":
        return f"{name} {phase}"
    containers = status.get("containerStatuses") or []
    if not containers:
        return f"{name} Running, but no container status yet"
    waiting = [why for c in containers if (why := _container_not_running(c))]
    return f"{name}: {'; '.join(waiting)}" if waiting else None


def _container_not_running(container: Mapping[str, Any]) -> str | None:
    state = container.get("state") or {}
    if container.get("ready") is True and "running" in state:
        return None
    what = next(iter(state), "unknown")
    reason = (state.get(what) or {}).get("reason") or what
    why = f"{container.get('name', '?')} {reason}" if reason != "running" else f"{container.get('name', '?')} not ready"
    restarts = int(container.get("restartCount") or 0)
    if restarts:
        why += f" after {restarts} restarts"
    last = (container.get("lastState") or {}).get("terminated")
    if last:
        why += f", last exit {last.get('exitCode')} ({last.get('reason') or 'no reason'})"
    return why


def _selector(target: NodeTarget) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(target.plugin_selector.items()))


def allocatable_gpus(node: Mapping[str, Any] | None, resource: str = GPU_RESOURCE) -> int | None:
    value = (((node or {}).get("status") or {}).get("allocatable") or {}).get(resource)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def gpu_problem(target: NodeTarget, node: Mapping[str, Any] | None) -> str | None:
    """Why the node does not offer the GPUs the group declares; None when it does."""
    if target.expected_gpus is not None:
        return _count_problem(node, GPU_RESOURCE, target.expected_gpus)
    if target.expected_mig_devices:
        found = [_count_problem(node, r, n) for r, n in sorted(target.expected_mig_devices.items())]
        return "; ".join(p for p in found if p) or None
    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    offered = [k for k in allocatable if k.startswith(GPU_RESOURCE_PREFIX) and (allocatable_gpus(node, k) or 0) > 0]
    if offered:
        return None
    return "no nvidia.com/* GPU resource is allocatable (MIG without devicePlugin.migDevices: the count is not checked)"


def _count_problem(node: Mapping[str, Any] | None, resource: str, expected: int) -> str | None:
    seen = allocatable_gpus(node, resource)
    if seen == expected:
        return None
    found = "is not set (no GPU registered)" if seen is None else f"is {seen}"
    return f'status.allocatable["{resource}"] {found}, expected {expected}'


def not_ready(node: Mapping[str, Any] | None) -> str | None:
    """The node's Ready condition when it is not True; None when Ready (or not a node at all)."""
    if node is None:
        return "the node does not exist"
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            if condition.get("status") == "True":
                return None
            return f"NotReady ({condition.get('reason') or condition.get('status')})"
    return "NotReady (no Ready condition)"


def degradation(target: NodeTarget, node: Mapping[str, Any] | None, plugin_pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """What went wrong with a node that passed its checks: the GPU health that drift covers, and
    someone else's quarantine of it (NVSentinel's, gpu_nodes/proof/quarantine.py)."""
    quarantine = quarantine_of(node)
    found = [not_ready(node), plugin_problem(target, plugin_pods), gpu_problem(target, node), quarantine and str(quarantine)]
    return [problem for problem in found if problem]


def item_problems(
    target: NodeTarget,
    node: Mapping[str, Any] | None,
    plugin_pods: Sequence[Mapping[str, Any]],
    workload_problem: str | None,
) -> dict[str, str | None]:
    """Why each of the runbook's five final checks fails (None: it passes), in its order."""
    labels, taints = missing_labels(target, node), missing_taints(target, node)
    return {
        "labelled": f"missing {', '.join(labels)}" if labels else None,
        "tainted": f"missing {', '.join(taints)}" if taints else None,
        "pluginRunning": plugin_problem(target, plugin_pods),
        "gpusRegistered": gpu_problem(target, node),
        "workloadSucceeded": workload_problem,
    }


def checklist(problems: Mapping[str, str | None]) -> dict[str, str]:
    """Each check `pass` or `fail`, from `item_problems`."""
    return {item: FAIL if problems[item] else PASS for item in CHECKLIST_ITEMS}
