"""The readiness check of one node: wait until it is proven, then lift its gate.

A node comes in gated (`node_health.GATE`, put on with our taints, before our labels let
the device plugin land). This resource waits, on the process's shared watches
(`cluster_view.ClusterView`), until the runbook's checklist passes on the node: our labels
and taints, the device plugin Running, exactly the GPUs the group declares, and every
verification Job of the node succeeded. Then it lifts the gate. A node that does not pass
stays gated (or, open from an earlier run, is gated again) and `pulumi up` fails naming it and
each failed item; a failed Job is deleted,
so that `pulumi up --refresh` runs it again once the cause is fixed.

A node short of GPUs under a settled plugin pod has, most likely, a GPU the plugin marked
unhealthy (an XID): the plugin keeps it out until its pod restarts (k8s-device-plugin v0.20.0
`internal/rm/health.go` sends it on the health channel, `internal/plugin/server.go`
`ListAndWatch` re-sends the device list with it Unhealthy and never marks it back), and a new pod
advertises every GPU healthy without checking any (k8s-device-plugin issue 111). So a restart
alone never reopens a node: the check restarts the pod (once) only when the machine's preflight
ran since the node's last proof and passed, which it does only when every GPU is there and
healthy (`gpu-health`: recovery action, reset status, row remaps, fabric health). Otherwise the
node keeps its gate and the failure names the preflight to run again. The preflight's run is an
input (`preflightRun`, pulumi-command's id of the command, new each time it runs), so a fresh
preflight proves the node again and is recorded as the one its proof saw. Without preflight
nothing can check the GPU, and the pod is never restarted.

`read` judges the node again, so `pulumi refresh` shows a checklist item that fails since
the last run. (The taints resource, upstream of the Jobs, gates the node again for
`pulumi up --refresh`; see gpu_nodes/providers/taints.py.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.constants import GPU_RESOURCE_PREFIX
from gpu_nodes.errors import GpuNodesError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props, cluster_view_from_props
from gpu_nodes.kube.cluster_view import JOB_NAME_LABEL
from gpu_nodes.kube.job_status import (
    Deleter,
    KubernetesDeleter,
    KubernetesNodePods,
    NodePods,
    RecentNodePods,
    gpu_requests,
    held_by_others,
    job_verdict,
    pod_story,
    waits_for_gpus,
)
from gpu_nodes.kube.node_health import (
    FAIL,
    GATE,
    PASS,
    NodeTarget,
    allocatable_gpus,
    checklist,
    gated,
    item_problems,
    not_ready,
    settled_plugin_pod,
    target_props,
)
from gpu_nodes.preflight.facts import disagreement, node_facts
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider
from gpu_nodes.providers.recovery import restart_refused
from gpu_nodes.providers.taints import KubernetesNodeTaintApi, NodeTaintApi, apply_taints

T = TypeVar("T")

# Not one of the runbook's five: only where the group's nodes are compared (README, "GPU facts").
FACTS_ITEM = "gpuFactsAgree"

# The workload check of a busy, open node, put off to the next run (a checklist value).
DEFERRED = "deferred"

# How long a plugin pod is Ready before its count is what it registers (it registers at start).
PLUGIN_SETTLE_SECONDS = 10.0

# How old a list of a node's pods may be when a waiting Job asks who holds its GPUs.
NODE_PODS_MAX_AGE = 5.0

# The Job's own activeDeadlineSeconds fires first; this grace lets us read its verdict.
GRACE_SECONDS = 30
# The state still says the gate is lifted: only a refresh reads that it is up again.
REGATED_HINT = "It takes no new GPU work until it passes: fix the cause, then run `pulumi up --refresh`."
RERUN_HINT = "Failed Jobs were deleted so that they run again: fix the cause, then run `pulumi up --refresh`."


class NodeNotReadyError(GpuNodesError):
    """A node failed its proof and stays gated; the message lists what failed."""


class ClusterReader(Protocol):
    """What the check reads (`cluster_view.ClusterView`, or a fake in tests)."""

    def node(self, name: str) -> dict[str, Any] | None: ...

    def pods(self, namespace: str, labels: dict[str, str], node: str | None = None) -> list[dict[str, Any]]: ...

    def job(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def nodes_labelled(self, labels: Mapping[str, str]) -> list[dict[str, Any]]: ...

    def wait_for(self, check: Callable[[], T], done: Callable[[T], bool], timeout: float) -> T: ...


@dataclass
class Judgement:
    """One look at the node: its checklist and, for each item that fails, why."""

    checklist: dict[str, str]
    # (checklist item, or None for the node's readiness; why it fails)
    problems: list[tuple[str | None, str]]
    failed_jobs: list[str]
    unfinished_jobs: list[str]
    gate_up: bool
    # The node's settled plugin pod when the node is short of GPUs and otherwise sound: a
    # restart of that pod is what brings back a GPU the plugin marked unhealthy.
    short_plugin: str | None = None
    # Jobs of an open, busy node whose run waits for the next `pulumi up` (see `judge`).
    deferred_jobs: list[str] = field(default_factory=list)
    # Unfinished Jobs whose pods all wait for GPUs: nothing more to learn from them on a short node.
    starved_jobs: list[str] = field(default_factory=list)

    @property
    def jobs_done(self) -> bool:
        return set(self.unfinished_jobs) <= set(self.starved_jobs)

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def final(self) -> bool:
        """Nothing more to wait for: passed, a Job failed, or the GPUs are not the group's (neither passes on its own)."""
        return self.passed or bool(self.failed_jobs) or any(item == FACTS_ITEM for item, _ in self.problems)


