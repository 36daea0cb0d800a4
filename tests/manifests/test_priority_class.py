"""PriorityClasses: the group's, and the non-preempting one its verification pods use."""

from __future__ import annotations

from gpu_nodes.manifests.priority_class import priority_class_manifest, verification_priority_class_manifest
from tests.specs import group_spec


def test_group_class_preempts_lower_priority_and_is_not_the_default():
    manifest = priority_class_manifest(group_spec(), "gpu-nodes.test")
    name = manifest["metadata"]["name"]
    assert name == "gpu-a100", manifest["metadata"]
    assert manifest["preemptionPolicy"] == "PreemptLowerPriority", name
    assert manifest["globalDefault"] is False, name


def test_verification_class_never_preempts():
    """The API server takes a pod's preemptionPolicy from its class and refuses a pod that
    asks for another, so non-preempting pods need a non-preempting class of their own."""
    manifest = verification_priority_class_manifest(group_spec(), "gpu-nodes.test")
    name = manifest["metadata"]["name"]
    assert name == "gpu-a100-verification", manifest["metadata"]
    assert manifest["preemptionPolicy"] == "Never", name
    assert manifest["globalDefault"] is False, name


def test_verification_class_queues_like_the_group_workloads():
    spec = group_spec(priorityClass={"name": "gpu-training", "value": 900_000})
    manifest = verification_priority_class_manifest(spec, "gpu-nodes.test")
    assert manifest["metadata"]["name"] == "gpu-training-verification", manifest["metadata"]
    assert manifest["value"] == 900_000, manifest["metadata"]["name"]
