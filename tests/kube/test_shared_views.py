"""The process's shared views: one of the Nodes per set of credentials, one of each group's pods and Jobs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes.client import ApiClient

from gpu_nodes.errors import ClusterViewUnavailableError
from gpu_nodes.kube import shared_views
from gpu_nodes.kube.cluster_source import node_sources, own_sources
from gpu_nodes.kube.cluster_view import ClusterView
from gpu_nodes.resources.node_builders import node_target
from gpu_nodes.vocabulary import OWN_SELECTOR, group_selector
from tests.fake_watches import FakeApi
from tests.specs import group_spec

A100, H100 = group_selector("a100"), group_selector("h100")


def pod(name: str, group: str, node: str = "n1") -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": "gpu-nodes", "app.kubernetes.io/instance": group}
    return {"metadata": {"name": name, "namespace": "nvidia-device-plugin", "labels": labels}, "spec": {"nodeName": node}}


def job(name: str, group: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": "gpu-nodes", "app.kubernetes.io/instance": group}
    return {"metadata": {"name": name, "namespace": "gpu-verification", "labels": labels}, "status": {}}


def node(name: str, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations}}


@pytest.fixture
def api() -> FakeApi:
    api = FakeApi()
    api.kinds["nodes"].put(node("n1"))
    return api


@pytest.fixture
def fake_connect(monkeypatch, api) -> Iterator[list[tuple[str | None, str | None, str | None]]]:
    monkeypatch.setattr(shared_views, "connect", api.connect)
    yield api.connections
    shared_views.forget_shared_views()


def until(condition: Any) -> None:
    """For what no event announces (a waiter that has looked once): poll."""
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, "condition not met within 5s"
        time.sleep(0.01)


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]


def test_shared_returns_one_synced_view_per_credentials(fake_connect):
    first = shared_views.shared_view("/kubeconfig", "ctx")

    assert shared_views.shared_view("/kubeconfig", "ctx") is first
    assert first.node("n1") is not None
    assert shared_views.shared_view("/kubeconfig", "other") is not first
    assert fake_connect == [
        ("/kubeconfig", "ctx", None),
        ("/kubeconfig", "ctx", OWN_SELECTOR),
        ("/kubeconfig", "other", None),
        ("/kubeconfig", "other", OWN_SELECTOR),
    ]


def test_shared_gives_concurrent_first_callers_the_same_view(fake_connect):
    views: list[ClusterView] = []
    threads = [threading.Thread(target=lambda: views.append(shared_views.shared_view(None, None, A100))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert len(views) == 8
    assert all(view is views[0] for view in views)
    assert fake_connect == [(None, None, None), (None, None, A100)]


def test_shared_raises_when_the_server_does_not_answer_in_time(monkeypatch, api, fake_connect):
    monkeypatch.setattr(shared_views, "sync_timeout_seconds", 0.2)
    api.kinds["nodes"].list_error = ConnectionRefusedError("connection refused")

    with pytest.raises(ClusterViewUnavailableError, match="list of nodes"):
        shared_views.shared_view(None, None, A100)


def test_each_groups_view_keeps_only_its_groups_pods_and_jobs(api, fake_connect):
    """Two stacks' groups in one cluster: neither view holds the other's objects."""
    api.kinds["pods"].put(pod("plugin-a100-n1", "a100"))
    api.kinds["pods"].put(pod("plugin-h100-n1", "h100"))
    api.kinds["jobs"].put(job("verify-a100-n1", "a100"))
    api.kinds["jobs"].put(job("verify-h100-n1", "h100"))

    a100, h100 = shared_views.shared_view(None, None, A100), shared_views.shared_view(None, None, H100)

    assert a100 is not h100
    assert names(a100.pods("nvidia-device-plugin", {})) == ["plugin-a100-n1"], "group a100's view"
    assert names(h100.pods("nvidia-device-plugin", {})) == ["plugin-h100-n1"], "group h100's view"
    assert a100.job("gpu-verification", "verify-h100-n1") is None, "group a100's view holds h100's Job"
    assert h100.job("gpu-verification", "verify-a100-n1") is None, "group h100's view holds a100's Job"


def test_a_pod_of_another_group_made_later_stays_out_of_the_view(api, fake_connect):
    a100 = shared_views.shared_view(None, None, A100)
    api.kinds["pods"].put(pod("plugin-h100-n2", "h100", node="n2"))
    api.kinds["pods"].put(pod("plugin-a100-n2", "a100", node="n2"))

    found = a100.wait_for(lambda: a100.pods("nvidia-device-plugin", {}, node="n2"), bool, 5)

    assert names(found) == ["plugin-a100-n2"], "pods on node n2 in group a100's view"


def test_the_groups_of_one_process_share_one_view_of_the_nodes(api, fake_connect):
    a100, h100 = shared_views.shared_view(None, None, A100), shared_views.shared_view(None, None, H100)

    assert a100.node("n1") is h100.node("n1") is not None, "node n1"
    assert fake_connect == [(None, None, None), (None, None, A100), (None, None, H100)]
    assert len(api.kinds["nodes"].sources) == 1


def test_a_node_change_wakes_the_waiters_of_a_groups_view(api, fake_connect):
    # Neither the safety-net re-check nor the wait's timeout (60 s each) comes before the join gives
    # up (5 s): only the node's event, delivered to the Nodes' view, can end the wait in time.
    nodes = api.view(None, recheck_seconds=60)
    view = api.view(A100, nodes, recheck_seconds=60)
    nodes.start()
    view.start()
    checks: list[dict[str, Any] | None] = []
    found: list[dict[str, Any] | None] = []

    def check() -> dict[str, Any] | None:
        checks.append(view.node("n1"))
        return checks[-1]

    def changed(seen: dict[str, Any] | None) -> bool:
        return seen is not None and seen["metadata"]["annotations"].get("a") == "changed"

    waiter = threading.Thread(target=lambda: found.append(view.wait_for(check, changed, 60)))
    try:
        view.wait_synced(5)
        waiter.start()
        until(lambda: len(checks) >= 1)
        api.kinds["nodes"].put(node("n1", a="changed"))
        waiter.join(5)

        assert not waiter.is_alive(), "the wait for node n1 to change went on after its event"
        assert found and changed(found[0]), ("node n1", found)
    finally:
        view.stop()
        nodes.stop()
        waiter.join(5)


@pytest.mark.parametrize(
    "props, selector",
    [
        (node_target(group_spec("a100"), "a100-node-1").to_props(), A100),
        (node_target(group_spec("h100"), "h100-node-1").to_props(), H100),
        ({"pluginSelector": {"app.kubernetes.io/name": "nvidia-device-plugin"}}, OWN_SELECTOR),
    ],
)
def test_a_resource_reads_the_view_of_its_group(props, selector):
    assert shared_views.watched_selector(props) == selector, props.get("node")


class RecordingPool:
    """urllib3's PoolManager as the client's REST layer calls it (kubernetes/client/rest.py,
    `RESTClientObject.request`: the client up to 36 passes a GET's query as `fields`, from 37 in the
    URL), answering every call with an empty list and keeping each call's query."""

    def __init__(self) -> None:
        self.queries: list[dict[str, list[str]]] = []

    def request(self, method: str, url: str, fields: Any = None, **kwargs: Any) -> Any:
        query = parse_qs(urlsplit(url).query)
        for key, value in fields or []:
            query.setdefault(key, []).append(str(value))
        self.queries.append(query)
        body = json.dumps({"items": [], "metadata": {"resourceVersion": "1"}}).encode()
        # What an unread urllib3 response offers the readers (_preload_content=False) and the REST layer.
        return type("Raw", (), {"status": 200, "reason": "OK", "data": body, "headers": {}, "release_conn": lambda self: None})()


