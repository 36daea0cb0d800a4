"""What the engine waits on during one command: its steps, from its engine events as they happen.

`pulumi up|destroy|preview|refresh --event-log <file>` writes one JSON engine event per line as the engine
emits it (pkg/cmd/pulumi/operations, `--event-log`, a flag the CLI takes with `PULUMI_DEBUG_COMMANDS=true`;
pkg/backend/display/display.go, `startEventLogger`, writes each event as it comes). A
step begins with its `resourcePreEvent` and ends with its `resOutputsEvent` or `resOpFailedEvent`
(pkg/engine/update.go, `OnResourceStepPre` and `OnResourceStepPost`). The events carry whole seconds
only, so a thread reads the file as it grows and stamps each line with its own clock.

Between the two events a step waits for the state save that records it as begun (the file backend saves
the whole state, one save at a time: pkg/backend/snapshot.go, `SnapshotManager.mutate`), then for its
provider; the save that records it as done comes after its end event. A destroy runs its deletes level by
level (pkg/resource/deploy/step_generator.go, `ScheduleDeletes`): a level starts when the one before it is
done, so one slow delete holds every delete of the levels after it.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

POLL_SECONDS = 0.01


@dataclass(frozen=True)
class Stamped:
    """One engine event and when it was read, in seconds since the command started."""

    at: float
    event: dict


@dataclass(frozen=True)
class StepSpan:
    """One step: its resource, its operation and when it began and ended (seconds since the start)."""

    urn: str
    kind: str
    op: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


class EventTail(threading.Thread):
    """Reads an event log as the engine writes it, stamping each whole line when it is read."""

    def __init__(self, path: Path, started: float) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.started = started
        self.done = threading.Event()
        self.events: list[Stamped] = []

    def run(self) -> None:
        pending = b""
        handle = None
        while True:
            finished = self.done.is_set()
            if handle is None and self.path.exists():
                handle = self.path.open("rb")
            if handle is not None:
                pending += handle.read()
                *lines, pending = pending.split(b"\n")
                now = time.perf_counter() - self.started
                self.events += [Stamped(now, json.loads(line)) for line in lines if line.strip()]
            if finished:
                break
            time.sleep(POLL_SECONDS)
        if handle is not None:
            handle.close()


def kind_of(urn: str, type_: str) -> str:
    """A step's resource as a reader knows it: its type's last part, and a verification Job's proof item
    (its name ends in the Job's slug: `...-verify-<node>-1gpu`, `-access`, `-dcgm`, `-nccl`)."""
    kind = type_.rsplit(":", 1)[-1]
    if kind == "Job" and "-verify-" in urn:
        return f"Job ({urn.rsplit('-', 1)[-1]})"
    return kind


def step_spans(events: Iterable[Stamped]) -> list[StepSpan]:
    """Each step that began and ended among `events`, in the order each began."""
    begun: dict[tuple[str, str], tuple[float, str]] = {}
    spans: list[StepSpan] = []
    for stamped in events:
        event = stamped.event
        for key in ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent"):
            if key not in event:
                continue
            meta = event[key]["metadata"]
            if key == "resourcePreEvent" and event[key].get("planning"):
                break
            step = (meta["urn"], meta["op"])
            if key == "resourcePreEvent":
                begun[step] = (stamped.at, meta["type"])
            elif step in begun:
                start, type_ = begun.pop(step)
                spans.append(StepSpan(meta["urn"], kind_of(meta["urn"], type_), meta["op"], start, stamped.at))
    return sorted(spans, key=lambda s: s.start)


def idle_seconds(spans: Sequence[StepSpan], wall: float) -> tuple[float, float, float]:
    """Seconds with no step in flight: before the first step, between steps, after the last."""
    if not spans:
        return wall, 0.0, 0.0
    between, reach = 0.0, spans[0].end
    for span in spans[1:]:
        if span.start > reach:
            between += span.start - reach
        reach = max(reach, span.end)
    return spans[0].start, between, max(0.0, wall - reach)


def busy_seconds(spans: Sequence[StepSpan]) -> float:
    """Seconds with at least one step of `spans` in flight (the union of their intervals)."""
    total, reach = 0.0, float("-inf")
    for span in sorted(spans, key=lambda s: s.start):
        if span.end > reach:
            total += span.end - max(span.start, reach)
            reach = span.end
    return total


def waits_table(spans: Sequence[StepSpan], wall: float) -> str:
    """By resource kind and operation: how many steps, when the first began and the last ended, the
    seconds one of them was in flight, and each step's median and longest; then the seconds no step was."""
    groups: dict[tuple[str, str], list[StepSpan]] = {}
    for span in spans:
        groups.setdefault((span.kind, span.op), []).append(span)
    lines = [
        "| resource | op | steps | first began s | last ended s | in flight s | step median s | step max s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (kind, op), group in sorted(groups.items(), key=lambda item: min(s.start for s in item[1])):
        durations = [s.seconds for s in group]
        cells = [kind, op, str(len(group)), f"{min(s.start for s in group):.1f}", f"{max(s.end for s in group):.1f}"]
        cells += [f"{busy_seconds(group):.1f}", f"{statistics.median(durations):.2f}", f"{max(durations):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    before, between, after = idle_seconds(spans, wall)
    lines += ["", f"{len(spans)} steps in {wall:.1f} s; no step in flight {before:.1f} s before the first, {between:.1f} s"]
    lines[-1] += f" between steps, {after:.1f} s after the last"
    return "\n".join(lines)
