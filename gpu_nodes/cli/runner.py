"""One stack, one command, through Pulumi's Automation API: the operator's own CLI and backend,
the program directory as it is (a `LocalWorkspace`; no inline program, which dynamic providers
cannot load). Its output goes to its log file, its events to its `StackProgress`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pulumi import automation as auto

from gpu_nodes.cli.deployed import TAG, Deployed, why_preview
from gpu_nodes.cli.progress import StackProgress


@dataclass(frozen=True)
class RunOptions:
    continue_on_error: bool = False
    # The engine's own --parallel within a stack (None: the engine's default).
    engine_parallel: int | None = None
    # `up` reads the cluster first, so that what was changed by hand is set back (drift repaired).
    refresh: bool = False


def _last_lines(error: auto.errors.CommandError, count: int = 3) -> str:
    """The CLI's own `error:` lines, each once (the whole output is in the log)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    errors = list(dict.fromkeys(line for line in lines if line.startswith("error:")))
    return " | ".join((errors or lines)[-count:])


def _reason(progress: StackProgress, error: auto.errors.CommandError) -> str:
    """Why the stack failed: the engine's errors that name no node (those are per node), else the CLI's."""
    return " | ".join(progress.errors[-3:]) if progress.errors else _last_lines(error)


def run_stack(
    stack: auto.Stack, command: str, progress: StackProgress, log_dir: Path, options: RunOptions, digest: str = ""
) -> bool:
    """Runs `command` on the stack; True when it passed. Never raises for the stack's own failure.
    `digest`: what an `up` of the stack runs (gpu_nodes/cli/deployed.py), kept after a successful
    `up` and compared by `drift`."""
    log_path = log_dir / f"{progress.name}.{command}.log"
    progress.log = str(log_path)
    progress.start(command)
    with log_path.open("w") as log:
        common: dict[str, Any] = {
            "on_output": _writer(log),
            "on_error": _writer(log),
            "on_event": progress.on_event,
            "color": "never",
        }
        if options.engine_parallel:
            common["parallel"] = options.engine_parallel
        try:
            if command == "up":
                result = stack.up(continue_on_error=options.continue_on_error or None, refresh=options.refresh or None, **common)
                report = result.outputs.get("nodeGroups")
                progress.outputs = report.value if report is not None and isinstance(report.value, dict) else None
                if digest and result.summary.version is not None:
                    stack.set_tag(TAG, Deployed(result.summary.version, digest).tag())
            elif command == "destroy":
                stack.destroy(continue_on_error=options.continue_on_error or None, **common)
            elif command == "preview":
                stack.preview(diff=True, **common)
            elif command == "drift":
                return drift_checks(stack, progress, log, common, preview_needed(stack, digest))
            else:
                raise ValueError(f"unknown command {command}")
        except auto.errors.CommandError as error:
            progress.finish(False, _reason(progress, error))
            return False
        except Exception as error:  # the SDK's own failures end this stack only, never the others
            progress.finish(False, f"{type(error).__name__}: {error}")
            return False
    progress.finish(True)
    return True


def preview_needed(stack: Any, digest: str) -> str:
    """Why the drift check runs the preview too (gpu_nodes/cli/deployed.py); "" when the refresh alone
    answers it. Without a digest (no program to compare) it always does."""
    if not digest:
        return "no digest of the program"
    try:
        tag: str | None = stack.get_tag(TAG)
    except auto.errors.CommandError:
        tag = None
    history = stack.history(page_size=1, show_secrets=False)
    last = history[0] if history else None
    return why_preview(Deployed.from_tag(tag), last.version if last else None, last.result if last else None, digest)


def drift_checks(stack: Any, progress: StackProgress, log: IO[str], common: dict[str, Any], preview_reason: str) -> bool:
    """Both drift checks, each run even when the other found drift (README, "Detect drift"); the
    preview only when `preview_reason` says why it is needed (empty: the program and settings are
    those of the stack's last update, gpu_nodes/cli/deployed.py)."""
    failures = []
    checks = ("preview", "refresh") if preview_reason else ("refresh",)
    if preview_reason:
        log.write(f"=== preview needed: {preview_reason} ===\n")
    else:
        log.write("=== preview skipped: the program and the stack's settings are those of its last update ===\n")
        progress.skipped_checks.append("preview")
    for check in checks:
        progress.check(check)
        log.write(f"=== {check} --expect-no-changes ===\n")
        try:
            if check == "preview":
                stack.preview(expect_no_changes=True, diff=True, **common)
            else:
                stack.preview_refresh(expect_no_changes=True, diff=True, **common)
        except auto.errors.CommandError as error:
            failures.append(f"{check}: {_last_lines(error, 2)}")
        except Exception as error:  # e.g. the SDK's "summary event never found"
            failures.append(f"{check}: {type(error).__name__}: {error}")
    passed = not failures and not progress.changes
    progress.finish(passed, "; ".join(failures))
    return passed


def _writer(log: IO[str]) -> Any:
    def write(line: str) -> None:
        log.write(line if line.endswith("\n") else line + "\n")
        log.flush()

    return write
