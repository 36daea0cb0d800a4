"""Wait for a verification Job and, when it does not succeed, say why.

pulumi-kubernetes' own Job await reports only "failed to initialize" and the Job's condition
(e.g. DeadlineExceeded). An operator needs the pod's story: Pending because no node
tolerates it or no node has free `nvidia.com/gpu`, or a container that failed. So the Jobs
are registered with `pulumi.com/skipAwait` and this resource does the waiting, remembering
what the pods looked like while the Job ran (the Job controller deletes them at its deadline).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import pulumi
import pulumi_kubernetes as k8s
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

from components.kube_client import ClusterAccess, api_client_from_props

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

POLL_SECONDS = 2.0
# The Job's own activeDeadlineSeconds fires first; this grace lets us read its verdict.
GRACE_SECONDS = 30


class VerificationFailedError(Exception):
    pass


class JobApi(Protocol):
    def read_job(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_pods(self, namespace: str, job: str) -> list[dict[str, Any]]: ...

    def delete_job(self, namespace: str, name: str) -> None: ...


RERUN_HINT = "The Job was deleted so that it runs again: fix the cause, then run `pulumi up --refresh`."


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
    """Why a pod of the Job is not done, in the scheduler's or kubelet's words; None if fine."""
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"pod {name} is Pending ({condition.get('reason', 'Unschedulable')}): {condition.get('message', '')}"
    for container in status.get("containerStatuses") or []:
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


def wait_for_job(
    api: JobApi,
    namespace: str,
    name: str,
    timeout_seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Return a summary when the Job succeeds; raise VerificationFailedError with the pods' story."""
    deadline = clock() + timeout_seconds
    story = ""
    while True:
        job = api.read_job(namespace, name)
        if job is None:
            raise VerificationFailedError(
                f"verification Job {namespace}/{name} does not exist (deleted after a failed run?): "
                "run `pulumi up --refresh` to create it again"
            )
        verdict, detail = job_verdict(job)
        if verdict == "succeeded":
            return detail
        stories = [s for s in (pod_story(p) for p in api.list_pods(namespace, name)) if s]
        story = "; ".join(stories) or story
        if verdict == "failed" or clock() >= deadline:
            what = f"failed ({detail})" if verdict == "failed" else f"did not succeed within {timeout_seconds:.0f}s ({detail})"
            missing = "no pod was created" if verdict == "running" else "its pods are gone"
            raise VerificationFailedError(f"verification Job {namespace}/{name} {what}; {story or missing}")
        sleep(POLL_SECONDS)


class KubernetesJobApi:
    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._client = api
        self._batch = client.BatchV1Api(self._client)
        self._core = client.CoreV1Api(self._client)

    def read_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            job: dict[str, Any] = self._client.sanitize_for_serialization(self._batch.read_namespaced_job(name, namespace))
            return job
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def delete_job(self, namespace: str, name: str) -> None:
        self._batch.delete_namespaced_job(name, namespace, propagation_policy="Background")

    def list_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        pods = self._core.list_namespaced_pod(namespace, label_selector=f"batch.kubernetes.io/job-name={job}")
        items: list[dict[str, Any]] = self._client.sanitize_for_serialization(pods).get("items", [])
        return items


def verify(api: JobApi, props: dict[str, Any]) -> str:
    """Wait for the Job; a failed one is deleted, so that fixing the cause and refreshing runs it again."""
    try:
        return wait_for_job(api, props["namespace"], props["job"], props["timeoutSeconds"] + GRACE_SECONDS)
    except VerificationFailedError as failure:
        if api.read_job(props["namespace"], props["job"]) is None:
            raise
        api.delete_job(props["namespace"], props["job"])
        raise VerificationFailedError(f"{failure} {RERUN_HINT}") from None


# What makes a new wait necessary: another Job object, or another timeout.
_WAIT_INPUTS = ("namespace", "job", "jobUid", "timeoutSeconds")


class VerificationResultProvider(ResourceProvider):
    def _api(self, props: dict[str, Any]) -> JobApi:
        return KubernetesJobApi(api_client_from_props(props))

    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        return {**props, "succeeded": True, "summary": verify(self._api(props), props)}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['namespace']}/{props['job']}", outs=self._wait(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in _WAIT_INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._wait(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # A verdict, not a live object: the Job resource itself shows drift on refresh.
        return ReadResult(id_=id_, outs=props)


class VerificationResult(Resource):
    """Succeeds once its Job has; fails with the pods' story otherwise."""

    succeeded: pulumi.Output[bool]
    summary: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        job: k8s.batch.v1.Job,
        namespace: str,
        job_name: str,
        timeout_seconds: int,
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props = {
            "namespace": namespace,
            "job": job_name,
            "jobUid": job.metadata.apply(lambda m: m.uid if m else None),
            "timeoutSeconds": timeout_seconds,
            **cluster.props(),
            "succeeded": None,
            "summary": None,
        }
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(depends_on=[job], additional_secret_outputs=["kubeconfig"])
        )
        super().__init__(VerificationResultProvider(), name, props, opts)
