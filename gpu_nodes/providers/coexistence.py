"""One GPU allocator per node: find another before anything of ours lands on a node.

Two plugins on one node both serve the fixed socket `nvidia-gpu.sock` and each removes it before
listening (k8s-device-plugin v0.20.0 `internal/plugin/server.go`): whichever started last wins,
and the other's GPUs vanish from kubelet. NVIDIA's DRA driver and the device plugin must not
both hand out GPUs on one node either: each would give the same GPU to a different pod. The
device plugin chart and the DRA driver's chart schedule by `nvidia.com/gpu.present=true` (our
default label), so an install already on the cluster lands on our nodes as soon as we label
them; the GPU Operator deploys its plugin through its ClusterPolicy, and NVIDIA's DRA driver through its
GPUCluster. So before the groups' taints and labels, a check lists (gpu_allocators.py says how each
is told):

- DaemonSets not ours that run the NVIDIA device plugin, or NVIDIA's DRA GPU kubelet plugin;
  GFD and the MPS control daemon, from the same image, run beside us and are left alone;
- a GPU Operator ClusterPolicy whose device plugin is enabled, and its GPUCluster (always);
- ResourceSlices of the DRA driver `gpu.nvidia.com` for one of our nodes;
- our nodes that advertise `nvidia.com/gpu` with no device plugin pod on them.

The first two stop the run, named, unless `gpu-nodes:handOver` lists them (`<namespace>/<name>`
for a DaemonSet, `ClusterPolicy/<name>`, `GPUCluster/<name>`): for teams moving from the chart or the DRA driver, who
keep it off our nodes while gpu-nodes takes over. A listed DaemonSet that still has a pod on one
of our nodes stops the run too, as do the last two, which are on our nodes by definition.
ResourceSlices are read where the API server has them (`resource.k8s.io` v1, GA in 1.34, or its
betas); a server without them has no DRA, and RBAC that forbids reading them is said in the
check's `unchecked` output, the DaemonSet look still done. A refresh runs the check again and
shows what it finds as drift.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.config.stack import HAND_OVER
from gpu_nodes.errors import OtherPluginError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.kube.cluster_source import KubernetesSource
from gpu_nodes.proof.inputs import Change, DeclaredInputs, as_list, declared, keys
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider, read_inputs
from gpu_nodes.providers.gpu_allocators import (
    DEVICE_PLUGIN,
    DRA,
    GPU_CLUSTER,
    OPERATOR,
    OPERATOR_DRA,
    OtherAllocator,
    allocator_daemonsets,
    dra_slices_on,
    is_ours,
    nodes_with_unexplained_gpus,
    operator_clusters,
    operator_policies,
    runs_device_plugin,
)
from gpu_nodes.providers.handed_over import operator_advisories, operator_age
from gpu_nodes.vocabulary import DRA_GPU_DRIVER, GPU_RESOURCE

# Newest first: the API server serves v1 from Kubernetes 1.34; 1.32-1.33 only the betas (if enabled).
SLICE_VERSIONS = ("v1", "v1beta2", "v1beta1")
# The GPU Operator's cluster-scoped resources (group nvidia.com): gpu-operator api/nvidia/v1 and
# api/nvidia/v1alpha1 (groupversion_info.go), CRDs in deployments/gpu-operator/crds/.
CLUSTER_POLICIES = ("v1", "clusterpolicies")
GPU_CLUSTERS = ("v1alpha1", "gpuclusters")
_DRA_TWICE = (
    "NVIDIA's DRA driver and the device plugin must not both hand out GPUs on one node (each would give the same GPU "
    "to a different pod)"
)
_TWO_PLUGINS = "two device plugins on one node take turns on the socket nvidia-gpu.sock and GPUs vanish from kubelet. Remove it"
_TWO_ALLOCATORS = {
    DEVICE_PLUGIN: _TWO_PLUGINS,
    OPERATOR: _TWO_PLUGINS,
    DRA: f"{_DRA_TWICE}. Remove it (or its GPU part: resources.gpus.enabled=false in its chart)",
    GPU_CLUSTER: f"{_DRA_TWICE}, and a GPUCluster always deploys the GPU part; nvidia.com/gpu.deploy.dra-driver=false "
    "on a node keeps it off that node. Remove it",
    OPERATOR_DRA: f"{_DRA_TWICE}; its GPUCluster deploys it always with its GPU part, and nvidia.com/gpu.deploy.dra-driver=false "
    "on a node keeps it off that node. Remove the GPUCluster",
}


@dataclass(frozen=True)
class CoexistenceInputs(DeclaredInputs):
    """What the allocator check is given: a change of any of it makes it look again."""

    # The stack's nodes.
    nodes: Sequence[str] = field(metadata=declared("nodes", Change.RERUN, sorted, as_list))
    # `gpu-nodes:handOver`: the other allocators kept off those nodes while gpu-nodes takes over.
    hand_over: Sequence[str] = field(metadata=declared("handOver", Change.RERUN, sorted, as_list))
    # The nodes of groups whose GPUs NVIDIA's DRA driver (ours) allocates; a stack without one has no such
    # input (tests/golden/*.json).
    dra_nodes: Sequence[str] = field(default=(), metadata=declared("draNodes", Change.RERUN, sorted, as_list, only_when_set=True))
    # A GPU Operator past its end of support on the cluster stops the run, where a group of the stack refuses what
    # NVIDIA no longer patches (its preflight.driverAdvisories: refuse); elsewhere it is a warning. A stack without
    # such a group has no such input (tests/golden/*.json).
    refuse_unsupported: bool = field(
        default=False, metadata=declared("refuseUnsupported", Change.RERUN, read=bool, only_when_set=True)
    )


# What makes the check look again (besides what a refresh found).
RERUN_KEYS = keys(CoexistenceInputs, Change.RERUN)


def problems(
    others: Sequence[OtherAllocator],
    handed_over: Sequence[str],
    pods_on_our_nodes: Mapping[str, list[str]],
    slices: Sequence[tuple[str, str]] = (),
    unexplained: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """One line per allocator that stops the run; `pods_on_our_nodes`: handed-over ref -> its pods there;
    `slices`: (node, ResourceSlice) of the DRA driver on our nodes; `unexplained`: (node, nvidia.com/gpu)."""
    lines = []
    for other in others:
        if other.ref not in handed_over:
            lines.append(
                f"{other.what} is on the cluster: {_TWO_ALLOCATORS[other.kind]}, or keep it off this stack's nodes and "
                f"list {other.ref!r} in {HAND_OVER.key}"
            )
        elif pods_on_our_nodes.get(other.ref):
            pods = ", ".join(pods_on_our_nodes[other.ref][:5])
            lines.append(
                f"{other.what} is listed in {HAND_OVER.key} but still runs on this stack's nodes ({pods}): keep it off them "
                "first (its nodeSelector or affinity), then run again"
            )
    for node, name in slices:
        lines.append(
            f"ResourceSlice {name} publishes the GPUs of {node}, a node of this stack, for NVIDIA's DRA driver "
            f"(driver {DRA_GPU_DRIVER}): the DRA driver and the device plugin must not both hand out GPUs on one node. "
            f"Keep the DRA driver's kubelet plugin off {node} (its nodeSelector or affinity), then run again"
        )
    for node, gpus in unexplained:
        lines.append(
            f"{node} advertises {GPU_RESOURCE}: {gpus} with no device plugin pod on it (neither this stack's nor one "
            f"named above): something else registers {GPU_RESOURCE} with its kubelet (a static pod, a service on the "
            "machine, another image's DaemonSet). Remove it from the machine, then run again"
        )
    return lines


def pods_on_nodes(pods: Iterable[Mapping[str, Any]], owner_uid: str | None, nodes: Set[str]) -> list[str]:
    """`<pod> on <node>` for the pods of one DaemonSet (by owner: the chart's DaemonSets share labels) on `nodes`."""
    found = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        owned = any(ref.get("uid") == owner_uid for ref in metadata.get("ownerReferences") or [])
        node = (pod.get("spec") or {}).get("nodeName")
        if owned and node in nodes:
            found.append(f"{metadata.get('name')} on {node}")
    return sorted(found)


def read_gpu_slices(custom: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The DRA GPU driver's ResourceSlices, and a note when RBAC forbids reading them; none where
    the API server has no ResourceSlices (`spec.driver` is a field selector: k8s
    `staging/src/k8s.io/api/resource/v1/types.go`, `ResourceSliceSelectorDriver`)."""
    from kubernetes.client.exceptions import ApiException

    for version in SLICE_VERSIONS:
        try:
            found = custom.list_cluster_custom_object(
                "resource.k8s.io", version, "resourceslices", field_selector=f"spec.driver={DRA_GPU_DRIVER}"
            )
        except ApiException as error:
            if error.status == 404:
                continue
            if error.status == 403:
                return [], (
                    f"cannot list resourceslices.resource.k8s.io (403 Forbidden): NVIDIA's DRA driver is looked for by its "
                    f"DaemonSet only; grant this identity list on resourceslices to see its {DRA_GPU_DRIVER} slices too"
                )
            raise
        return list(found.get("items") or []), None
    return [], None


def read_operator_configs(custom: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The GPU Operator's ClusterPolicies and GPUClusters; none of a kind whose CRD the cluster lacks
    (no operator, or one from before v26 for GPUCluster)."""
    from kubernetes.client.exceptions import ApiException

    def listed(version: str, plural: str) -> list[dict[str, Any]]:
        try:
            return list(custom.list_cluster_custom_object("nvidia.com", version, plural).get("items") or [])
        except ApiException as error:
            if error.status != 404:
                raise
            return []

    return listed(*CLUSTER_POLICIES), listed(*GPU_CLUSTERS)


def _look(access: Mapping[str, Any], inputs: CoexistenceInputs) -> tuple[list[OtherAllocator], list[str], list[str], list[str]]:
    """What the cluster holds now: the other allocators, the lines that stop a run, what could not be
    checked, and the GPU Operator releases NVIDIA's bulletins name or its life cycle no longer (or only just)
    supports (handed_over.py): a release past its end of support stops the run where the stack refuses advisories.
    `access`: the inputs that reach the cluster (`ClusterAccess.props()`)."""
    from kubernetes import client

    api = api_client_from_props(access)
    core = client.CoreV1Api(api)
    # Raw JSON lists, paged: the client's model classes cost more than the call at fleet size (bench/profile.py).
    daemonsets = KubernetesSource(client.AppsV1Api(api).list_daemon_set_for_all_namespaces, "DaemonSet", "apps/v1").list().items
    custom = client.CustomObjectsApi(api)
    policies, clusters = read_operator_configs(custom)
    slices, note = read_gpu_slices(custom)
    others = [*allocator_daemonsets(daemonsets), *operator_policies(policies), *operator_clusters(clusters)]
    handed_over = list(inputs.hand_over)
    nodes = set(inputs.nodes)

    def pods_of(ds: Mapping[str, Any]) -> list[str]:
        metadata, spec = ds.get("metadata") or {}, ds.get("spec") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(((spec.get("selector") or {}).get("matchLabels") or {}).items()))
        list_pods = functools.partial(core.list_namespaced_pod, str(metadata.get("namespace")))
        listed = KubernetesSource(list_pods, "Pod", "v1", label_selector=selector).list().items
        return pods_on_nodes(listed, metadata.get("uid"), nodes)

    # Every device plugin DaemonSet's pods on our nodes, ours included: they explain a node's nvidia.com/gpu.
    watched = [d for d in daemonsets if _ref(d) in {o.ref for o in others} or (is_ours(d) and _runs_plugin(d))]
    pods_on_our_nodes = {_ref(d): pods_of(d) for d in watched}
    explained = {pod.rsplit(" on ", 1)[1] for ref, pods in pods_on_our_nodes.items() for pod in pods}
    node_items = KubernetesSource(core.list_node, "Node", "v1").list().items if nodes else []
    stops = problems(
        others,
        handed_over,
        pods_on_our_nodes,
        slices_in_the_way(slices, nodes, set(inputs.dra_nodes)),
        nodes_with_unexplained_gpus(node_items, nodes, explained),
    )
    advisories, unread = operator_advisories(policies, clusters)
    ended, deprecated = operator_age(policies, clusters)
    if inputs.refuse_unsupported:
        stops += [f"{line}; refused: a group of this stack sets preflight.driverAdvisories: refuse" for line in ended]
    else:
        advisories += ended
    return others, stops, [*([note] if note else []), *unread], [*advisories, *deprecated]


def slices_in_the_way(slices: Iterable[Mapping[str, Any]], nodes: Set[str], dra_nodes: Set[str]) -> list[tuple[str, str]]:
    """(node, slice) for the DRA driver's ResourceSlices on this stack's device-plugin nodes; a DRA
    group's nodes carry them by design (its kubelet plugin's, docs/dra.md)."""
    return dra_slices_on(slices, nodes - dra_nodes)


def _ref(ds: Mapping[str, Any]) -> str:
    return f"{(ds.get('metadata') or {}).get('namespace')}/{(ds.get('metadata') or {}).get('name')}"


def _runs_plugin(ds: Mapping[str, Any]) -> bool:
    pod_spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    return any(runs_device_plugin(c) for c in pod_spec.get("containers") or [])


class CoexistenceProvider(ClusterResourceProvider):
    computed = ("handedOver", "found", "unchecked", "advisories")

    def _look(self, props: Mapping[str, Any]) -> tuple[list[OtherAllocator], list[str], list[str], list[str]]:
        return _look(self.cluster_props(dict(props)), read_inputs(CoexistenceInputs, props))

    def _check(self, props: dict[str, Any]) -> dict[str, Any]:
        others, stops, unchecked, advisories = self._look(props)
        if stops:
            header = "another GPU allocator (an NVIDIA device plugin or DRA driver) would share this stack's nodes:"
            raise OtherPluginError("\n".join([header, *stops]))
        return {**props, "handedOver": [o.ref for o in others], "unchecked": unchecked, "advisories": advisories}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_="device-plugin-coexistence", outs=self._check(props))

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = any(olds.get(k) != news.get(k) for k in RERUN_KEYS) or bool(olds.get("found"))
        return DiffResult(changes=changed)

    def update_own(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**self._check(news), "found": []})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # A refresh shows an allocator that appeared since as drift; the next `pulumi up` stops on it.
        _others, stops, unchecked, advisories = self._look(props)
        return ReadResult(id_=id_, outs={**props, "found": stops, "unchecked": unchecked, "advisories": advisories})


class DevicePluginCoexistence(ClusterResource, module="gpu-nodes", name="DevicePluginCoexistence"):
    """Stops the run when another GPU allocator would share the stack's nodes (see the module docstring)."""

    found: pulumi.Output[list[str]]
    unchecked: pulumi.Output[list[str]]
    # The GPU Operator and MIG manager releases on the cluster that NVIDIA's bulletins name (handed_over.py).
    advisories: pulumi.Output[list[str]]

    def __init__(self, name: str, inputs: CoexistenceInputs, cluster: ClusterAccess, opts: pulumi.ResourceOptions | None = None):
        props = {**inputs.to_props(), "handedOver": None, "found": [], "unchecked": None, "advisories": None}
        super().__init__(CoexistenceProvider(), name, props, cluster, opts)
        # Named per cluster as Pulumi warnings of this resource at each run; an unknown value (a
        # preview before the first `up`) or Pulumi's mocks' None names nothing.
        self.advisories.apply(self._warn)

    def _warn(self, lines: list[str] | None) -> None:
        for line in lines or []:
            pulumi.log.warn(line, resource=self)