@dataclass
class Stories:
    """The last story seen of each Job's pods: the Job controller deletes them at its deadline."""

    by_job: dict[str, str] = field(default_factory=dict)


def facts_problem(view: ClusterReader, node: str, group: Mapping[str, str]) -> str | None:
    """Whether the node's GPUs (our annotation, from its preflight) match those of the nodes
    labelled as its group, read at the time: adding or removing a node changes no other
    node's inputs, so no other node is proven again for it."""
    return disagreement(node, {n["metadata"]["name"]: node_facts(n) for n in view.nodes_labelled(group)})


def judge(
    view: ClusterReader,
    target: NodeTarget,
    namespace: str,
    jobs: Sequence[str],
    stories: Stories,
    group: Mapping[str, str] | None = None,
    compare: bool = True,
    deferred_before: bool = False,
    node_pods: NodePods | None = None,
) -> Judgement:
    """One look at the node. With `group` (its group's label), its GPU facts are compared with those nodes' too,
    unless `compare` is off: the comparison reads every node of the group, so a wait compares
    before it starts and once more when the rest passes, not on every event. `node_pods` tells
    whose pods hold the node's GPUs; without it no Job is deferred."""
    node = view.node(target.node)
    plugin_pods = view.pods(target.plugin_namespace, dict(target.plugin_selector), node=target.node)
    failed: list[str] = []
    unfinished: list[str] = []
    workload: list[str] = []
    waiting: dict[str, list[dict[str, Any]]] = {}  # Jobs Pending only for want of free GPUs, and their pods
    for name in jobs:
        job = view.job(namespace, name)
        if job is None:
            # Deleted when the last run deferred it: still unproven, not failed (a refresh makes it anew).
            if deferred_before:
                waiting[name] = []
            unfinished.append(name)
            workload.append(f"verification Job {namespace}/{name} does not exist (deleted after a failed run?)")
            continue
        verdict, detail = job_verdict(job)
        if verdict == "succeeded":
            continue
        pods = view.pods(namespace, {JOB_NAME_LABEL: name})
        if verdict == "running" and pods and all(waits_for_gpus(p) for p in pods):
            waiting[name] = pods
        story = "; ".join(s for s in (pod_story(p) for p in pods) if s)
        stories.by_job[name] = story or stories.by_job.get(name, "")
        (failed if verdict == "failed" else unfinished).append(name)
        what = f"failed ({detail})" if verdict == "failed" else f"has not succeeded ({detail})"
        workload.append(f"verification Job {namespace}/{name} {what}; {stories.by_job[name] or 'no pod story'}")
    items = item_problems(target, node, plugin_pods, "; ".join(workload) or None)
    # An open node whose GPUs are all in use keeps serving: with everything else proven, its
    # workload check waits for the next run (a new node, or one gated again, is proven in full).
    node_sound = not any(text for item, text in items.items() if item != "workloadSucceeded")
    deferred = (
        bool(waiting)
        and list(waiting) == unfinished
        and not failed
        and not gated(node)
        and node_sound
        and node_pods is not None
        and all(held_by_others(pod, free_gpus(node, node_pods, namespace, jobs)) for pods in waiting.values() for pod in pods)
    )
    if deferred:
        items["workloadSucceeded"] = None
    # One line per failed item, and one per Job that has not succeeded; the node's readiness first.
    ready = not_ready(node)
    problems: list[tuple[str | None, str]] = [(None, ready)] if ready is not None else []
    problems += [(item, text) for item, text in items.items() if text and item != "workloadSucceeded"]
    problems += [] if deferred else [("workloadSucceeded", w) for w in workload]
    short_plugin = None
    if items["gpusRegistered"] and not items["pluginRunning"] and ready is None and not failed:
        short_plugin = settled_plugin_pod(target, plugin_pods, time.time(), PLUGIN_SETTLE_SECONDS)
    items_checklist = checklist(items)
    if deferred:
        items_checklist["workloadSucceeded"] = DEFERRED
    if group:
        facts = facts_problem(view, target.node, group) if compare else None
        items_checklist[FACTS_ITEM] = FAIL if facts else PASS
        problems += [(FACTS_ITEM, facts)] if facts else []
    return Judgement(
        checklist=items_checklist,
        problems=problems,
        failed_jobs=failed,
        unfinished_jobs=unfinished,
        gate_up=gated(node),
        short_plugin=short_plugin,
        deferred_jobs=list(waiting) if deferred else [],
        starved_jobs=list(waiting),
    )


