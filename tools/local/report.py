"""Print the per-node report from `pulumi stack output nodeGroups --json` (read on stdin).

One row per node: what preflight found, then the runbook's final checklist (each item pass
or FAIL) and whether the readiness gate is still up.
"""

from __future__ import annotations

import json
import sys

# Column headings for the checklist items of gpu_nodes/kube/node_health.py, in its order.
CHECKLIST_COLUMNS = {
    "labelled": "LABEL",
    "tainted": "TAINT",
    "pluginRunning": "PLUGIN",
    "gpusRegistered": "GPUS-REGISTERED",
    "workloadSucceeded": "GPU-WORKLOAD",
}
HEADER = ["GROUP", "NODE", "PREFLIGHT", "DRIVER", "GPUS", "RUNTIME", *CHECKLIST_COLUMNS.values(), "GATE"]


def _preflight(preflight: dict) -> list[str]:
    if preflight.get("skipped"):
        return ["skipped", "-", "-", "-"]
    checks = "passed" if preflight.get("passed") else "FAILED " + ",".join(preflight.get("failedChecks", []))
    gpus = f"{preflight.get('gpuCount', 0)} x {', '.join(preflight.get('gpuModels') or ['?'])}"
    runtime = (preflight.get("runtime") or {}).get("name") or "-"
    return [checks, preflight.get("driverVersion") or "-", gpus, runtime]


def rows(report: dict) -> list[list[str]]:
    table = []
    for group, nodes in sorted(report.items()):
        for node, entry in sorted(nodes.items()):
            checklist = entry.get("checklist") or {}
            items = [{"pass": "pass", "fail": "FAIL"}.get(checklist.get(item, ""), "-") for item in CHECKLIST_COLUMNS]
            gate = entry.get("gate") or "-"
            table.append([group, node, *_preflight(entry.get("preflight") or {}), *items, gate])
    return table


def main() -> None:
    table = [HEADER, *rows(json.load(sys.stdin))]
    widths = [max(len(row[i]) for row in table) for i in range(len(HEADER))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
