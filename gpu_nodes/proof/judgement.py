"""One look at a node being proven: the runbook's checklist, why each failing item fails, and
whether its workload check may wait for the next run (gpu_nodes/providers/readiness.py waits
on these looks and acts on them).

Pure over what `ClusterReader` returns (the shared watches, or a fake in tests), except for
`NodePods`, the one list outside the watches: whose pods hold the node's GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_nodes.preflight.facts import disagreement, node_facts
from gpu_nodes.proof.checklist import (
    BANDWIDTH_MET,
    DIAGNOSTICS_PASSED,
    GPUS_REGISTERED,
    IMEX_CHANNEL,
    ITEMS_BY_KEY,
    METRICS_EXPORTED,
    PLUGIN_RUNNING,
    Item,
    Observation,
    allocatable_gpus,
    checklist,
    clique_problem,
    gated,
    item_problems,
    items_of,
    not_ready,
    pod_not_running,
    settled_plugin_pod,
    unhealthy_gpus,
)
from gpu_nodes.proof.evidence import (
    PENDING,
    BandwidthCheck,
    DiagnosticsCheck,
    Finding,
    ImexCheck,
    Measured,
    MetricsCheck,
    bandwidth_finding,
    diagnostics_finding,
    metrics_finding,
)
from gpu_nodes.proof.jobs import (
    failed_containers,
    finished_pod,
    gpu_requests,
    held_by_others,
    job_verdict,
    pod_story,
    waits_for_gpus,
)
from gpu_nodes.proof.quarantine import Quarantine, quarantine_of
from gpu_nodes.proof.reader import ClusterReader, NodePods, PodOutputs
from gpu_nodes.proof.target import DeclaredGpus, NodeTarget
from gpu_nodes.vocabulary import (
    DCGM_CONTAINER,
    GATE,
    GPU_RESOURCE_PREFIX,
    ISOLATION_CONTAINER,
    JOB_NAME_LABEL,
    MPS,
    NCCL_CONTAINER,
    GpuSharing,
)

# How long a plugin pod is Ready before its count is what it registers (it registers at start).
PLUGIN_SETTLE_SECONDS = 10.0


@dataclass(frozen=True)
class PodStories:
    """The last story seen of each Job's pods: the Job controller deletes them at its deadline, so a
    look carries the stories of the looks before it (`Judgement.stories`)."""

    by_job: Mapping[str, str] = field(default_factory=dict)


# What the first look of a proof has seen.
NO_POD_STORIES = PodStories()


@dataclass(frozen=True)
class Proof:
    """What proving a node asks: its target, and its verification Jobs succeeded; with `group`, its GPU
    facts agree with those of the nodes so labelled; under DRA, its ResourceSlices list `devices`; a pod
    given no GPU sees none; where the group runs them, DCGM's diagnostics pass, NCCL's bus bandwidth
    reaches its floor and the exporter reports every GPU."""

    target: NodeTarget
    # The verification Jobs' namespace, and the names of the workload Jobs.
    namespace: str
    jobs: Sequence[str]
    # The label of the node's group, where its GPU facts are compared with the group's (read from the cluster).
    group: Mapping[str, str] | None = None
    # Under DRA with preflight: the GPUs the node's preflight found.
    devices: Sequence[Mapping[str, Any]] | None = None
    # The Jobs whose pods ask for no GPU and must see none.
    access_jobs: Sequence[str] = ()
    diagnostics: DiagnosticsCheck | None = None
    performance: BandwidthCheck | None = None
    metrics: MetricsCheck | None = None
    imex: ImexCheck | None = None

    @property
    def all_jobs(self) -> list[str]:
        """Every Job the node waits for: the workload's, the access check's, DCGM's, NCCL's and the IMEX channel's."""
        checks = [c.job for c in (self.diagnostics, self.performance, self.imex) if c is not None]
        return [*self.jobs, *self.access_jobs, *checks]

    @property
    def optional_items(self) -> set[Item]:
        """The items beyond the runbook this node is proven by."""
        runs = (
            (DIAGNOSTICS_PASSED, self.diagnostics),
            (BANDWIDTH_MET, self.performance),
            (METRICS_EXPORTED, self.metrics),
            (IMEX_CHANNEL, self.imex),
        )
        return {item for item, check in runs if check is not None}