def free_gpus(node: Mapping[str, Any] | None, node_pods: NodePods, namespace: str, jobs: Sequence[str]) -> dict[str, int]:
    """The node's allocatable GPU resources less what pods other than the node's verification
    Jobs hold there. A Job waiting for GPUs that are free by this count waits on the scheduler,
    not on a tenant: kubelet takes every GPU off allocatable while the device plugin restarts
    (kubernetes pkg/kubelet/cm/devicemanager/manager.go, PluginDisconnected marks the resource
    unhealthy), and a pod found unschedulable then keeps its Unschedulable condition until the
    scheduler tries it again."""
    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    free = {name: allocatable_gpus(node, name) or 0 for name in allocatable if name.startswith(GPU_RESOURCE_PREFIX)}
    ours = set(jobs)
    for pod in node_pods.on_node(str((node or {}).get("metadata", {}).get("name"))):
        labels = pod["metadata"].get("labels") or {}
        if pod["metadata"].get("namespace") == namespace and labels.get(JOB_NAME_LABEL) in ours:
            continue
        for name, amount in gpu_requests(pod).items():
            free[name] = free.get(name, 0) - amount
    return free


def failure_message(target: NodeTarget, judgement: Judgement, waited: float, gpus_per_node: int, replicas: int) -> str:
    gate = "stays gated" if judgement.gate_up else "is gated again"
    lines = [f"node {target.node} {gate} ({GATE}) after {waited:.0f}s; what failed:"]
    for item, problem in judgement.problems:
        if item == "gpusRegistered":
            why = f"gpusPerNode {gpus_per_node}" + (f" x timeSlicingReplicas {replicas}" if replicas > 1 else "")
            if target.expected_mig_devices or target.expected_gpus not in (None, gpus_per_node * replicas):
                why = f"gpusPerNode {gpus_per_node} x devicePlugin.migDevices"
            problem = (
                f"node {target.node}: {problem} ({why}). A GPU is missing "
                "or the device plugin reports it unhealthy (an XID error, say): see the plugin's log on that node and "
                f"`kubectl describe node {target.node}`; if the node really has fewer GPUs, change gpusPerNode"
            )
        lines.append(f"  - {item}: {problem}" if item else f"  - {problem}")
    return "\n".join(lines)


