"""Whose pods hold a node's GPUs: the count the readiness check defers a busy node's Jobs by."""

from __future__ import annotations

from gpu_nodes.kube.job_status import RecentNodePods, gpu_requests, held_by_others

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


class CountingPods:
    def __init__(self) -> None:
        self.calls = 0

    def on_node(self, node: str) -> list[dict]:
        self.calls += 1
        return [{"metadata": {"name": f"{node}-{self.calls}"}}]


def test_a_nodes_pods_are_listed_again_only_once_they_are_old():
    now = [100.0]
    source = CountingPods()
    recent = RecentNodePods(source, max_age=5.0, clock=lambda: now[0])
    first = recent.on_node("n1")
    now[0] += 4.9
    assert recent.on_node("n1") == first and source.calls == 1, source.calls
    now[0] += 0.1
    assert recent.on_node("n1") != first and source.calls == 2, source.calls
