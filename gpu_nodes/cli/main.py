"""`gpu-nodes fleet up | preview | drift | destroy | report | export`: one fleet, many stacks; and
`gpu-nodes report`: one stack's per-node report, from its `nodeGroups` output.

docs/fleet.md, "The fleet command" and "Reports".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from gpu_nodes.cli.ctrf import document, stack_reports
from gpu_nodes.cli.deployed import deployment_digests
from gpu_nodes.cli.fleet_file import Fleet, SecretSource, load_fleet
from gpu_nodes.cli.fleet_report import (
    as_json,
    drift_verdict,
    fleet_nodes,
    node_table,
    repair_command,
    run_failures,
    stack_table,
)
from gpu_nodes.cli.live import LiveView
from gpu_nodes.cli.node_table import HEADER, WHAT, aligned, in_service, read_node_groups, rows
from gpu_nodes.cli.orchestrate import objects_in_state, run_phases, shared_objects
from gpu_nodes.cli.plan import FleetPlan, plan_fleet
from gpu_nodes.cli.progress import StackProgress
from gpu_nodes.cli.runner import RunOptions, run_stack
from gpu_nodes.cli.stack_files import prepare_stack, stack_file
from gpu_nodes.errors import FleetError, GpuNodesError

RUNS = ("up", "preview", "drift", "destroy")
# What a report is written as: the table `make local-up` prints, or CTRF for CI (gpu_nodes/cli/ctrf.py).
FORMATS = ("table", "ctrf")
STDOUT = Path("-")
# Exit codes: a stack failed (or drifted, or has nodes out of service); the command refused its input.
FAILED, REFUSED = 1, 2


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="gpu-nodes", description="Bring GPU machines into service, one fleet of stacks at a time.")
    commands = top.add_subparsers(dest="area", required=True)
    fleet = commands.add_parser("fleet", help="drive one fleet, described in a fleet file, as a set of stacks")
    actions = fleet.add_subparsers(dest="command", required=True)
    for name, text in (
        ("up", "deploy every stack: the owner first, then the others --parallel at a time"),
        ("preview", "preview every stack"),
        ("drift", "preview and refresh --preview-only, both with --expect-no-changes, on every stack at once"),
        ("destroy", "destroy every stack: the others first, the owner last"),
        ("report", "print every stack's per-node report"),
        ("export", "write the fleet as other tools take it"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("-f", "--file", type=Path, default=Path("fleet.yaml"), help="the fleet file (default: fleet.yaml)")
        action.add_argument("--json", type=Path, help="also write the result as JSON to this file (- for stdout)")
        if name in RUNS:
            action.add_argument(
                "--parallel",
                type=int,
                default=default_parallel(),
                help="stacks run at once (default %(default)s: one per CPU core of this machine)",
            )
            action.add_argument("--log-dir", type=Path, help="each stack's log (default: fleet-logs/ beside the fleet file)")
            action.add_argument("--fail-fast", action="store_true", help="start no more stacks once one has failed")
            action.add_argument("--engine-parallel", type=int, help="the engine's own --parallel within each stack")
        if name in ("up", "destroy"):
            action.add_argument("--continue-on-error", action="store_true", help="passed to each stack's pulumi up / destroy")
        if name == "up":
            action.add_argument(
                "--refresh", action="store_true", help="passed to each stack's pulumi up: what was changed by hand is set back"
            )
        if name == "up":
            action.add_argument("--ctrf", type=Path, help="also write each node's proof as CTRF JSON to this file (- for stdout)")
        if name == "report":
            _report_arguments(action)
        if name == "export":
            action.add_argument("--operator", action="store_true", required=True, help="the Pulumi Kubernetes Operator's objects")
            action.add_argument("--out", type=Path, help="write the objects here (default: stdout)")
            action.add_argument("--operator-settings", type=Path, help="YAML: the operator's backend, program source, Secrets")
    report = commands.add_parser(
        "report",
        help="print one stack's per-node report from its nodeGroups output (pulumi stack output nodeGroups --json)",
    )
    report.add_argument(
        "source", nargs="?", type=Path, default=STDOUT, help="the nodeGroups output as JSON (default: - for stdin)"
    )
    report.add_argument("--stack", type=_stack_name, help="the stack's name, put in front of each node in CTRF")
    _report_arguments(report)
    return top


def _report_arguments(action: argparse.ArgumentParser) -> None:
    action.add_argument(
        "--format", choices=FORMATS, default=FORMATS[0], help="the table, or CTRF JSON for CI (default: %(default)s)"
    )
    action.add_argument("--out", type=Path, help="write the report here (default: stdout)")


def _stack_name(value: str) -> str:
    if not value:
        raise argparse.ArgumentTypeError("expected the stack's name, not an empty string")
    return value


def default_parallel() -> int:
    """Stacks at once: one per core. Each stack's engine, program and providers keep about one core busy
    (bench/README.md, "Where a drift check's work goes"); more stacks than cores only slow each other,
    and on a small machine that also runs the control plane they starve it (its controllers and
    scheduler lose their leases)."""
    return max(1, len(os.sched_getaffinity(0)))


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.area == "report":
        return _stack_report(args)
    if args.command == "report" and args.format == "ctrf" and args.json == STDOUT and (args.out or STDOUT) == STDOUT:
        # Two JSON documents on one stream: no reader takes that (the table before --json's document, as ever, is fine).
        print(
            "gpu-nodes fleet: --json - and the CTRF report would both go to stdout: give --out or --json a file", file=sys.stderr
        )
        return REFUSED
    try:
        fleet = load_fleet(args.file)
        plan = plan_fleet(fleet)
        for warning in plan.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if args.command == "export":
            from gpu_nodes.cli.operator_export import export_operator

            return export_operator(fleet, plan, args.out, args.operator_settings)
        workspace = auto.LocalWorkspace(work_dir=str(fleet.program))
        if args.command == "report":
            return _report(args, plan, workspace)
        read_secret = _cached()
        # One after another: selecting a stack writes the workspace's settings file.
        selected = {s.name: prepare_stack(workspace, fleet, s, read_secret, renew=args.command == "up") for s in plan.stacks}
    except GpuNodesError as error:
        print(f"gpu-nodes fleet: {error}", file=sys.stderr)
        return REFUSED
    except (auto.errors.CommandError, FileNotFoundError) as error:
        print(f"gpu-nodes fleet: the Pulumi CLI refused, before any stack ran: {error}", file=sys.stderr)
        return REFUSED
    return _run(args, fleet, plan, workspace, selected)


def _run(
    args: argparse.Namespace, fleet: Fleet, plan: FleetPlan, workspace: auto.LocalWorkspace, selected: dict[str, auto.Stack]
) -> int:
    log_dir = args.log_dir or fleet.path.parent / "fleet-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    progress = {s.name: StackProgress(s.name, s.nodes, owner=s.owner) for s in plan.stacks}
    options = RunOptions(getattr(args, "continue_on_error", False), args.engine_parallel, getattr(args, "refresh", False))
    runtime = fleet.stack.runtime_class
    needed = shared_objects(plan, runtime.name if runtime is not None and runtime.create else None)

    def owner_state() -> set[str]:
        deployment = workspace.export_stack(plan.owner.name).deployment or {}
        return objects_in_state(deployment.get("resources") or [])

    # What each stack's `up` runs: kept by a successful up, compared by drift (gpu_nodes/cli/deployed.py).
    files = {s.name: stack_file(fleet.program, s.name) for s in plan.stacks} if args.command in ("up", "drift") else {}
    digests = deployment_digests(fleet.program, files)
    started = _now_ms()
    live = LiveView(list(progress.values()))
    live.start()
    try:
        run_phases(
            plan,
            args.command,
            progress,
            lambda name, p: run_stack(selected[name], args.command, p, log_dir, options, digests.get(name, "")),
            args.parallel,
            args.fail_fast,
            owner_state,
            needed,
        )
    finally:
        live.stop()
    stacks = list(progress.values())
    outputs = _outputs(workspace, plan, progress) if args.command == "up" else {}
    lines = stack_table(stacks)
    if args.command == "up":
        lines = [*node_table(plan, outputs), "", *lines]
    elif args.command == "drift":
        lines += ["", *drift_verdict(stacks, repair_command(args.file))]
    print("\n".join(lines))
    _write_json(args.json, as_json(args.command, plan, stacks, outputs))
    if getattr(args, "ctrf", None) is not None:
        nodes = fleet_nodes(plan, outputs, {s.name: run_failures(s) for s in stacks})
        _write_json(args.ctrf, document(nodes, started, _now_ms()))
    return 0 if all(s.state == "passed" for s in stacks) else FAILED


def _report(args: argparse.Namespace, plan: FleetPlan, workspace: auto.LocalWorkspace) -> int:
    outputs = _outputs(workspace, plan)
    stacks = []
    for stack in plan.stacks:
        progress = StackProgress(stack.name, stack.nodes, owner=stack.owner)
        report = outputs.get(stack.name) or {}
        lifted = {node for nodes in report.values() for node, entry in nodes.items() if in_service(entry)}
        progress.proven = lifted & set(stack.nodes)
        out = [n for n in stack.nodes if n not in lifted]
        progress.finish(not out, f"not in service: {', '.join(out)}" if out else "")
        stacks.append(progress)
    if args.format == "ctrf":
        now = _now_ms()
        _write_json(args.out or STDOUT, document(fleet_nodes(plan, outputs), now, now))
    else:
        _write_text(args.out or STDOUT, "\n".join(node_table(plan, outputs)) + "\n")
    _write_json(args.json, as_json("report", plan, stacks, outputs))
    return 0 if all(s.state == "passed" for s in stacks) else FAILED


def _stack_report(args: argparse.Namespace) -> int:
    """`gpu-nodes report`: one stack's nodeGroups output, as the table or as CTRF; exit 1 when a node
    is out of service, as `fleet report`'s."""
    try:
        node_groups = read_node_groups(_read_source(args.source), "stdin" if args.source == STDOUT else str(args.source))
    except GpuNodesError as error:
        print(f"gpu-nodes report: {error}", file=sys.stderr)
        return REFUSED
    if args.format == "ctrf":
        now = _now_ms()
        _write_json(args.out or STDOUT, document(stack_reports(node_groups, args.stack), now, now))
    else:
        _write_text(args.out or STDOUT, "\n".join(aligned([HEADER, *rows(node_groups)])) + "\n")
    entries = [entry for nodes in node_groups.values() for entry in nodes.values()]
    return 0 if all(in_service(entry) for entry in entries) else FAILED


