"""The per-node report as a table: one row per node, what preflight found, the checklist, the gate,
and someone else's quarantine of the node (NVSentinel's: who and in which state, gpu_nodes/proof/quarantine.py).

`make local-up` prints it for one stack (tools/local/report.py), `gpu-nodes report` too, and
`gpu-nodes fleet` for every stack of a fleet, with the stack in front. The input is the `nodeGroups`
stack output (gpu_nodes/resources/node_group.py `node_report`): {group: {node: entry}}, as `pulumi
stack output nodeGroups --json` prints it (`read_node_groups`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_nodes.errors import FleetError
from gpu_nodes.proof.checklist import FAIL, ITEMS, PASS

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


def node_row(group: str, node: str, entry: Mapping[str, Any]) -> list[str]:
    checklist = entry.get("checklist") or {}
    items = [{PASS: "pass", FAIL: "FAIL"}.get(checklist.get(item, ""), "-") for item in CHECKLIST_COLUMNS]
    return [group, node, *_preflight(entry.get("preflight") or {}), *items, entry.get("gate") or "-", _held(entry)]


def _held(entry: Mapping[str, Any]) -> str:
    # None, or absent: nobody else holds the node.
    quarantine = entry.get("quarantine") or {}
    return f"{quarantine.get('by')} {quarantine.get('state')}" if quarantine else "-"


def in_service(entry: Mapping[str, Any] | None) -> bool:
    """Whether the node takes GPU work: its gate is lifted."""
    return entry is not None and entry.get("gate") == "lifted"


def rows(report: dict[str, Any]) -> list[list[str]]:
    return [node_row(group, node, entry) for group, nodes in sorted(report.items()) for node, entry in sorted(nodes.items())]


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """The table's lines, each column as wide as its widest cell."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in table]


WHAT = "nodeGroups output"
_SHAPE = "an object of group: {node: its report}, as `pulumi stack output nodeGroups --json` prints it"


def read_node_groups(text: str, source: str) -> dict[str, Any]:
    """One stack's `nodeGroups` output from its JSON; a FleetError naming each part that is not its shape."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise FleetError(source, [f"not JSON: {error}"], WHAT) from None
    if not isinstance(raw, dict):
        raise FleetError(source, [f"got {_brief(raw)}; expected {_SHAPE}"], WHAT)
    if "nodeGroups" in raw:
        # A group's name is a DNS-1123 label (gpu_nodes/config/node_group.py), all lowercase: these are all the stack's outputs.
        raise FleetError(source, ["got all the stack's outputs; expected one, `pulumi stack output nodeGroups --json`"], WHAT)
    problems = []
    for group, nodes in raw.items():
        if not isinstance(nodes, dict):
            problems.append(f"{group}: got {_brief(nodes)}; expected an object of node: its report")
            continue
        for node, entry in nodes.items():
            problems += _entry_problems(f"{group}.{node}", entry)
    if problems:
        raise FleetError(source, problems, WHAT)
    return raw


def _entry_problems(key: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{key}: got {_brief(entry)}; expected the node's report, an object"]
    problems = []
    checklist = entry.get("checklist")
    if checklist is not None and not (isinstance(checklist, dict) and all(isinstance(v, str) for v in checklist.values())):
        problems.append(f"{key}.checklist: got {_brief(checklist)}; expected an object of item: pass, fail or deferred")
    for part in ("measured", "preflight", "quarantine"):
        if entry.get(part) is not None and not isinstance(entry[part], dict):
            problems.append(f"{key}.{part}: got {_brief(entry[part])}; expected an object or null")
    if entry.get("gate") is not None and not isinstance(entry["gate"], str):
        problems.append(f"{key}.gate: got {_brief(entry['gate'])}; expected lifted or up")
    return problems


def _brief(value: Any, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[: limit - 3]}..."
