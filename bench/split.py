"""One fleet split over several stacks on one cluster, driven by `gpu-nodes fleet`, against the runbook.

N nodes as S stacks of N/S (`bench-1` .. `bench-S`, one group each), described in one fleet
file: `bench-1` owns the shared namespaces and RuntimeClass, the command derives the others'
references (docs/fleet.md, "The fleet command"). The engine's default settings (per-step state saves
on). Timed, on one fresh cluster, for each K of `--at-once`:

    gpu-nodes fleet up --parallel K        every stack, the owner first    runbook apply     N nodes
    gpu-nodes fleet drift                  every stack, one per core (first K only)
    gpu-nodes fleet destroy --parallel K   every stack, the owner last     runbook teardown  N nodes

and, for the command's own overhead, the same stacks by bare `pulumi` calls in the same order
(`pulumi up`, `preview --expect-no-changes` and `refresh --preview-only --expect-no-changes`,
`pulumi destroy`) on the stack files the command wrote. The drift's bare calls run both checks on
every stack, one stack per core; the command runs the refresh alone on a stack whose last update is
the `fleet up` it just ran (gpu_nodes/cli/deployed.py). After each step the local cluster must still
be whole (harness.py, `control_plane_problem`), or the run stops naming the component.

Preflight is off on both sides: the fake machines stop at 100 nodes (harness.py).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import yaml

from bench.harness import ROOT, VERIFICATION_TIMEOUT, Bench, node_names
from bench.state_size import format_sizes, sizes_by_type, stored_bytes
from gpu_nodes.cli.fleet_file import read_fleet
from gpu_nodes.cli.main import default_parallel
from gpu_nodes.cli.plan import phases, plan_fleet

KUBECONFIG = ROOT / ".state/cluster/kubeconfig"
FLEET_FILE = ROOT / ".state/bench-fleet/fleet.yaml"


@dataclass
class SplitRow:
    step: str
    at_once: int
    command_s: float | None = None
    bare_s: float | None = None
    runbook_s: float | None = None
    # After `up`: the stacks' state (`pulumi stack export`), in KB per node.
    state_kb_per_node: float | None = None


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


def fleet_file(nodes: int, stacks: int) -> dict[str, Any]:
    """The fleet file: one group per stack, `bench-1` the owner (the first)."""
    groups = [
        {
            "name": f"bench-gpu-{k + 1}",
            "gpusPerNode": 4,
            "nodes": [{"name": name} for name in part],
            "verification": {"gpusPerPod": [1, 2], "timeoutSeconds": VERIFICATION_TIMEOUT},
            "preflight": {"enabled": False},
        }
        for k, part in enumerate(slices(node_names(nodes), stacks))
    ]
    return {
        "program": str(ROOT),
        "config": {"kubernetes:kubeconfig": str(KUBECONFIG)},
        "nodeGroups": groups,
        "stacks": {stack: [group["name"]] for stack, group in zip(stack_names(stacks), groups, strict=True)},
    }


def bare_rounds(fleet: dict[str, Any], command: str, at_once: int) -> list[list[str]]:
    """The stacks in the command's order, its phases cut into K at a time (the bare `pulumi` side)."""
    plan = plan_fleet(read_fleet(FLEET_FILE, fleet))
    return [phase[i : i + at_once] for phase in phases(plan, command) for i in range(0, len(phase), at_once)]


