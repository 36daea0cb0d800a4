"""What the proof reads of the cluster, and through what: `ClusterReader` (the provider process's
shared watches, gpu_nodes/kube/cluster_view.py `ClusterView`, or a fake in tests) and `NodePods`
(the one list outside the watches, gpu_nodes/kube/job_status.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
