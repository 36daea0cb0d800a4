"""Evaluate the whole program under Pulumi mocks for growing node counts.

Prints, per size, the wall time of one evaluation and the peak memory of the process
that ran it (each size runs in a fresh interpreter so peaks do not carry over).

    .venv/bin/python bench/program_bench.py [--sizes 10,100,1000] [--nodes-per-group 50]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(nodes: int, per_group: int) -> dict:
    from bench.mocked_program import evaluate, fleet_config

    config = fleet_config(nodes, per_group)
    started = time.perf_counter()
    registered = evaluate(config)
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"nodes": nodes, "resources": registered, "seconds": round(seconds, 2), "peak_mib": round(peak_mib, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--nodes-per-group", type=int, default=50)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.nodes_per_group)))
        return
    print(f"{'nodes':>6} {'resources':>10} {'wall s':>8} {'peak MiB':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, "-m", "bench.program_bench", "--one", str(size), "--nodes-per-group", str(args.nodes_per_group)],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout
        row = json.loads(out.strip().splitlines()[-1])
        print(f"{row['nodes']:>6} {row['resources']:>10} {row['seconds']:>8} {row['peak_mib']:>9}")


if __name__ == "__main__":
    main()
