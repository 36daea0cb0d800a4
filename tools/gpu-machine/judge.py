"""Judge what a GPU machine's tools printed (tools/gpu-machine/record.sh) as the node proof's readiness check does:
DCGM's report, NCCL's bus bandwidth against its floor, the exporter's page. One line per item; exit 1 if one fails.

    .venv/bin/python tools/gpu-machine/judge.py DIR --gpus 8 --model "NVIDIA H100 80GB HBM3" [--level 1] [--floor 460]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpu_nodes.proof.evidence import (
    BandwidthCheck,
    DiagnosticsCheck,
    Finding,
    MetricsCheck,
    bandwidth_finding,
    diagnostics_finding,
    metrics_finding,
)


def read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def judge(records: Path, gpus: int, model: str, level: int, floor: float | None) -> dict[str, Finding]:
    """Each item's finding from the records in `records`, as record.sh names them."""
    dcgm = DiagnosticsCheck("dcgmi diag", level)
    findings = {"diagnosticsPassed": diagnostics_finding(dcgm, read(records / "dcgmi-diag.json"), job_failed=False)}
    if gpus >= 2:
        check = BandwidthCheck("all_reduce_perf", gpus, floor)
        findings["bandwidthMet"] = bandwidth_finding(check, read(records / "all_reduce_perf.txt"), model)
    page = read(records / "metrics.prom")
    metrics = MetricsCheck("-", {}, 9400, gpus)
    findings["metricsExported"] = metrics_finding(metrics, "the exporter", page, None if page else "no page was recorded")
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--gpus", type=int, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--floor", type=float)
    args = parser.parse_args(argv)
    findings = judge(args.records, args.gpus, args.model, args.level, args.floor)
    for item, finding in findings.items():
        print(f"{item}: {'FAIL' if finding.problems else 'pass'}")
        for line in finding.problems:
            print(f"  - {line}")
        if finding.measured:
            print(f"  measured: {dict(finding.measured)}")
    return 1 if any(finding.problems for finding in findings.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
