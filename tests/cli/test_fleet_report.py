"""The report at the end: one row per node of every stack, each stack's result, the drift verdict, JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_nodes.cli.fleet_report import as_json, drift_verdict, fleet_nodes, node_rows, repair_command, run_failures, stack_table
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


def test_every_node_of_the_fleet_comes_with_its_stacks_report_and_the_runs_word_on_it():
    nodes = fleet_nodes(plan(), {"a": {"a": {"n1": ENTRY}}}, {"a": {"n2": "node n2 stays gated"}})
    assert [(n.stack, n.group, n.node, n.entry is not None, n.failure) for n in nodes] == [
        ("a", "a", "n1", True, None),
        ("a", "a", "n2", False, "node n2 stays gated"),
        ("b", "b", "n3", False, None),
    ], nodes


@pytest.mark.parametrize(
    ("state", "reason", "expected"),
    [
        ("passed", "", {"n2": "node n2 stays gated"}),
        (
            "failed",
            "pulumi up exited 255",
            {"n2": "node n2 stays gated", "n3": "not proven by this run: stack a failed: pulumi up exited 255"},
        ),
        (
            "skipped",
            "not started: the owner o did not run",
            {
                "n1": "not proven by this run: stack a skipped: not started: the owner o did not run",
                "n2": "node n2 stays gated",
                "n3": "not proven by this run: stack a skipped: not started: the owner o did not run",
            },
        ),
    ],
)
def test_a_run_names_each_node_it_did_not_prove_and_why(state: str, reason: str, expected: dict[str, str]):
    a = StackProgress("a", ("n1", "n2", "n3"))
    a.failed["n2"] = "node n2 stays gated"
    if state != "skipped":
        a.proven.add("n1")
        a.finish(state == "passed", reason)
    else:
        a.skip(reason)
    assert run_failures(a) == expected
