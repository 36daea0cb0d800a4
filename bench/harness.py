"""What the engine benches run on: the local cluster and its fake machines, the stack `bench`
in its own file backend, the runbook beside it, and each engine step timed and sampled (its
peak RSS and CPU time per part, from /proc). bench/engine_bench.py and bench/split.py both
measure with a `Bench`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml

from bench.state_size import stored_bytes
from gpu_nodes.manifests.verification import Role
from tools.local.environment import FILE_BACKEND_QUERY
from tools.local.stack_config import ProofItems

ROOT = Path(__file__).resolve().parent.parent

STACK = "bench"
GROUP = "bench-gpu"
BACKEND = ROOT / ".state/bench-pulumi"
FAKEHOSTS = ROOT / ".state/fakehosts"
PREFLIGHT_MAX_NODES = 100  # fake machines (one sshd each, 127.0.10.x) up to here
# Per Job and for each node's GPU count: generous, a timeout is not what is measured here.
VERIFICATION_TIMEOUT = 1800
SAMPLE_SECONDS = 0.2


@dataclass(frozen=True)
class ItemVariant:
    """A run that differs from the defaults by one proof item: the items the program runs, the proof Jobs the
    runbook leaves out, and whether the item is in the defaults (so its cost is the defaults' time less the
    variant's) or added to them (the variant's less the defaults')."""

    items: ProofItems
    runbook_skips: tuple[Role, ...] = ()
    in_defaults: bool = False
    # The program has no switch for it: the runbook side alone is measured.
    engine: bool = True


DEFAULT_PROOF = ProofItems()
# Each new proof item's cost per node (issue 58): the access check and DCGM's diagnostics are on by default,
# NCCL's all-reduce and the exporter's metrics are asked for.
ITEM_VARIANTS = {
    "access": ItemVariant(ProofItems(), runbook_skips=(Role.ACCESS,), in_defaults=True, engine=False),
    "DCGM": ItemVariant(ProofItems(dcgm=False), in_defaults=True),
    "NCCL": ItemVariant(ProofItems(nccl=True)),
    "metrics": ItemVariant(ProofItems(metrics=True)),
}


# -- peak memory of a command's process tree --------------------------------------------


def part(comm: str, cmdline: str) -> str | None:
    """Which part of a Pulumi run a process is: the CLI, the Python program, each provider."""
    if comm == "pulumi":
        return "CLI"
    # The language host starts the program as `python -u .../pulumi-language-python-exec ...`.
    if "pulumi-language-python-exec" in cmdline:
        return "program"
    # By command line: comm is cut at 15 characters (`pulumi-resource`).
    if "pulumi-resource-kubernetes" in cmdline:
        return "kubernetes provider"
    if "pulumi-resource-command" in cmdline:
        return "command provider"
    # The program's dynamic providers (taints and gate, readiness checks) run `python -m pulumi.dynamic`.
    if "-m pulumi.dynamic" in cmdline or "pulumi-resource-pulumi-python" in cmdline:
        return "dynamic providers"
    if comm.startswith("pulumi-language"):
        return "language host"
    return None


# The engine bench's columns: the CLI, the program, and the providers together.
ROLES = {
    "CLI": "cli",
    "program": "program",
    "kubernetes provider": "providers",
    "command provider": "providers",
    "dynamic providers": "providers",
}


def role(comm: str, cmdline: str) -> str | None:
    """Which column of the engine bench a process counts in (`part`, coarser)."""
    return ROLES.get(part(comm, cmdline) or "")


def peaks_mib(per_process: dict[int, tuple[str, int]]) -> dict[str, float]:
    """Per role: the largest process's peak (CLI, program), the sum of peaks for providers."""
    result: dict[str, float] = {}
    for which, kib in per_process.values():
        mib = kib / 1024
        result[which] = result.get(which, 0) + mib if which == "providers" else max(result.get(which, 0), mib)
    return result


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, as /proc lists them now."""
    tree, found, todo = _children(), [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(tree.get(current, []))
    return found


# The local cluster's processes, as /proc/<pid>/comm names them (cut at 15 characters).
CLUSTER_COMMS = ("kube-apiserver", "etcd", "kwok-controller", "kube-controller", "kube-scheduler")


def cpu_seconds(stat: str) -> float:
    """User plus system CPU time from a /proc/<pid>/stat line (fields 14 and 15 of proc(5))."""
    # After the command name in parentheses the fields start at 3 (state).
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def command_name(stat: str) -> str:
    """The command name of a /proc/<pid>/stat line (between its parentheses, as /proc/<pid>/comm has it)."""
    return stat[stat.index("(") + 1 : stat.rindex(")")]


def exited(stat: str) -> bool:
    """A zombie: it has exited, its parent has only not reaped it."""
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def cluster_processes() -> dict[int, str]:
    """The local cluster's processes, by pid: each one's /proc/<pid>/stat line."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            if command_name(stat) in CLUSTER_COMMS:
                found[int(entry.name)] = stat
    return found


def cluster_cpu_seconds() -> float:
    """CPU time the local cluster's processes have used so far."""
    return sum(cpu_seconds(stat) for stat in cluster_processes().values())


def control_plane_problem(env: dict[str, str]) -> str | None:
    """Which part of the local cluster is not whole, or None: each component's process must run (the
    controller manager and scheduler run without leader election, tools/cluster/up.sh, so one alive
    is one leading) and the API server must answer `/readyz`. kwokctl's binary runtime restarts
    nothing: a component that exits stays gone, and the runs after it only slow down."""
    running = {command_name(stat) for stat in cluster_processes().values() if not exited(stat)}
    for name in CLUSTER_COMMS:
        if name not in running:
            return f"{name} is not running"
    ready = subprocess.run(["kubectl", "get", "--raw", "/readyz"], env=env, capture_output=True, text=True, timeout=30)
    if ready.returncode != 0 or ready.stdout.strip() != "ok":
        return f"kube-apiserver is not ready: {(ready.stdout + ready.stderr).strip()[-300:]}"
    return None


def _peak_kib(pid: int) -> int:
    """The process's own high-water mark (VmHWM): its peak so far, even between samples."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def process_names(pid: int) -> tuple[str, str] | None:
    """A process's command name and line; None when it has ended."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return comm, cmdline


class Sampler(threading.Thread):
    """A thread that samples the process tree under `pid` until `done` is set."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.done = threading.Event()


class PeakSampler(Sampler):
    """Keeps each process's role, peak RSS (KiB) and CPU time so far (a process's last 0.2 s before
    it ends is missed)."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.per_process: dict[int, tuple[str, int]] = {}
        self.cpu: dict[int, float] = {}

    def cpu_by_role(self) -> dict[str, float]:
        result: dict[str, float] = {}
        for pid, seconds in self.cpu.items():
            which = self.per_process[pid][0]
            result[which] = result.get(which, 0) + seconds
        return result

    def run(self) -> None:
        while not self.done.is_set():
            for pid in descendants(self.pid):
                named = process_names(pid)
                which = role(*named) if named else None
                try:
                    if which:
                        self.per_process[pid] = (which, max(self.per_process.get(pid, ("", 0))[1], _peak_kib(pid)))
                        self.cpu[pid] = cpu_seconds(Path(f"/proc/{pid}/stat").read_text())
                except OSError:
                    continue  # it ended between the listing and the read
            self.done.wait(SAMPLE_SECONDS)


