"""What a node of a group must show to carry GPU work, read off the objects the API server returns.

The checklist is a list of named items (`Item`): the five of the runbook's final checklist
(labelled, tainted, plugin Running, GPUs registered with the exact count, a GPU workload that
succeeded), the proof as NVIDIA and AI Conformance prove a node (a container given no GPU sees
none; DCGM's diagnostics, NCCL's bus bandwidth and the exporter's metrics where the group runs
them), and where the group's nodes are compared, their GPU facts. Each item says how it
judges one look at the node and how the readiness check treats it; the `checklist` output and the
node report's columns are read off the items. Also here: the readiness gate, the taint
`gpu-nodes.dev/unverified=true:NoSchedule` that keeps GPU work off a node until its checks pass.
Pure functions over dicts, so that the readiness check, the taints' refresh and the tests all
judge a node the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from gpu_nodes.proof.dra import dra_gpu_drift, dra_gpu_problem
from gpu_nodes.proof.mig_manager import mig_problem, paused_plugin
from gpu_nodes.proof.quarantine import quarantine_of
from gpu_nodes.proof.target import NodeTarget
from gpu_nodes.vocabulary import GATE, GFD_CLIQUE_LABEL, GPU_RESOURCE, GPU_RESOURCE_PREFIX, Taint

# What the `checklist` output says of each item, and the node report's table and the CTRF report read: the one
# type of a pass or a fail everywhere (the readiness check's next step is its own: gpu_nodes/proof/next_step.py).
ItemStatus = Literal["pass", "fail", "deferred"]
PASS: Final = "pass"
FAIL: Final = "fail"
# The workload check of a busy, open node, put off to the next run.
DEFERRED: Final = "deferred"


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


def plugin_name(target: NodeTarget) -> str:
    """What hands out the node's GPUs, as messages name it."""
    return "DRA driver's kubelet plugin" if target.uses_dra else "device plugin"


def plugin_problem(
    target: NodeTarget, pods: Sequence[Mapping[str, Any]], node: Mapping[str, Any] | None = None
) -> str | None:
    """Why the group's device plugin (or DRA kubelet plugin) is not Running on the node; None when one of its pods is.
    A node NVIDIA's MIG manager is reconfiguring says so (gpu_nodes/proof/mig_manager.py)."""
    mine = plugin_pods_on(target, pods)
    what = plugin_name(target)
    if not mine:
        paused = None if target.uses_dra else paused_plugin(node, what)
        return paused or f"no {what} pod on it (DaemonSet pods in {target.plugin_namespace} with {_selector(target)})"
    found = [pod_not_running(p) for p in mine]
    if any(problem is None for problem in found):
        return None
    return f"the {what} pod is not Running ({', '.join(p for p in found if p)})"


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
    return _whole((((node or {}).get("status") or {}).get("allocatable") or {}).get(resource))


def unhealthy_gpus(node: Mapping[str, Any] | None) -> int:
    """GPUs the device plugin registered but reports unhealthy, over its nvidia.com/* resources: the
    kubelet counts them in capacity and not in allocatable (kubernetes pkg/kubelet/cm/devicemanager/
    manager.go, GetCapacity). A resource not registered at all (a plugin still starting, or under MPS
    waiting for its daemon) holds none."""
    status = (node or {}).get("status") or {}
    capacity = status.get("capacity") or {}
    held = 0
    for resource in capacity:
        if resource.startswith(GPU_RESOURCE_PREFIX):
            registered = _whole(capacity.get(resource))
            healthy = allocatable_gpus(node, resource)
            if registered is not None and healthy is not None:
                held += max(registered - healthy, 0)
    return held


