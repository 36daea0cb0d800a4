"""The real Pulumi engine against a scripted kubectl runbook, on the local kwok cluster.

For each size N: a fresh cluster with N+1 GPU nodes (and, up to 100 nodes, a fake machine
behind sshd for each, so preflight runs; above, preflight is off), the stack `bench` in its
own file backend (.state/bench-pulumi), then, timed:

    pulumi up                 N nodes                      runbook apply     N nodes
    pulumi preview            no change                    -
    pulumi refresh            no change                    -
    pulumi up                 one node added (N+1)         runbook add node  1 node
    pulumi destroy            N+1 nodes                    runbook teardown  N+1 nodes

with the peak RSS of the `pulumi` CLI and of the Python program during each engine step
(sampled from /proc, the highest VmHWM seen), the CPU time each part used (the CLI, the
program, the providers, and the local cluster's own processes), and the state size (`pulumi
stack export`).
It prints one table; the ratios are engine / runbook from the same run.

Run it alone: the e2e tier and `make local-up` use the same fake machine addresses.

    make bench-engine SIZES=10,30
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence

from bench.harness import BACKEND, ITEM_VARIANTS, PREFLIGHT_MAX_NODES, Bench, SizeResult, load_average
from tools.local.environment import FILE_BACKEND_QUERY, local_environment

# -- the table ---------------------------------------------------------------------------


def ratio(engine_s: float | None, runbook_s: float | None) -> float | None:
    """engine / runbook, or None when either side is missing (or the runbook took no time)."""
    if engine_s is None or not runbook_s:
        return None
    return engine_s / runbook_s


def _cell(value: float | int | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


COLUMNS = ["nodes", "preflight", "step", "engine s", "runbook s", "ratio"]
COLUMNS += ["CLI MiB", "program MiB", "providers MiB", "CLI CPU s", "program CPU s", "providers CPU s", "cluster CPU s"]
COLUMNS += ["state KB", "KB/node"]


def item_cell(costs: tuple[float | None, float | None] | None) -> str:
    """A proof item's seconds per node on the engine and on the runbook: `engine / runbook`."""
    if costs is None:
        return "-"
    return f"{_cell(costs[0], '+.2f')} / {_cell(costs[1], '+.2f')}"


