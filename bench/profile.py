"""Where a command's core-seconds and wall time go, on one stack of N nodes on the local cluster: the
two commands `gpu-nodes fleet drift` runs on it, `pulumi preview --expect-no-changes` and `pulumi
refresh --preview-only --expect-no-changes` (`--commands drift`, the default), or `pulumi up` and
`pulumi destroy` (`--commands deploy`).

    .venv/bin/python -m bench.profile --nodes 100                     # about 10 minutes; run it alone
    .venv/bin/python -m bench.profile --nodes 100 --commands deploy   # up and destroy, each twice

Each command runs twice (drift: on the same deployed stack; deploy: `up` then `destroy`, twice over):
once bare, its processes' CPU time read from /proc (the CLI, the program, each provider, and the
cluster's own processes, which are no child of the CLI), with its engine events stamped as they come
(bench/timeline.py: each step's start and end, so the wall time by what the engine waited on); and
once under py-spy (`record --nonblocking`), for where the Python processes (the program and the
dynamic providers) spend theirs, by function and by package, with the CLI's own CPU profile (`pulumi
--profiling`, read by `go tool pprof` where Go is installed). Prints Markdown tables; progress goes to
stderr. The stack, cluster and fake machines are the engine bench's (bench/harness.py), and are
stopped when it ends.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
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
    load_average,
    part,
    process_names,
    pulumi_command,
    pulumi_failed,
)
from bench.timeline import EventTail, StepSpan, step_spans, waits_table
from tools.local.environment import FILE_BACKEND_QUERY, local_environment

# What `gpu-nodes fleet drift` runs on each stack (gpu_nodes/cli/orchestrate.py).
DRIFT_COMMANDS = {
    "preview": ("preview", "--expect-no-changes"),
    "refresh --preview-only": ("refresh", "--preview-only", "--expect-no-changes"),
}
# A stack brought up and taken down, as the engine bench times them (bench/harness.py).
DEPLOY_COMMANDS = {
    "up": ("up", "--yes", "--skip-preview"),
    "destroy": ("destroy", "--yes", "--skip-preview"),
}
CLI_TOP = 25  # lines of `go tool pprof -top -cum` kept
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
    # Each step of the bare run, from its engine events (bench/timeline.py).
    spans: list[StepSpan] = field(default_factory=list)
    # The CLI's own CPU profile, `go tool pprof -top -cum` (the spied run).
    cli_top: str = ""


def run_counted(bench: Bench, args: Sequence[str], result: Profiled) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "events.jsonl"
        tail = EventTail(log, time.perf_counter())
        tail.start()
        # The CLI takes --event-log only with its debugging commands on (pkg/cmd/pulumi/operations/up.go).
        debug = {"PULUMI_DEBUG_COMMANDS": "true"}
        sampler, result.wall_s, output, returncode = bench.sampled_pulumi(CpuSampler, *args, "--event-log", str(log), env=debug)
        tail.done.set()
        tail.join()
    result.cpu_s = sampler.by_part()
    result.spans = step_spans(tail.events)
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
    spies: list[tuple[str, subprocess.Popen[str], Path]] = []
    seen: set[int] = set()
    with tempfile.TemporaryDirectory() as scratch:
        # The CLI writes its own CPU profile, <prefix>.<pid>.cpu, when it ends.
        command = pulumi_command(*args, "--profiling", str(Path(scratch) / "cli"))
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
        result.cli_top = cli_profile(Path(scratch), bench.env["PATH"])
    if proc.returncode != 0:
        raise pulumi_failed(args, proc.returncode, output)


def cli_profile(scratch: Path, path: str) -> str:
    """The CLI's CPU profile as `go tool pprof -top -cum` prints it (its first CLI_TOP lines), or why not. `path`:
    the bench's PATH, where its `pulumi` is (the engine's build cache, not this process's PATH)."""
    profiles = sorted(scratch.glob("cli.*.cpu"))
    go, cli = shutil.which("go", path=path), shutil.which("pulumi", path=path)
    if not profiles or go is None or cli is None:
        return "no CLI profile (`go` or the profile is missing)"
    read = subprocess.run([go, "tool", "pprof", "-top", "-cum", cli, str(profiles[0])], capture_output=True, text=True)
    return "\n".join((read.stdout or read.stderr).splitlines()[:CLI_TOP])


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
    parser.add_argument(
        "--commands", choices=("drift", "deploy"), default="drift", help="drift: preview and refresh; deploy: up and destroy"
    )
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
    try:
        bench.fresh_environment(args.nodes + 1, preflight)
        bench.configure(args.nodes, preflight)
        results = profile_deploy(bench, spy, log) if args.commands == "deploy" else profile_drift(bench, spy, args.nodes, log)
    finally:
        bench.teardown_environment()
    what = "up and destroy" if args.commands == "deploy" else "drift check"
    print(f"{what} of one stack, {args.nodes} nodes, preflight {args.preflight}, ", end="")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, load {load_average()}")
    print(f"engine parts: {bench.env.get('GPU_NODES_ENGINE_PARTS', 'unknown')}\n")
    print(cpu_table(results))
    for result in results:
        print(f"\n{result.name}, the engine's steps (the bare run):\n")
        print(waits_table(result.spans, result.wall_s))
        print()
        print(function_table(result))
        if result.cli_top:
            print(f"{result.name}, the CLI's CPU profile (the spied run):\n\n```\n{result.cli_top}\n```")
    return 0


def profile_drift(bench: Bench, spy: Path, nodes: int, log: Callable[[str], None]) -> list[Profiled]:
    """Deploy, then each drift command bare and spied on the same state."""
    bench.pulumi("up", "--yes", "--skip-preview")
    log(f"deployed {nodes} nodes")
    results = []
    for name, command in DRIFT_COMMANDS.items():
        result = Profiled(name)
        run_counted(bench, command, result)
        log(f"{name}: {result.wall_s:.1f} s, {sum(result.cpu_s.values()):.1f} CPU s (load {load_average()})")
        run_spied(bench, command, result, spy)
        results.append(result)
    bench.pulumi("destroy", "--yes", "--skip-preview")
    return results


def profile_deploy(bench: Bench, spy: Path, log: Callable[[str], None]) -> list[Profiled]:
    """`up` then `destroy` bare, then both again spied: each starts from what the one before left."""
    results = {name: Profiled(name) for name in DEPLOY_COMMANDS}
    for name, command in DEPLOY_COMMANDS.items():
        run_counted(bench, command, results[name])
        log(f"{name}: {results[name].wall_s:.1f} s, {sum(results[name].cpu_s.values()):.1f} CPU s (load {load_average()})")
    for name, command in DEPLOY_COMMANDS.items():
        run_spied(bench, command, results[name], spy)
        log(f"{name}: spied (load {load_average()})")
    return list(results.values())


if __name__ == "__main__":
    sys.exit(main())