def _whole(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def gpu_problem(
    target: NodeTarget,
    node: Mapping[str, Any] | None,
    slices: Sequence[Mapping[str, Any]] = (),
    devices: Sequence[Mapping[str, Any]] | None = None,
) -> str | None:
    """Why the node does not offer the GPUs the group declares; None when it does. Under DRA, its
    ResourceSlices must list exactly the GPUs its preflight found (`devices`), or the group's count
    and model without preflight (gpu_nodes/proof/dra.py)."""
    if target.dra_gpus is not None:
        return dra_gpu_problem(target.node, target.dra_gpus, slices, devices)
    if target.expected_gpus is not None:
        return _count_problem(node, target.counted_resource, target.expected_gpus)
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


def clique_problem(node: Mapping[str, Any] | None, clique: str) -> str | None:
    """Why the node's `nvidia.com/gpu.clique` label does not name the NVLink domain the group declares; None when it
    does. gpu-nodes writes it from the machine's preflight (gpuFeatureLabels), GPU Feature Discovery where it runs."""
    labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    found = labels.get(GFD_CLIQUE_LABEL)
    if found is not None and str(found).lower() == clique.lower():
        return None
    seen = f"is {found}" if found is not None else "is not set"
    return (
        f"its {GFD_CLIQUE_LABEL} label {seen}, but the group's nvlinkDomain.clique is {clique}: a job across the domain's "
        "machines would not find this node in it"
    )


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


def degradation(
    target: NodeTarget,
    node: Mapping[str, Any] | None,
    plugin_pods: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]] = (),
    devices: Sequence[Mapping[str, Any]] | None = None,
    mig_marks: Mapping[str, str] | None = None,
) -> list[str]:
    """What went wrong with a node that passed its checks: the GPU health that drift covers (under
    DRA, a GPU gone from its ResourceSlices), someone else's quarantine of it (NVSentinel's,
    gpu_nodes/proof/quarantine.py), and NVIDIA's MIG manager at work on its GPUs, or done since
    `mig_marks`, its marks when the node was gated (gpu_nodes/proof/mig_manager.py)."""
    quarantine = quarantine_of(node)
    if target.dra_gpus is not None:
        gpus = dra_gpu_drift(target.node, target.dra_gpus, slices, devices)
    else:
        gpus = _one(gpu_problem(target, node))
    plugin = plugin_problem(target, plugin_pods, node)
    mig = mig_problem(mig_marks, node)
    # A plugin that stepped off for the MIG manager says so already.
    if mig and plugin and mig in plugin:
        mig = None
    found = [not_ready(node), plugin, *gpus, quarantine and str(quarantine), mig]
    return [problem for problem in found if problem]


@dataclass(frozen=True)
class Observation:
    """What one look at a node found, as its checklist's items judge it."""

    target: NodeTarget
    node: Mapping[str, Any] | None
    plugin_pods: Sequence[Mapping[str, Any]]
    # One line per verification Job of the node that has not succeeded.
    workload: Sequence[str] = ()
    # Why the node's GPU facts differ from its group's; None where they agree or were not compared.
    facts: str | None = None
    # Under DRA: the node's ResourceSlices, and the GPUs its preflight found (None without preflight).
    slices: Sequence[Mapping[str, Any]] = ()
    devices: Sequence[Mapping[str, Any]] | None = None
    # Why the proof items beyond the runbook's fail, one line each (gpu_nodes/proof/evidence.py): a container
    # given no GPU that sees one; DCGM's diagnostics; NCCL's bus bandwidth; the exporter's metrics.
    access: Sequence[str] = ()
    diagnostics: Sequence[str] = ()
    bandwidth: Sequence[str] = ()
    metrics: Sequence[str] = ()
    # On NVLink-domain machines: why its IMEX Job has not succeeded, and why its clique label is not the declared one.
    imex: Sequence[str] = ()
    clique: str | None = None


@dataclass(frozen=True)
class Item:
    """One item of the checklist: its key in the `checklist` output, its column in the node report
    (gpu_nodes/cli/node_table.py), why it fails on a look (no lines: it passes), and how the
    readiness check treats it."""

    key: str
    # None: not in the report.
    column: str | None
    problems: Callable[[Observation], list[str]]
    # A busy, open node may put it off to the next run, the rest of the runbook proven (`DEFERRED`).
    deferrable: bool = False
    # Failing it ends the wait: waiting will not make it pass.
    final: bool = False
    # Judged only where the group's nodes are compared.
    compares_group: bool = False
    # Judged only where the group runs it (its `Proof` says so): absent from the checklist elsewhere.
    optional: bool = False
    # Where the node report keeps what the item measured (`measured.<key>`); None: it measures nothing.
    measured: str | None = None


def _missing(found: list[str]) -> list[str]:
    return [f"missing {', '.join(found)}"] if found else []


def _one(problem: str | None) -> list[str]:
    return [problem] if problem else []


