"""A stack's run: drift is the README's two commands, both with --expect-no-changes, the second even
when the first found drift, and the refresh alone when the stack's last update ran what runs now;
`up --refresh` refreshes first; a passed `up` keeps what it ran (a stand-in stack records the calls;
e2e runs the real ones)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from pulumi.automation.errors import CommandError

from gpu_nodes.cli.deployed import TAG, Deployed
from gpu_nodes.cli.progress import StackProgress
from gpu_nodes.cli.runner import RunOptions, drift_checks, preview_needed, run_stack
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


def run(stack: RecordingStack, preview_reason: str = "the program changed") -> tuple[bool, StackProgress]:
    progress = StackProgress("a", ("n1",))
    progress.start("drift")
    passed = drift_checks(stack, progress, io.StringIO(), {"on_event": progress.on_event}, preview_reason)
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


def test_drift_is_the_refresh_alone_when_the_stack_runs_what_its_last_update_ran():
    stack = RecordingStack()
    passed, progress = run(stack, preview_reason="")
    assert [name for name, _ in stack.calls] == ["preview_refresh"], stack.calls
    assert passed and progress.skipped_checks == ["preview"], progress


def test_cluster_drift_is_found_with_the_preview_skipped():
    stack = RecordingStack(failing=("preview_refresh",))
    passed, progress = run(stack, preview_reason="")
    assert not passed and progress.state == "failed" and progress.changes[0].node == "n1", progress


class TaggedStack:
    """A stack's tags and its last update, as the CLI answers `stack tag get` and `stack history`."""

    def __init__(self, tag: str | None, version: int = 7, result: str = "succeeded"):
        self.tag, self.version, self.result = tag, version, result

    def get_tag(self, key: str) -> str:
        if self.tag is None or key != TAG:
            raise CommandError(SimpleNamespace(__str__=lambda self: "error: stack tag not found"))
        return self.tag

    def history(self, page_size: int, show_secrets: bool):
        assert page_size == 1 and not show_secrets, (page_size, show_secrets)
        return [SimpleNamespace(version=self.version, result=self.result)]


def test_the_preview_is_skipped_only_for_the_tagged_update_with_the_same_digest():
    tag = Deployed(7, "abc").tag()
    assert preview_needed(TaggedStack(tag), "abc") == ""
    assert "not update 7" in preview_needed(TaggedStack(tag, version=8), "abc")
    assert "failed" in preview_needed(TaggedStack(tag, result="failed"), "abc")
    assert "changed" in preview_needed(TaggedStack(tag), "abd")
    assert "no gpu-nodes:deployed tag" in preview_needed(TaggedStack(None), "abc")


class UpStack:
    def __init__(self, version: int | None = 12) -> None:
        self.up_kwargs: dict = {}
        self.tags: dict[str, str] = {}
        self.version = version

    def up(self, **kwargs):
        self.up_kwargs = kwargs
        return SimpleNamespace(outputs={}, summary=SimpleNamespace(version=self.version))

    def set_tag(self, key: str, value: str) -> None:
        self.tags[key] = value


def test_a_passed_up_keeps_its_update_and_what_it_ran(tmp_path):
    stack = UpStack()
    run_stack(stack, "up", StackProgress("a", ("n1",)), tmp_path, RunOptions(), digest="abc")  # type: ignore[arg-type]
    assert Deployed.from_tag(stack.tags.get(TAG)) == Deployed(12, "abc"), stack.tags


def test_a_failed_up_keeps_nothing(tmp_path):
    stack = UpStack()

    def failing_up(**kwargs):
        raise CommandError(SimpleNamespace(__str__=lambda self: "error: update failed"))

    stack.up = failing_up  # type: ignore[method-assign]
    passed = run_stack(stack, "up", StackProgress("a", ("n1",)), tmp_path, RunOptions(), digest="abc")  # type: ignore[arg-type]
    assert not passed and stack.tags == {}, stack.tags


def test_up_with_refresh_asks_the_engine_to_refresh_first(tmp_path):
    stack = UpStack()
    passed = run_stack(stack, "up", StackProgress("a", ("n1",)), tmp_path, RunOptions(refresh=True))  # type: ignore[arg-type]
    assert passed and stack.up_kwargs["refresh"] is True, stack.up_kwargs


def test_up_without_refresh_leaves_the_engines_default(tmp_path):
    stack = UpStack()
    run_stack(stack, "up", StackProgress("a", ("n1",)), tmp_path, RunOptions())  # type: ignore[arg-type]
    assert stack.up_kwargs["refresh"] is None, stack.up_kwargs
