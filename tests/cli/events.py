"""Engine events as the Pulumi CLI sends them to the Automation API (its `--event-log` JSON, the
shape of sdk/go/common/apitype/events.go), read by the SDK's own `EngineEvent.from_json`."""

from __future__ import annotations

from itertools import count

from pulumi.automation.events import EngineEvent

_sequence = count(1)
STACK = "urn:pulumi:a100::gpu-nodes::pulumi:pulumi:Stack::gpu-nodes-a100"


def urn(name: str, type_: str = "pulumi-python:dynamic/gpu-nodes:NodeTaints") -> str:
    return f"urn:pulumi:a100::gpu-nodes::gpu-nodes:index:GpuFleet$gpu-nodes:index:GpuNodeGroup${type_}::{name}"


def _event(kind: str, body: dict) -> EngineEvent:
    return EngineEvent.from_json({"sequence": next(_sequence), "timestamp": 1, kind: body})


def pre(op: str, name: str) -> EngineEvent:
    return _event("resourcePreEvent", {"metadata": {"op": op, "urn": urn(name), "type": "t", "provider": ""}})


def outputs(op: str, name: str) -> EngineEvent:
    return _event("resOutputsEvent", {"metadata": {"op": op, "urn": urn(name), "type": "t", "provider": ""}})


def failed(op: str, name: str) -> EngineEvent:
    return _event("resOpFailedEvent", {"metadata": {"op": op, "urn": urn(name), "type": "t", "provider": ""}, "status": 1})


def error(message: str, name: str | None = None) -> EngineEvent:
    return _event(
        "diagnosticEvent", {"message": message, "severity": "error", "urn": urn(name) if name else "", "color": "never"}
    )


def diagnostic(message: str, urn: str | None, severity: str = "error") -> EngineEvent:
    """A diagnostic as recorded from a real run (its URN, or None for one of the whole update)."""
    return _event("diagnosticEvent", {"message": message, "severity": severity, "urn": urn or "", "color": "never"})
