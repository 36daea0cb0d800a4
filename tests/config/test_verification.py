"""A group's verification: the GPU counts of its Jobs (gpusPerPod) and the MIG resources they
ask for (migResources)."""

from __future__ import annotations

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, MIG_1G, assert_one_problem, problems_of
from tests.factories import group


def test_gpus_per_pod_below_one():
    assert_one_problem(problems_of(group(verification={"gpusPerPod": [0]})), f"{KEY}.verification.gpusPerPod[0]", "at least 1")


def test_gpus_per_pod_above_gpus_per_node():
    problems = problems_of(group(verification={"gpusPerPod": [1, 8]}))
    assert_one_problem(problems, f"{KEY}.verification.gpusPerPod[1]", "8", "at most gpusPerNode (4)")


def test_empty_gpus_per_pod_without_mig_resources():
    problems = problems_of(group(verification={"gpusPerPod": []}))
    assert_one_problem(problems, f"{KEY}.verification.gpusPerPod", "at least one GPU count")


def test_mixed_mig_needs_the_mig_resources_to_verify():
    """With mixed, MIG GPUs are advertised only as nvidia.com/mig-<profile>: nvidia.com/gpu
    Jobs alone would prove nothing about them (or stay Pending until their deadline)."""
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed"}))
    assert_one_problem(
        problems, f"{KEY}.verification.migResources", "nothing", "migStrategy 'mixed'", '{"nvidia.com/mig-1g.5gb": 1}'
    )


def test_mixed_mig_with_mig_resources_parses():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {MIG_1G: 2}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.mig_resources == ((MIG_1G, 2),), spec.verification


def test_mixed_mig_may_verify_mig_devices_only():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"gpusPerPod": [], "migResources": {MIG_1G: 1}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.gpus_per_pod == (), spec.verification


def test_mig_resources_only_with_mixed():
    problems = problems_of(group(devicePlugin={"migStrategy": "single"}, verification={"migResources": {MIG_1G: 1}}))
    assert_one_problem(problems, f"{KEY}.verification.migResources", "only with devicePlugin.migStrategy 'mixed'")


def test_mig_resource_name_must_be_a_mig_resource():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {"nvidia.com/gpu": 1}})
    problems = problems_of(raw)
    assert_one_problem(problems, f"{KEY}.verification.migResources.nvidia.com/gpu", "nvidia.com/mig-<profile>")


def test_mig_resource_count_is_bounded_by_seven_per_gpu():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {MIG_1G: 29}})
    problems = problems_of(raw)
    assert_one_problem(problems, f"{KEY}.verification.migResources.{MIG_1G}", "29", "at most 28")


def test_single_mig_pods_may_ask_for_more_devices_than_gpus():
    """With single, each MIG device is one nvidia.com/gpu: up to seven per GPU."""
    raw = group(devicePlugin={"migStrategy": "single"}, verification={"gpusPerPod": [1, 8]})
    assert parse_stack([raw]).node_groups[0].verification.gpus_per_pod == (1, 8)
