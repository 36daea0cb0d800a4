"""Our taints on a node, as a Pulumi dynamic resource over gpu_nodes/kube/node_taints.py.

That module adds and removes them one by one without touching anyone else's (not a
server-side apply NodePatch: `Node.spec.taints` is an atomic list). `read` reports which of
our taints are still on the node, so that `pulumi refresh` shows a taint removed out of band.

The same resource puts the readiness gate (`vocabulary.GATE`) on the node, with our taints,
before our labels let the device plugin land; the node's readiness check lifts it. `read`
also reports the node's GPU health, so a node that degraded since the last run (NotReady,
plugin not Running, a GPU lost) is drift; `pulumi up --refresh` then puts the gate back and
starts a new verification round, which the Jobs carry, so that they run again. So is a node whose GPUs
NVIDIA's MIG manager reconfigures, or reconfigured since the node was gated: the resource keeps the MIG
manager's marks as they were then (`migMarks`, gpu_nodes/proof/mig_manager.py), and an update that finds
them changed gates the node again too.

A node whose group changes allocator (`allocator: devicePlugin` to `dra`, or back) is gated
again, and the pods of others that hold its GPUs through the old allocator are evicted (as
`kubectl drain` does, PodDisruptionBudgets honoured) before the new one hands the same GPUs out;
its readiness check then proves it under the new one (docs/dra.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Never

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.errors import NodeNotFoundError, NodeNotReadyError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.kube.job_status import Evictor, KubernetesEvictor, KubernetesNodePods
from gpu_nodes.kube.node_taints import KubernetesNodeTaintApi, NodeTaintApi, TaintDict, apply_taints, present
from gpu_nodes.kube.shared_views import cluster_view_from_props
from gpu_nodes.proof.checklist import degradation, node_taints
from gpu_nodes.proof.inputs import Change, Computed, DeclaredInputs, as_dict_or_none, carried, declared, keys
from gpu_nodes.proof.jobs import to_drain
from gpu_nodes.proof.mig_manager import mig_change, mig_marks
from gpu_nodes.proof.reader import ClusterReader, NodePods
from gpu_nodes.proof.target import NodeTarget
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider, read_inputs
from gpu_nodes.vocabulary import GATE

# How long a node that changes allocator waits for the pods holding its GPUs through the old one to go.
DRAIN_SECONDS = 300
DRAIN_POLL_SECONDS = 2.0


@dataclass(frozen=True)
class TaintsInputs(DeclaredInputs, Generic[Computed]):
    """What a taints resource is given. A change of a `RERUN` input puts our taints on again and judges
    the node's health anew (on refresh) against it; another node is another resource (the id is the node)."""

    # What a healthy node of the group looks like: its taints are ours; a refresh judges its health by the rest.
    target: NodeTarget = field(metadata=carried(NodeTarget))
    # The readiness gate, put on with our taints; a state from before the gate has none, and it goes on once.
    gate: Mapping[str, str] | None = field(
        default_factory=GATE.to_k8s, metadata=declared("gate", Change.RERUN, as_dict_or_none, as_dict_or_none)
    )
    # Under DRA with preflight: the GPUs the machine reported: a refresh names one gone from its slices.
    gpu_devices: Sequence[Mapping[str, str]] | None | Computed = field(
        default=None, metadata=declared("gpuDevices", Change.RERUN)
    )

    @property
    def ours(self) -> list[TaintDict]:
        return [dict(t) for t in self.target.taints]

    @property
    def gate_taints(self) -> list[TaintDict]:
        """The gate, as a list of taints to put on or take off with ours (none in a state from before it)."""
        return [dict(self.gate)] if self.gate else []


# The inputs whose change is work: our taints go on again, and the node's health is judged anew.
RERUN_KEYS = keys(TaintsInputs, Change.RERUN)