# What makes a new wait necessary: another node, figure, plugin, Job or timeout.
_WAIT_INPUTS = (
    "node",
    "labels",
    "taints",
    "pluginNamespace",
    "pluginSelector",
    "expectedGpus",
    "expectedMigDevices",
    "namespace",
    "jobs",
    "timeoutSeconds",
    "groupLabel",
    "gpuFacts",
    "preflightRun",
)


class NodeReadinessProvider(ClusterResourceProvider):
    computed = ("checklist", "gate", "recovery")

    def _view(self, props: dict[str, Any]) -> ClusterReader:
        return cluster_view_from_props(self.cluster_props(props))

    def _taint_api(self, props: dict[str, Any]) -> NodeTaintApi:
        return KubernetesNodeTaintApi(api_client_from_props(self.cluster_props(props)))

    def _deleter(self, props: dict[str, Any]) -> Deleter:
        return KubernetesDeleter(api_client_from_props(self.cluster_props(props)))

    def _node_pods(self, props: dict[str, Any]) -> NodePods:
        return RecentNodePods(KubernetesNodePods(api_client_from_props(self.cluster_props(props))), NODE_PODS_MAX_AGE)

    def _prove(self, props: dict[str, Any], deferred_before: bool = False, proven_run: str | None = None) -> dict[str, Any]:
        """proven_run: the preflight run the node's last proof saw (None on create)."""
        target = NodeTarget.from_props(props)
        # A restart may bring a GPU back only after a preflight since the last proof found every GPU healthy.
        fresh_run = props.get("preflightRun") if props.get("preflightRun") != proven_run else None
        view = self._view(props)
        timeout = float(props["timeoutSeconds"]) + GRACE_SECONDS
        stories = Stories()
        jobs = list(props["jobs"])
        group = dict(props.get("groupLabel") or {})

        node_pods = self._node_pods(props)

        def look(compare: bool) -> Judgement:
            return judge(view, target, props["namespace"], jobs, stories, group, compare, deferred_before, node_pods)

        judgement = look(compare=True)
        restarted = refused = None
        if not judgement.final:
            # Without a restart to try, the Jobs of the new round still finish on the GPUs left.
            judgement = view.wait_for(
                lambda: look(compare=False), lambda j: j.final or bool(j.short_plugin and (fresh_run or j.jobs_done)), timeout
            )
            if not judgement.final and judgement.short_plugin and not fresh_run:
                refused = restart_refused(props, judgement.short_plugin)
            elif not judgement.final and judgement.short_plugin:
                # Short of GPUs under a settled plugin: the plugin never takes back a GPU it marked
                # unhealthy (an XID), only a new plugin pod does. Once per proof; then wait again,
                # until the new pod has settled too.
                restarted = judgement.short_plugin
                self._deleter(props).delete_pod(target.plugin_namespace, restarted)
                judgement = view.wait_for(
                    lambda: look(compare=False), lambda j: j.final or j.short_plugin not in (None, restarted), timeout
                )
            if judgement.passed and group:
                judgement = look(compare=True)  # the group's other nodes may have been checked meanwhile
        if not judgement.passed:
            message = failure_message(target, judgement, timeout, int(props["gpusPerNode"]), int(props["replicas"]))
            if refused:
                message += f"\n  - recovery: {refused}"
            if restarted:
                message += (
                    f"\n  - recovery: its device plugin pod {restarted} was restarted once (a new pod re-advertises a GPU "
                    "the old one marked unhealthy); the GPUs did not come back"
                )
            if judgement.failed_jobs or judgement.unfinished_jobs:
                self._delete_jobs(props, view, judgement.failed_jobs + judgement.unfinished_jobs)
                message += f"\n{RERUN_HINT}"
            if not judgement.gate_up and view.node(target.node) is not None:
                # An open node that fails a new proof (a new plugin or CUDA image, say) takes no new GPU work.
                apply_taints(self._taint_api(props), target.node, desired=[GATE.to_k8s()], previous=[])
                message += f"\n{REGATED_HINT}"
            raise NodeNotReadyError(message)
        # Deferred Jobs would run whenever GPUs free up, or fail at their deadline: a refresh makes new ones.
        self._delete_jobs(props, view, judgement.deferred_jobs)
        apply_taints(self._taint_api(props), target.node, desired=[], previous=[GATE.to_k8s()])
        recovery = (
            f"restarted device plugin pod {restarted} after preflight {fresh_run} found every GPU healthy: its GPUs came back"
            if restarted
            else None
        )
        return {**props, "checklist": judgement.checklist, "gate": "lifted", "recovery": recovery}

    def _delete_jobs(self, props: dict[str, Any], view: ClusterReader, names: Sequence[str]) -> None:
        """Delete those of the node's Jobs that still exist, so that the next run makes them anew."""
        present = [name for name in names if view.job(props["namespace"], name) is not None]
        if present:
            deleter = self._deleter(props)
            for name in present:
                deleter.delete_job(props["namespace"], name)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=props["node"], outs=self._prove(props))  # its preflight ran in this deployment

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # A state from before groupLabel compared the same nodes by name (`groupNodes`).
        migrated = "groupNodes" in olds and "groupLabel" not in olds and news.get("groupLabel")
        changed = [key for key in _WAIT_INPUTS if olds.get(key) != news.get(key) and not (migrated and key == "groupLabel")]
        # A refresh found the node failing an item, or gated again: prove it again.
        degraded = any(value != PASS for value in (olds.get("checklist") or {}).values()) or olds.get("gate") == "up"
        return DiffResult(changes=bool(changed) or degraded)

    def update_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        deferred_before = (olds.get("checklist") or {}).get("workloadSucceeded") == DEFERRED
        return UpdateResult(outs=self._prove(news, deferred_before, proven_run=olds.get("preflightRun")))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        target = NodeTarget.from_props(props)
        jobs, group = list(props.get("jobs") or []), dict(props.get("groupLabel") or {})
        judgement = judge(self._view(props), target, props["namespace"], jobs, Stories(), group, node_pods=self._node_pods(props))
        return ReadResult(
            id_=id_, outs={**props, "checklist": judgement.checklist, "gate": "up" if judgement.gate_up else "lifted"}
        )


