"""Where a drift check's core-seconds go: one stack of N nodes on the local cluster, then the two
commands `gpu-nodes fleet drift` runs on it, `pulumi preview --expect-no-changes` and `pulumi
refresh --preview-only --expect-no-changes`.

    .venv/bin/python -m bench.profile --nodes 100            # about 10 minutes; run it alone

Each command runs twice on the same deployed stack: once bare, its processes' CPU time read from
/proc (the CLI, the program, each provider, and the cluster's own processes, which are no child of
the CLI), and once under py-spy (`record --subprocesses --nonblocking`), for where the Python
processes (the program and the dynamic providers) spend theirs, by function and by package. Prints
Markdown tables; progress goes to stderr. The stack, cluster and fake machines are the engine
bench's (bench/harness.py), and are stopped when it ends.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import (
    BACKEND,
    CLUSTER_COMMS,
    ROOT,
    SAMPLE_SECONDS,
    Bench,
    Sampler,
    cluster_processes,
    command_name,
    cpu_seconds,
    descendants,
    part,
    process_names,
    pulumi_command,
    pulumi_failed,
)
from tools.local.environment import FILE_BACKEND_QUERY, local_environment

# What `gpu-nodes fleet drift` runs on each stack (gpu_nodes/cli/orchestrate.py).
DRIFT_COMMANDS = {
    "preview": ("preview", "--expect-no-changes"),
    "refresh --preview-only": ("refresh", "--preview-only", "--expect-no-changes"),
}
SPY_RATE = 100  # samples per second; a sample of a busy thread is 1/SPY_RATE CPU seconds
TOP_FUNCTIONS = 12


def cluster_part(comm: str) -> str | None:
    return f"cluster: {comm}" if comm in CLUSTER_COMMS else None


class CpuSampler(Sampler):
    """CPU seconds per part: the command's own tree (each process's last reading before it ended;
    the last SAMPLE_SECONDS of a process are missed) and the cluster's processes (the difference
    over the command)."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.cpu: dict[int, tuple[str, float]] = {}
        self.cluster_before = self._cluster()

    @staticmethod
    def _cluster() -> dict[int, tuple[str, float]]:
        # The cluster's processes are no child of the CLI: read them all, before and after.
        readings = {}
        for pid, stat in cluster_processes().items():
            if which := cluster_part(command_name(stat)):
                readings[pid] = (which, cpu_seconds(stat))
        return readings

    def run(self) -> None:
        while not self.done.is_set():
            for pid in descendants(self.pid):
                named = process_names(pid)
                which = part(*named) if named else None
                if which:
                    try:
                        self.cpu[pid] = (which, cpu_seconds(Path(f"/proc/{pid}/stat").read_text()))
                    except OSError:
                        continue
            self.done.wait(SAMPLE_SECONDS)

    def by_part(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for which, seconds in self.cpu.values():
            totals[which] = totals.get(which, 0.0) + seconds
        for pid, (which, seconds) in self._cluster().items():
            totals[which] = totals.get(which, 0.0) + seconds - self.cluster_before.get(pid, (which, 0.0))[1]
        return totals


@dataclass
class Profiled:
    """One command: its wall time, CPU seconds per part, and py-spy's samples per Python part."""

    name: str
    wall_s: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)
    # part -> (function, file) -> samples as the innermost frame; part -> package -> samples anywhere on the stack
    own: dict[str, Counter[str]] = field(default_factory=dict)
    packages: dict[str, Counter[str]] = field(default_factory=dict)
    # part -> gpu-nodes' own function -> samples with it anywhere on the stack (where our code leads the work)
    ours: dict[str, Counter[str]] = field(default_factory=dict)
    samples: Counter[str] = field(default_factory=Counter)


def run_counted(bench: Bench, args: Sequence[str], result: Profiled) -> None:
    sampler, result.wall_s, output, returncode = bench.sampled_pulumi(CpuSampler, *args)
    result.cpu_s = sampler.by_part()
    if returncode != 0:
        raise pulumi_failed(args, returncode, output)


_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*):\d+\)$")


def package_of(path: str) -> str:
    """What a frame's file belongs to: a package of the virtualenv, gpu-nodes, or the standard library."""
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/gpu_nodes/" in path or path.startswith("gpu_nodes/"):
        return "gpu_nodes"
    if "/lib/python3" in path:
        return "stdlib: " + path.split("/lib/python3", 1)[1].split("/", 2)[1].removesuffix(".py")
    if path.startswith("<frozen "):
        return "stdlib: " + path.removeprefix("<frozen ").removesuffix(">").split(".")[0]
    return Path(path).name


def read_spy(raw: str, which: str, result: Profiled) -> None:
    """py-spy's raw output of one process of `which` part: `frame;frame;... count` per stack."""
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        code = [m for f in stack.split(";") if (m := _FRAME.match(f))]
        result.samples[which] += count
        if code:
            innermost = code[-1]
            result.own.setdefault(which, Counter())[f"{innermost['function']} ({package_of(innermost['file'])})"] += count
        for package in {package_of(m["file"]) for m in code}:
            result.packages.setdefault(which, Counter())[package] += count
        for function in {f"{m['function']} ({Path(m['file']).name})" for m in code if package_of(m["file"]) == "gpu_nodes"}:
            result.ours.setdefault(which, Counter())[function] += count


