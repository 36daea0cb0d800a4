"""What the readiness check deletes, failed Jobs (to run again) and a plugin pod (to re-advertise
GPUs), who holds a node's GPUs, and the evictions of a node that changes allocator: the thin
classes that call the API (what the Jobs and their pods say is gpu_nodes/proof/jobs.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from gpu_nodes.proof.reader import NodePods

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class KubernetesNodePods:
    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._api = api
        self._core = client.CoreV1Api(api)

    def on_node(self, node: str) -> list[dict[str, Any]]:
        # What `kubectl describe node` lists as Non-terminated Pods (kubectl pkg/describe/describe.go):
        # a Succeeded or Failed pod holds nothing.
        listed = self._core.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed"
        )
        return [self._api.sanitize_for_serialization(pod) for pod in listed.items]


class RecentNodePods:
    """Lists a node's pods again only once `max_age` seconds have passed: a wait looks at its
    node again on every event of the fleet."""

    def __init__(self, pods: NodePods, max_age: float, clock: Callable[[], float] = time.monotonic):
        self._pods = pods
        self._max_age = max_age
        self._clock = clock
        self._seen: dict[str, tuple[float, list[dict[str, Any]]]] = {}

    def on_node(self, node: str) -> list[dict[str, Any]]:
        now = self._clock()
        seen = self._seen.get(node)
        if seen is None or now - seen[0] >= self._max_age:
            seen = self._seen[node] = (now, self._pods.on_node(node))
        return seen[1]


class Deleter(Protocol):
    """What the check deletes: failed Jobs (to run again), a plugin pod (to re-advertise GPUs)."""

    def delete_job(self, namespace: str, name: str) -> None: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...


class KubernetesDeleter:
    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._batch = client.BatchV1Api(api)
        self._core = client.CoreV1Api(api)

    def delete_pod(self, namespace: str, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self._core.delete_namespaced_pod(name, namespace)
        except ApiException as error:
            if error.status != 404:  # gone already: its DaemonSet makes another
                raise

    def delete_job(self, namespace: str, name: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self._batch.delete_namespaced_job(name, namespace, propagation_policy="Background")
        except ApiException as error:
            if error.status != 404:  # another node's check of a group-wide Job got there first
                raise


class Evictor(Protocol):
    """Evicts a pod as `kubectl drain` does: through the Eviction API, which honours PodDisruptionBudgets."""

    def evict(self, namespace: str, name: str) -> str | None:
        """None once the eviction is accepted (or the pod is gone); else why it was refused."""
        ...


class KubernetesEvictor:
    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._core = client.CoreV1Api(api)

    def evict(self, namespace: str, name: str) -> str | None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
        try:
            self._core.create_namespaced_pod_eviction(name, namespace, body)
        except ApiException as error:
            if error.status == 404:
                return None
            # 429: a PodDisruptionBudget allows no disruption now (kubernetes
            # pkg/registry/core/pod/storage/eviction.go, the same answer `kubectl drain` retries on).
            return f"eviction refused (HTTP {error.status} {error.reason})"
        return None
