"""What the verification Jobs and their pods say, in the words the readiness check quotes, and
what the check deletes: failed Jobs (to run again) and a plugin pod (to re-advertise GPUs).

Pure readers over the API's objects, plus the thin classes that call the API: one deletes, one
lists the pods that hold a node's resources.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from gpu_nodes.vocabulary import GPU_RESOURCE_PREFIX

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


def job_verdict(job: dict[str, Any]) -> tuple[str, str]:
    """("succeeded" | "failed" | "running", detail) from a Job object."""
    status = job.get("status") or {}
    if (status.get("succeeded") or 0) >= 1:
        return "succeeded", f"{status['succeeded']} pod(s) succeeded"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            return "failed", f"{condition.get('reason', 'Failed')}: {condition.get('message', '')}".rstrip(": ")
    return "running", f"active {status.get('active') or 0}, failed {status.get('failed') or 0}"


def pod_story(pod: dict[str, Any]) -> str | None:
    """Why a pod of a Job is not done, in the scheduler's or kubelet's words; None if fine."""
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"pod {name} is Pending ({condition.get('reason', 'Unschedulable')}): {condition.get('message', '')}"
    # Init containers first: one that failed is why the others never ran.
    for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        state = container.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            waiting = state["waiting"]
            reason = f"{waiting['reason']} {waiting.get('message', '')}".rstrip()
            return f"pod {name} is {phase}, container {container['name']} waiting: {reason}"
        if "terminated" in state and state["terminated"].get("exitCode", 0) != 0:
            ended = state["terminated"]
            return (
                f"pod {name} failed: container {container['name']} exited {ended.get('exitCode')} "
                f"({ended.get('reason', '')}) {ended.get('message', '')}".rstrip()
            )
    if phase == "Pending":
        return f"pod {name} is Pending"
    return None


def waits_for_gpus(pod: dict[str, Any]) -> bool:
    """A Job pod the scheduler holds back only for want of free GPUs: in use, or not there yet
    (kubelet takes a node's GPUs off allocatable while its device plugin restarts)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("reason") == "Unschedulable" and "Insufficient nvidia.com/" in condition.get("message", "")
    return False


def gpu_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's `nvidia.com/*` resources as the scheduler counts them: the larger of its
    containers' sum and its largest init container (kubernetes
    staging/src/k8s.io/component-helpers/resource/helpers.go, PodRequests). An extended
    resource's request is its limit when only the limit is given (the API server defaults it)."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    for container in spec.get("containers") or []:
        for resource, amount in _gpu_amounts(container).items():
            total[resource] = total.get(resource, 0) + amount
    for container in spec.get("initContainers") or []:
        for resource, amount in _gpu_amounts(container).items():
            total[resource] = max(total.get(resource, 0), amount)
    return total


def _gpu_amounts(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    amounts = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: int(value) for name, value in amounts.items() if name.startswith(GPU_RESOURCE_PREFIX)}


def held_by_others(pod: Mapping[str, Any], free: Mapping[str, int]) -> bool:
    """Whether the pod asks for more of a GPU resource than is left to it (`free`: the node's
    allocatable less what pods other than our Jobs' hold)."""
    return any(amount > free.get(resource, 0) for resource, amount in gpu_requests(pod).items())


class NodePods(Protocol):
    """The pods bound to a node that hold resources there, any namespace (not in our watches)."""

    def on_node(self, node: str) -> list[dict[str, Any]]: ...


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