def format_table(results: Iterable[SizeResult]) -> str:
    """One Markdown table: a row per size and step, ratio = engine / runbook; then a column per proof item
    measured (`<item> s/node`: what it adds to the step per node, engine / runbook)."""
    results = list(results)
    items = [item for item in ITEM_VARIANTS if any(item in step.item_costs for r in results for step in r.steps)]
    columns = COLUMNS + [f"{item} s/node" for item in items]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for result in results:
        for step in result.steps:
            per_node = None
            if step.state_bytes is not None:
                per_node = step.state_bytes / 1000 / (result.nodes + (1 if step.name == "add one node" else 0))
            cells = [
                str(result.nodes),
                "on" if result.preflight else "off",
                f"{step.name}, backend {result.backend}" if result.backend else step.name,
                _cell(step.engine_s, ".1f"),
                _cell(step.runbook_s, ".1f"),
                _cell(ratio(step.engine_s, step.runbook_s), ".2f"),
                _cell(step.cli_mib, ".0f"),
                _cell(step.program_mib, ".0f"),
                _cell(step.providers_mib, ".0f"),
                _cell(step.cli_cpu_s, ".1f"),
                _cell(step.program_cpu_s, ".1f"),
                _cell(step.providers_cpu_s, ".1f"),
                _cell(step.cluster_cpu_s, ".1f"),
                _cell(None if step.state_bytes is None else step.state_bytes / 1000, ".0f"),
                _cell(per_node, ".1f"),
                *(item_cell(step.item_costs.get(item)) for item in items),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        if result.error:
            cells = [str(result.nodes), "on" if result.preflight else "off", f"FAILED: {result.error}"]
            lines.append("| " + " | ".join(cells + [""] * (len(columns) - 3)) + " |")
    return "\n".join(lines)


def parse_sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected sizes like 10,30; got {text!r}")
    return sizes


def parse_items(text: str) -> list[str]:
    items = [part.strip() for part in text.split(",") if part.strip() and part.strip() != "none"]
    unknown = [item for item in items if item not in ITEM_VARIANTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"expected items of {','.join(ITEM_VARIANTS)} or none; got {text!r}")
    return items


def engine_settings(skip_checkpoints: bool) -> dict[str, str]:
    """The engine's own settings under test, as environment variables (printed with the table)."""
    # Saves the state once at the end of each command instead of after every step: faster,
    # but a run that dies midway loses what it did from the state (see docs/operations.md, "Large fleets").
    return {"PULUMI_SKIP_CHECKPOINTS": "true"} if skip_checkpoints else {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("10,30"), help="node counts, e.g. 30,100,300,1000")
    parser.add_argument(
        "--skip-checkpoints", action="store_true", help="run the engine with PULUMI_SKIP_CHECKPOINTS=true (not crash-safe)"
    )
    parser.add_argument("--split", type=int, help="run each size as this many stacks on one cluster (bench/split.py)")
    parser.add_argument("--at-once", type=parse_sizes, default=parse_sizes("1,2"), help="with --split: stacks run at a time")
    parser.add_argument(
        "--command-only",
        action="store_true",
        help="with --split: time the fleet command only, without the bare pulumi calls and the runbook (a run half as long)",
    )
    parser.add_argument(
        "--preflight", choices=("auto", "on", "off"), default="auto", help=f"auto: on up to {PREFLIGHT_MAX_NODES} nodes"
    )
    parser.add_argument(
        "--items",
        type=parse_items,
        default=list(ITEM_VARIANTS),
        help=f"proof items to cost per node, each by a run of its own ({','.join(ITEM_VARIANTS)}; `none`)",
    )
    parser.add_argument(
        "--backend-queries",
        type=lambda text: text.split(","),
        default=[FILE_BACKEND_QUERY],
        help='file backend URL queries to run each size with, e.g. ",metadata=skip": none (a sidecar per file), then none',
    )
    args = parser.parse_args(argv)
    settings = engine_settings(args.skip_checkpoints)

    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[bench {time.perf_counter() - started:6.0f}s] {message}", file=sys.stderr, flush=True)

    bench = Bench(local_environment(BACKEND) | settings, log)
    if args.split:
        return split_main(bench, args.sizes, args.split, args.at_once, settings, log, args.command_only)
    results = []
    try:
        for nodes in args.sizes:
            for index, query in enumerate(args.backend_queries):
                # The runbook does not use the backend: once per size.
                first = index == 0
                preflight = None if args.preflight == "auto" else args.preflight == "on"
                label = len(args.backend_queries) > 1
                items = args.items if first else ()
                measured = bench.measure(nodes, query, with_runbook=first, label=label, preflight=preflight, items=items)
                results.append(measured)
    finally:
        # Leave nothing running: the fake machines hold 127.0.10.x:2222, which the e2e tier needs.
        bench.teardown_environment()
    preflight = {
        "auto": f"on (fake machines over SSH, both sides) up to {PREFLIGHT_MAX_NODES} nodes, off above",
        "on": "on (fake machines over SSH, both sides)",
        "off": "off on both sides",
    }[args.preflight]
    print_header("engine vs runbook", preflight, settings, bench)
    print(format_table(results))
    return 1 if any(r.error for r in results) else 0


def print_header(title: str, preflight: str, settings: dict[str, str], bench: Bench) -> None:
    """What a table was measured with: when, on how many cores, preflight, the engine's settings and parts."""
    print(f"{title}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores")
    print(f"preflight: {preflight}")
    print(f"engine settings: {' '.join(f'{k}={v}' for k, v in settings.items()) or 'defaults'}")
    print(f"engine parts: {bench.env.get('GPU_NODES_ENGINE_PARTS', 'unknown')}")
    print(f"load average at the end (1, 5, 15 min): {load_average()}")


def split_main(
    bench: Bench,
    sizes: Sequence[int],
    stacks: int,
    at_once: Sequence[int],
    settings: dict[str, str],
    log: Callable[[str], None],
    command_only: bool = False,
) -> int:
    from bench.split import SplitBench, format_split

    tables = []
    try:
        for nodes in sizes:
            rows = SplitBench(bench).measure(nodes, stacks, at_once, log, command_only)
            tables.append(format_split(nodes, stacks, rows))
    finally:
        bench.teardown_environment()
    print_header(f"one fleet over {stacks} stacks vs the runbook", "off on both sides", settings, bench)
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