@dataclass
class Judgement:
    """One look at the node: its checklist and, for each item that fails, why."""

    checklist: dict[str, str]
    # (checklist item, or None for the node's readiness; why it fails)
    problems: list[tuple[str | None, str]]
    failed_jobs: list[str]
    unfinished_jobs: list[str]
    gate_up: bool
    # The node's settled plugin pod when the node is short of GPUs, the plugin holds one unhealthy and the
    # node is otherwise sound: a restart of that pod is what brings back a GPU the plugin marked unhealthy.
    short_plugin: str | None = None
    # Jobs of an open, busy node whose run waits for the next `pulumi up` (see `judge`).
    deferred_jobs: list[str] = field(default_factory=list)
    # Unfinished Jobs whose pods all wait for GPUs: nothing more to learn from them on a short node.
    starved_jobs: list[str] = field(default_factory=list)
    # Someone else's quarantine of the node (NVSentinel's): the gate stays on while it holds.
    quarantine: Quarantine | None = None
    # The stories of the Jobs' pods as of this look, for the next look to carry.
    stories: PodStories = field(default_factory=PodStories)
    # What the proof items beyond the runbook measured on this look (none on a refresh's look).
    measured: Measured = field(default_factory=Measured)

    @property
    def jobs_done(self) -> bool:
        return set(self.unfinished_jobs) <= set(self.starved_jobs)

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def final(self) -> bool:
        """Nothing more to wait for: passed, a Job failed, a final item fails (the GPUs are not the group's), or
        someone else holds the node in quarantine (none of these passes on its own)."""
        final_item = any(item and ITEMS_BY_KEY[item].final for item, _ in self.problems)
        return self.passed or bool(self.failed_jobs) or final_item or self.quarantine is not None


@dataclass(frozen=True)
class JobsSeen:
    """What one look found of the node's verification Jobs."""

    failed: list[str]
    unfinished: list[str]
    # One line per Job that has not succeeded, by Job: each goes to the checklist item of its Job.
    lines: dict[str, str]
    # Jobs Pending only for want of free GPUs, and their pods (none for a Job deleted after a deferral).
    waiting: dict[str, list[dict[str, Any]]]
    stories: PodStories
    # Workload Jobs whose pods failed only in their second container, which must see no GPU: secure access fails.
    seen_gpus_unasked: frozenset[str] = frozenset()
    # Each finished Job's newest ended pod, whose log holds its report.
    finished: dict[str, str] = field(default_factory=dict)

    def lines_of(self, jobs: Sequence[str]) -> list[str]:
        return [self.lines[name] for name in jobs if name in self.lines]


def facts_problem(view: ClusterReader, node: str, group: Mapping[str, str]) -> str | None:
    """Whether the node's GPUs (our annotation, from its preflight) match those of the nodes
    labelled as its group, read at the time: adding or removing a node changes no other
    node's inputs, so no other node is proven again for it."""
    return disagreement(node, {n["metadata"]["name"]: node_facts(n) for n in view.nodes_labelled(group)})