class NodeTaintsProvider(ClusterResourceProvider):
    """Owns only the listed taints and the gate on one node; the resource id is the node name."""

    # migMarks: NVIDIA's MIG manager's marks on the node when it was last gated (none in a state from before them).
    computed = ("round", "health", "migMarks")

    def _api(self, props: dict[str, Any]) -> NodeTaintApi:
        return KubernetesNodeTaintApi(api_client_from_props(self.cluster_props(props)))

    def create(self, props: dict[str, Any]) -> CreateResult:
        inputs: TaintsInputs[Never] = read_inputs(TaintsInputs, props)
        node = inputs.target.node
        apply_taints(self._api(props), node, inputs.ours + inputs.gate_taints, previous=[])
        marks = mig_marks(self._view(props).node(node))
        return CreateResult(id_=node, outs={**props, "round": 1, "health": [], "migMarks": marks})

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # The inputs as given, not read into records: in a preview, the GPUs a preflight reports may be unknown.
        # Credentials (kubeconfig, context) are how we reach the node, not what we own on it (see ClusterResourceProvider).
        replaces = ["node"] if olds.get("node") != news.get("node") else []
        changed = bool(replaces) or any(olds.get(key) != news.get(key) for key in RERUN_KEYS)
        # A refresh found the node degraded: gate it and verify it again.
        return DiffResult(changes=changed or bool(olds.get("health")), replaces=replaces, delete_before_replace=True)

    def update_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        last: TaintsInputs[Never] = read_inputs(TaintsInputs, olds)
        inputs: TaintsInputs[Never] = read_inputs(TaintsInputs, news)
        switched = last.target.uses_dra != inputs.target.uses_dra
        node = self._view(news).node(inputs.target.node)
        # The MIG manager changed the node's GPUs since it was gated, found by this update rather than a refresh.
        reconfigured = mig_change(olds.get("migMarks"), node) is not None
        degraded = bool(olds.get("health")) or reconfigured
        regate = degraded or last.gate_taints != inputs.gate_taints or switched
        desired = inputs.ours + (inputs.gate_taints if regate else [])
        apply_taints(self._api(news), inputs.target.node, desired, previous=last.ours)
        if switched:
            self._drain(news, inputs.target.node, old_dra=last.target.uses_dra)
        verification_round = int(olds.get("round") or 1) + (1 if degraded else 0)
        marks = mig_marks(node) if regate or olds.get("migMarks") is None else olds["migMarks"]
        return UpdateResult(outs={**news, "round": verification_round, "health": [], "migMarks": marks})

    def _view(self, props: dict[str, Any]) -> ClusterReader:
        return cluster_view_from_props(self.cluster_props(props))

    def _pods(self, props: dict[str, Any]) -> tuple[NodePods, Evictor]:
        api = api_client_from_props(self.cluster_props(props))
        return KubernetesNodePods(api), KubernetesEvictor(api)

    def _drain(self, props: dict[str, Any], node: str, old_dra: bool) -> None:
        """The node's group changed allocator: with the gate on, evict the pods that hold its GPUs
        through the old one, and wait until they are gone, before the new one hands the same GPUs out."""
        pods, evictor = self._pods(props)
        old = "NVIDIA's DRA driver" if old_dra else "the device plugin"
        deadline = time.monotonic() + DRAIN_SECONDS
        while held := to_drain(pods.on_node(node), old_dra):
            refused = [f"{ns}/{name}: {why}" for ns, name in held if (why := evictor.evict(ns, name))]
            if time.monotonic() >= deadline:
                waiting = refused or [f"{ns}/{name}" for ns, name in held]
                raise NodeNotReadyError(
                    f"node {node} changes allocator and stays gated ({GATE}): pods still hold its GPUs through {old} "
                    f"after {DRAIN_SECONDS}s: {', '.join(waiting)}. Move them off the node (a PodDisruptionBudget may "
                    "hold them), then run `pulumi up` again"
                )
            time.sleep(DRAIN_POLL_SECONDS)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        inputs: TaintsInputs[Never] = read_inputs(TaintsInputs, props)
        view = self._view(props)
        node = view.node(id_)
        outs = {**props, "taints": present(node_taints(node), inputs.ours)}
        # A state from before the MIG manager's marks were kept takes them as they are now.
        recorded = props.get("migMarks")
        outs["migMarks"] = mig_marks(node) if recorded is None else recorded
        if inputs.gate:
            target = inputs.target
            plugin_pods = view.pods(target.plugin_namespace, dict(target.plugin_selector), node=target.node)
            slices = view.resource_slices(target.node) if target.uses_dra else []
            outs["health"] = degradation(target, node, plugin_pods, slices, inputs.gpu_devices, outs["migMarks"])
        return ReadResult(id_=id_, outs=outs)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        inputs: TaintsInputs[Never] = read_inputs(TaintsInputs, props)
        # A node that is gone took our taints with it.
        with contextlib.suppress(NodeNotFoundError):
            apply_taints(self._api(props), inputs.target.node, desired=[], previous=inputs.ours + inputs.gate_taints)


class NodeTaints(ClusterResource, module="gpu-nodes", name="NodeTaints"):
    """Our taints and the readiness gate on one node (see the module docstring for why this is not a NodePatch)."""

    node: pulumi.Output[str]
    taints: pulumi.Output[list[TaintDict]]
    # Goes up by one each time a degraded node is gated again; the node's Jobs carry it.
    round: pulumi.Output[int]
    health: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        inputs: TaintsInputs[pulumi.Output[Any]],
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props = {**inputs.to_props(), **dict.fromkeys(NodeTaintsProvider.computed)}
        super().__init__(NodeTaintsProvider(), name, props, cluster, opts)
