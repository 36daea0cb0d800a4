"""Exact GPU capacity: each node must offer exactly the GPUs its group declares.

The verification Jobs ask for one or a few GPUs, so a node with 8 GPUs that registers 7 (one
lost to an XID error, which the device plugin reports unhealthy) passes them. After the plugin
is up, this resource reads the node until `status.allocatable["nvidia.com/gpu"]` equals
`gpusPerNode` x `timeSlicingReplicas`, and fails naming the node and both figures when it does
not within `verification.timeoutSeconds`. Each attempt is one GET of that node.

Not under MIG: with `single` the count is the number of MIG devices and with `mixed` the
number of GPUs outside MIG mode, both set by the MIG layout, which this program does not manage.

`read` reports the node's count as found, so `pulumi refresh` shows a GPU lost since the last
run, and `pulumi up --refresh` checks again (and fails naming the node).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.kube_client import ClusterAccess, api_client_from_props
from components.specs import GPU_RESOURCE, NodeGroupSpec

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

POLL_SECONDS = 2.0


class CapacityMismatchError(Exception):
    pass


class NodeCapacityApi(Protocol):
    def allocatable_gpus(self, node: str) -> int | None: ...


def expected_allocatable(group: NodeGroupSpec) -> int | None:
    """What each node of the group must offer; None when the MIG layout decides."""
    if group.device_plugin.mig_strategy != "none":
        return None
    return group.gpus_per_node * group.device_plugin.time_slicing_replicas


def mismatch(node: str, seen: int | None, expected: int, gpus_per_node: int, replicas: int, waited: float) -> str:
    found = "is not set (no GPU registered)" if seen is None else f"is {seen}"
    why = f"gpusPerNode {gpus_per_node}" + (f" x timeSlicingReplicas {replicas}" if replicas > 1 else "")
    return (
        f'node {node}: status.allocatable["{GPU_RESOURCE}"] {found}, expected {expected} ({why}) after {waited:.0f}s. '
        "A GPU is missing or the device plugin reports it unhealthy (an XID error, say): see the plugin's log on "
        f"that node and `kubectl describe node {node}`; if the node really has fewer GPUs, change gpusPerNode"
    )


def wait_for_capacity(
    api: NodeCapacityApi,
    node: str,
    expected: int,
    timeout_seconds: float,
    gpus_per_node: int,
    replicas: int,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Return the count once it is exactly `expected`; raise CapacityMismatchError at the deadline."""
    deadline = clock() + timeout_seconds
    while True:
        seen = api.allocatable_gpus(node)
        if seen == expected:
            return seen
        if clock() >= deadline:
            raise CapacityMismatchError(mismatch(node, seen, expected, gpus_per_node, replicas, timeout_seconds))
        sleep(POLL_SECONDS)


class KubernetesNodeCapacityApi:
    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._core = client.CoreV1Api(api)

    def allocatable_gpus(self, node: str) -> int | None:
        from kubernetes.client.exceptions import ApiException

        try:
            obj = self._core.read_node(node)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        value = ((obj.status and obj.status.allocatable) or {}).get(GPU_RESOURCE)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


# What makes a new check necessary: another node, figure, plugin or wait.
_CHECK_INPUTS = ("node", "expected", "pluginRevision", "waitSeconds")


class NodeGpuCapacityProvider(ResourceProvider):
    def _api(self, props: dict[str, Any]) -> NodeCapacityApi:
        return KubernetesNodeCapacityApi(api_client_from_props(props))

    def _check(self, props: dict[str, Any]) -> dict[str, Any]:
        # The engine hands numbers over as floats; the message must say 4, not 4.0.
        expected, gpus, replicas = (int(props[key]) for key in ("expected", "gpusPerNode", "replicas"))
        seen = wait_for_capacity(self._api(props), props["node"], expected, props["waitSeconds"], gpus, replicas)
        return {**props, "allocatable": seen}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=props["node"], outs=self._check(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in _CHECK_INPUTS if olds.get(key) != news.get(key)]
        # A refresh found another count than the one checked: check again (and fail).
        drifted = olds.get("allocatable") != news.get("expected")
        return DiffResult(changes=bool(changed) or drifted)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._check(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_=id_, outs={**props, "allocatable": self._api(props).allocatable_gpus(id_)})


class NodeGpuCapacity(Resource):
    """Succeeds once the node offers exactly the GPUs the group declares."""

    allocatable: pulumi.Output[int]

    def __init__(
        self,
        name: str,
        node: str,
        expected: int,
        group: NodeGroupSpec,
        plugin_revision: str,
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props = {
            "node": node,
            "expected": expected,
            "gpusPerNode": group.gpus_per_node,
            "replicas": group.device_plugin.time_slicing_replicas,
            # A new plugin image or config may register differently: check again.
            "pluginRevision": plugin_revision,
            "waitSeconds": group.verification.timeout_seconds,
            **cluster.props(),
            "allocatable": None,
        }
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))
        super().__init__(NodeGpuCapacityProvider(), name, props, opts)