def judge(
    view: ClusterReader,
    proof: Proof,
    now: float,
    stories: PodStories = NO_POD_STORIES,
    *,
    compare: bool = True,
    deferred_before: bool = False,
    node_pods: NodePods | None = None,
    outputs: PodOutputs | None = None,
) -> Judgement:
    """One look at the node at time `now`, carrying the `stories` of the Jobs' pods the looks before saw.
    With `proof.group`, its GPU facts are compared with the group's too, unless `compare` is off: the
    comparison reads every node of the group, so a wait compares before it starts and once more
    when the rest passes, not on every event. `deferred_before`: the last run deferred the node's
    workload check (its Jobs were deleted then). `node_pods` tells whose pods hold the node's GPUs;
    without it no Job is deferred. `outputs` reads DCGM's and NCCL's reports and the exporter's page;
    without it (a refresh) those items are judged by their Jobs' verdicts and the exporter pod alone."""
    target = proof.target
    node = view.node(target.node)
    plugin_pods = view.pods(target.plugin_namespace, dict(target.plugin_selector), node=target.node)
    jobs = look_at_jobs(view, proof, stories, deferred_before)
    # The comparison reads every node of the group: only where asked (see above).
    facts = facts_problem(view, target.node, proof.group) if proof.group and compare else None
    slices = view.resource_slices(target.node) if target.uses_dra else []
    evidence = look_at_evidence(view, proof, node, jobs, outputs)
    workload = [line for name, line in jobs.lines.items() if name in proof.jobs and name not in jobs.seen_gpus_unasked]
    access = [jobs.lines[name] for name in (*proof.access_jobs, *sorted(jobs.seen_gpus_unasked)) if name in jobs.lines]
    look = Observation(
        target,
        node,
        plugin_pods,
        workload,
        facts,
        slices,
        proof.devices,
        access=access,
        diagnostics=evidence.lines(proof.diagnostics, jobs),
        bandwidth=evidence.lines(proof.performance, jobs),
        metrics=list(evidence.metrics.problems),
        imex=jobs.lines_of([proof.imex.job]) if proof.imex else [],
        clique=clique_problem(node, proof.imex.clique) if proof.imex else None,
    )
    items = item_problems(look, items_of(compares_group=bool(proof.group), optional=proof.optional_items))
    deferred = node_pods is not None and workload_deferred(proof, node, items, jobs, node_pods)
    # One line per failed item (a Job that has not succeeded is one of its own), the node's readiness and
    # someone else's quarantine first.
    ready, quarantine = not_ready(node), quarantine_of(node)
    problems: list[tuple[str | None, str]] = [(None, ready)] if ready is not None else []
    problems += [(None, held_by(quarantine))] if quarantine else []
    problems += [(item.key, line) for item, lines in items.items() if not (deferred and item.deferrable) for line in lines]
    # A finished Job whose report fails its item is as failed as one that exited nonzero: waiting will not mend it.
    failed = [*jobs.failed, *(name for name in evidence.failed_jobs if name not in jobs.failed)]
    # A node that fails for another reason than its GPUs is not cured by a new plugin pod.
    sound = ready is None and not failed and not items[PLUGIN_RUNNING]
    # Only a GPU the plugin holds unhealthy comes back with a new pod; a resource not registered yet (under MPS,
    # its daemon not ready) is waited for.
    holds_unhealthy = bool(items[GPUS_REGISTERED]) and sound and unhealthy_gpus(node) > 0
    short_plugin = settled_short_plugin(target, plugin_pods, now) if holds_unhealthy else None
    return Judgement(
        checklist=checklist(items, deferred),
        problems=problems,
        failed_jobs=failed,
        unfinished_jobs=jobs.unfinished,
        gate_up=gated(node),
        short_plugin=short_plugin,
        deferred_jobs=list(jobs.waiting) if deferred else [],
        starved_jobs=list(jobs.waiting),
        quarantine=quarantine,
        stories=jobs.stories,
        measured=evidence.measured,
    )


@dataclass(frozen=True)
class Evidence:
    """What one look found of DCGM's and NCCL's reports and the exporter's page."""

    diagnostics: Finding = PENDING
    bandwidth: Finding = PENDING
    metrics: Finding = PENDING
    # The finished Jobs whose report fails their item.
    failed_jobs: tuple[str, ...] = ()

    @property
    def measured(self) -> Measured:
        return Measured(self.diagnostics.measured, self.bandwidth.measured, self.metrics.measured)

    def lines(self, check: DiagnosticsCheck | BandwidthCheck | None, jobs: JobsSeen) -> list[str]:
        """The item's lines: what its report says, where one was read; else its Job's own line when it has not
        succeeded (the tail of a report as the pod's termination message says less than the report)."""
        if check is None:
            return []
        finding = self.diagnostics if isinstance(check, DiagnosticsCheck) else self.bandwidth
        return list(finding.problems) or jobs.lines_of([check.job])


def look_at_evidence(
    view: ClusterReader, proof: Proof, node: Mapping[str, Any] | None, jobs: JobsSeen, outputs: PodOutputs | None
) -> Evidence:
    """Each report of a finished Job read once it is there, and the exporter's page, where `outputs` can read them."""
    diagnostics, bandwidth, failed = PENDING, PENDING, []
    if proof.diagnostics is not None and outputs is not None:
        pod = jobs.finished.get(proof.diagnostics.job)
        if pod is not None:
            log = outputs.log(proof.namespace, pod, DCGM_CONTAINER)
            diagnostics = diagnostics_finding(proof.diagnostics, log, proof.diagnostics.job in jobs.failed)
    if proof.performance is not None and outputs is not None:
        pod = jobs.finished.get(proof.performance.job)
        if pod is not None:
            facts = node_facts(node)
            model = facts.models[0] if facts is not None and len(facts.models) == 1 else None
            bandwidth = bandwidth_finding(proof.performance, outputs.log(proof.namespace, pod, NCCL_CONTAINER), model)
    for check, finding in ((proof.diagnostics, diagnostics), (proof.performance, bandwidth)):
        if check is not None and finding.final and finding.problems:
            failed.append(check.job)
    metrics = look_at_metrics(view, proof.target.node, proof.metrics, outputs) if proof.metrics is not None else PENDING
    return Evidence(diagnostics, bandwidth, metrics, tuple(failed))


