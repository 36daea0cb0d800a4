"""What the readiness check and the taints' refresh read, found through their group's own view.

The objects are labelled as our manifests label them (the plugin DaemonSet's pod template, the
verification Job and its pod template); a view is asked for the group's selector only
(`shared_views.watched_selector`), from a fake API server that applies it as the API server does
(tests/fake_watches.py). Another stack's group has the same objects on the same cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.kube import shared_views
from gpu_nodes.kube.cluster_view import ClusterView
from gpu_nodes.manifests.device_plugin import daemonset_manifest
from gpu_nodes.manifests.node_labels import label_patch
from gpu_nodes.manifests.verification import VerificationJob, verification_jobs
from gpu_nodes.proof.checklist import PASS
from gpu_nodes.proof.judgement import Proof, judge
from gpu_nodes.proof.target import NodeTarget
from gpu_nodes.providers.taints import NodeTaintsProvider
from gpu_nodes.resources.node_builders import expected_allocatable, node_target
from gpu_nodes.vocabulary import GATE, JOB_NAME_LABEL
from tests.fake_watches import FakeApi
from tests.fakes import plugin_pod
from tests.specs import group_spec

OURS, THEIRS = group_spec("a100"), group_spec("h100")
NODE = "a100-node-1"
# When the looks are taken: after the plugin pods settled.
NOW = datetime(2026, 12, 1, 11, tzinfo=UTC).timestamp()


def gpu_node(spec: NodeGroupSpec, name: str) -> dict[str, Any]:
    """The node as the group leaves it: labelled, tainted and gated, Ready with its GPUs."""
    gpus = str(expected_allocatable(spec))
    return {
        "metadata": {"name": name, "labels": label_patch(spec, name)["labels"]},
        "spec": {"taints": [t.to_k8s() for t in (*spec.taints, GATE)]},
        "status": {
            "allocatable": {"cpu": "8", "nvidia.com/gpu": gpus},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def group_plugin_pod(spec: NodeGroupSpec, node: str) -> dict[str, Any]:
    """The group's Running plugin pod on `node`, labelled as the DaemonSet's pod template."""
    pod = plugin_pod(node, ready_since="2026-12-01T10:00:00Z")
    labels = daemonset_manifest(spec)["spec"]["template"]["metadata"]["labels"]
    name = f"nvidia-device-plugin-{spec.name}-{node}"
    pod["metadata"] = {"name": name, "namespace": spec.device_plugin.namespace, "labels": labels}
    return pod


def verification_job(spec: NodeGroupSpec, node: str) -> VerificationJob:
    return next(job for job in verification_jobs(spec) if job.node == node)


def job_object(job: VerificationJob, status: dict[str, Any]) -> dict[str, Any]:
    metadata = job.manifest["metadata"]
    kept = {key: metadata[key] for key in ("name", "namespace", "labels")}
    return {"metadata": kept, "status": status}


def job_pod(job: VerificationJob, status: dict[str, Any]) -> dict[str, Any]:
    """The Job's pod: its template's labels and the Job controller's name label."""
    metadata = job.manifest["metadata"]
    labels = {**job.manifest["spec"]["template"]["metadata"]["labels"], JOB_NAME_LABEL: metadata["name"]}
    pod_metadata = {"name": f"{metadata['name']}-x1", "namespace": metadata["namespace"], "labels": labels}
    return {"metadata": pod_metadata, "status": status}


def unschedulable(message: str) -> dict[str, Any]:
    scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    return {"phase": "Pending", "conditions": [scheduled]}


@pytest.fixture
def api(monkeypatch) -> Iterator[FakeApi]:
    api = FakeApi()
    monkeypatch.setattr(shared_views, "connect", api.connect)
    for spec in (OURS, THEIRS):
        for node in spec.nodes:
            api.kinds["nodes"].put(gpu_node(spec, node.name))
            api.kinds["pods"].put(group_plugin_pod(spec, node.name))
    yield api
    shared_views.forget_shared_views()


def ours() -> NodeTarget:
    return node_target(OURS, NODE)


def view_of(target: NodeTarget) -> ClusterView:
    """The view a resource of the node reads, from the inputs it has (`cluster_view_from_props`)."""
    return shared_views.cluster_view_from_props({**target.to_props(), "kubeconfig": None, "context": None})


def test_the_plugin_pod_and_a_succeeded_job_are_found_through_the_groups_view(api):
    job = verification_job(OURS, NODE)
    api.kinds["jobs"].put(job_object(job, {"succeeded": 1}))

    judgement = judge(view_of(ours()), Proof(ours(), OURS.verification.namespace, [job.name]), NOW)

    assert judgement.checklist["pluginRunning"] == PASS, (NODE, judgement.problems)
    assert judgement.checklist["workloadSucceeded"] == PASS, (NODE, judgement.problems)


def test_a_waiting_jobs_pod_is_found_through_the_groups_view(api):
    job = verification_job(OURS, NODE)
    api.kinds["jobs"].put(job_object(job, {"active": 1}))
    api.kinds["pods"].put(job_pod(job, unschedulable("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")))
    judgement = judge(view_of(ours()), Proof(ours(), OURS.verification.namespace, [job.name]), NOW)

    stories = judgement.stories.by_job
    assert "Insufficient nvidia.com/gpu" in stories[job.name], (job.name, stories)


def test_the_taints_refresh_finds_the_nodes_plugin_pod_through_the_groups_view(api):
    props = {**ours().to_props(), "taints": [t.to_k8s() for t in OURS.taints], "gate": GATE.to_k8s()}
    provider = NodeTaintsProvider()

    read = provider.read(NODE, {**props, "kubeconfig": None, "context": None, "round": 1, "health": []})

    assert read.outs["health"] == [], (NODE, read.outs["health"])


def test_another_stacks_pods_and_jobs_stay_out_of_the_groups_view(api):
    theirs = verification_job(THEIRS, "h100-node-1")
    api.kinds["jobs"].put(job_object(theirs, {"succeeded": 1}))

    view = view_of(ours())

    assert view.job(THEIRS.verification.namespace, theirs.name) is None, theirs.name
    assert view.pods(THEIRS.device_plugin.namespace, {}, node="h100-node-1") == [], "h100-node-1's plugin pod"
    assert view.node("h100-node-1") is not None, "node h100-node-1: the Nodes are the cluster's"
