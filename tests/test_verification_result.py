"""Waiting for a verification Job, and the reason given when it does not succeed."""

from __future__ import annotations

import pytest

from components.verification_result import (
    VerificationFailedError,
    VerificationResultProvider,
    job_verdict,
    pod_story,
    verify,
    wait_for_job,
)
from tests.fakes import FakeClock

UNSCHEDULABLE = (
    "0/4 nodes are available: 1 node(s) had untolerated taint {example.com/dedicated: other-team}, "
    "3 node(s) didn't match Pod's node affinity/selector."
)


def pending_pod(name: str = "gpu-verify-x-abcde") -> dict:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": UNSCHEDULABLE}
    return {"metadata": {"name": name}, "status": {"phase": "Pending", "conditions": [condition]}}


def failed_job(reason: str = "DeadlineExceeded", message: str = "Job was active longer than specified deadline") -> dict:
    return {"status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": reason, "message": message}]}}


class FakeJobs:
    """Plays a Job's life: one (job, pods) snapshot per poll, the last one repeated."""

    def __init__(self, *snapshots: tuple[dict, list[dict]]):
        self.snapshots = list(snapshots)
        self.polls = 0
        self.deleted: list[str] = []

    def _now(self) -> tuple[dict, list[dict]]:
        return self.snapshots[min(self.polls, len(self.snapshots) - 1)]

    def read_job(self, namespace: str, name: str) -> dict | None:
        return None if name in self.deleted else self._now()[0]

    def delete_job(self, namespace: str, name: str) -> None:
        self.deleted.append(name)

    def list_pods(self, namespace: str, job: str) -> list[dict]:
        pods = self._now()[1]
        self.polls += 1
        return pods


def test_verdicts():
    assert job_verdict({"status": {"succeeded": 1}})[0] == "succeeded"
    assert job_verdict(failed_job()) == ("failed", "DeadlineExceeded: Job was active longer than specified deadline")
    assert job_verdict({"status": {"active": 1}})[0] == "running"


def test_pending_pod_story_quotes_the_scheduler():
    assert pod_story(pending_pod()) == f"pod gpu-verify-x-abcde is Pending (Unschedulable): {UNSCHEDULABLE}"


def test_failed_container_story_has_the_exit_code():
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "nvidia-smi", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}],
        },
    }
    assert pod_story(pod) == "pod p failed: container nvidia-smi exited 1 (Error)"


def test_a_running_pod_has_no_story():
    assert pod_story({"metadata": {"name": "p"}, "status": {"phase": "Running"}}) is None


def test_success_returns_a_summary():
    clock = FakeClock()
    jobs = FakeJobs(({"status": {"active": 1}}, []), ({"status": {"succeeded": 1}}, []))
    assert wait_for_job(jobs, "ns", "job", 60, clock, clock.sleep) == "1 pod(s) succeeded"


def test_deadline_failure_keeps_the_pending_reason_seen_before():
    """At its deadline the Job controller deletes the pod; the story seen earlier is kept."""
    clock = FakeClock()
    jobs = FakeJobs(({"status": {"active": 1}}, [pending_pod()]), (failed_job(), []))
    with pytest.raises(VerificationFailedError) as caught:
        wait_for_job(jobs, "gpu-verification", "gpu-verify-x", 60, clock, clock.sleep)
    message = str(caught.value)
    assert message.startswith("verification Job gpu-verification/gpu-verify-x failed (DeadlineExceeded"), message
    assert "is Pending (Unschedulable): 0/4 nodes are available: 1 node(s) had untolerated taint" in message, message


def test_our_own_timeout_says_what_the_pods_are_doing():
    clock = FakeClock()
    jobs = FakeJobs(({"status": {"active": 1}}, [pending_pod()]))
    with pytest.raises(VerificationFailedError, match=r"did not succeed within 10s .*untolerated taint"):
        wait_for_job(jobs, "ns", "job", 10, clock, clock.sleep)


def test_no_pod_at_all_is_said_too():
    clock = FakeClock()
    with pytest.raises(VerificationFailedError, match="no pod was created"):
        wait_for_job(FakeJobs(({"status": {}}, [])), "ns", "job", 4, clock, clock.sleep)


def test_a_replaced_job_is_waited_for_again():
    old = {"namespace": "ns", "job": "j", "jobUid": "uid-1", "timeoutSeconds": 60, "kubeconfig": "a"}
    provider = VerificationResultProvider()
    assert provider.diff("ns/j", old, {**old, "jobUid": "uid-2"}).changes
    assert not provider.diff("ns/j", old, {**old, "kubeconfig": "rotated"}).changes


def test_a_failed_job_is_deleted_so_that_it_can_run_again():
    jobs = FakeJobs((failed_job(), [pending_pod()]))
    props = {"namespace": "ns", "job": "j", "timeoutSeconds": 0}
    with pytest.raises(VerificationFailedError, match="pulumi up --refresh"):
        verify(jobs, props)
    assert jobs.deleted == ["j"], jobs.deleted


def test_a_missing_job_says_how_to_recreate_it():
    jobs = FakeJobs(({"status": {}}, []))
    jobs.deleted.append("j")
    with pytest.raises(VerificationFailedError, match="does not exist .* run `pulumi up --refresh`"):
        wait_for_job(jobs, "ns", "j", 10)