# -- results ---------------------------------------------------------------------------


@dataclass
class Step:
    """One engine step, with the runbook's counterpart when there is one."""

    name: str
    engine_s: float | None = None
    runbook_s: float | None = None
    cli_mib: float | None = None
    program_mib: float | None = None
    providers_mib: float | None = None
    cli_cpu_s: float | None = None
    program_cpu_s: float | None = None
    providers_cpu_s: float | None = None
    cluster_cpu_s: float | None = None
    state_bytes: int | None = None
    # Per proof item (ITEM_VARIANTS): what it adds to this step, seconds per node, on the engine and the runbook.
    item_costs: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


@dataclass
class SizeResult:
    nodes: int
    preflight: bool
    steps: list[Step] = field(default_factory=list)
    error: str | None = None
    # The file backend this size ran with, shown beside each step when a run compares backends.
    backend: str = ""

    def step(self, name: str) -> Step:
        for step in self.steps:
            if step.name == name:
                return step
        self.steps.append(Step(name))
        return self.steps[-1]


# -- running things ----------------------------------------------------------------------

S = TypeVar("S", bound=Sampler)


def load_average() -> str:
    """The machine's load over the last 1, 5 and 15 minutes, as `uptime` prints it: a shared machine's
    figures are read beside it."""
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