def look_at_metrics(view: ClusterReader, node: str, check: MetricsCheck, outputs: PodOutputs | None) -> Finding:
    """The node's exporter pod, running, and its page: without `outputs` (a refresh) the running pod alone."""
    pods = view.pods(check.namespace, dict(check.selector), node=node)
    running = [p for p in pods if pod_not_running(p) is None]
    if not running:
        why = "; ".join(w for w in (pod_not_running(p) for p in pods) if w)
        return Finding((f"the dcgm-exporter pod does not run on it ({why})" if why else "no dcgm-exporter pod on it",))
    pod = str(running[0]["metadata"]["name"])
    if outputs is None:
        return PENDING
    scraped = outputs.scrape(check.namespace, pod, check.port, check.path)
    return metrics_finding(check, pod, scraped.text, scraped.error)


def settled_short_plugin(target: NodeTarget, plugin_pods: Sequence[Mapping[str, Any]], now: float) -> str | None:
    """The settled plugin pod of a node short of GPUs, whose restart may bring back a GPU it marked unhealthy;
    None under DRA: that rule is the device plugin's (readiness.py), NVIDIA's DRA driver is not restarted."""
    return None if target.uses_dra else settled_plugin_pod(target, plugin_pods, now, PLUGIN_SETTLE_SECONDS)


def look_at_jobs(view: ClusterReader, proof: Proof, stories_before: PodStories, deferred_before: bool) -> JobsSeen:
    """Each of the node's Jobs that has not succeeded, and why, in its pods' last story seen."""
    namespace = proof.namespace
    failed: list[str] = []
    unfinished: list[str] = []
    lines: dict[str, str] = {}
    waiting: dict[str, list[dict[str, Any]]] = {}
    stories = dict(stories_before.by_job)
    unasked: set[str] = set()
    finished: dict[str, str] = {}
    for name in proof.all_jobs:
        job = view.job(namespace, name)
        if job is None:
            # Deleted when the last run deferred it: still unproven, not failed (a refresh makes it anew). The access
            # check asks for no GPU, so it never waits for one, and is never deferred.
            if deferred_before and name not in proof.access_jobs:
                waiting[name] = []
            unfinished.append(name)
            lines[name] = f"verification Job {namespace}/{name} does not exist (deleted after a failed run?)"
            continue
        verdict, detail = job_verdict(job)
        pods = view.pods(namespace, {JOB_NAME_LABEL: name})
        if verdict != "running" and (pod := finished_pod(pods)) is not None:
            finished[name] = pod
        if verdict == "succeeded":
            continue
        if verdict == "running" and pods and all(waits_for_gpus(p) for p in pods):
            waiting[name] = pods
        if name in proof.jobs and any(failed_containers(p) == [ISOLATION_CONTAINER] for p in pods):
            unasked.add(name)
        story = "; ".join(s for s in (pod_story(p) for p in pods) if s)
        stories[name] = story or stories.get(name, "")
        (failed if verdict == "failed" else unfinished).append(name)
        what = f"failed ({detail})" if verdict == "failed" else f"has not succeeded ({detail})"
        lines[name] = f"verification Job {namespace}/{name} {what}; {stories[name] or 'no pod story'}"
    return JobsSeen(failed, unfinished, lines, waiting, PodStories(stories), frozenset(unasked), finished)