def _read_source(source: Path) -> str:
    if source == STDOUT:
        return sys.stdin.read()
    try:
        return source.read_text()
    except OSError as error:
        raise FleetError(source, [f"cannot read it: {error.strerror}"], WHAT) from None
    except UnicodeDecodeError as error:
        raise FleetError(source, [f"not text: {error}"], WHAT) from None


def _now_ms() -> int:
    """Now, as CTRF counts time: milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def _cached() -> Callable[[SecretSource], str]:
    """Reads each secret once per run, however many stacks take it."""
    read: dict[str, str] = {}

    def value(source: SecretSource) -> str:
        if source.key not in read:
            read[source.key] = source.read()
        return read[source.key]

    return value


def _outputs(
    workspace: auto.LocalWorkspace, plan: FleetPlan, progress: dict[str, StackProgress] | None = None
) -> dict[str, dict[str, Any]]:
    """Each stack's `nodeGroups` output (as its `up` returned it, else read from its state); none
    for a stack that has none (never deployed)."""
    found = {}
    for stack in plan.stacks:
        known = progress[stack.name].outputs if progress else None
        if known is not None:
            found[stack.name] = known
            continue
        try:
            value = workspace.stack_outputs(stack.name).get("nodeGroups")
        except auto.errors.CommandError:
            continue
        if value is not None and isinstance(value.value, dict):
            found[stack.name] = value.value
    return found


def _write_json(path: Path | None, data: dict) -> None:
    if path is not None:
        _write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_text(path: Path, text: str) -> None:
    if path == STDOUT:
        sys.stdout.write(text)
    else:
        path.write_text(text)
