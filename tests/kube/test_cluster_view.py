"""The shared cluster view: its cache of list+watch events and its wait, with fake watches."""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gpu_nodes.errors import ClusterViewUnavailableError, WatchExpiredError
from gpu_nodes.kube.cluster_view import ClusterView, Listing

PART_OF = {"app.kubernetes.io/part-of": "gpu-nodes"}
_END = object()


class FakeSource:
    """Plays one kind's list and watch: `items` is what a list returns, `send` feeds the watch."""

    def __init__(self, *items: dict[str, Any], resource_version: str = "10"):
        self.items = list(items)
        self.resource_version = resource_version
        self.list_error: Exception | None = None
        self.lists = 0
        self.watched_from: list[str] = []
        self._events: queue.Queue[Any] = queue.Queue()

    def list(self) -> Listing:
        self.lists += 1
        if self.list_error is not None:
            raise self.list_error
        return Listing(copy.deepcopy(self.items), self.resource_version)

    def watch(self, resource_version: str) -> Iterator[dict[str, Any]]:
        self.watched_from.append(resource_version)
        while True:
            event = self._events.get()
            if event is _END:
                return
            if isinstance(event, Exception):
                raise event
            yield event

    def send(self, type_: str, obj: dict[str, Any]) -> None:
        self._events.put({"type": type_, "object": obj})

    def fail(self, error: Exception) -> None:
        """The watch breaks off with `error` (a dropped connection, say)."""
        self._events.put(error)

    def close(self) -> None:
        self._events.put(_END)


def node(name: str, rv: str = "1", **annotations: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "resourceVersion": rv, "annotations": annotations}}


def pod(name: str, namespace: str = "gpu-system", rv: str = "1", **labels: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": labels}}


def job(name: str, namespace: str = "gpu-verification", rv: str = "1", succeeded: int | None = None) -> dict[str, Any]:
    return {
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv},
        "status": {"succeeded": succeeded},
    }


class Cluster:
    def __init__(self) -> None:
        self.nodes = FakeSource(node("gpu-node-1"))
        self.pods = FakeSource(pod("plugin-a", app="plugin"))
        self.jobs = FakeSource(job("verify-1"))

    def view(self, **options: Any) -> ClusterView:
        options.setdefault("backoff", (0.01, 0.05))
        return ClusterView({"nodes": self.nodes, "pods": self.pods, "jobs": self.jobs}, server="https://fake:6443", **options)


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


@pytest.fixture
def view(cluster: Cluster) -> Iterator[ClusterView]:
    view = cluster.view()
    view.start()
    view.wait_synced(5)
    yield view
    view.stop()


def eventually(view: ClusterView, check: Any, done: Any = bool) -> Any:
    """The watch threads apply events asynchronously: wait (briefly) for them to land."""
    return view.wait_for(check, done, timeout=5)


def until(condition: Any) -> None:
    """For the fakes' own records, which no event announces: poll."""
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, "condition not met within 5s"
        time.sleep(0.01)


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def annotation(view: ClusterView, name: str) -> str | None:
    found = view.node(name)
    return None if found is None else found["metadata"]["annotations"].get("a")


def test_initial_lists_are_visible(view):
    assert view.node("gpu-node-1")["metadata"]["name"] == "gpu-node-1"
    assert names(view.pods("gpu-system", {})) == ["plugin-a"]
    assert view.job("gpu-verification", "verify-1")["kind"] == "Job"


def test_absent_objects_are_none(view):
    assert view.node("gpu-node-9") is None
    assert view.job("gpu-verification", "verify-9") is None
    assert view.pods("elsewhere", {}) == []


def test_added_object_appears(cluster, view):
    cluster.nodes.send("ADDED", node("gpu-node-2", rv="11"))
    assert eventually(view, lambda: view.node("gpu-node-2")) is not None


def test_modified_object_replaces_the_old_one(cluster, view):
    cluster.nodes.send("MODIFIED", node("gpu-node-1", rv="11", a="changed"))
    assert eventually(view, lambda: annotation(view, "gpu-node-1")) == "changed"