SPIED_PARTS = ("program", "dynamic providers")


def run_spied(bench: Bench, args: Sequence[str], result: Profiled, spy: Path) -> None:
    """The command with py-spy attached to each of its Python processes as it starts (py-spy's own
    --subprocesses polls too slowly for a program that runs a few seconds)."""
    command = pulumi_command(*args)
    spies: list[tuple[str, subprocess.Popen[str], Path]] = []
    seen: set[int] = set()
    with tempfile.TemporaryDirectory() as scratch:
        # Into a file, not a pipe: nothing reads a pipe while the loop below watches the processes.
        log = (Path(scratch) / "pulumi.log").open("w+")
        proc = subprocess.Popen(command, cwd=ROOT, env=bench.env, stdout=log, stderr=subprocess.STDOUT, text=True)
        while proc.poll() is None:
            for pid in set(descendants(proc.pid)) - seen:
                seen.add(pid)
                named = process_names(pid)
                which = part(*named) if named else None
                if which in SPIED_PARTS:
                    out = Path(scratch) / f"{pid}.txt"
                    # --gil: only the thread that holds the GIL, so that a sample is Python at work, not a
                    # thread waiting on a future, a lock or the network.
                    record = [str(spy), "record", "--pid", str(pid), "--nonblocking", "--gil", "--full-filenames"]
                    record += ["--format", "raw"]
                    record += ["--rate", str(SPY_RATE), "--output", str(out)]
                    spying = subprocess.Popen(record, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
                    spies.append((which, spying, out))
            time.sleep(0.02)
        log.seek(0)
        output = log.read()
        for which, spy_proc, out in spies:
            spy_proc.wait(timeout=60)
            if out.exists():
                read_spy(out.read_text(), which, result)
    if proc.returncode != 0:
        raise pulumi_failed(args, proc.returncode, output)


def cpu_table(results: Sequence[Profiled]) -> str:
    parts = sorted({p for r in results for p in r.cpu_s}, key=lambda p: (p.startswith("cluster"), p))
    lines = ["| part | " + " | ".join(f"{r.name} CPU s" for r in results) + " |", "|---|" + "---|" * len(results)]
    for which in parts:
        lines.append(f"| {which} | " + " | ".join(f"{r.cpu_s.get(which, 0.0):.1f}" for r in results) + " |")
    lines.append("| **all** | " + " | ".join(f"**{sum(r.cpu_s.values()):.1f}**" for r in results) + " |")
    lines.append("| wall s | " + " | ".join(f"{r.wall_s:.1f}" for r in results) + " |")
    return "\n".join(lines)


def function_table(result: Profiled) -> str:
    lines = [f"{result.name}, py-spy at {SPY_RATE} samples/s of the thread holding the GIL ({1 / SPY_RATE:.2f} s each):", ""]
    for which, total in result.samples.most_common():
        seconds = total / SPY_RATE
        lines += [f"**{which}**: {total} samples, about {seconds:.1f} CPU s", ""]
        lines += ["| package (anywhere on the stack) | share |", "|---|---|"]
        lines += [f"| {name} | {n / total:.0%} |" for name, n in result.packages.get(which, Counter()).most_common(8)]
        lines += ["", "| function (innermost) | share |", "|---|---|"]
        lines += [f"| `{name}` | {n / total:.0%} |" for name, n in result.own.get(which, Counter()).most_common(TOP_FUNCTIONS)]
        if which in result.ours:
            lines += ["", "| gpu-nodes function (anywhere on the stack) | share |", "|---|---|"]
            lines += [f"| `{name}` | {n / total:.0%} |" for name, n in result.ours[which].most_common(TOP_FUNCTIONS)]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100, help="nodes in the stack (default 100)")
    parser.add_argument("--preflight", choices=("on", "off"), default="off", help="as the fleet's 100-node stacks: off")
    args = parser.parse_args(argv)
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        parser.error(f"{spy} is missing: tools/setup.sh installs it (requirements-dev.txt)")
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[profile {time.perf_counter() - started:6.0f}s] {message}", file=sys.stderr, flush=True)

    bench = Bench(local_environment(BACKEND), log)
    bench.env["PULUMI_BACKEND_URL"] = f"file://{BACKEND}?{FILE_BACKEND_QUERY}"
    preflight = args.preflight == "on"
    results = []
    try:
        bench.fresh_environment(args.nodes + 1, preflight)
        bench.configure(args.nodes, preflight)
        bench.pulumi("up", "--yes", "--skip-preview")
        log(f"deployed {args.nodes} nodes")
        for name, command in DRIFT_COMMANDS.items():
            result = Profiled(name)
            run_counted(bench, command, result)
            log(f"{name}: {result.wall_s:.1f} s, {sum(result.cpu_s.values()):.1f} CPU s")
            run_spied(bench, command, result, spy)
            results.append(result)
        bench.pulumi("destroy", "--yes", "--skip-preview")
    finally:
        bench.teardown_environment()
    print(f"drift check of one stack, {args.nodes} nodes, preflight {args.preflight}, ", end="")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores")
    print(f"engine parts: {bench.env.get('GPU_NODES_ENGINE_PARTS', 'unknown')}\n")
    print(cpu_table(results))
    for result in results:
        print()
        print(function_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
