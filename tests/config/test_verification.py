"""A group's verification: the GPU counts of its Jobs (gpusPerPod) and the MIG resources they
ask for (migResources)."""

from __future__ import annotations

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, MIG_1G, assert_one_problem, problems_of, refused
from tests.factories import group

REFUSED = [
    ("gpus_per_pod_below_one", group(verification={"gpusPerPod": [0]}), f"{KEY}.verification.gpusPerPod[0]", ("at least 1",)),
    (
        "gpus_per_pod_above_gpus_per_node",
        group(verification={"gpusPerPod": [1, 8]}),
        f"{KEY}.verification.gpusPerPod[1]",
        ("8", "at most gpusPerNode (4)"),
    ),
    (
        "empty_gpus_per_pod_without_mig_resources",
        group(verification={"gpusPerPod": []}),
        f"{KEY}.verification.gpusPerPod",
        ("at least one GPU count",),
    ),
    # With mixed, MIG GPUs are advertised only as nvidia.com/mig-<profile>: nvidia.com/gpu
    # Jobs alone would prove nothing about them (or stay Pending until their deadline).
    (
        "mixed_mig_needs_the_mig_resources_to_verify",
        group(devicePlugin={"migStrategy": "mixed"}),
        f"{KEY}.verification.migResources",
        ("nothing", "migStrategy 'mixed'", '{"nvidia.com/mig-1g.5gb": 1}'),
    ),
    (
        "mig_resources_only_with_mixed",
        group(devicePlugin={"migStrategy": "single"}, verification={"migResources": {MIG_1G: 1}}),
        f"{KEY}.verification.migResources",
        ("only with devicePlugin.migStrategy 'mixed'",),
    ),
    (
        "mig_resource_name_must_be_a_mig_resource",
        group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {"nvidia.com/gpu": 1}}),
        f"{KEY}.verification.migResources.nvidia.com/gpu",
        ("nvidia.com/mig-<profile>",),
    ),
    (
        "mig_resource_count_is_bounded_by_seven_per_gpu",
        group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {MIG_1G: 29}}),
        f"{KEY}.verification.migResources.{MIG_1G}",
        ("29", "at most 28 (7 MIG devices per GPU, gpusPerNode 4)"),
    ),
]


@refused(REFUSED)
def test_a_bad_verification_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_mixed_mig_with_mig_resources_parses():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {MIG_1G: 2}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.mig_resources == ((MIG_1G, 2),), spec.verification


def test_mixed_mig_may_verify_mig_devices_only():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"gpusPerPod": [], "migResources": {MIG_1G: 1}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.gpus_per_pod == (), spec.verification


def test_single_mig_pods_may_ask_for_more_devices_than_gpus():
    """With single, each MIG device is one nvidia.com/gpu: up to seven per GPU."""
    raw = group(devicePlugin={"migStrategy": "single"}, verification={"gpusPerPod": [1, 8]})
    assert parse_stack([raw]).node_groups[0].verification.gpus_per_pod == (1, 8)
