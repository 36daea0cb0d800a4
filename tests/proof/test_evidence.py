"""How the proof items beyond the runbook judge what the node's pods said: DCGM's report, nccl-tests' table held to
its floor, the exporter's page; each on real recorded outputs (fixtures/README.md)."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.evidence import (
    BandwidthCheck,
    DiagnosticsCheck,
    MetricsCheck,
    bandwidth_finding,
    diagnostics_finding,
    metrics_finding,
)
from tests.proof.recorded import h100_with_fb_used, recorded

DCGM = DiagnosticsCheck("gpu-verify-a100-n1-dcgm-dddd", 1)
H100_NODE = "NVIDIA H100 80GB HBM3"
NVLS_8 = recorded("all_reduce_perf-h100-sxm-8gpu-single-node-nvls.txt")
METRICS = MetricsCheck("nvidia-device-plugin", {"app.kubernetes.io/name": "dcgm-exporter"}, 9400, gpus=8)


# --- DCGM's diagnostics ---------------------------------------------------------------------------


def test_a_passing_report_passes_and_says_what_ran():
    finding = diagnostics_finding(DCGM, recorded("dcgmi-diag-r3-8gpu-pass.composed.json"), job_failed=False)
    assert finding.problems == () and finding.final, finding
    assert finding.measured is not None and finding.measured["failures"] == [], finding.measured
    assert all(status == "Pass" for status in finding.measured["tests"].values()), finding.measured


def test_a_failed_test_is_named_in_dcgms_own_words():
    finding = diagnostics_finding(DCGM, recorded("dcgmi-diag-r1-dcgm4.2.3-gb10-persistence-fail.json"), job_failed=True)
    (problem,) = finding.problems
    assert problem.startswith("DCGM diagnostics level 1 failed: software, GPU 0:"), problem
    assert "Persistence mode for GPU 0 is disabled" in problem and "(DCGM error 29)" in problem, problem
    assert finding.final, "a finished report does not change by waiting"


def test_a_report_that_could_not_run_says_why():
    finding = diagnostics_finding(DCGM, recorded("dcgmi-diag-mig-runtime-error.composed.json"), job_failed=True)
    assert any("could not run" in line or "MIG" in line for line in finding.problems), finding.problems


def test_a_job_that_succeeded_with_no_report_fails_saying_so():
    finding = diagnostics_finding(DCGM, "dcgmi: command not found\n", job_failed=False)
    assert finding.problems == (f"DCGM diagnostics level 1: the Job {DCGM.job} succeeded, but its log holds no DCGM report",)


def test_a_log_the_api_could_not_hand_over_is_looked_at_again():
    finding = diagnostics_finding(DCGM, None, job_failed=False)
    assert finding.problems == (f"DCGM diagnostics level 1: the Job {DCGM.job} succeeded, but its log could not be read",)
    assert not finding.final, "a log not read yet may still be read: the wait goes on"


def test_an_all_reduce_log_the_api_could_not_hand_over_is_looked_at_again():
    finding = bandwidth_finding(BandwidthCheck("nccl", 8), None, H100_NODE)
    assert finding.problems == ("all_reduce_perf: the Job nccl ended, but its log could not be read",), finding
    assert not finding.final, "a log not read yet may still be read: the wait goes on"


def test_a_failed_job_with_no_log_leaves_the_words_to_the_job():
    finding = diagnostics_finding(DCGM, None, job_failed=True)
    assert finding.problems == () and finding.final, finding


# --- NCCL's bus bandwidth -------------------------------------------------------------------------


def test_a_node_at_its_models_floor_passes_and_the_figure_is_kept():
    finding = bandwidth_finding(BandwidthCheck("nccl", 8), NVLS_8, H100_NODE)
    assert finding.problems == (), finding.problems
    assert finding.measured is not None and finding.measured["gbps"] > finding.measured["floorGbps"] == 460.0, finding.measured
    assert "azurehpc-health-checks" in finding.measured["floorSource"], finding.measured


def test_a_node_below_its_groups_floor_is_named_with_both_figures():
    degraded = recorded("all_reduce_perf-dgx-a100-4gpu-p2p-disabled-degraded.table.txt")
    finding = bandwidth_finding(BandwidthCheck("nccl", 4, floor_gbps=200.0), degraded, None)
    (problem,) = finding.problems
    assert "below the floor 200 GB/s (verification.performance.minBusBandwidth)" in problem, problem
    assert problem.startswith("all_reduce_perf bus bandwidth 5.2"), problem


def test_wrong_values_fail_whatever_the_bandwidth():
    wrong = recorded("all_reduce_perf-gh200-2node-wrong-results-failed.txt")
    finding = bandwidth_finding(BandwidthCheck("nccl", 2, floor_gbps=0.001), wrong, None)
    assert any("wrong values" in line for line in finding.problems), finding.problems


def test_a_run_that_never_got_to_a_size_says_why():
    busy = recorded("all_reduce_perf-gh200-cuda-device-busy-failure.txt")
    finding = bandwidth_finding(BandwidthCheck("nccl", 1, floor_gbps=10.0), busy, None)
    (problem,) = finding.problems
    assert problem.startswith("all_reduce_perf ran no size:") and "busy or unavailable" in problem, problem


def test_a_model_the_data_knows_no_floor_for_names_the_setting():
    finding = bandwidth_finding(BandwidthCheck("nccl", 8), NVLS_8, "NVIDIA A2")
    (problem,) = finding.problems
    assert "no bus-bandwidth floor is known for 8 x NVIDIA A2" in problem and "minBusBandwidth" in problem, problem


# --- the exporter's metrics -----------------------------------------------------------------------


def test_every_gpu_with_the_four_fields_passes():
    finding = metrics_finding(MetricsCheck("ns", {}, 9400, gpus=8), "dcgm-exporter-a100-x", h100_with_fb_used(), None)
    assert finding.problems == (), finding.problems
    assert finding.measured is not None and finding.measured["gpus"] == 8, finding.measured


def test_a_gpu_missing_a_field_is_named():
    page = recorded("dcgm-exporter-h100x8-aicr.prom")  # its author filtered FB_USED out
    finding = metrics_finding(MetricsCheck("ns", {}, 9400, gpus=8), "exporter-x", page, None)
    assert finding.problems and all(line.startswith("dcgm-exporter pod exporter-x: ") for line in finding.problems)
    assert any("DCGM_FI_DEV_FB_USED" in line for line in finding.problems), finding.problems
    assert not finding.final, "an exporter fills its fields a while after it starts"


@pytest.mark.parametrize(
    ("pod", "page", "error", "expected"),
    [
        (None, None, None, "no dcgm-exporter pod runs on the node"),
        ("exporter-x", None, "HTTP 503 Service Unavailable", "did not answer on port 9400: HTTP 503 Service Unavailable"),
    ],
    ids=["no_pod", "no_answer"],
)
def test_an_exporter_that_cannot_be_read_is_named(pod, page, error, expected):
    finding = metrics_finding(METRICS, pod, page, error)
    assert any(expected in line for line in finding.problems), finding.problems
