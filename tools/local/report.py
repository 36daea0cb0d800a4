"""Print the per-node report from `pulumi stack output nodeGroups --json` (read on stdin)."""

from __future__ import annotations

import json
import sys


def rows(report: dict) -> list[list[str]]:
    table = []
    for group, nodes in sorted(report.items()):
        for node, entry in sorted(nodes.items()):
            preflight = entry.get("preflight") or {}
            verification = entry.get("verification") or {}
            verified = [f"{v['gpus']}gpu:{'ok' if v['succeeded'] else 'FAILED'}" for _, v in sorted(verification.items())]
            if preflight.get("skipped"):
                checks, driver, gpus = "skipped", "-", "-"
            else:
                checks = "passed" if preflight.get("passed") else "FAILED " + ",".join(preflight.get("failedChecks", []))
                driver = preflight.get("driverVersion") or "-"
                gpus = f"{preflight.get('gpuCount', 0)} x {', '.join(preflight.get('gpuModels') or ['?'])}"
            runtime = (preflight.get("runtime") or {}).get("name") or "-"
            taints = ",".join(f"{t['key']}={t.get('value', '')}:{t['effect']}" for t in entry.get("taints") or [])
            table.append([group, node, checks, driver, gpus, runtime, taints, " ".join(verified) or "-"])
    return table


def main() -> None:
    header = ["GROUP", "NODE", "PREFLIGHT", "DRIVER", "GPUS", "RUNTIME", "TAINTS", "VERIFIED"]
    table = [header, *rows(json.load(sys.stdin))]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
