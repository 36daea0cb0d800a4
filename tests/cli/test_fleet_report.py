"""The report at the end: one row per node of every stack, each stack's result, the drift verdict, JSON."""

from __future__ import annotations

from pathlib import Path

from gpu_nodes.cli.fleet_report import as_json, drift_verdict, node_rows, repair_command, stack_table
from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.cli.progress import Change, StackProgress
from tests.cli.fleets import fleet, group

ENTRY = {
    "preflight": {"skipped": True},
    "checklist": dict.fromkeys(["labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded"], "pass"),
    "gate": "lifted",
}


REPAIR = repair_command(Path("fleet.yaml"))


def plan():
    return plan_fleet(fleet(group("a", "n1", "n2"), group("b", "n3")))


def test_every_node_of_every_stack_has_a_row_and_one_without_a_report_says_so():
    rows = node_rows(plan(), {"a": {"a": {"n1": ENTRY, "n2": ENTRY}}})
    assert [r[:3] for r in rows] == [["a", "a", "n1"], ["a", "a", "n2"], ["b", "b", "n3"]], rows
    assert rows[0][-2:] == ["lifted", "-"] and rows[2][3] == "no report", rows


def test_the_verdict_names_each_stack_and_node_that_drifted():
    a, b = StackProgress("a", ("n1", "n2")), StackProgress("b", ("n3",))
    a.changes.append(Change("gpu-nodes-a-n2-labels", "update", "n2", "refresh"))
    a.finish(False, "refresh: exit 255")
    b.finish(True)
    lines = drift_verdict([a, b], REPAIR)
    assert lines[0] == "DRIFT a: node n2: update gpu-nodes-a-n2-labels (found by refresh)", lines
    assert lines[-2].startswith("drift in 1 of 2 stacks: a"), lines


def test_drift_found_ends_with_the_command_that_repairs_it():
    a = StackProgress("a", ("n1",))
    a.changes.append(Change("gpu-nodes-a-n1-taints", "update", "n1", "refresh"))
    a.finish(False, "refresh: exit 255")
    lines = drift_verdict([a], repair_command(Path("racks/fleet 1.yaml")))
    assert lines[-1].startswith("to repair it: gpu-nodes fleet up -f 'racks/fleet 1.yaml' --refresh"), lines


def test_a_stack_that_could_not_be_checked_gets_no_repair_hint():
    a = StackProgress("a", ("n1",))
    a.finish(False, "preview: the backend refused")
    lines = drift_verdict([a], REPAIR)
    assert lines[-1].startswith("drift in 1 of 1 stacks: a") and not any("repair" in line for line in lines), lines


def test_no_drift_is_said_once():
    a = StackProgress("a", ("n1",))
    a.finish(True)
    assert drift_verdict([a], REPAIR)[-1].startswith("no drift"), drift_verdict([a], REPAIR)


def test_a_failed_stack_names_its_failed_nodes():
    a = StackProgress("a", ("n1",), owner=True)
    a.failed["n1"] = "preflight failed: driver"
    a.finish(False, "pulumi up exited 255")
    lines = stack_table([a])
    assert lines[1].split()[:3] == ["a", "owner", "failed"] and "a: node n1: preflight failed: driver" in lines, lines


def test_the_json_says_whether_every_stack_passed_and_lists_every_node():
    a, b = StackProgress("a", ("n1", "n2")), StackProgress("b", ("n3",))
    a.finish(True)
    b.finish(False, "x")
    data = as_json("up", plan(), [a, b], {"a": {"a": {"n1": ENTRY, "n2": ENTRY}}})
    assert data["passed"] is False and [s["result"] for s in data["stacks"]] == ["passed", "failed"], data
    assert [(n["stack"], n["node"], n["gate"]) for n in data["nodes"]] == [
        ("a", "n1", "lifted"),
        ("a", "n2", "lifted"),
        ("b", "n3", "-"),
    ]
