"""What the group comparison of GPU facts costs: every node of a group compared once with all the others.

    .venv/bin/python bench/facts_bench.py --sizes 100,1000,5000

Each readiness check compares its node once the rest of its checklist passes (and each refresh
once more), reading every node of the group from the shared cluster cache; this times a whole
group's worth of those comparisons, in one process, as the dynamic provider runs them.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from gpu_nodes.preflight.facts import GpuFacts, annotation
from gpu_nodes.proof.judgement import facts_problem
from gpu_nodes.vocabulary import FACTS_ANNOTATION


class CachedNodes:
    def __init__(self, nodes: dict[str, dict[str, Any]]):
        self._nodes = nodes

    def node(self, name: str) -> dict[str, Any] | None:
        return self._nodes.get(name)

    def pods(self, namespace: str, labels: dict[str, str], node: str | None = None) -> list[dict[str, Any]]:
        return []  # the comparison reads nodes only


def group_round(size: int) -> tuple[float, int]:
    """Seconds for every node's comparison, and how many nodes failed it (the last one is odd)."""
    same = annotation(GpuFacts(("NVIDIA H100 80GB HBM3",), (81559,), 8))
    odd = annotation(GpuFacts(("NVIDIA H100 PCIe",), (81559,), 8))
    names = [f"gpu-node-{i}" for i in range(1, size + 1)]
    nodes = {n: {"metadata": {"name": n, "annotations": {FACTS_ANNOTATION: odd if n == names[-1] else same}}} for n in names}
    view = CachedNodes(nodes)
    start = time.perf_counter()
    failed = len([n for n in names if facts_problem(view, n, names)])
    return time.perf_counter() - start, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,5000")
    args = parser.parse_args()
    print(f"{'nodes':>6} {'seconds':>8} {'per node (ms)':>14} {'failed':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        seconds, failed = group_round(size)
        print(f"{size:>6} {seconds:>8.3f} {seconds / size * 1000:>14.3f} {failed:>7}")


if __name__ == "__main__":
    main()