def test_deleted_object_disappears(cluster, view):
    cluster.jobs.send("DELETED", job("verify-1", rv="11"))
    assert eventually(view, lambda: view.job("gpu-verification", "verify-1"), lambda found: found is None) is None


def test_pods_are_filtered_by_namespace_and_labels_and_sorted_by_name(cluster, view):
    cluster.pods.send("ADDED", pod("plugin-c", app="plugin", **PART_OF))
    cluster.pods.send("ADDED", pod("plugin-b", app="plugin", **PART_OF))
    cluster.pods.send("ADDED", pod("other", app="other", **PART_OF))
    cluster.pods.send("ADDED", pod("plugin-d", namespace="elsewhere", app="plugin", **PART_OF))
    eventually(view, lambda: view.pods("elsewhere", {}))

    found = view.pods("gpu-system", {"app": "plugin", **PART_OF})

    assert names(found) == ["plugin-b", "plugin-c"]


def on(node_name: str, found: dict[str, Any]) -> dict[str, Any]:
    """The pod as the scheduler leaves it: bound to a node."""
    return {**found, "spec": {"nodeName": node_name}}


def test_pods_on_a_node_are_only_that_nodes(cluster, view):
    cluster.pods.send("ADDED", on("gpu-node-1", pod("plugin-1", app="plugin")))
    cluster.pods.send("ADDED", on("gpu-node-2", pod("plugin-2", app="plugin")))
    cluster.pods.send("ADDED", on("gpu-node-1", pod("other-1", app="other")))
    eventually(view, lambda: view.pods("gpu-system", {}, node="gpu-node-2"))

    assert names(view.pods("gpu-system", {"app": "plugin"}, node="gpu-node-1")) == ["plugin-1"]
    assert names(view.pods("gpu-system", {}, node="gpu-node-1")) == ["other-1", "plugin-1"]
    assert view.pods("elsewhere", {}, node="gpu-node-1") == []


def test_a_pod_is_found_on_its_node_once_scheduled_and_not_after_it_is_deleted(cluster, view):
    pending = pod("verify-pod", app="verify")
    cluster.pods.send("ADDED", pending)
    eventually(view, lambda: view.pods("gpu-system", {"app": "verify"}))
    assert view.pods("gpu-system", {}, node="gpu-node-1") == []

    cluster.pods.send("MODIFIED", on("gpu-node-1", pod("verify-pod", rv="2", app="verify")))
    assert names(eventually(view, lambda: view.pods("gpu-system", {"app": "verify"}, node="gpu-node-1"))) == ["verify-pod"]

    cluster.pods.send("DELETED", on("gpu-node-1", pod("verify-pod", rv="3", app="verify")))
    assert eventually(view, lambda: view.pods("gpu-system", {}, node="gpu-node-1"), lambda found: not found) == []


def test_a_jobs_pods_are_found_by_its_name_label_scheduled_or_not(cluster, view):
    job_label = {"batch.kubernetes.io/job-name": "verify-1"}
    cluster.pods.send("ADDED", pod("verify-1-a", namespace="gpu-verification", **job_label))
    cluster.pods.send("ADDED", on("gpu-node-1", pod("verify-1-b", namespace="gpu-verification", **job_label)))
    cluster.pods.send("ADDED", pod("verify-2-a", namespace="gpu-verification", **{"batch.kubernetes.io/job-name": "verify-2"}))
    eventually(view, lambda: len(view.pods("gpu-verification", {})) == 3)

    assert names(view.pods("gpu-verification", job_label)) == ["verify-1-a", "verify-1-b"]


def test_a_new_list_refiles_the_pods(cluster, view):
    """A pod deleted while the watch was down is gone from its node after the next list."""
    cluster.pods.send("ADDED", on("gpu-node-1", pod("plugin-1", app="plugin")))
    eventually(view, lambda: view.pods("gpu-system", {}, node="gpu-node-1"))
    cluster.pods.items = [on("gpu-node-2", pod("plugin-2", app="plugin"))]
    cluster.pods.send("ERROR", {"kind": "Status", "code": 410, "message": "too old resource version"})

    eventually(view, lambda: view.pods("gpu-system", {}, node="gpu-node-2"))
    assert view.pods("gpu-system", {}, node="gpu-node-1") == []


