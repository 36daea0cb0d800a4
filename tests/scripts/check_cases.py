"""A row of a table test of one check: how the node differs from the healthy one, how the script
is run, and what the check, the exit code and the report must say. A failure names the row and
shows the check and what the script printed on stderr."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .preflight_node import FakeNode, Result


def unchanged(_node: FakeNode) -> None:
    """The healthy node as it is."""


@dataclass(frozen=True)
class CheckCase:
    name: str
    arrange: Callable[[FakeNode], object] = unchanged
    args: tuple[str, ...] = ()
    runtime: str = "containerd"
    gpus: int = 2
    exit: int | None = None  # None: the exit code is not what this row is about
    ok: bool | None = None
    detail: str | None = None  # the whole detail
    starts: str = ""
    ends: str = ""
    says: tuple[str, ...] = ()
    never: tuple[str, ...] = ()
    # Entries of the report: a top-level key ("driverVersion") or one inside an object ("runtime.source").
    report: Mapping[str, Any] = field(default_factory=dict)


def report_value(report: dict[str, Any], key: str) -> Any:
    value: Any = report
    for part in key.split("."):
        value = value[part]
    return value


def run_case(node: FakeNode, case: CheckCase, check_name: str) -> Result:
    """Arranges the node, runs the script, and asserts every expectation the row sets."""
    case.arrange(node)
    result = node.preflight(*case.args, runtime=case.runtime, gpus=case.gpus)
    check = result.check(check_name)
    detail = check["detail"]
    shown = f"{case.name}: {check}\nstderr:\n{result.stderr}"
    if case.exit is not None:
        assert result.returncode == case.exit, f"exit {result.returncode}, expected {case.exit}; {shown}"
    if case.ok is not None:
        assert check["ok"] is case.ok, shown
    if case.detail is not None:
        assert detail == case.detail, shown
    assert detail.startswith(case.starts), shown
    assert detail.endswith(case.ends), shown
    for text in case.says:
        assert text in detail, f"{text!r} not in the detail; {shown}"
    for text in case.never:
        assert text not in detail, f"{text!r} in the detail; {shown}"
    for key, expected in case.report.items():
        assert report_value(result.report, key) == expected, f"report {key}: {report_value(result.report, key)!r}; {shown}"
    return result
