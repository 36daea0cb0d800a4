"""The readiness check of one node: wait until it is proven, then lift its gate.

A node comes in gated (`vocabulary.GATE`, put on with our taints, before our labels let
the device plugin land). This resource waits, on the process's shared watches
(`cluster_view.ClusterView`), until the runbook's checklist passes on the node: our labels
and taints, the device plugin Running, exactly the GPUs the group declares, and every
verification Job of the node succeeded. Then it lifts the gate. A node that does not pass
stays gated (or, open from an earlier run, is gated again) and `pulumi up` fails naming it and
each failed item; a failed Job is deleted,
so that `pulumi up --refresh` runs it again once the cause is fixed.

A node short of GPUs under a settled plugin pod that holds one unhealthy (the kubelet counts it in
capacity, not in allocatable: kubernetes pkg/kubelet/cm/devicemanager/manager.go, GetCapacity) has
a GPU the plugin marked unhealthy (an XID): the plugin keeps it out until its pod restarts (k8s-device-plugin v0.20.0
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
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Generic, Never

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.errors import NodeNotReadyError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.kube.job_status import Deleter, KubernetesDeleter, KubernetesNodePods, RecentNodePods
from gpu_nodes.kube.node_taints import KubernetesNodeTaintApi, NodeTaintApi, lift_gate, put_gate
from gpu_nodes.kube.pod_outputs import KubernetesPodOutputs, RecentPodOutputs
from gpu_nodes.kube.shared_views import cluster_view_from_props
from gpu_nodes.proof.checklist import DEFERRED, PASS, WORKLOAD_SUCCEEDED
from gpu_nodes.proof.evidence import BandwidthCheck, DiagnosticsCheck, ImexCheck, MetricsCheck
from gpu_nodes.proof.inputs import (
    Change,
    Computed,
    DeclaredInputs,
    as_dict,
    as_dict_or_none,
    as_list,
    carried,
    declared,
    keys,
    whole_number,
)
from gpu_nodes.proof.judgement import Judgement, PodStories, Proof, failure_message, judge
from gpu_nodes.proof.next_step import Progress, answered, next_step, verdict
from gpu_nodes.proof.reader import ClusterReader, NodePods, PodOutputs
from gpu_nodes.proof.recovery import restart_refused
from gpu_nodes.proof.target import DeclaredGpus, NodeTarget
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider, read_inputs

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# The proof's API client, made on first use (NodeReadinessProvider._api).
Client = Callable[[], "ApiClient"]

# How old a list of a node's pods may be when a waiting Job asks who holds its GPUs, and a page of its exporter.
NODE_PODS_MAX_AGE = 5.0
EXPORTER_PAGE_MAX_AGE = 5.0

# The Job's own activeDeadlineSeconds fires first; this grace lets us read its verdict.
GRACE_SECONDS = 30
# The state still says the gate is lifted: only a refresh reads that it is up again.
REGATED_HINT = "It takes no new GPU work until it passes: fix the cause, then run `pulumi up --refresh`."
RERUN_HINT = "Failed Jobs were deleted so that they run again: fix the cause, then run `pulumi up --refresh`."


@dataclass(frozen=True)
class ReadinessInputs(DeclaredInputs, Generic[Computed]):
    """What a readiness resource is given. A change of a `RERUN` input proves the node again; of a
    `STATE_ONLY` one, it is stored and the last proof stands."""

    # What a healthy node of the group looks like: a change of any of it proves the node again.
    target: NodeTarget = field(metadata=carried(NodeTarget))
    # The node's verification Jobs (new names for a new plugin or round), and how long they may take.
    namespace: str = field(metadata=declared("namespace", Change.RERUN, required=True))
    jobs: Sequence[str | Computed] = field(metadata=declared("jobs", Change.RERUN, read=as_list))
    timeout_seconds: int = field(metadata=declared("timeoutSeconds", Change.RERUN, read=whole_number, required=True))
    # What the group declares of the node's GPUs, for the failure message (expectedGpus, in the target, is what is
    # compared).
    declared_gpus: DeclaredGpus = field(metadata=carried(DeclaredGpus))
    # Where facts are compared: the group's label, and the node's own facts (from its preflight), so
    # that new facts prove it again. A group that compares none has no such inputs (tests/golden/*.json).
    group_label: Mapping[str, str] | None = field(
        default=None, metadata=declared("groupLabel", Change.RERUN, as_dict, as_dict_or_none, only_when_set=True)
    )
    gpu_facts: str | None | Computed = field(default=None, metadata=declared("gpuFacts", Change.RERUN))
    # Where preflight runs: its resource's name, for the message, and its run (new each time it runs):
    # a fresh run proves the node again, and only one may bring a GPU back. Elsewhere none.
    preflight_resource: str | None = field(default=None, metadata=declared("preflightResource", Change.STATE_ONLY))
    preflight_run: str | None | Computed = field(default=None, metadata=declared("preflightRun", Change.RERUN))
    # Under DRA with preflight: the GPUs it reported, which the node's ResourceSlices must list.
    gpu_devices: Sequence[Mapping[str, str]] | None | Computed = field(
        default=None, metadata=declared("gpuDevices", Change.RERUN)
    )
    # The node's Jobs whose pods ask for no GPU and must see none.
    access_jobs: Sequence[str | Computed] = field(
        default_factory=list, metadata=declared("accessJobs", Change.RERUN, read=as_list)
    )
    # DCGM's diagnostics (their Job and level), NCCL's all-reduce (its Job, the GPUs it spans and the group's own floor)
    # and the exporter (its namespace, pod labels, port and the GPUs it must report), where the group runs them; a
    # group without one has no such input.
    diagnostics: Mapping[str, Any] | None | Computed = field(
        default=None, metadata=declared("diagnostics", Change.RERUN, read=as_dict_or_none, only_when_set=True)
    )
    performance: Mapping[str, Any] | None | Computed = field(
        default=None, metadata=declared("performance", Change.RERUN, read=as_dict_or_none, only_when_set=True)
    )
    metrics: Mapping[str, Any] | None = field(
        default=None, metadata=declared("metrics", Change.RERUN, read=as_dict_or_none, only_when_set=True)
    )
    # On NVLink-domain machines: the node's IMEX Job and the clique its label must name; elsewhere no such input.
    imex: Mapping[str, Any] | None | Computed = field(
        default=None, metadata=declared("imex", Change.RERUN, read=as_dict_or_none, only_when_set=True)
    )

    def proof(self: ReadinessInputs[Never]) -> Proof:
        """What proving the node asks."""
        return Proof(
            self.target,
            self.namespace,
            self.jobs,
            self.group_label,
            self.gpu_devices,
            access_jobs=self.access_jobs,
            diagnostics=_diagnostics_check(self.diagnostics),
            performance=_bandwidth_check(self.performance),
            metrics=_metrics_check(self.metrics),
            imex=_imex_check(self.imex),
        )


def diagnostics_input(job: pulumi.Input[str], level: int) -> dict[str, Any]:
    return {"job": job, "level": level}


def performance_input(job: pulumi.Input[str], gpus: int, floor_gbps: float | None) -> dict[str, Any]:
    return {"job": job, "gpus": gpus, **({"floorGbps": floor_gbps} if floor_gbps is not None else {})}


def metrics_input(namespace: str, selector: Mapping[str, str], port: int, gpus: int) -> dict[str, Any]:
    return {"namespace": namespace, "selector": dict(selector), "port": port, "gpus": gpus}


def imex_input(job: pulumi.Input[str], clique: str) -> dict[str, Any]:
    return {"job": job, "clique": clique}


def _imex_check(value: Mapping[str, Any] | None) -> ImexCheck | None:
    return ImexCheck(str(value["job"]), str(value["clique"])) if value else None


def _diagnostics_check(value: Mapping[str, Any] | None) -> DiagnosticsCheck | None:
    return DiagnosticsCheck(str(value["job"]), int(value["level"])) if value else None


def _bandwidth_check(value: Mapping[str, Any] | None) -> BandwidthCheck | None:
    if not value:
        return None
    floor = value.get("floorGbps")
    return BandwidthCheck(str(value["job"]), int(value["gpus"]), float(floor) if floor is not None else None)


def _metrics_check(value: Mapping[str, Any] | None) -> MetricsCheck | None:
    if not value:
        return None
    return MetricsCheck(str(value["namespace"]), dict(value["selector"]), int(value["port"]), int(value["gpus"]))


# What makes a new wait necessary: another target (node, figure, plugin), Job, timeout, the
# group's facts, a new preflight run or the GPUs it found.
REPROVING_KEYS = keys(ReadinessInputs, Change.RERUN)


class NodeReadinessProvider(ClusterResourceProvider):
    computed = ("checklist", "gate", "recovery", "quarantine", "measured")

    def _view(self, props: dict[str, Any]) -> ClusterReader:
        return cluster_view_from_props(self.cluster_props(props))

    def _api(self, props: dict[str, Any]) -> Client:
        """The one API client of a proof (a create, update or read), made when first used: it lists the
        node's pods, and deletes and gates what the proof's outcome calls for."""
        return cache(partial(api_client_from_props, self.cluster_props(props)))

    def _taint_api(self, api: Client) -> NodeTaintApi:
        return KubernetesNodeTaintApi(api())

    def _deleter(self, api: Client) -> Deleter:
        return KubernetesDeleter(api())

    def _node_pods(self, api: Client) -> NodePods:
        return RecentNodePods(KubernetesNodePods(api()), NODE_PODS_MAX_AGE)

    def _outputs(self, api: Client) -> PodOutputs:
        return RecentPodOutputs(KubernetesPodOutputs(api), EXPORTER_PAGE_MAX_AGE)

    def _prove(
        self, props: dict[str, Any], inputs: ReadinessInputs[Never], deferred_before: bool = False, proven_run: str | None = None
    ) -> dict[str, Any]:
        """proven_run: the preflight run the node's last proof saw (None on create)."""
        target, proof = inputs.target, inputs.proof()
        # A restart may bring a GPU back only after a preflight since the last proof found every GPU healthy.
        fresh_run = inputs.preflight_run if inputs.preflight_run != proven_run else None
        view = self._view(props)
        timeout = float(inputs.timeout_seconds) + GRACE_SECONDS
        api = self._api(props)
        node_pods = self._node_pods(api)
        outputs = self._outputs(api)
        stories = PodStories()

        def look(compare: bool) -> Judgement:
            # Each look carries the stories of the Jobs' pods seen so far: the Job controller deletes them at its deadline.
            nonlocal stories
            judgement = judge(
                view,
                proof,
                time.time(),
                stories,
                compare=compare,
                deferred_before=deferred_before,
                node_pods=node_pods,
                outputs=outputs,
            )
            stories = judgement.stories
            return judgement

        judgement = look(compare=True)
        progress = Progress(fresh_run=bool(fresh_run))
        step, waited = next_step(judgement, progress), False
        while step.action in ("wait", "restart"):
            if step.action == "restart" and step.pod:
                # Once per proof; then wait again, until the new pod has settled too.
                self._deleter(api).delete_pod(target.plugin_namespace, step.pod)
                progress = replace(progress, restarted=step.pod)
            judgement = view.wait_for(lambda: look(compare=False), partial(answered, progress=progress), timeout)
            step, waited = next_step(judgement, replace(progress, waited=True)), True
        if step.action == "lift" and waited and proof.group:
            judgement = look(compare=True)  # the group's other nodes may have been checked meanwhile
            step = verdict(judgement)
        refused = None
        if step.action == "refuse" and step.pod:
            refused = restart_refused(target, step.pod, inputs.preflight_run, inputs.preflight_resource)
        restarted = progress.restarted
        if step.action != "lift":
            message = failure_message(target, judgement, timeout, inputs.declared_gpus)
            if refused:
                message += f"\n  - recovery: {refused}"
            if restarted:
                message += (
                    f"\n  - recovery: its device plugin pod {restarted} was restarted once (a new pod re-advertises a GPU "
                    "the old one marked unhealthy); the GPUs did not come back"
                )
            if judgement.failed_jobs or judgement.unfinished_jobs:
                self._delete_jobs(proof, view, api, judgement.failed_jobs + judgement.unfinished_jobs)
                message += f"\n{RERUN_HINT}"
            if not judgement.gate_up and view.node(target.node) is not None:
                # An open node that fails a new proof (a new plugin or CUDA image, say) takes no new GPU work.
                put_gate(self._taint_api(api), target.node)
                message += f"\n{REGATED_HINT}"
            raise NodeNotReadyError(message)
        # Deferred Jobs would run whenever GPUs free up, or fail at their deadline: a refresh makes new ones.
        self._delete_jobs(proof, view, api, judgement.deferred_jobs)
        lift_gate(self._taint_api(api), target.node)
        recovery = (
            f"restarted device plugin pod {restarted} after preflight {fresh_run} found every GPU healthy: its GPUs came back"
            if restarted
            else None
        )
        return {
            **props,
            "checklist": judgement.checklist,
            "gate": "lifted",
            "recovery": recovery,
            "quarantine": None,
            "measured": judgement.measured.as_output(),
        }

    def _delete_jobs(self, proof: Proof, view: ClusterReader, api: Client, names: Sequence[str]) -> None:
        """Delete those of the node's Jobs that still exist, so that the next run makes them anew."""
        present = [name for name in names if view.job(proof.namespace, name) is not None]
        if present:
            deleter = self._deleter(api)
            for name in present:
                deleter.delete_job(proof.namespace, name)

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs: ReadinessInputs[Never] = read_inputs(ReadinessInputs, props)
        return CreateResult(id_=inputs.target.node, outs=self._prove(props, inputs))  # its preflight ran in this deployment

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # The inputs as given, not read into records: in a preview, those other resources compute may be unknown.
        # A state that names the group's nodes (`groupNodes`) compares the same nodes as groupLabel
        # (docs/upgrading.md, "Upgrading deployed stacks").
        migrated = "groupNodes" in olds and "groupLabel" not in olds and news.get("groupLabel")
        changed = [key for key in REPROVING_KEYS if olds.get(key) != news.get(key) and not (migrated and key == "groupLabel")]
        # A refresh found the node failing an item, gated again or held in someone else's quarantine: prove it again.
        degraded = any(value != PASS for value in (olds.get("checklist") or {}).values()) or olds.get("gate") == "up"
        degraded = degraded or bool(olds.get("quarantine"))
        return DiffResult(changes=bool(changed) or degraded)

    def update_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        last: ReadinessInputs[Never] = read_inputs(ReadinessInputs, olds)
        inputs: ReadinessInputs[Never] = read_inputs(ReadinessInputs, news)
        deferred_before = (olds.get("checklist") or {}).get(WORKLOAD_SUCCEEDED.key) == DEFERRED
        return UpdateResult(outs=self._prove(news, inputs, deferred_before, proven_run=last.preflight_run))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        inputs: ReadinessInputs[Never] = read_inputs(ReadinessInputs, props)
        node_pods = self._node_pods(self._api(props))
        judgement = judge(self._view(props), inputs.proof(), time.time(), node_pods=node_pods)
        quarantine = judgement.quarantine.as_output() if judgement.quarantine else None
        gate = "up" if judgement.gate_up else "lifted"
        return ReadResult(id_=id_, outs={**props, "checklist": judgement.checklist, "gate": gate, "quarantine": quarantine})


class NodeReadiness(ClusterResource, module="gpu-nodes", name="NodeReadiness"):
    """Proves one node (the runbook's checklist) and lifts its readiness gate."""

    checklist: pulumi.Output[dict[str, str]]
    gate: pulumi.Output[str]
    # What the check did to bring the node's GPUs back (a plugin pod restart), if anything.
    recovery: pulumi.Output[str | None]
    # Someone else's quarantine of the node, as the last look found it (gpu_nodes/proof/quarantine.py); None when none.
    quarantine: pulumi.Output[dict[str, Any] | None]
    # What DCGM's diagnostics, NCCL's all-reduce and the exporter measured when the node was last proven.
    measured: pulumi.Output[dict[str, Any] | None]

    def __init__(
        self,
        name: str,
        inputs: ReadinessInputs[pulumi.Output[Any]],
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props = {**inputs.to_props(), **dict.fromkeys(NodeReadinessProvider.computed)}
        super().__init__(NodeReadinessProvider(), name, props, cluster, opts)