class NodeReadiness(ClusterResource, module="gpu-nodes", name="NodeReadiness"):
    """Proves one node (the runbook's checklist) and lifts its readiness gate."""

    checklist: pulumi.Output[dict[str, str]]
    gate: pulumi.Output[str]
    # What the check did to bring the node's GPUs back (a plugin pod restart), if anything.
    recovery: pulumi.Output[str | None]

    def __init__(
        self,
        name: str,
        target: NodeTarget,
        namespace: str,
        jobs: pulumi.Input[Sequence[pulumi.Input[str]]],
        timeout_seconds: int,
        gpus_per_node: int,
        replicas: int,
        cluster: ClusterAccess,
        group_label: Mapping[str, str] | None = None,
        facts: pulumi.Input[str | None] | None = None,
        preflight: tuple[str, pulumi.Input[str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """preflight: the machine's preflight command, its resource name and id (new on each run)."""
        # Only where facts are compared, so that other stacks' inputs stay as they were. The
        # node's own facts (from its preflight) are an input so that new facts prove it again.
        compared = {"groupLabel": dict(group_label), "gpuFacts": facts} if group_label else {}
        # Only where preflight runs, so that stacks without it keep their inputs.
        checked = {"preflightResource": preflight[0], "preflightRun": preflight[1]} if preflight else {}
        props = {
            **target_props(target),
            **compared,
            **checked,
            "namespace": namespace,
            "jobs": jobs,
            "timeoutSeconds": timeout_seconds,
            "gpusPerNode": gpus_per_node,
            "replicas": replicas,
            "checklist": None,
            "gate": None,
            "recovery": None,
        }
        super().__init__(NodeReadinessProvider(), name, props, cluster, opts)