# On NVLink-domain machines the node's clique label too (`clique_problem`), which no busy node puts off.
LABELLED = Item("labelled", "LABEL", lambda look: [*_missing(missing_labels(look.target, look.node)), *_one(look.clique)])
TAINTED = Item("tainted", "TAINT", lambda look: _missing(missing_taints(look.target, look.node)))
PLUGIN_RUNNING = Item("pluginRunning", "PLUGIN", lambda look: _one(plugin_problem(look.target, look.plugin_pods, look.node)))
GPUS_REGISTERED = Item(
    "gpusRegistered", "GPUS-REGISTERED", lambda look: _one(gpu_problem(look.target, look.node, look.slices, look.devices))
)
WORKLOAD_SUCCEEDED = Item("workloadSucceeded", "GPU-WORKLOAD", lambda look: list(look.workload), deferrable=True)
# Not one of the runbook's five: only where the group's nodes are compared (docs/tenants.md, "GPU facts"). A node whose
# GPUs are not the group's will not pass by waiting.
GPU_FACTS_AGREE = Item("gpuFactsAgree", None, lambda look: _one(look.facts), final=True, compares_group=True)
# The proof as NVIDIA and AI Conformance prove a node (docs/what-it-creates.md, "The proof"): a container given no GPU
# sees none, in every group; DCGM's diagnostics, NCCL's all-reduce and the exporter's metrics where the group runs them.
# Those that hold the node's GPUs wait, as the workload does, on a busy open node.
SECURE_ACCESS = Item("secureAccess", "ACCESS", lambda look: list(look.access))
DIAGNOSTICS_PASSED = Item(
    "diagnosticsPassed", "DCGM", lambda look: list(look.diagnostics), deferrable=True, optional=True, measured="diagnostics"
)
BANDWIDTH_MET = Item(
    "bandwidthMet", "BUSBW", lambda look: list(look.bandwidth), deferrable=True, optional=True, measured="busBandwidth"
)
METRICS_EXPORTED = Item("metricsExported", "METRICS", lambda look: list(look.metrics), optional=True, measured="metrics")
# On NVLink-domain machines (docs/machines.md, "IMEX and NVLink domains"): a pod given an IMEX channel (the device
# plugin's, or a ComputeDomain's under DRA) finds it. Its Job holds a GPU under the device plugin: it waits, as the
# workload does, on a busy open node. (The node's clique label is `labelled`'s.)
IMEX_CHANNEL = Item("imexChannel", "IMEX", lambda look: list(look.imex), deferrable=True, optional=True)

# The runbook's final checklist, in its order.
RUNBOOK = (LABELLED, TAINTED, PLUGIN_RUNNING, GPUS_REGISTERED, WORKLOAD_SUCCEEDED)
# What a node is proven by beyond the runbook, in the report's order.
PROOF = (SECURE_ACCESS, DIAGNOSTICS_PASSED, BANDWIDTH_MET, METRICS_EXPORTED, IMEX_CHANNEL)
ITEMS = (*RUNBOOK, *PROOF, GPU_FACTS_AGREE)
ITEMS_BY_KEY = {item.key: item for item in ITEMS}
# The items every node's checklist has: the runbook's and secure access.
CHECKLIST_ITEMS = tuple(item.key for item in ITEMS if not item.optional and not item.compares_group)


def items_of(compares_group: bool, optional: Collection[Item] = ()) -> tuple[Item, ...]:
    """The items a node is judged by: those that compare its group only where the group's nodes are compared, the
    optional ones only where the group runs them (`optional`)."""
    return tuple(
        item for item in ITEMS if (compares_group or not item.compares_group) and (not item.optional or item in optional)
    )


def item_problems(look: Observation, items: Sequence[Item] = RUNBOOK) -> dict[Item, list[str]]:
    """Why each item fails on the look (no lines: it passes), in their order."""
    return {item: item.problems(look) for item in items}


def checklist(problems: Mapping[Item, Sequence[str]], deferred: bool = False) -> dict[str, str]:
    """Each item's key and `pass` or `fail`, from `item_problems`; `deferred` for the deferrable items when the
    node's workload check is put off."""
    return {item.key: DEFERRED if deferred and item.deferrable else FAIL if lines else PASS for item, lines in problems.items()}
