"""The proof's settings beyond the runbook: DCGM's diagnostics (their level and image), NCCL's all-reduce
(verification.performance) and the exporter (metrics), and what a group's GPUs allow of them."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.config.verification import DEFAULT_DIAGNOSTICS_LEVEL, DIAGNOSTICS_OFF
from tests.config.problems import KEY, MIG_1G, assert_one_problem, problems_of, refused
from tests.factories import group

MIXED_MIG = {"migStrategy": "mixed"}
MPS_SHARING = {"sharing": {"strategy": "mps", "replicas": 4}}
TIME_SLICED = {"sharing": {"strategy": "timeSlicing", "replicas": 4}}
OLD_DCGM = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
OLD_EXPORTER = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.1-4.8.0-distroless"
LEVEL_1 = {"diagnostics": 1}

REFUSED = [
    ("a_level_dcgm_has_not", group(verification={"diagnostics": 4}), f"{KEY}.verification.diagnostics", ("off, 1, 2 or 3",)),
    ("a_level_as_a_word", group(verification={"diagnostics": "long"}), f"{KEY}.verification.diagnostics", ("off, 1, 2 or 3",)),
    (
        "level_three_within_the_default_timeout",
        group(verification={"diagnostics": 3}),
        f"{KEY}.verification.timeoutSeconds",
        ("at least 1800 with diagnostics 3",),
    ),
    (
        "diagnostics_on_mig_gpus",
        group(devicePlugin=MIXED_MIG, verification={"diagnostics": 1, "migResources": {MIG_1G: 1}}),
        f"{KEY}.verification.diagnostics",
        ("cannot run here", "IsMigModeDiagCompatible", "set off"),
    ),
    (
        "diagnostics_under_mps",
        group(devicePlugin=MPS_SHARING, verification={"diagnostics": 2}),
        f"{KEY}.verification.diagnostics",
        ("MPS clients",),
    ),
    (
        "diagnostics_where_the_plugin_refuses_more_than_one_replica",
        group(devicePlugin={"sharing": {**TIME_SLICED["sharing"], "failRequestsGreaterThanOne": True}}, verification=LEVEL_1),
        f"{KEY}.verification.diagnostics",
        ("failRequestsGreaterThanOne",),
    ),
    (
        "a_dcgm_image_open_to_bulletin_5857",
        group(verification={"diagnosticsImage": OLD_DCGM}),
        f"{KEY}.verification.diagnosticsImage",
        ("DCGM 4.5.2", "CVE-2026-47483", "5857", "use 4.5.3 or later"),
    ),
    (
        "an_exporter_open_to_bulletin_5857",
        group(metrics={"enabled": True, "image": OLD_EXPORTER}),
        f"{KEY}.metrics.image",
        ("dcgm-exporter 4.8.0", "CVE-2026-47483", "use 4.8.2 or later"),
    ),
    (
        "all_reduce_on_one_gpu",
        group(gpusPerNode=1, verification={"performance": {"enabled": True, "minBusBandwidth": 10}}),
        f"{KEY}.verification.performance.enabled",
        ("gpusPerNode 2 or more",),
    ),
    (
        "all_reduce_under_mps",
        group(devicePlugin=MPS_SHARING, verification={"performance": {"enabled": True, "minBusBandwidth": 10}}),
        f"{KEY}.verification.performance.enabled",
        ("cannot run here", "MPS clients"),
    ),
    (
        "a_floor_that_is_no_number",
        group(verification={"performance": {"enabled": True, "minBusBandwidth": "fast"}}),
        f"{KEY}.verification.performance.minBusBandwidth",
        ("expected a number",),
    ),
    (
        "a_declared_model_no_floor_is_known_for",
        group(gpuModel="NVIDIA A2", verification={"performance": {"enabled": True}}),
        f"{KEY}.verification.performance.minBusBandwidth",
        ("no floor is known for gpusPerNode 4 x gpuModel 'NVIDIA A2'", "GB/s"),
    ),
    (
        "no_floor_without_preflight_or_model",
        group(preflight={"enabled": False}, verification={"performance": {"enabled": True}}),
        f"{KEY}.verification.performance.minBusBandwidth",
        ("without preflight", "gpuModel"),
    ),
]


@refused(REFUSED)
def test_a_bad_proof_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


@pytest.mark.parametrize(
    ("plugin", "level"),
    [
        ({}, DEFAULT_DIAGNOSTICS_LEVEL),
        (TIME_SLICED, DEFAULT_DIAGNOSTICS_LEVEL),
        (MPS_SHARING, DIAGNOSTICS_OFF),
        ({"migStrategy": "single"}, DIAGNOSTICS_OFF),
    ],
    ids=["whole_gpus", "time_sliced", "mps", "mig"],
)
def test_the_default_level_is_nvidias_readiness_level_where_a_pod_can_hold_the_gpus_whole(plugin, level):
    spec = parse_stack([group(devicePlugin=plugin)]).node_groups[0]
    assert spec.diagnostics_level == level, (plugin, spec.verification)


@pytest.mark.parametrize("off", ["off", False], ids=["word", "yaml_1_1_boolean"])
def test_diagnostics_are_turned_off_by_off_or_false(off):
    spec = parse_stack([group(verification={"diagnostics": off})]).node_groups[0]
    assert not spec.runs_diagnostics, spec.verification


def test_a_floor_of_the_groups_own_is_taken_as_a_number():
    raw = group(gpuModel="NVIDIA A2", verification={"performance": {"enabled": True, "minBusBandwidth": 12}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.performance.min_bus_bandwidth == 12.0, spec.verification.performance


def test_a_known_model_needs_no_floor_of_its_own():
    raw = group(gpusPerNode=8, gpuModel="NVIDIA H100 80GB HBM3", verification={"performance": {"enabled": True}})
    assert parse_stack([raw]).node_groups[0].verification.performance.enabled


def test_metrics_of_a_dra_group_need_the_runtime_class():
    raw = group(allocator="dra", metrics={"enabled": True})
    problems = problems_of(raw, runtime_class=False)
    assert_one_problem(problems, f"{KEY}.metrics.enabled", "RuntimeClass dcgm-exporter runs under")
