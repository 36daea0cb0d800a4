"""The per-node report as CTRF: valid against CTRF's own schema, one test per item of each node and one
for its gate, each status from the checklist, a failed item named with its line of the node's failure,
the measured figures and the node's context in `extra`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpu_nodes.cli.ctrf import (
    MEASURED_EXTRA,
    NODE_EXTRA,
    SPEC_VERSION,
    NodeReport,
    document,
    node_tests,
    read_failure,
    stack_reports,
)
from gpu_nodes.cli.progress import StackProgress
from gpu_nodes.proof.checklist import ITEMS, plugin_problem
from tests.cli.events import diagnostic, error
from tests.cli.reports import RUNBOOK, ctrf_errors, entry, stays_gated
from tests.fakes import target

FIXTURES = Path(__file__).parent / "fixtures"
START, STOP = 1_796_000_000_000, 1_796_000_630_000
# DCGM's own words for a GPU without persistence mode (error 29, DCGM_FR_PERSISTENCE_MODE in NVIDIA/DCGM
# dcgmlib/dcgm_errors.h, v4.6.0), as `dcgmi diag -r 1 -j` reports it, in the proof's line for the item.
DCGM_PROBLEM = (
    "DCGM diagnostics level 1 failed: software, GPU 0: Persistence Mode: Persistence mode for GPU 0 is disabled. "
    'Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root. (DCGM error 29)'
)
BANDWIDTH_PROBLEM = (
    "all_reduce_perf bus bandwidth 5.2 GB/s at 4 GiB, below the floor 200 GB/s (verification.performance.minBusBandwidth)"
)
DIAGNOSTICS = {"level": 1, "dcgmVersion": "4.6.0", "tests": {"software": "Fail"}, "failures": [DCGM_PROBLEM]}
BUS_BANDWIDTH = {"gbps": 230.1, "floorGbps": 200.0, "floorSource": "the group's own", "messageBytes": 4294967296}
METRICS = {"gpus": 4, "fields": ["DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP"], "missing": ["GPU 2: DCGM_FI_DEV_GPU_TEMP"]}
MEASURED = {"diagnostics": DIAGNOSTICS, "busBandwidth": BUS_BANDWIDTH, "metrics": METRICS}
PROVEN = {"diagnosticsPassed": "pass", "bandwidthMet": "pass", "metricsExported": "fail", "secureAccess": "pass"}


def checks_of(report: NodeReport) -> dict[str, dict[str, Any]]:
    """The node's tests by what each checks: an item's key, or `gate`."""
    return {test.name.rsplit(": ", 1)[1]: test.as_json() for test in node_tests(report)}


def one(group: str = "h100", node: str = "gpu-01", failure: str | None = None, **report: Any) -> NodeReport:
    return NodeReport(group, node, entry(**report), "prod", failure)


@pytest.mark.parametrize(
    "reports",
    [
        [one()],
        [one(workloadSucceeded="deferred"), one(node="gpu-02", gate="up", gpusRegistered="fail")],
        [one(measured=MEASURED, **PROVEN)],
        [one(measured={"diagnostics": None, "busBandwidth": None, "metrics": None}, diagnosticsPassed="pass")],
        [NodeReport("h100", "gpu-01", None, "prod")],
        [one(failure=stays_gated("gpu-01", [("diagnosticsPassed", DCGM_PROBLEM), ("bandwidthMet", BANDWIDTH_PROBLEM)]))],
        [one(failure="preflight failed: driver")],
        [one(gate=None, labelled="unknown")],
        [NodeReport("h100", "gpu-01", entry(), None)],
        [],
    ],
    ids=[
        "proven",
        "deferred-and-gated",
        "measured",
        "measured-null",
        "no-report",
        "failed-items",
        "failed-outside-items",
        "unknown-values",
        "no-stack",
        "no-nodes",
    ],
)
def test_the_document_validates_against_ctrfs_schema(reports: list[NodeReport]):
    assert ctrf_errors(document(reports, START, STOP)) == []


def test_ctrfs_schema_refuses_what_ctrf_does_not_define():
    """The validation above can fail: a status CTRF does not name, and a field outside `extra`."""
    written = document([one()], START, STOP)
    written["results"]["tests"][0]["status"] = "pass"
    written["results"]["tests"][1]["gate"] = "lifted"
    found = ctrf_errors(written)
    assert len(found) == 2 and "'pass' is not one of" in found[0] and "Additional properties" in found[1], found


@pytest.mark.parametrize(
    ("value", "status", "message"),
    [
        ("pass", "passed", None),
        ("fail", "failed", "fail in the node's report; the failure of its stack's last `pulumi up` says why"),
        ("deferred", "other", "deferred: the node was busy with GPU work; its verification Jobs run on the next `pulumi up`"),
        ("maybe", "other", "'maybe' in the node's report, not pass, fail or deferred"),
    ],
)
def test_each_checklist_value_is_a_ctrf_status_keeping_its_own_word(value: str, status: str, message: str | None):
    test = checks_of(one(workloadSucceeded=value))["workloadSucceeded"]
    assert (test["status"], test.get("message"), test["rawStatus"]) == (status, message, value), test


def test_one_test_per_item_of_the_node_in_the_checklists_order_then_its_gate():
    report = NodeReport("h100", "gpu-01", {**entry(), "checklist": dict.fromkeys(reversed(RUNBOOK), "pass")}, "prod")
    names = [test.name for test in node_tests(report)]
    assert names == [f"prod/h100/gpu-01: {what}" for what in (*RUNBOOK, "gate")], names


def test_an_item_this_version_does_not_know_comes_after_those_it_knows_by_name():
    assert not {"aNewItem", "zNewItem"} & {item.key for item in ITEMS}
    names = list(checks_of(one(zNewItem="pass", aNewItem="fail")))
    assert names == [*RUNBOOK, "aNewItem", "zNewItem", "gate"], names


@pytest.mark.parametrize("absent", ["workloadSucceeded", "gpusRegistered", "labelled"])
def test_an_item_absent_from_the_checklist_does_not_apply_and_has_no_test(absent: str):
    assert absent not in checks_of(one(**{absent: None})), checks_of(one(**{absent: None}))


def test_each_test_belongs_to_its_stack_group_and_node():
    assert {tuple(t["suite"]) for t in checks_of(one()).values()} == {("prod", "h100", "gpu-01")}


def test_without_a_stack_the_node_is_named_by_group_and_node():
    tests = [t.as_json() for t in node_tests(NodeReport("h100", "gpu-01", entry()))]
    assert {(t["name"].split(": ")[0], tuple(t["suite"])) for t in tests} == {("h100/gpu-01", ("h100", "gpu-01"))}, tests


@pytest.mark.parametrize(
    ("gate", "quarantine", "status", "message"),
    [
        ("lifted", None, "passed", None),
        ("up", None, "failed", "the readiness gate gpu-nodes.dev/unverified=true:NoSchedule is on: the node takes no GPU work"),
        (
            "up",
            {"by": "NVSentinel", "state": "remediating"},
            "failed",
            "the readiness gate gpu-nodes.dev/unverified=true:NoSchedule is on: the node takes no GPU work; "
            "held by NVSentinel (remediating)",
        ),
        (None, None, "other", "the node's report has no gate"),
    ],
    ids=["lifted", "up", "up-quarantined", "none"],
)
def test_the_gate_test_says_whether_the_node_takes_gpu_work(gate, quarantine, status, message):
    report = NodeReport("h100", "gpu-01", {**entry(gate=gate), "quarantine": quarantine}, "prod")
    test = checks_of(report)["gate"]
    assert (test["status"], test.get("message")) == (status, message), test


def test_a_node_without_a_report_is_one_failed_test_saying_so():
    tests = [t.as_json() for t in node_tests(NodeReport("h100", "gpu-01", None, "prod"))]
    assert [(t["name"], t["status"]) for t in tests] == [("prod/h100/gpu-01: gate", "failed")], tests
    assert tests[0]["message"].startswith("no report: stack prod has no entry for this node"), tests[0]


PLUGIN_PROBLEM = str(plugin_problem(target(), []))
PROBLEMS = [("pluginRunning", PLUGIN_PROBLEM), ("diagnosticsPassed", DCGM_PROBLEM), ("bandwidthMet", BANDWIDTH_PROBLEM)]


def kept_by_the_fleet_command(message: str) -> str:
    """The failure as `gpu-nodes fleet` keeps it: the engine's diagnostic on the node's readiness, on one line."""
    progress = StackProgress("prod", ("gpu-01",))
    progress.on_event(error(message, "h100-gpu-01-readiness"))
    return progress.failed["gpu-01"]


@pytest.mark.parametrize("form", ["as-pulumi-up-prints-it", "as-the-fleet-command-keeps-it"])
def test_a_failed_nodes_message_is_read_item_by_item(form: str):
    message = stays_gated("gpu-01", PROBLEMS)
    if form == "as-the-fleet-command-keeps-it":
        message = kept_by_the_fleet_command(message)
    failure = read_failure(message, ["pluginRunning", "diagnosticsPassed", "bandwidthMet", "gpusRegistered"])
    assert dict(failure.items) == dict(PROBLEMS), failure
    assert failure.headline == "node gpu-01 stays gated (gpu-nodes.dev/unverified=true:NoSchedule) after 630s; what failed:"


def test_a_problems_own_dash_and_colon_do_not_start_an_item():
    problem = "verification Job gpu-verification/gpu-verify-gpu-01 failed - reason: BackoffLimitExceeded"
    failure = read_failure(stays_gated("gpu-01", [("workloadSucceeded", problem)]), RUNBOOK)
    assert dict(failure.items) == {"workloadSucceeded": problem}, failure


def test_the_nodes_own_problems_stay_with_its_gate_not_with_an_item():
    """The readiness check lists what is wrong with the node itself (NotReady, someone else's quarantine)
    first, without an item (gpu_nodes/proof/judgement.py `judge`)."""
    message = stays_gated("gpu-01", [(None, "NotReady (KubeletNotReady)"), ("pluginRunning", PLUGIN_PROBLEM)])
    tests = checks_of(one(failure=kept_by_the_fleet_command(message)))
    assert tests["gate"]["message"].endswith("what failed: - NotReady (KubeletNotReady)"), tests["gate"]
    assert tests["pluginRunning"]["message"] == PLUGIN_PROBLEM, tests["pluginRunning"]


def test_an_item_with_several_lines_carries_them_all():
    """One line per Job of the node that did not succeed (gpu_nodes/proof/checklist.py WORKLOAD_SUCCEEDED)."""
    lines = ["verification Job gpu-verification/gpu-verify-a failed", "verification Job gpu-verification/gpu-verify-b failed"]
    failure = read_failure(stays_gated("gpu-01", [("workloadSucceeded", line) for line in lines]), RUNBOOK)
    assert dict(failure.items) == {"workloadSucceeded": "; ".join(lines)}, failure


def test_after_a_run_each_failed_item_carries_its_line_of_the_nodes_failure():
    report = one(
        failure=kept_by_the_fleet_command(stays_gated("gpu-01", PROBLEMS)), diagnosticsPassed="fail", bandwidthMet="fail"
    )
    tests = checks_of(report)
    failed = {what: t["message"] for what, t in tests.items() if t["status"] == "failed"}
    assert failed == {
        "pluginRunning": PLUGIN_PROBLEM,
        "diagnosticsPassed": DCGM_PROBLEM,
        "bandwidthMet": BANDWIDTH_PROBLEM,
        "gate": "node gpu-01 stays gated (gpu-nodes.dev/unverified=true:NoSchedule) after 630s; what failed:",
    }, failed


def test_an_item_the_run_failed_is_failed_where_the_report_from_before_says_pass():
    """After a failed `up` the stack's output is the one its last update wrote: the run's word is newer."""
    test = checks_of(one(failure=stays_gated("gpu-01", [("pluginRunning", PLUGIN_PROBLEM)])))["pluginRunning"]
    assert (test["status"], test["message"], test["rawStatus"]) == ("failed", PLUGIN_PROBLEM, "fail"), test


def test_an_item_the_run_failed_has_a_test_even_without_a_report():
    report = NodeReport("h100", "gpu-01", None, "prod", stays_gated("gpu-01", [("gpusRegistered", "is not set")]))
    assert [(w, t["status"]) for w, t in checks_of(report).items()] == [("gpusRegistered", "failed"), ("gate", "failed")]


def test_a_failure_outside_the_checklist_fails_the_gate_test_with_the_whole_message():
    message = "gpu-nodes-h100-gpu-01-preflight: 1 check failed: driver: 535.54.03 is below 550"
    tests = checks_of(one(failure=message))
    assert tests["gate"]["status"] == "failed" and tests["gate"]["message"] == message, tests["gate"]
    assert all(tests[item]["status"] == "passed" for item in RUNBOOK), tests


@pytest.mark.parametrize(
    ("item", "figures"),
    [("diagnosticsPassed", DIAGNOSTICS), ("bandwidthMet", BUS_BANDWIDTH), ("metricsExported", METRICS)],
)
def test_an_items_measured_figures_go_in_its_extra(item: str, figures: dict[str, Any]):
    assert checks_of(one(measured=MEASURED, **PROVEN))[item]["extra"][MEASURED_EXTRA] == figures


@pytest.mark.parametrize(
    ("measured", "item"),
    [
        (MEASURED, "labelled"),
        (MEASURED, "secureAccess"),
        ({**MEASURED, "metrics": None}, "metricsExported"),
        (None, "bandwidthMet"),
    ],
    ids=["item-that-measures-nothing", "secure-access", "figures-null", "no-measured"],
)
def test_an_item_without_figures_has_none_in_its_extra(measured: dict[str, Any] | None, item: str):
    assert MEASURED_EXTRA not in checks_of(one(measured=measured, **PROVEN))[item]["extra"]


def test_every_test_of_a_node_carries_its_gate_driver_and_gpus():
    contexts = [t["extra"][NODE_EXTRA] for t in checks_of(one(gate="up", gpusRegistered="fail")).values()]
    assert contexts == [contexts[0]] * len(RUNBOOK + ("gate",)), contexts
    assert contexts[0] == {
        "gate": "up",
        "driverVersion": "580.105.08",
        "gpuCount": 4,
        "gpuModels": ["NVIDIA H100 80GB HBM3"],
        "expectedGpus": None,
        "quarantine": None,
    }, contexts[0]


def test_extension_keys_are_ours_and_namespaced():
    """spec/ctrf.md 4.6.1: a producer's prefix and a delimiter; `ctrf.` and `ctrf/` are CTRF's own."""
    keys = {key for test in checks_of(one(measured=MEASURED, **PROVEN)).values() for key in test["extra"]}
    assert keys == {"gpu-nodes.node", "gpu-nodes.measured"}, keys


def test_the_summary_counts_each_status_and_keeps_the_runs_times():
    reports = [one(workloadSucceeded="deferred"), one(node="gpu-02", gate="up", gpusRegistered="fail")]
    summary = document(reports, START, STOP)["results"]["summary"]
    assert summary == {
        "tests": 12,
        "passed": 9,
        "failed": 2,
        "skipped": 0,
        "pending": 0,
        "other": 1,
        "start": START,
        "stop": STOP,
    }


def test_the_document_names_the_format_its_version_and_the_installed_gpu_nodes():
    import importlib.metadata

    written = document([], START, STOP)
    assert (written["reportFormat"], written["specVersion"]) == ("CTRF", SPEC_VERSION), written
    assert written["results"]["tool"] == {"name": "gpu-nodes", "version": importlib.metadata.version("gpu-nodes")}


def test_the_same_reports_make_the_same_document_whatever_the_order_of_their_keys():
    shuffled = {
        "gate": "lifted",
        "checklist": dict(reversed(list(entry()["checklist"].items()))),
        "preflight": entry()["preflight"],
    }
    in_order = {"preflight": entry()["preflight"], "checklist": entry()["checklist"], "gate": "lifted"}
    reports = stack_reports({"b": {"n2": shuffled, "n1": in_order}, "a": {"n3": in_order}}, "prod")
    again = stack_reports({"a": {"n3": in_order}, "b": {"n1": in_order, "n2": in_order}}, "prod")
    assert document(reports, START, STOP) == document(again, START, STOP)
    assert [(r.group, r.node) for r in reports] == [("a", "n3"), ("b", "n1"), ("b", "n2")], reports


# --- recorded from real runs (tests/cli/fixtures/README.md)


def recorded_report() -> dict[str, Any]:
    return json.loads((FIXTURES / "node-groups-local.json").read_text())


def recorded_failure() -> str:
    """gpu-node-2's failure as `gpu-nodes fleet` keeps it from the recorded run's diagnostics."""
    progress = StackProgress("local", ("gpu-node-1", "gpu-node-2", "gpu-node-3"))
    for found in json.loads((FIXTURES / "readiness-failure-diagnostics.json").read_text()):
        progress.on_event(diagnostic(found["message"], found["urn"]))
    assert list(progress.failed) == ["gpu-node-2"], progress.failed
    return progress.failed["gpu-node-2"]


def test_a_recorded_report_of_nodes_in_service_is_every_test_passed():
    written = document(stack_reports(recorded_report(), "local"), START, STOP)
    assert ctrf_errors(written) == [], ctrf_errors(written)
    summary = written["results"]["summary"]
    # Three nodes, each its five runbook items, gpuFactsAgree and its gate.
    assert (summary["tests"], summary["passed"]) == (21, 21), summary


def test_a_recorded_failure_fails_the_item_it_names_where_the_stale_report_says_pass():
    report = NodeReport("local-gpu", "gpu-node-2", recorded_report()["local-gpu"]["gpu-node-2"], "local", recorded_failure())
    tests = checks_of(report)
    failed = {what: t["message"] for what, t in tests.items() if t["status"] == "failed"}
    assert list(failed) == ["gpusRegistered", "gate"], failed
    assert failed["gpusRegistered"].startswith('node gpu-node-2: status.allocatable["nvidia.com/gpu"] is 3, expected 4'), failed
    assert failed["gpusRegistered"].endswith("if the node really has fewer GPUs, change gpusPerNode"), failed
    assert failed["gate"].startswith("node gpu-node-2 stays gated (gpu-nodes.dev/unverified=true:NoSchedule) after 90s;"), failed
    assert " - recovery: node gpu-node-2: its plugin pod " in failed["gate"], failed
    assert ctrf_errors(document([report], START, STOP)) == []
