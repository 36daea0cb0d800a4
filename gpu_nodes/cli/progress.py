"""What each stack is doing, read from the engine's events: its step, its nodes, what changed.

Pure state fed by `on_event` (the Automation API calls it from its own threads, hence the
lock), and the lines the live view prints. A node is known by its resources' names, which all
carry `-<node>-` (gpu_nodes/resources/node_group.py names them `<group>-<node>-taints`,
`-readiness`, ...).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

# Steps that change nothing: what the engine reports for a resource that stays as it is. A
# refresh announces each resource as `refresh` and reports its outcome as `same`, `update` or
# `delete` (pulumi pkg/resource/deploy/step.go RefreshStep.ResultOp, used for the outputs event
# in pkg/engine/update.go); a preview announces the planned operation itself.
NO_CHANGE = ("same", "read", "refresh", "discard")
STATES = ("waiting", "running", "passed", "failed", "skipped")


def op_text(op: Any) -> str:
    """A step's operation as the engine spells it (the SDK hands over an OpType enum)."""
    return str(getattr(op, "value", op))


def resource_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def counted(urn: str) -> bool:
    """Whether the engine counts a step of this resource as a change: not the stack itself, and not
    a default provider (pkg/engine/update.go isInternalStep; sdk/go/common/providers/reference.go
    IsDefaultProvider: a `pulumi:providers:*` type whose name starts with `default`)."""
    type_ = urn.split("::")[-2] if urn.count("::") >= 3 else ""
    if type_.endswith("pulumi:pulumi:Stack"):
        return False
    return not (type_.startswith("pulumi:providers:") and resource_name(urn).startswith("default"))


def node_of(name: str, nodes: tuple[str, ...]) -> str | None:
    """The node a resource belongs to, by its name (the longest node name that fits)."""
    padded = f"-{name}-"
    found = [node for node in nodes if f"-{node}-" in padded]
    return max(found, key=len) if found else None


@dataclass(frozen=True)
class Change:
    resource: str
    op: str
    node: str | None
    check: str  # which command found it: preview or refresh


@dataclass
class StackProgress:
    name: str
    nodes: tuple[str, ...]
    owner: bool = False
    state: str = "waiting"
    command: str = ""
    step: str = ""
    reason: str = ""
    log: str = ""
    gated: set[str] = field(default_factory=set)
    proven: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    steps_done: int = 0
    # Drift checks not run, each because the run showed it could only agree (gpu_nodes/cli/deployed.py).
    skipped_checks: list[str] = field(default_factory=list)
    # The `nodeGroups` output a passed `up` returned (saves reading it again for the report).
    outputs: dict[str, Any] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self, command: str) -> None:
        with self._lock:
            self.state, self.command, self.step = "running", command, "starting"

    def check(self, command: str) -> None:
        """The next check of a drift run (preview, then refresh): changes are filed under it."""
        with self._lock:
            self.command, self.step = command, command

    def finish(self, passed: bool, reason: str = "") -> None:
        with self._lock:
            self.state, self.reason, self.step = ("passed" if passed else "failed"), reason, ""

    def skip(self, reason: str) -> None:
        with self._lock:
            self.state, self.reason = "skipped", reason

    def on_event(self, event: Any) -> None:
        """One engine event (pulumi.automation.EngineEvent)."""
        with self._lock:
            if event.resource_pre_event is not None:
                meta = event.resource_pre_event.metadata
                self.step = f"{op_text(meta.op)} {resource_name(meta.urn)}"
                self._note_change(op_text(meta.op), meta.urn)
            elif event.res_outputs_event is not None:
                meta = event.res_outputs_event.metadata
                self.steps_done += 1
                self._note_change(op_text(meta.op), meta.urn)
                self._note_node(op_text(meta.op), resource_name(meta.urn))
            elif event.res_op_failed_event is not None:
                meta = event.res_op_failed_event.metadata
                node = node_of(resource_name(meta.urn), self.nodes)
                if node is not None:
                    self.failed.setdefault(node, f"{op_text(meta.op)} {resource_name(meta.urn)} failed")
            elif event.diagnostic_event is not None and event.diagnostic_event.severity == "error":
                self._note_error(event.diagnostic_event)

    def _note_change(self, op: str, urn: str) -> None:
        if self.command not in ("preview", "refresh") or op in NO_CHANGE:
            return
        name = resource_name(urn)
        change = Change(name, op, node_of(name, self.nodes), self.command)
        if change not in self.changes and counted(urn):
            self.changes.append(change)

    def _note_node(self, op: str, name: str) -> None:
        if self.command != "up" or op == "delete":
            return
        node = node_of(name, self.nodes)
        if node is None:
            return
        if name.endswith(f"-{node}-taints"):
            self.gated.add(node)
        elif name.endswith(f"-{node}-readiness"):
            self.proven.add(node)
            self.gated.discard(node)

    def _note_error(self, diagnostic: Any) -> None:
        message = " ".join(diagnostic.message.split())
        urn = diagnostic.urn or ""
        node = node_of(resource_name(urn), self.nodes) if urn else None
        if node is not None:
            self.failed[node] = message
        elif message not in self.errors:
            self.errors.append(message)

    def counts(self) -> dict[str, int]:
        with self._lock:
            failed = set(self.failed)
            return {
                "nodes": len(self.nodes),
                "proven": len(self.proven - failed),
                "gated": len(self.gated - self.proven - failed),
                "failed": len(failed),
            }

    def line(self, width: int) -> str:
        counts = self.counts()
        nodes = f"proven {counts['proven']}/{counts['nodes']}  gated {counts['gated']}  failed {counts['failed']}"
        tail = self.step if self.state == "running" else self.reason
        text = f"{self.name:<{width}}  {self.state:<7}  {nodes}  {tail}".rstrip()
        return text


def fleet_line(stacks: list[StackProgress], bar: int = 30) -> str:
    """The fleet's progress bar: stacks finished, and for `up` the nodes proven or failed."""
    finished = sum(s.state in ("passed", "failed", "skipped") for s in stacks)
    total_nodes = sum(len(s.nodes) for s in stacks)
    settled = sum(c["proven"] + c["failed"] for c in (s.counts() for s in stacks))
    done, total = (settled, total_nodes) if any(s.command == "up" for s in stacks) else (finished, len(stacks))
    filled = bar * done // total if total else bar
    return f"fleet [{'#' * filled}{'.' * (bar - filled)}] {done}/{total}  stacks finished {finished}/{len(stacks)}"


def view(stacks: list[StackProgress]) -> list[str]:
    width = max(len(s.name) for s in stacks)
    return [s.line(width) for s in stacks] + [fleet_line(stacks)]
