"""The per-node report as CTRF, ctrf-io's Common Test Report Format, for CI tools that show test
results: one test per checklist item of each node, and one for its gate. Pure: reports in, a CTRF
document (a dict, JSON as it is) out; the times are given.

What CTRF requires and allows is read from ctrf-io/ctrf at commit 84ddec55 (`spec/ctrf.md` and
`schema/ctrf.schema.json`, the schema tests/cli/fixtures/ holds): every object refuses fields it does
not define, so what we add goes under `extra`, with keys named `<producer>.<what>` (spec 4.6.1,
"Extension Keys"). docs/fleet.md, "Reports", has the mapping and why each status.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_nodes.proof.checklist import DEFERRED, FAIL, ITEMS, ITEMS_BY_KEY, PASS
from gpu_nodes.vocabulary import GATE

# spec/ctrf.md: "Version: 0.0.0 (This version corresponds directly to the CTRF `specVersion` field.)"
SPEC_VERSION = "0.0.0"
TOOL = "gpu-nodes"
VERSION = importlib.metadata.version("gpu-nodes")
# The five statuses, in the order spec/ctrf.md 8 counts them in `summary`.
PASSED, FAILED, SKIPPED, PENDING, OTHER = "passed", "failed", "skipped", "pending", "other"
STATUSES = (PASSED, FAILED, SKIPPED, PENDING, OTHER)
# A checklist value as a CTRF status. The spec gives the statuses no meaning beyond their names, and
# keeps a tool's own word in `rawStatus` ("the unmodified status reported by the source tool before
# CTRF normalization", 9.15). `deferred` is neither a pass nor a test left out (`skipped`) or not yet
# written (`pending`): the item passed before and is owed on the next run; so `other`, and
# `rawStatus: deferred` says which.
STATUS = {PASS: PASSED, FAIL: FAILED, DEFERRED: OTHER}
# The extension keys of a test's `extra`: the node's context, and the item's figures.
NODE_EXTRA, MEASURED_EXTRA = f"{TOOL}.node", f"{TOOL}.measured"
# The node's own test, after its items: its gate, whether it takes GPU work.
GATE_TEST = "gate"
# Lines of a node's failure that are about the node, not an item: the readiness check's word on restarting
# its plugin pod (gpu_nodes/providers/readiness.py, `  - recovery: ...`). They go with the gate test.
NODE_LINES = ("recovery",)
LIFTED, UP = "lifted", "up"
# The checklist's items in their order; a key this version does not know comes after them.
_ORDER = [item.key for item in ITEMS]


@dataclass(frozen=True)
class NodeReport:
    """One node as its stack reports it: its entry in the `nodeGroups` output (None: its stack has
    none), and, after a run, why the run did not prove it (None: it did, or there was no run)."""

    group: str
    node: str
    entry: Mapping[str, Any] | None
    stack: str | None = None
    failure: str | None = None

    @property
    def suite(self) -> tuple[str, ...]:
        return (self.stack, self.group, self.node) if self.stack is not None else (self.group, self.node)


@dataclass(frozen=True)
class Failure:
    """A node's failure message read item by item: the lines `  - <item>: <problem>` of
    gpu_nodes/proof/judgement.py `failure_message`; and the rest, about the node itself (its first line,
    the problems that name no item, the `NODE_LINES`)."""

    headline: str
    items: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CtrfTest:
    """One test of the document (spec/ctrf.md 9): name, status, suite, and the optional fields we fill."""

    name: str
    status: str
    suite: tuple[str, ...]
    message: str | None = None
    raw_status: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        # `duration` is required; nothing times a single item, so 0.
        test: dict[str, Any] = {"name": self.name, "status": self.status, "duration": 0, "suite": list(self.suite)}
        if self.message is not None:
            test["message"] = self.message
        if self.raw_status is not None:
            test["rawStatus"] = self.raw_status
        if self.extra:
            test["extra"] = dict(self.extra)
        return test


def read_failure(message: str, items: Collection[str]) -> Failure:
    """The problem of each of `items` that the message names. The message may be as `pulumi up`
    prints it, one item a line, or on one line, as the fleet command keeps it (gpu_nodes/cli/progress.py):
    only known keys start a line, so a problem's own ` - ` does not split it. What follows an item's line
    and starts none (the readiness check's closing hint) stays with that item."""
    text = " ".join(message.split())
    labels = "|".join(re.escape(key) for key in sorted({*items, *NODE_LINES}, key=len, reverse=True))
    found = list(re.finditer(rf"(?:^|\s)- ({labels}): ", text))
    node = [text[: found[0].start()].strip() if found else text]
    problems: dict[str, str] = {}
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        problem = text[match.end() : end].strip()
        if match[1] in NODE_LINES:
            node.append(f"- {match[1]}: {problem}")
        else:
            problems[match[1]] = f"{problems[match[1]]}; {problem}" if match[1] in problems else problem
    return Failure(" ".join(node), problems)


def ordered(keys: Iterable[str]) -> list[str]:
    """Item keys in the checklist's order, those this version does not know after them by name."""
    return sorted(set(keys), key=lambda key: (_ORDER.index(key) if key in _ORDER else len(_ORDER), key))


def node_context(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What every test of a node carries of it: its gate, driver and GPUs, and who else holds it."""
    preflight = entry.get("preflight") or {}
    return {
        "gate": entry.get("gate"),
        "driverVersion": preflight.get("driverVersion"),
        "gpuCount": preflight.get("gpuCount"),
        "gpuModels": preflight.get("gpuModels"),
        "expectedGpus": entry.get("expectedGpus"),
        "quarantine": entry.get("quarantine"),
    }


def node_tests(report: NodeReport) -> list[CtrfTest]:
    """One test per item of the node's checklist (a key absent from it: the item does not apply), one
    per item its run's failure names, then its gate."""
    entry = report.entry or {}
    checklist = entry.get("checklist") or {}
    failure = read_failure(report.failure, {*_ORDER, *checklist}) if report.failure is not None else None
    named = failure.items if failure is not None else {}
    context = {NODE_EXTRA: node_context(entry)} if report.entry is not None else {}
    measured = entry.get("measured") or {}
    tests = []
    for key in ordered([*checklist, *named]):
        item = ITEMS_BY_KEY.get(key)
        figures = measured.get(item.measured) if item is not None and item.measured else None
        extra = {**context, **({MEASURED_EXTRA: figures} if figures is not None else {})}
        tests.append(_item_test(report, key, checklist.get(key), named.get(key), extra))
    tests.append(_gate_test(report, failure, context))
    return tests


def _name(report: NodeReport, what: str) -> str:
    # The whole path in the name: a CI view that lists failed tests by name alone still says which node.
    return f"{'/'.join(report.suite)}: {what}"


def _item_test(report: NodeReport, key: str, value: Any, problem: str | None, extra: Mapping[str, Any]) -> CtrfTest:
    if problem is not None:
        # The run's own word: it judged the node after the report the state holds was written.
        return CtrfTest(_name(report, key), FAILED, report.suite, problem, FAIL, extra)
    raw = None if value is None else str(value)
    status = STATUS.get(raw or "", OTHER)
    if raw == FAIL:
        message = "fail in the node's report; the failure of its stack's last `pulumi up` says why"
    elif raw == DEFERRED:
        message = "deferred: the node was busy with GPU work; its verification Jobs run on the next `pulumi up`"
    elif status == OTHER:
        message = f"{raw!r} in the node's report, not {PASS}, {FAIL} or {DEFERRED}"
    else:
        message = None
    return CtrfTest(_name(report, key), status, report.suite, message, raw, extra)


def _gate_test(report: NodeReport, failure: Failure | None, extra: Mapping[str, Any]) -> CtrfTest:
    gate = (report.entry or {}).get("gate")
    raw = None if gate is None else str(gate)
    name = _name(report, GATE_TEST)
    if failure is not None:
        message = failure.headline or f"its run failed: {', '.join(ordered(failure.items))}"
        return CtrfTest(name, FAILED, report.suite, message, raw, extra)
    if report.entry is None:
        stack = f"stack {report.stack}" if report.stack is not None else "the stack"
        message = f"no report: {stack} has no entry for this node (never deployed, or its run failed before its report)"
        return CtrfTest(name, FAILED, report.suite, message, None, extra)
    if raw == LIFTED:
        return CtrfTest(name, PASSED, report.suite, None, raw, extra)
    if raw == UP:
        held = report.entry.get("quarantine") or {}
        by = f"; held by {held.get('by')} ({held.get('state')})" if held else ""
        message = f"the readiness gate {GATE} is on: the node takes no GPU work{by}"
        return CtrfTest(name, FAILED, report.suite, message, raw, extra)
    message = f"{raw!r} in the node's report, not {LIFTED} or {UP}" if raw is not None else "the node's report has no gate"
    return CtrfTest(name, OTHER, report.suite, message, raw, extra)


def document(reports: Sequence[NodeReport], start_ms: int, stop_ms: int) -> dict[str, Any]:
    """The CTRF document of the nodes, in their order. start_ms, stop_ms: the run's, in milliseconds
    since the Unix epoch (spec/ctrf.md 4.8); for a report without a run, both the time it was read."""
    tests = [test for report in reports for test in node_tests(report)]
    counts = Counter(test.status for test in tests)
    summary = {"tests": len(tests), **{status: counts[status] for status in STATUSES}, "start": start_ms, "stop": stop_ms}
    return {
        "reportFormat": "CTRF",
        "specVersion": SPEC_VERSION,
        "results": {
            "tool": {"name": TOOL, "version": VERSION},
            "summary": summary,
            "tests": [test.as_json() for test in tests],
        },
    }


def stack_reports(node_groups: Mapping[str, Any], stack: str | None = None) -> list[NodeReport]:
    """Every node of one stack's `nodeGroups` output, by group and node name (the table's order)."""
    return [
        NodeReport(group, node, entry, stack)
        for group, nodes in sorted(node_groups.items())
        for node, entry in sorted(nodes.items())
    ]
