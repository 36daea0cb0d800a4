"""What the verification Jobs and their pods say, and whose pods hold a node's GPUs: the count the
readiness check defers a busy node's Jobs by."""

from __future__ import annotations

from gpu_nodes.proof.jobs import gpu_requests, held_by_others, job_verdict, pod_story
from tests.fakes import JOBS, UNSCHEDULABLE, job, pending_pod

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"


def container(name: str, resource: str, amount: str) -> dict:
    return {"name": name, "resources": {"limits": {resource: amount}}}


def pod(containers: list[dict], init: list[dict] | None = None) -> dict:
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, "initContainers": init or []}}


def test_containers_add_up():
    requests = gpu_requests(pod([container("a", GPU, "1"), container("b", GPU, "2")]))
    assert requests == {"nvidia.com/gpu": 3}, requests


def test_an_init_container_counts_only_when_it_asks_for_more_than_the_containers():
    """The verification pod's nvidia-smi init container asks for the same GPUs as its CUDA container."""
    same = gpu_requests(pod([container("cuda", GPU, "2")], init=[container("smi", GPU, "2")]))
    more = gpu_requests(pod([container("cuda", GPU, "1")], init=[container("smi", GPU, "4")]))
    assert (same, more) == ({"nvidia.com/gpu": 2}, {"nvidia.com/gpu": 4}), (same, more)


def test_only_nvidia_resources_count_and_a_request_wins_over_a_limit():
    given = {"limits": {"cpu": "2", "nvidia.com/mig-1g.10gb": "2"}, "requests": {"nvidia.com/mig-1g.10gb": "1"}}
    requests = gpu_requests(pod([{"name": "a", "resources": given}]))
    assert requests == {"nvidia.com/mig-1g.10gb": 1}, requests


def test_a_pod_is_held_back_by_others_when_it_asks_for_more_than_is_free():
    two = pod([container("cuda", GPU, "2")])
    assert held_by_others(two, {"nvidia.com/gpu": 1})
    assert not held_by_others(two, {"nvidia.com/gpu": 2})
    assert held_by_others(pod([container("cuda", MIG, "1")]), {"nvidia.com/gpu": 4})


def test_verdicts():
    assert job_verdict({"status": {"succeeded": 1}})[0] == "succeeded"
    assert job_verdict(job(failed_reason="DeadlineExceeded")) == ("failed", "DeadlineExceeded: it failed")
    assert job_verdict({"status": {"active": 1}})[0] == "running"


def test_pending_pod_story_quotes_the_scheduler():
    assert pod_story(pending_pod()) == f"pod {JOBS[0]}-x is Pending (Unschedulable): {UNSCHEDULABLE}"


def test_failed_container_story_has_the_exit_code():
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "nvidia-smi", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}],
        },
    }
    assert pod_story(pod) == "pod p failed: container nvidia-smi exited 1 (Error)"


# What cuda-samples' vectorAdd prints when cudaMalloc fails with error 802 (an NVSwitch machine
# whose fabric manager has not trained the fabric): its fprintf of cudaGetErrorString's text.
CUDA_802 = "[Vector addition of 50000 elements]\nFailed to allocate device vector A (error code system not yet initialized)!\n"


def test_a_cuda_failure_is_told_in_cudas_own_words():
    ended = {"exitCode": 1, "reason": "Error", "message": CUDA_802}
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed",
            "initContainerStatuses": [{"name": "nvidia-smi", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            "containerStatuses": [{"name": "cuda", "state": {"terminated": ended}}],
        },
    }
    story = pod_story(pod)
    assert story is not None and story.startswith("pod p failed: container cuda exited 1 (Error)"), story
    assert "error code system not yet initialized" in story, story


def test_a_failed_init_container_is_the_story_not_the_cuda_container_that_never_ran():
    pod = {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Failed",
            "initContainerStatuses": [
                {
                    "name": "nvidia-smi",
                    "state": {
                        "terminated": {
                            "exitCode": 1,
                            "reason": "Error",
                            "message": "nvidia-smi lists 1 GPU(s); this pod was given 2",
                        }
                    },
                }
            ],
            "containerStatuses": [{"name": "cuda", "state": {"waiting": {"reason": "PodInitializing"}}}],
        },
    }
    assert pod_story(pod) == "pod p failed: container nvidia-smi exited 1 (Error) nvidia-smi lists 1 GPU(s); this pod was given 2"


def test_a_running_pod_has_no_story():
    assert pod_story({"metadata": {"name": "p"}, "status": {"phase": "Running"}}) is None