def pulumi_command(*args: str) -> list[str]:
    """A `pulumi` command on the bench's stack, without prompts."""
    return ["pulumi", *args, "--stack", STACK, "--non-interactive"]


def pulumi_failed(args: Sequence[str], returncode: int, output: str) -> RuntimeError:
    return RuntimeError(f"pulumi {' '.join(args)} exited {returncode}:\n{output[-4000:]}")


class Bench:
    def __init__(self, env: dict[str, str], log: Callable[[str], None]) -> None:
        self.env = env
        self.log = log

    def run(self, *args: str, stdin: str | None = None, timeout: int = 7200) -> subprocess.CompletedProcess:
        result = subprocess.run(list(args), cwd=ROOT, env=self.env, input=stdin, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            output = f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            raise RuntimeError(f"{' '.join(args[:3])} exited {result.returncode}:\n{output}")
        return result

    def pulumi(self, *args: str) -> subprocess.CompletedProcess:
        return self.run(*pulumi_command(*args))

    def sampled_pulumi(
        self, sampler_of: Callable[[int], S], *args: str, env: dict[str, str] | None = None
    ) -> tuple[S, float, str, int]:
        """One `pulumi` command with a sampler on its process tree: the sampler once stopped, the wall
        time, the output and the exit code. env: variables beside the bench's."""
        started = time.perf_counter()
        command = pulumi_command(*args)
        environment = self.env | (env or {})
        proc = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sampler = sampler_of(proc.pid)
        sampler.start()
        output, _ = proc.communicate()
        wall_s = time.perf_counter() - started
        sampler.done.set()
        sampler.join()
        return sampler, wall_s, output, proc.returncode

    def measured_pulumi(self, step: Step, *args: str) -> None:
        """Wall time and peak RSS of one `pulumi` command."""
        cluster_before = cluster_cpu_seconds()
        sampler, step.engine_s, output, returncode = self.sampled_pulumi(PeakSampler, *args)
        step.cluster_cpu_s = cluster_cpu_seconds() - cluster_before
        peaks = peaks_mib(sampler.per_process)
        step.cli_mib, step.program_mib, step.providers_mib = (peaks.get(r) for r in ("cli", "program", "providers"))
        cpu = sampler.cpu_by_role()
        step.cli_cpu_s, step.program_cpu_s, step.providers_cpu_s = (cpu.get(r) for r in ("cli", "program", "providers"))
        self.log(f"{step.name}: pulumi {args[0]} {step.engine_s:.1f} s")
        if returncode != 0:
            raise pulumi_failed(args, returncode, output)
        self.control_plane_whole(step.name)

    def control_plane_whole(self, after: str) -> None:
        """Fail the run, naming the component, when the local cluster is no longer whole after a step."""
        problem = control_plane_problem(self.env)
        if problem:
            raise RuntimeError(f"after {after}, the local cluster is not whole: {problem}")
        self.log(f"after {after}: the control plane is whole")

    def state_bytes(self) -> int:
        """The stack's state as the backend stores it (bench/state_size.py: not the export's indented text)."""
        return stored_bytes(self.run("pulumi", "stack", "export", "--stack", STACK).stdout)

    def timed(self, step: Step, what: str, action: Callable[[], None]) -> None:
        started = time.perf_counter()
        action()
        step.runbook_s = time.perf_counter() - started
        self.log(f"{step.name}: runbook {what} {step.runbook_s:.1f} s")
        self.control_plane_whole(f"runbook {what}")

    # -- environment ----------------------------------------------------------------------

    def fresh_environment(self, nodes: int, preflight: bool) -> None:
        """A new cluster with `nodes` GPU nodes, fake machines when preflight is on, a new stack."""
        self.teardown_environment()
        self.run("tools/cluster/up.sh", "--nodes", str(nodes), "--timeout", "600")
        if preflight:
            self.run("tools/fakehost/up.sh", *node_names(nodes))
        shutil.rmtree(BACKEND, ignore_errors=True)
        BACKEND.mkdir(parents=True)
        (ROOT / f"Pulumi.{STACK}.yaml").unlink(missing_ok=True)
        self.pulumi("stack", "init")
        self.log(f"fresh cluster: {nodes} GPU nodes, preflight {'on' if preflight else 'off'}")

    def teardown_environment(self) -> None:
        self.run("tools/fakehost/down.sh")
        self.run("tools/cluster/down.sh")

    def configure(self, nodes: int, preflight: bool, proof: ProofItems = DEFAULT_PROOF) -> None:
        """The stack's config for `nodes` nodes, with the program's default proof unless `proof` says otherwise."""
        from bench.runbook import SSH_PARALLEL

        self.run(
            str(ROOT / ".venv/bin/python"),
            "tools/local/stack_config.py",
            *("--stack", STACK, "--group", GROUP, "--nodes", str(nodes), "--proof", proof.text),
            *("--preflight", "on" if preflight else "off", "--timeout", str(VERIFICATION_TIMEOUT)),
            # The same SSH bound on both sides.
            *("--max-sessions", str(SSH_PARALLEL)),
        )
        if preflight:
            key = (FAKEHOSTS / "id_ed25519").read_text()
            self.run("pulumi", "config", "set", "--secret", "--stack", STACK, "gpu-nodes:sshPrivateKey", stdin=key)

    def runbook(self, skips: tuple[Role, ...] = ()):
        """The runbook of the stack's config as last written; `skips`: proof Jobs it leaves out."""
        from bench.runbook import Runbook
        from gpu_nodes.config.stack import parse_stack

        config = yaml.safe_load((ROOT / f"Pulumi.{STACK}.yaml").read_text())["config"]
        stack = parse_stack(config["gpu-nodes:nodeGroups"])
        known_hosts = ROOT / ".state/bench-known-hosts"
        hosts = json.loads((FAKEHOSTS / "hosts.json").read_text()) if (FAKEHOSTS / "hosts.json").exists() else []
        known_hosts.write_text("".join(f"[{h['sshHost']}]:{h['sshPort']} {h['hostKey']}\n" for h in hosts))
        return Runbook(stack, self.env, FAKEHOSTS / "id_ed25519", known_hosts, self.log, skips=skips)

    # -- one size -------------------------------------------------------------------------

    def measure(
        self,
        nodes: int,
        backend_query: str = FILE_BACKEND_QUERY,
        with_runbook: bool = True,
        label: bool = False,
        preflight: bool | None = None,
        items: Sequence[str] = (),
    ) -> SizeResult:
        """One size; the engine on a file backend with `backend_query` ("" for none), then the runbook, then
        each proof item of `items` (ITEM_VARIANTS) as a run of its own on both sides. label: name the backend
        beside each step (a run that compares backends); preflight: on or off (default: on up to
        PREFLIGHT_MAX_NODES)."""
        preflight = nodes <= PREFLIGHT_MAX_NODES if preflight is None else preflight
        shown = (f"?{backend_query}" if backend_query else "with sidecars") if label else ""
        result = SizeResult(nodes, preflight, backend=shown)
        self.env["PULUMI_BACKEND_URL"] = f"file://{BACKEND}" + (f"?{backend_query}" if backend_query else "")
        try:
            self.fresh_environment(nodes + 1, preflight)
            self.configure(nodes, preflight)
            up = result.step("up")
            self.measured_pulumi(up, "up", "--yes", "--skip-preview")
            up.state_bytes = self.state_bytes()
            self.measured_pulumi(result.step("no-change preview"), "preview", "--expect-no-changes")
            self.measured_pulumi(result.step("refresh"), "refresh", "--yes", "--skip-preview")
            self.configure(nodes + 1, preflight)
            add = result.step("add one node")
            self.measured_pulumi(add, "up", "--yes", "--skip-preview")
            add.state_bytes = self.state_bytes()
            self.measured_pulumi(result.step("destroy"), "destroy", "--yes", "--skip-preview")
            if not with_runbook:
                return result

            runbook = self.runbook()  # from the N+1 config; it applies N nodes first
            names = node_names(nodes + 1)
            self.timed(result.step("up"), "apply", lambda: runbook.apply(names[:-1]))
            self.timed(result.step("add one node"), "add node", lambda: runbook.add_node(names[-1]))
            self.timed(result.step("destroy"), "teardown", lambda: runbook.teardown(names))
            for item in items:
                self.measure_item(result, item, preflight)
        except Exception as error:  # one size failing must not lose the others
            result.error = str(error).splitlines()[0][:200]
            self.log(f"size {nodes} failed: {error}")
        return result

    def measure_item(self, result: SizeResult, item: str, preflight: bool) -> None:
        """One proof item's cost per node, for `up` and `destroy`: the variant's `up` and `destroy` (and the
        runbook's apply and teardown) against the defaults' of the same run. The defaults' destroy removed one
        node more (the one `add one node` added): its time is scaled to the variant's nodes."""
        variant, nodes = ITEM_VARIANTS[item], result.nodes
        names = node_names(nodes)
        self.configure(nodes, preflight, variant.items)
        engine: dict[str, float | None] = {"up": None, "destroy": None}
        if variant.engine:
            for name, args in (("up", ("up", "--yes", "--skip-preview")), ("destroy", ("destroy", "--yes", "--skip-preview"))):
                step = Step(f"{name}, {item} {'off' if variant.in_defaults else 'on'}")
                self.measured_pulumi(step, *args)
                engine[name] = step.engine_s
        runbook = self.runbook(variant.runbook_skips)
        book = {"up": _seconds(lambda: runbook.apply(names)), "destroy": _seconds(lambda: runbook.teardown(names))}
        self.log(f"{item}: runbook apply {book['up']:.1f} s, teardown {book['destroy']:.1f} s")
        for name in ("up", "destroy"):
            step = result.step(name)
            base_nodes = nodes + 1 if name == "destroy" else nodes
            step.item_costs[item] = (
                item_cost(engine[name], step.engine_s, nodes, base_nodes, variant.in_defaults),
                item_cost(book[name], step.runbook_s, nodes, base_nodes, variant.in_defaults),
            )


def item_cost(variant_s: float | None, base_s: float | None, nodes: int, base_nodes: int, in_defaults: bool) -> float | None:
    """Seconds per node a proof item adds: between a run without it and one with it, `nodes` nodes each; the
    defaults' run (`base_s`, over `base_nodes`) scaled to `nodes`. None when either run is missing."""
    if variant_s is None or base_s is None:
        return None
    base = base_s * nodes / base_nodes
    return (base - variant_s if in_defaults else variant_s - base) / nodes


def _seconds(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def node_names(count: int) -> list[str]:
    return [f"gpu-node-{i}" for i in range(1, count + 1)]
