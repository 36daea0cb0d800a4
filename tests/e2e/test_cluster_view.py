"""The shared cluster view against the local API server: its initial lists, then changes the watches deliver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gpu_nodes.kube.cluster_view import ClusterView
from gpu_nodes.kube.shared_views import forget_shared_views, shared_view
from tests.e2e.conftest import NODES, LocalEnv

pytestmark = pytest.mark.cluster

NAMESPACE = "default"
ANNOTATION = "gpu-nodes.dev/cluster-view-e2e"
PART_OF = {"app.kubernetes.io/part-of": "gpu-nodes"}
# Generous: a watch event takes milliseconds, but the machine may be busy building something.
TIMEOUT = 60


@pytest.fixture(scope="module")
def view(local: LocalEnv) -> Iterator[ClusterView]:
    started = time.monotonic()
    view = shared_view(local.env["KUBECONFIG"], None)
    print(f"\nshared_view: first sync in {time.monotonic() - started:.2f}s")
    yield view
    forget_shared_views()


def apply(local: LocalEnv, manifest: dict[str, Any]) -> None:
    local.run("kubectl", "apply", "-f", "-", stdin=json.dumps(manifest), timeout=120)


def pod_manifest(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]


def test_sees_an_existing_node(view):
    found = view.node(NODES[0])

    assert found is not None
    assert found["kind"] == "Node"
    assert found["metadata"]["name"] == NODES[0]


def test_runs_one_thread_per_kind(view):
    names = sorted(t.name for t in threading.enumerate() if t.name.startswith("cluster-view-"))

    assert names == ["cluster-view-jobs", "cluster-view-nodes", "cluster-view-pods"]


def test_sees_a_node_annotated_with_kubectl(local, view):
    value = f"v{time.time_ns()}"
    local.kubectl("annotate", "node", NODES[0], f"{ANNOTATION}={value}", "--overwrite")
    try:
        started = time.monotonic()
        seen = view.wait_for(
            lambda: ((view.node(NODES[0]) or {})["metadata"].get("annotations") or {}).get(ANNOTATION),
            lambda found: found == value,
            TIMEOUT,
        )
        print(f"\nannotation seen after {time.monotonic() - started:.3f}s")
        assert seen == value
    finally:
        local.kubectl("annotate", "node", NODES[0], f"{ANNOTATION}-", check=False)


def test_sees_a_labelled_job_and_its_pod_come_and_go(local, view):
    name = "cluster-view-e2e"
    labels = {**PART_OF, "app.kubernetes.io/name": name}
    template = {"metadata": {"labels": labels}, "spec": {**pod_manifest(name, labels)["spec"], "restartPolicy": "Never"}}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"backoffLimit": 0, "template": template},
    }
    apply(local, job)
    try:
        found = view.wait_for(lambda: view.job(NAMESPACE, name), lambda j: j is not None, TIMEOUT)
        assert found is not None, local.explain(f"Job {name} not seen")
        pods = view.wait_for(lambda: view.pods(NAMESPACE, {"batch.kubernetes.io/job-name": name}), bool, TIMEOUT)
        assert pods, local.explain(f"no pod of Job {name} seen")

        local.kubectl("delete", "job", name, "-n", NAMESPACE, "--cascade=foreground", "--wait=true")

        left = view.wait_for(
            lambda: (view.job(NAMESPACE, name), view.pods(NAMESPACE, {"batch.kubernetes.io/job-name": name})),
            lambda seen: seen == (None, []),
            TIMEOUT,
        )
        assert left == (None, []), local.explain(f"Job {name} or its pods still seen: {left}")
    finally:
        local.kubectl("delete", "job", name, "-n", NAMESPACE, "--ignore-not-found", "--cascade=foreground", check=False)


def test_does_not_see_pods_without_our_label(local, view):
    foreign, ours = "cluster-view-e2e-foreign", "cluster-view-e2e-ours"
    apply(local, pod_manifest(foreign, {"app.kubernetes.io/name": foreign}))
    apply(local, pod_manifest(ours, PART_OF))
    try:
        # Created after the foreign pod: once ours is seen, the foreign one would have been too.
        seen = view.wait_for(lambda: names(view.pods(NAMESPACE, {})), lambda found: ours in found, TIMEOUT)
        assert seen == [ours]
    finally:
        local.kubectl("delete", "pod", foreign, ours, "-n", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)
