"""One fleet split over several stacks on one cluster, against the runbook (engine_bench.py --split).

N nodes as S stacks of N/S (`bench-1` .. `bench-S`, one group each), with the engine's default
settings (per-step state saves on). `bench-1` owns the shared namespaces and RuntimeClass, the
others reference them (README, "Several stacks on one cluster"). Timed, on one fresh cluster:

    pulumi up        every stack, one after another           runbook apply     N nodes
    pulumi destroy   every stack, the owner last              runbook teardown  N nodes
    the same, K stacks at a time (the owner first, alone; on destroy, last)

Preflight is off on both sides: the fake machines stop at 100 nodes (engine_bench.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import yaml

from bench.engine_bench import ROOT, VERIFICATION_TIMEOUT, Bench, node_names

KUBECONFIG = ROOT / ".state/cluster/kubeconfig"
SHARED_NAMESPACES = ("nvidia-device-plugin", "gpu-verification")


@dataclass
class SplitRow:
    step: str
    at_once: int
    engine_s: float | None = None
    runbook_s: float | None = None


def stack_names(stacks: int) -> list[str]:
    return [f"bench-{k}" for k in range(1, stacks + 1)]


def slices(nodes: Sequence[str], stacks: int) -> list[list[str]]:
    """The nodes of each stack: consecutive, as even as the count allows."""
    size, extra = divmod(len(nodes), stacks)
    out, start = [], 0
    for k in range(stacks):
        end = start + size + (1 if k < extra else 0)
        out.append(list(nodes[start:end]))
        start = end
    return out


def split_config(index: int, nodes: Sequence[str]) -> dict[str, Any]:
    """Stack config of stack `index` (0: the owner of the shared objects)."""
    group = {
        "name": f"bench-gpu-{index + 1}",
        "gpusPerNode": 4,
        "nodes": [{"name": name} for name in nodes],
        "verification": {"gpusPerPod": [1, 2], "timeoutSeconds": VERIFICATION_TIMEOUT},
        "preflight": {"enabled": False},
    }
    config: dict[str, Any] = {"gpu-nodes:nodeGroups": [group], "kubernetes:kubeconfig": str(KUBECONFIG)}
    if index > 0:
        config["gpu-nodes:existingNamespaces"] = list(SHARED_NAMESPACES)
        config["gpu-nodes:createRuntimeClass"] = "false"
    return config


def rounds(stacks: Sequence[str], at_once: int, owner_first: bool) -> list[list[str]]:
    """The stacks in the order they run: the owner alone (first on up, last on destroy), the rest K at a time."""
    owner, rest = stacks[0], list(stacks[1:])
    if not owner_first:
        rest.reverse()
    batches = [rest[i : i + at_once] for i in range(0, len(rest), at_once)]
    return [[owner], *batches] if owner_first else [*batches, [owner]]


class SplitBench:
    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    def pulumi(self, stack: str, *args: str) -> None:
        self.bench.run("pulumi", *args, "--stack", stack, "--non-interactive")

    def timed_rounds(self, batches: list[list[str]], *args: str) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(len(b) for b in batches)) as pool:
            for batch in batches:
                list(pool.map(lambda stack: self.pulumi(stack, *args), batch))
        return time.perf_counter() - started

    def init_stacks(self, nodes: int, stacks: int) -> list[str]:
        names = stack_names(stacks)
        for index, (stack, part) in enumerate(zip(names, slices(node_names(nodes), stacks), strict=True)):
            self.pulumi(stack, "stack", "init")
            path = ROOT / f"Pulumi.{stack}.yaml"
            path.write_text(yaml.safe_dump({"config": split_config(index, part)}, sort_keys=True))
        return names

    def measure(self, nodes: int, stacks: int, at_once: Sequence[int], log: Callable[[str], None]) -> list[SplitRow]:
        rows: list[SplitRow] = []
        self.bench.fresh_environment(nodes, preflight=False)
        names = self.init_stacks(nodes, stacks)
        try:
            for k in at_once:
                up, down = SplitRow(f"up, {stacks} stacks", k), SplitRow(f"destroy, {stacks} stacks", k)
                up.engine_s = self.timed_rounds(rounds(names, k, owner_first=True), "up", "--yes", "--skip-preview")
                log(f"{stacks} stacks, {k} at a time: up {up.engine_s:.0f} s")
                down.engine_s = self.timed_rounds(rounds(names, k, owner_first=False), "destroy", "--yes", "--skip-preview")
                log(f"{stacks} stacks, {k} at a time: destroy {down.engine_s:.0f} s")
                rows += [up, down]
            self.bench.configure(nodes, preflight=False)
            runbook = self.bench.runbook()
            every = node_names(nodes)
            apply, teardown = SplitRow("runbook apply", 1), SplitRow("runbook teardown", 1)
            apply.runbook_s = _seconds(lambda: runbook.apply(every))
            log(f"runbook apply {apply.runbook_s:.0f} s")
            teardown.runbook_s = _seconds(lambda: runbook.teardown(every))
            log(f"runbook teardown {teardown.runbook_s:.0f} s")
            rows += [apply, teardown]
            for row in rows:
                if row.step.startswith("up"):
                    row.runbook_s = apply.runbook_s
                elif row.step.startswith("destroy"):
                    row.runbook_s = teardown.runbook_s
        finally:
            for stack in names:
                (ROOT / f"Pulumi.{stack}.yaml").unlink(missing_ok=True)
        return rows


def _seconds(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def format_split(nodes: int, stacks: int, rows: Sequence[SplitRow]) -> str:
    lines = ["| nodes | stacks | at once | step | engine s | runbook s | ratio |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        engine = "-" if row.engine_s is None else f"{row.engine_s:.0f}"
        runbook = "-" if row.runbook_s is None else f"{row.runbook_s:.0f}"
        ratio = "-" if row.engine_s is None or not row.runbook_s else f"{row.engine_s / row.runbook_s:.2f}"
        lines.append(f"| {nodes} | {stacks} | {row.at_once} | {row.step} | {engine} | {runbook} | {ratio} |")
    return "\n".join(lines)
