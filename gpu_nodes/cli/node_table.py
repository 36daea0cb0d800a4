"""The per-node report as a table: one row per node, what preflight found, the checklist, the gate,
and someone else's quarantine of the node (NVSentinel's: who and in which state, gpu_nodes/proof/quarantine.py).

`make local-up` prints it for one stack (tools/local/report.py), `gpu-nodes fleet` for every
stack of a fleet, with the stack in front. The input is the `nodeGroups` stack output
(gpu_nodes/resources/node_group.py `node_report`): {group: {node: entry}}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpu_nodes.proof.checklist import ITEMS

# Column headings of the checklist items that have one, in the checklist's order.
CHECKLIST_COLUMNS = {item.key: item.column for item in ITEMS if item.column}
HEADER = ["GROUP", "NODE", "PREFLIGHT", "DRIVER", "GPUS", "RUNTIME", *CHECKLIST_COLUMNS.values(), "GATE", "QUARANTINE"]


def _preflight(preflight: dict[str, Any]) -> list[str]:
    if preflight.get("skipped"):
        return ["skipped", "-", "-", "-"]
    # Its command's stdout held no report (gpu_nodes/preflight/report.py): not a failure.
    if preflight.get("checked") is False:
        return ["not checked", "-", "-", "-"]
    checks = "passed" if preflight.get("passed") else "FAILED " + ",".join(preflight.get("failedChecks", []))
    gpus = f"{preflight.get('gpuCount', 0)} x {', '.join(preflight.get('gpuModels') or ['?'])}"
    runtime = (preflight.get("runtime") or {}).get("name") or "-"
    return [checks, preflight.get("driverVersion") or "-", gpus, runtime]


def node_row(group: str, node: str, entry: dict[str, Any]) -> list[str]:
    checklist = entry.get("checklist") or {}
    items = [{"pass": "pass", "fail": "FAIL"}.get(checklist.get(item, ""), "-") for item in CHECKLIST_COLUMNS]
    return [group, node, *_preflight(entry.get("preflight") or {}), *items, entry.get("gate") or "-", _held(entry)]


def _held(entry: dict[str, Any]) -> str:
    # None, or absent: nobody else holds the node.
    quarantine = entry.get("quarantine") or {}
    return f"{quarantine.get('by')} {quarantine.get('state')}" if quarantine else "-"


def rows(report: dict[str, Any]) -> list[list[str]]:
    return [node_row(group, node, entry) for group, nodes in sorted(report.items()) for node, entry in sorted(nodes.items())]


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """The table's lines, each column as wide as its widest cell."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in table]