class SplitBench:
    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    def command(self, *args: str) -> float:
        started = time.perf_counter()
        self.bench.run(sys.executable, "-m", "gpu_nodes.cli", "fleet", *args, "-f", str(FLEET_FILE))
        seconds = time.perf_counter() - started
        self.bench.control_plane_whole(f"fleet {' '.join(args)}")
        return seconds

    def bare(self, batches: list[list[str]], *commands: tuple[str, ...]) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(len(b) for b in batches)) as pool:
            for batch in batches:
                list(pool.map(lambda stack: self._pulumi(stack, commands), batch))
        seconds = time.perf_counter() - started
        self.bench.control_plane_whole(f"bare pulumi {' '.join(commands[0][:1])}")
        return seconds

    def state_exports(self, stacks: int) -> list[str]:
        """Every stack's state as `pulumi stack export` writes it (what each step saves)."""
        return [
            self.bench.run("pulumi", "stack", "export", "--stack", s, "--non-interactive").stdout for s in stack_names(stacks)
        ]

    def _pulumi(self, stack: str, commands: tuple[tuple[str, ...], ...]) -> None:
        for args in commands:
            self.bench.run("pulumi", *args, "--stack", stack, "--non-interactive")

    def measure(
        self, nodes: int, stacks: int, at_once: Sequence[int], log: Callable[[str], None], command_only: bool = False
    ) -> list[SplitRow]:
        """command_only: the fleet command's times alone, without the bare calls and the runbook."""
        rows: list[SplitRow] = []
        self.bench.fresh_environment(nodes, preflight=False)
        fleet = fleet_file(nodes, stacks)
        FLEET_FILE.parent.mkdir(parents=True, exist_ok=True)
        FLEET_FILE.write_text(yaml.safe_dump(fleet, sort_keys=False))
        try:
            for k in at_once:
                up, down = SplitRow(f"up, {stacks} stacks", k), SplitRow(f"destroy, {stacks} stacks", k)
                up.command_s = self.command("up", "--parallel", str(k))
                exports = self.state_exports(stacks)
                up.state_kb_per_node = sum(stored_bytes(e) for e in exports) / 1024 / nodes
                log(
                    f"{stacks} stacks, {k} at a time: fleet up {up.command_s:.0f} s, state {up.state_kb_per_node:.1f} KB per node"
                )
                if k == at_once[0]:
                    # What one stack's state keeps, by resource type (bench/state_size.py).
                    log(format_sizes(sizes_by_type(json.loads(exports[0])), len(slices(node_names(nodes), stacks)[0])))
                rows.append(up)
                if k == at_once[0]:
                    cores = default_parallel()
                    drift = SplitRow(f"drift, {stacks} stacks", cores)
                    drift.command_s = self.command("drift")
                    if not command_only:
                        drift.bare_s = self.bare(
                            bare_rounds(fleet, "drift", cores),
                            ("preview", "--expect-no-changes"),
                            ("refresh", "--preview-only", "--expect-no-changes"),
                        )
                    log(f"fleet drift {drift.command_s:.0f} s, bare pulumi {_cell(drift.bare_s)} s")
                    rows.append(drift)
                down.command_s = self.command("destroy", "--parallel", str(k))
                log(f"{stacks} stacks, {k} at a time: fleet destroy {down.command_s:.0f} s")
                rows.append(down)
                if command_only:
                    continue
                up.bare_s = self.bare(bare_rounds(fleet, "up", k), ("up", "--yes", "--skip-preview"))
                down.bare_s = self.bare(bare_rounds(fleet, "destroy", k), ("destroy", "--yes", "--skip-preview"))
                log(f"{stacks} stacks, {k} at a time: bare pulumi up {up.bare_s:.0f} s, destroy {down.bare_s:.0f} s")
            if command_only:
                return rows
            self.bench.configure(nodes, preflight=False)
            runbook = self.bench.runbook()
            every = node_names(nodes)
            apply, teardown = SplitRow("runbook apply", 1), SplitRow("runbook teardown", 1)
            apply.runbook_s = _seconds(lambda: runbook.apply(every))
            log(f"runbook apply {apply.runbook_s:.0f} s")
            teardown.runbook_s = _seconds(lambda: runbook.teardown(every))
            log(f"runbook teardown {teardown.runbook_s:.0f} s")
            for row in rows:
                if row.step.startswith("up"):
                    row.runbook_s = apply.runbook_s
                elif row.step.startswith("destroy"):
                    row.runbook_s = teardown.runbook_s
            rows += [apply, teardown]
        finally:
            for stack in stack_names(stacks):
                self.bench.run("pulumi", "stack", "rm", "--yes", "--force", "--stack", stack, "--non-interactive")
                (ROOT / f"Pulumi.{stack}.yaml").unlink(missing_ok=True)
        return rows


def _seconds(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _cell(value: float | None, fmt: str = ".0f") -> str:
    return "-" if value is None else format(value, fmt)


def format_split(nodes: int, stacks: int, rows: Sequence[SplitRow]) -> str:
    """ratio: the command / the runbook; overhead: the command over the same bare `pulumi` calls."""
    head = "| nodes | stacks | at once | step | fleet command s | bare pulumi s | runbook s | ratio | overhead | state KB/node |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        ratio = row.command_s / row.runbook_s if row.command_s is not None and row.runbook_s else None
        overhead = row.command_s / row.bare_s - 1 if row.command_s is not None and row.bare_s else None
        cells = [str(nodes), str(stacks), str(row.at_once), row.step, _cell(row.command_s), _cell(row.bare_s)]
        cells += [_cell(row.runbook_s), _cell(ratio, ".2f"), "-" if overhead is None else f"{overhead:+.0%}"]
        cells.append(_cell(row.state_kb_per_node, ".1f"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