def test_managed_fields_are_not_kept(cluster, view):
    noisy = node("gpu-node-2", rv="11")
    noisy["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    cluster.nodes.send("ADDED", noisy)

    found = eventually(view, lambda: view.node("gpu-node-2"))

    assert "managedFields" not in found["metadata"]


def test_wait_for_returns_as_soon_as_an_event_makes_it_done(cluster, view):
    threading.Timer(0.1, cluster.jobs.send, ("MODIFIED", job("verify-1", rv="11", succeeded=1))).start()
    started = time.monotonic()

    found = view.wait_for(lambda: view.job("gpu-verification", "verify-1"), lambda j: j["status"]["succeeded"] == 1, 30)

    # Far sooner than the safety-net re-check (5 s): the event woke the waiter.
    assert found["status"]["succeeded"] == 1
    assert time.monotonic() - started < 2


def test_wait_for_returns_the_last_result_at_the_timeout(view):
    started = time.monotonic()

    found = view.wait_for(lambda: view.job("gpu-verification", "verify-1"), lambda j: j["status"]["succeeded"] == 1, 0.2)

    assert found["status"]["succeeded"] is None
    assert 0.2 <= time.monotonic() - started < 2


def test_wait_for_checks_again_without_events_as_a_safety_net(cluster):
    view = cluster.view(recheck_seconds=0.05)
    calls: list[float] = []

    def check() -> int:
        calls.append(time.monotonic())
        return len(calls)

    assert view.wait_for(check, lambda n: n >= 3, 5) == 3


def test_gone_event_lists_again(cluster, view):
    cluster.nodes.items = [node("gpu-node-3", rv="20")]
    cluster.nodes.resource_version = "20"
    cluster.nodes.send("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"})

    # The new list is the whole truth: gpu-node-1, deleted while unwatched, is gone too.
    assert eventually(view, lambda: view.node("gpu-node-3")) is not None
    assert view.node("gpu-node-1") is None
    assert cluster.nodes.lists == 2
    until(lambda: len(cluster.nodes.watched_from) == 2)
    assert cluster.nodes.watched_from == ["10", "20"]


def test_gone_at_watch_start_lists_again(cluster, view):
    cluster.nodes.items = [node("gpu-node-3", rv="20")]
    cluster.nodes.fail(WatchExpiredError("410 Gone"))

    assert eventually(view, lambda: view.node("gpu-node-3")) is not None
    assert cluster.nodes.lists == 2


def test_dropped_watch_resumes_from_the_last_resource_version_without_listing(cluster, view):
    cluster.pods.send("ADDED", pod("plugin-b", rv="12"))
    cluster.pods.send("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "15"}})
    cluster.pods.fail(ConnectionResetError("connection reset by peer"))

    until(lambda: len(cluster.pods.watched_from) == 2)
    assert cluster.pods.watched_from == ["10", "15"]
    assert cluster.pods.lists == 1


def test_failed_list_is_retried(cluster):
    cluster.jobs.list_error = ConnectionRefusedError("connection refused")
    view = cluster.view()
    view.start()
    try:
        time.sleep(0.1)
        cluster.jobs.list_error = None
        view.wait_synced(5)
        assert cluster.jobs.lists >= 2
    finally:
        view.stop()


def test_unreachable_server_is_named_with_the_cause(cluster):
    cluster.jobs.list_error = ConnectionRefusedError("[Errno 111] Connection refused")
    view = cluster.view()
    view.start()
    try:
        with pytest.raises(ClusterViewUnavailableError, match=r"https://fake:6443 .* list of jobs .*Connection refused"):
            view.wait_synced(0.2)
    finally:
        view.stop()


def test_stop_ends_the_watch_threads(cluster):
    view = cluster.view()
    view.start()
    view.wait_synced(5)

    view.stop()

    for thread in view._threads:
        thread.join(2)
        assert not thread.is_alive(), thread.name
