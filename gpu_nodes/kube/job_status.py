"""What the verification Jobs and their pods say, in the words the readiness check quotes, and
what the check deletes: failed Jobs (to run again) and a plugin pod (to re-advertise GPUs).

Pure readers over the API's objects, plus the one thin class that calls the API to delete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

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
    """A Job pod the scheduler holds back only for want of free GPUs (they are all in use)."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("reason") == "Unschedulable" and "Insufficient nvidia.com/" in condition.get("message", "")
    return False


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
