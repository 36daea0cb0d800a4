"""What the proof reads of the cluster, and through what: `ClusterReader` (the provider process's
shared watches, gpu_nodes/kube/cluster_view.py `ClusterView`, or a fake in tests), `NodePods`
(the one list outside the watches, gpu_nodes/kube/job_status.py) and `PodOutputs` (logs and the
exporter's page, gpu_nodes/kube/pod_outputs.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class ClusterReader(Protocol):
    """What our providers read of the cluster: the process's shared watches (`ClusterView`),
    or a fake in tests."""

    def node(self, name: str) -> dict[str, Any] | None: ...

    def nodes_labelled(self, labels: Mapping[str, str]) -> list[dict[str, Any]]: ...

    def pods(self, namespace: str, labels: Mapping[str, str], node: str | None = None) -> list[dict[str, Any]]: ...

    def job(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def resource_slices(self, node: str) -> list[dict[str, Any]]:
        """The ResourceSlices of NVIDIA's DRA driver (`gpu.nvidia.com`) that name `node`; read only for DRA groups."""
        ...

    def wait_for(self, check: Callable[[], T], done: Callable[[T], bool], timeout: float) -> T: ...


class NodePods(Protocol):
    """The pods bound to a node that hold resources there, any namespace (not in our watches)."""

    def on_node(self, node: str) -> list[dict[str, Any]]: ...


class PodOutputs(Protocol):
    """What the proof reads of a pod beyond its object: a container's log (DCGM's and NCCL's reports) and a page
    its port serves (the exporter's metrics), both through the API server; outside the watches."""

    def log(self, namespace: str, pod: str, container: str) -> str | None:
        """The container's log; None when the API server cannot give it (the pod or its node gone)."""
        ...

    def scrape(self, namespace: str, pod: str, port: int, path: str) -> Scraped:
        """The page the pod serves at `port` and `path`, through the API server's pod proxy."""
        ...


@dataclass(frozen=True)
class Scraped:
    """A page a pod served, or why it could not be read."""

    text: str | None
    error: str | None = None
