"""The per-node table: one row per node, what preflight found, the checklist, the gate, and who else holds it."""

from __future__ import annotations

from gpu_nodes.cli.node_table import HEADER, node_row

ENTRY = {
    "preflight": {"skipped": True},
    "checklist": dict.fromkeys(["labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded"], "pass"),
    "gate": "up",
}
HELD = {"by": "NVSentinel", "state": "remediating", "cordoned": True, "taints": [], "conditions": ["SysLogsXIDError"]}


def test_a_node_someone_else_holds_says_who_and_in_which_state():
    row = dict(zip(HEADER, node_row("a100", "n1", {**ENTRY, "quarantine": HELD}), strict=True))
    assert row["QUARANTINE"] == "NVSentinel remediating" and row["GATE"] == "up", row


def test_a_node_nobody_else_holds_and_a_report_without_the_field_show_a_dash():
    assert dict(zip(HEADER, node_row("a100", "n1", {**ENTRY, "quarantine": None}), strict=True))["QUARANTINE"] == "-"
    assert dict(zip(HEADER, node_row("a100", "n1", ENTRY), strict=True))["QUARANTINE"] == "-"


def test_the_columns_stay_as_they_were():
    """Scripts read the report by its columns: the checklist's come from its items (gpu_nodes/proof/checklist.py)."""
    assert HEADER == [
        "GROUP",
        "NODE",
        "PREFLIGHT",
        "DRIVER",
        "GPUS",
        "RUNTIME",
        "LABEL",
        "TAINT",
        "PLUGIN",
        "GPUS-REGISTERED",
        "GPU-WORKLOAD",
        "ACCESS",
        "DCGM",
        "BUSBW",
        "METRICS",
        "IMEX",
        "GATE",
        "QUARANTINE",
    ], HEADER


def test_an_item_a_group_does_not_run_is_a_dash_not_a_failure():
    row = dict(zip(HEADER, node_row("a100", "n1", ENTRY), strict=True))
    assert row["BUSBW"] == "-" and "bandwidthMet" not in ENTRY["checklist"], row


def test_a_machine_not_yet_checked_is_said_so_not_failed():
    row = dict(zip(HEADER, node_row("a100", "n1", {**ENTRY, "preflight": {"checked": False}}), strict=True))
    assert [row[c] for c in ("PREFLIGHT", "DRIVER", "GPUS", "RUNTIME")] == ["not checked", "-", "-", "-"], row
