"""What the verification Jobs and their pods say, in the words the readiness check quotes, what
GPUs a pod asks for, and which pods a node sheds when its group changes allocator.

Pure readers over the API's objects (gpu_nodes/kube/job_status.py calls the API).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpu_nodes.vocabulary import GPU_RESOURCE_PREFIX, PART_OF, PART_OF_LABEL


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


def holds_gpus_through(pod: Mapping[str, Any], dra: bool) -> bool:
    """Whether someone else's pod holds GPUs on its node through that allocator: the device plugin's
    `nvidia.com/*` resources, or (`dra`) ResourceClaims: its own, or the one the scheduler made for
    its plain `nvidia.com/gpu` request where a DeviceClass serves that name (`status.extendedResourceClaimStatus`,
    Kubernetes `staging/src/k8s.io/api/core/v1/types.go`, `PodExtendedResourceClaimStatus`). Ours (the
    plugin's pods, our Jobs') are not."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(PART_OF_LABEL) == PART_OF:
        return False
    if dra:
        return bool((pod.get("spec") or {}).get("resourceClaims")) or _served_by_dra(pod)
    return bool(gpu_requests(pod)) and not _served_by_dra(pod)


def _served_by_dra(pod: Mapping[str, Any]) -> bool:
    """A plain GPU request the scheduler gave a DRA device (a DeviceClass's extendedResourceName)."""
    return bool(((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))


def to_drain(pods: Sequence[Mapping[str, Any]], old_dra: bool) -> list[tuple[str, str]]:
    """(namespace, name) of the pods that hold a node's GPUs through the allocator its group leaves:
    the new one would hand out the same GPUs again (NVIDIA refuses both allocators on one node)."""
    found = [p for p in pods if holds_gpus_through(p, old_dra)]
    return sorted((str(p["metadata"].get("namespace")), str(p["metadata"]["name"])) for p in found)


def failed_containers(pod: Mapping[str, Any]) -> list[str]:
    """The pod's containers (init containers first) that ended with a nonzero exit code."""
    status = pod.get("status") or {}
    ended = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return [c["name"] for c in ended if ((c.get("state") or {}).get("terminated") or {}).get("exitCode", 0) != 0]


def finished_pod(pods: Sequence[Mapping[str, Any]]) -> str | None:
    """The name of a Job's newest pod that has ended (Succeeded or Failed), whose log holds the Job's report."""
    ended = [p for p in pods if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")]
    if not ended:
        return None
    newest = max(ended, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""))
    return str(newest["metadata"]["name"])