class RecordingClient(ApiClient):
    """An API client whose every call is answered with an empty list, each call's query kept."""

    def __init__(self) -> None:
        super().__init__()
        self.recorder = RecordingPool()
        self.rest_client.pool_manager = self.recorder

    @property
    def queries(self) -> list[dict[str, list[str]]]:
        return self.recorder.queries


@pytest.mark.parametrize("kind", ["pods", "jobs"])
def test_a_groups_list_asks_the_api_server_for_the_groups_objects_only(kind):
    client = RecordingClient()

    own_sources(client, A100)[kind].list()

    assert [q.get("labelSelector") for q in client.queries] == [[A100]], kind


def test_the_nodes_are_listed_without_a_selector():
    client = RecordingClient()

    node_sources(client)["nodes"].list()

    assert [q.get("labelSelector") for q in client.queries] == [None]


def gpu_slice(name: str, node: str) -> dict[str, Any]:
    spec = {"driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}
    return {"metadata": {"name": name}, "spec": spec}


def test_a_dra_groups_view_reads_the_drivers_slices_of_its_node(api, fake_connect):
    api.kinds["resourceslices"].put(gpu_slice("n1-gpu.nvidia.com-x", "n1"))
    api.kinds["resourceslices"].put(gpu_slice("n2-gpu.nvidia.com-y", "n2"))

    view = shared_views.shared_view(None, None, A100, dra=True)

    assert names(view.resource_slices("n1")) == ["n1-gpu.nvidia.com-x"], "slices of node n1 in group a100's view"


def test_a_device_plugin_group_never_asks_for_resource_slices(api, fake_connect):
    """A cluster without DRA (before 1.34) has no resourceslices to list: such a list would keep the view from syncing."""
    api.kinds["resourceslices"].list_error = ConnectionRefusedError("the server could not find the requested resource")

    shared_views.shared_view(None, None, A100)

    assert fake_connect == [(None, None, None), (None, None, A100)], "views made for a device-plugin group"


def test_a_slice_published_later_wakes_the_groups_waiters(api, fake_connect):
    view = shared_views.shared_view(None, None, A100, dra=True)
    api.kinds["resourceslices"].put(gpu_slice("n3-gpu.nvidia.com-z", "n3"))

    found = view.wait_for(lambda: view.resource_slices("n3"), bool, 5)

    assert names(found) == ["n3-gpu.nvidia.com-z"], "slices of node n3 after it published"


def test_a_dra_targets_inputs_choose_the_view_with_slices(api, fake_connect):
    props = node_target(group_spec(name="a100", allocator="dra"), "n1").to_props()

    shared_views.cluster_view_from_props(props)

    assert fake_connect[-2:] == [(None, None, shared_views.SLICES), (None, None, A100)], "views made for a DRA group"
