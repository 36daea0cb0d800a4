"""bench/split.py's own arithmetic: which nodes each stack gets, and that the fleet command, given its
fleet file, makes bench-1 the owner and runs the stacks in the order the bare side copies."""

from __future__ import annotations

from pathlib import Path

from bench.split import FLEET_FILE, SplitRow, bare_rounds, fleet_file, format_split, slices
from gpu_nodes.cli.fleet_file import read_fleet
from gpu_nodes.cli.plan import plan_fleet


def test_the_nodes_split_into_consecutive_even_slices():
    nodes = [f"n{i}" for i in range(10)]
    parts = slices(nodes, 3)
    assert [len(p) for p in parts] == [4, 3, 3], parts
    assert sum(parts, []) == nodes, parts


def test_the_first_stack_owns_the_shared_objects_and_the_others_reference_them():
    plan = plan_fleet(read_fleet(FLEET_FILE, fleet_file(10, 3)))
    assert [s.name for s in plan.stacks] == ["bench-1", "bench-2", "bench-3"] and plan.owner.name == "bench-1"
    assert [len(s.nodes) for s in plan.stacks] == [4, 3, 3], plan.stacks
    other = plan.stack("bench-2").config
    assert other["gpu-nodes:existingNamespaces"] == ["gpu-verification", "nvidia-device-plugin"], other
    assert other["gpu-nodes:createRuntimeClass"] == "false", other


def test_the_bare_side_runs_the_owner_alone_first_on_up_and_last_on_destroy():
    fleet = fleet_file(10, 5)
    assert bare_rounds(fleet, "up", 2) == [["bench-1"], ["bench-2", "bench-3"], ["bench-4", "bench-5"]]
    assert bare_rounds(fleet, "destroy", 2) == [["bench-2", "bench-3"], ["bench-4", "bench-5"], ["bench-1"]]


def test_the_bare_side_of_drift_runs_every_stack_k_at_a_time_in_the_fleet_s_order():
    fleet = fleet_file(10, 5)
    assert bare_rounds(fleet, "drift", 2) == [["bench-1", "bench-2"], ["bench-3", "bench-4"], ["bench-5"]]


def test_the_table_gives_the_ratio_to_the_runbook_and_the_commands_overhead():
    row = SplitRow("up, 3 stacks", 1, command_s=110.0, bare_s=100.0, runbook_s=200.0, state_kb_per_node=31.25)
    table = format_split(30, 3, [row])
    assert table.splitlines()[-1] == "| 30 | 3 | 1 | up, 3 stacks | 110 | 100 | 200 | 0.55 | +10% | 31.2 |", table
    assert Path(FLEET_FILE).name == "fleet.yaml"