def workload_deferred(
    proof: Proof, node: Mapping[str, Any] | None, items: Mapping[Item, list[str]], jobs: JobsSeen, node_pods: NodePods
) -> bool:
    """An open node whose GPUs are all in use keeps serving: with the rest of the runbook proven, its
    workload check (and its diagnostics and all-reduce, which hold GPUs too) waits for the next run (a new
    node, or one gated again, is proven in full). Only when every Job that has not succeeded waits for GPUs
    that others' pods hold."""
    node_sound = not any(lines for item, lines in items.items() if not item.deferrable and not item.compares_group)
    if not (jobs.waiting and list(jobs.waiting) == jobs.unfinished and not jobs.failed and not gated(node) and node_sound):
        return False
    pods = [pod for waiting in jobs.waiting.values() for pod in waiting]
    # Jobs deleted after a deferral have no pods: nothing to ask of the node's pods.
    free = free_gpus(node, node_pods, proof.namespace, proof.all_jobs) if pods else {}
    return all(held_by_others(pod, free) for pod in pods)


def held_by(quarantine: Quarantine) -> str:
    """Why a node someone else holds stays gated, and when it is proven again."""
    return (
        f"{quarantine}: gpu-nodes leaves its cordon and taints alone and keeps the gate on until {quarantine.by} "
        "releases the node"
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


# What a device taint of NVIDIA's DRA driver says, and what lifts it: v0.5.0 keeps it until its kubelet plugin
# restarts (cmd/gpu-kubelet-plugin/allocatable.go, AddOrUpdateTaint; kubernetes-sigs/dra-driver-nvidia-gpu issue
# 1455), which gpu-nodes never does (`settled_short_plugin`).
_DRA_TAINT_HINT = (
    ". A taint of NVIDIA's DRA driver is its health check finding the GPU failed (gpu.nvidia.com/xid: the XID is "
    "its value); the driver keeps it until its kubelet plugin pod restarts: mend the GPU (`nvidia-smi -q` on the "
    "machine: GPU Recovery Action), delete that pod, then run `pulumi up --refresh`"
)


def failure_message(target: NodeTarget, judgement: Judgement, waited: float, declared: DeclaredGpus) -> str:
    """Why the node stays gated, item by item; a node short of GPUs told what the group declares of them, in the
    settings it uses (`declared`, and the MIG layout its target holds)."""
    gate = "stays gated" if judgement.gate_up else "is gated again"
    lines = [f"node {target.node} {gate} ({GATE}) after {waited:.0f}s; what failed:"]
    for item, problem in judgement.problems:
        if item == GPUS_REGISTERED.key and target.uses_dra:
            problem = (
                f"{problem}. Its ResourceSlices must list every GPU its preflight found, untainted: see the log of "
                f"NVIDIA's DRA driver's kubelet plugin on that node and `kubectl get resourceslices --field-selector "
                f"spec.nodeName={target.node} -o yaml`; if the node really has fewer GPUs, change gpusPerNode"
                + (_DRA_TAINT_HINT if "tainted" in problem else "")
            )
        elif item == GPUS_REGISTERED.key:
            problem = (
                f"node {target.node}: {problem} ({_declared(target, declared)}). A GPU is missing "
                "or the device plugin reports it unhealthy (an XID error, say): see the plugin's log on that node and "
                f"`kubectl describe node {target.node}`; if the node really has fewer GPUs, change gpusPerNode"
            ) + _mps_hint(target.node, declared.sharing)
        lines.append(f"  - {item}: {problem}" if item else f"  - {problem}")
    return "\n".join(lines)


def _declared(target: NodeTarget, declared: DeclaredGpus) -> str:
    """What the group declares of each node's GPUs, in the settings it uses: its MIG layout where it declares one,
    else its GPUs times the replicas of each where it shares them (`sharing.replicas`, or the older
    `timeSlicingReplicas`)."""
    if target.mig_devices:
        return f"gpusPerNode {declared.gpus_per_node} x devicePlugin.migDevices"
    sharing = declared.sharing
    if not sharing.shares:
        return f"gpusPerNode {declared.gpus_per_node}"
    how = f" ({sharing.strategy})" if sharing.setting == "sharing" else ""
    return f"gpusPerNode {declared.gpus_per_node} x {sharing.replicas_key}{how} {sharing.replicas}"


def _mps_hint(node: str, sharing: GpuSharing) -> str:
    """Under MPS the plugin serves nothing until its MPS control daemon is ready (k8s-device-plugin
    internal/plugin/mps.go, waitForDaemon: the daemon's `.ready` file and an answer on its control pipe)."""
    if sharing.strategy != MPS:
        return ""
    return (
        f". Under MPS the plugin registers the GPUs only once its MPS control daemon on {node} is ready: see that "
        "daemon's pod (nvidia-device-plugin-mps-control-daemon-<group>) and its log"
    )
