"""A stack's run: drift is the README's two commands, both with --expect-no-changes, the second even
when the first found drift; `up --refresh` refreshes first (a stand-in stack records the calls;
e2e runs the real ones)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from pulumi.automation.errors import CommandError

from gpu_nodes.cli.progress import StackProgress
from gpu_nodes.cli.runner import RunOptions, drift_checks, run_stack
from tests.cli.events import pre


class RecordingStack:
    def __init__(self, failing: tuple[str, ...] = ()):
        self.failing = failing
        self.calls: list[tuple[str, dict]] = []

    def _call(self, name: str, kwargs: dict) -> None:
        self.calls.append((name, {k: v for k, v in kwargs.items() if k in ("expect_no_changes", "diff")}))
        if name in self.failing:
            kwargs["on_event"](pre("update", "g-n1-labels"))
            raise CommandError(SimpleNamespace(__str__=lambda self: "error: no changes were expected"))

    def preview(self, **kwargs):
        self._call("preview", kwargs)

    def preview_refresh(self, **kwargs):
        self._call("preview_refresh", kwargs)


def run(stack: RecordingStack) -> tuple[bool, StackProgress]:
    progress = StackProgress("a", ("n1",))
    progress.start("drift")
    passed = drift_checks(stack, progress, io.StringIO(), {"on_event": progress.on_event})
    return passed, progress


def test_drift_runs_preview_and_refresh_preview_both_expecting_no_changes():
    stack = RecordingStack()
    passed, progress = run(stack)
    expected = {"expect_no_changes": True, "diff": True}
    assert stack.calls == [("preview", expected), ("preview_refresh", expected)], stack.calls
    assert passed and progress.state == "passed", progress


def test_the_refresh_check_runs_even_when_the_preview_found_drift():
    stack = RecordingStack(failing=("preview",))
    passed, progress = run(stack)
    assert [name for name, _ in stack.calls] == ["preview", "preview_refresh"], stack.calls
    assert not passed and progress.state == "failed" and progress.changes[0].node == "n1", progress


class UpStack:
    def __init__(self) -> None:
        self.up_kwargs: dict = {}

    def up(self, **kwargs):
        self.up_kwargs = kwargs
        return SimpleNamespace(outputs={})


def test_up_with_refresh_asks_the_engine_to_refresh_first(tmp_path):
    stack = UpStack()
    passed = run_stack(stack, "up", StackProgress("a", ("n1",)), tmp_path, RunOptions(refresh=True))  # type: ignore[arg-type]
    assert passed and stack.up_kwargs["refresh"] is True, stack.up_kwargs


def test_up_without_refresh_leaves_the_engines_default(tmp_path):
    stack = UpStack()
    run_stack(stack, "up", StackProgress("a", ("n1",)), tmp_path, RunOptions())  # type: ignore[arg-type]
    assert stack.up_kwargs["refresh"] is None, stack.up_kwargs
