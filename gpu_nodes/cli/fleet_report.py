"""What a fleet command prints at the end: one row per node of every stack, each stack's
result, the drift verdict, and the same as JSON for CI. Pure: progress and outputs in, text out.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_nodes.cli.ctrf import NodeReport
from gpu_nodes.cli.node_table import HEADER, aligned, node_row
from gpu_nodes.cli.plan import FleetPlan
from gpu_nodes.cli.progress import StackProgress

NO_REPORT = "no report"


def fleet_nodes(
    plan: FleetPlan, outputs: dict[str, dict[str, Any]], failures: Mapping[str, Mapping[str, str]] | None = None
) -> list[NodeReport]:
    """Every node of the fleet, in the fleet file's order of stacks, with its stack's report of it (None:
    never deployed, or its run failed first) and `failures`' word on it (stack: {node: why})."""
    found = []
    for stack in plan.stacks:
        report = outputs.get(stack.name) or {}
        failed = (failures or {}).get(stack.name) or {}
        for group in stack.groups:
            nodes = [n["name"] for n in next(g for g in stack.config["gpu-nodes:nodeGroups"] if g["name"] == group)["nodes"]]
            for node in nodes:
                found.append(NodeReport(group, node, (report.get(group) or {}).get(node), stack.name, failed.get(node)))
    return found


def node_rows(plan: FleetPlan, outputs: dict[str, dict[str, Any]]) -> list[list[str]]:
    """["STACK", *HEADER] rows: every node of the fleet, in the fleet file's order of stacks.
    A node its stack has no report for (never deployed, or its run failed first) says so."""
    return [
        [str(n.stack), n.group, n.node, NO_REPORT, *["-"] * (len(HEADER) - 3)]
        if n.entry is None
        else [str(n.stack), *node_row(n.group, n.node, n.entry)]
        for n in fleet_nodes(plan, outputs)
    ]


def run_failures(progress: StackProgress) -> dict[str, str]:
    """Each node of the stack that its run did not prove, and why: the node's own failure, else the
    stack's (a stack that failed before the node's proof, or did not run)."""
    failed = dict(progress.failed)
    if progress.state != "passed":
        why = f"stack {progress.name} {progress.state}" + (f": {progress.reason}" if progress.reason else "")
        for node in progress.nodes:
            if node not in failed and node not in progress.proven:
                failed[node] = f"not proven by this run: {why}"
    return failed


def node_table(plan: FleetPlan, outputs: dict[str, dict[str, Any]]) -> list[str]:
    return aligned([["STACK", *HEADER], *node_rows(plan, outputs)])


def stack_table(progress: list[StackProgress]) -> list[str]:
    table = [["STACK", "ROLE", "RESULT", "PROVEN", "GATED", "FAILED", "LOG"]]
    for stack in progress:
        counts = stack.counts()
        role = "owner" if stack.owner else "references"
        table.append(
            [stack.name, role, stack.state, str(counts["proven"]), str(counts["gated"]), str(counts["failed"]), stack.log or "-"]
        )
    lines = aligned(table)
    for stack in progress:
        lines += [f"{stack.name}: {stack.reason}"] if stack.reason else []
        lines += [f"{stack.name}: node {node}: {message}" for node, message in sorted(stack.failed.items())]
    return lines


def repair_command(fleet_file: Path) -> str:
    """What puts a drifted fleet back: each stack's `up` after a refresh (README, "Detect drift")."""
    return f"gpu-nodes fleet up -f {shlex.quote(str(fleet_file))} --refresh"


def drift_verdict(progress: list[StackProgress], repair: str) -> list[str]:
    """One line per stack and node that drifted, or that could not be checked; `no drift` when none;
    after drift, how to repair it."""
    lines = []
    for stack in progress:
        for change in stack.changes:
            where = f"node {change.node}" if change.node else "stack-wide"
            lines.append(f"DRIFT {stack.name}: {where}: {change.op} {change.resource} (found by {change.check})")
        if stack.state != "passed" and not stack.changes:
            lines.append(f"FAILED {stack.name}: {stack.reason or stack.state}")
    skipped = [s.name for s in progress if "preview" in s.skipped_checks]
    if skipped:
        lines.append(
            f"preview skipped on {len(skipped)} of {len(progress)} stacks ({', '.join(skipped)}): each runs the program and "
            "settings of its last update, so only its refresh could find drift"
        )
    drifted = sorted({s.name for s in progress if s.changes or s.state != "passed"})
    verdict = f"drift in {len(drifted)} of {len(progress)} stacks: {', '.join(drifted)}" if drifted else "no drift"
    lines.append(f"{verdict} (logs: {', '.join(s.log for s in progress if s.log) or '-'})")
    if any(s.changes for s in progress):
        lines.append(f"to repair it: {repair} (each stack reads the cluster, then sets back what differs from the program)")
    return lines


def as_json(command: str, plan: FleetPlan, progress: list[StackProgress], outputs: dict[str, dict[str, Any]]) -> dict:
    rows = node_rows(plan, outputs) if outputs else []
    keys = ["stack", *(h.lower() for h in HEADER)]
    return {
        "command": command,
        "passed": all(s.state == "passed" for s in progress),
        "stacks": [
            {
                "name": s.name,
                "owner": s.owner,
                "result": s.state,
                "reason": s.reason,
                "log": s.log,
                **s.counts(),
                "failedNodes": dict(sorted(s.failed.items())),
                "drift": [{"node": c.node, "resource": c.resource, "op": c.op, "check": c.check} for c in s.changes],
                "skippedChecks": list(s.skipped_checks),
            }
            for s in progress
        ],
        "nodes": [dict(zip(keys, row, strict=True)) for row in rows],
    }
