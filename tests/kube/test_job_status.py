"""The pods that hold a node's GPUs, listed again only once the last list is old."""

from __future__ import annotations

from gpu_nodes.kube.job_status import RecentNodePods


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
