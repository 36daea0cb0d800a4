"""Node reports as a stack's `nodeGroups` output holds them (gpu_nodes/resources/node_group.py `node_report`),
a node's failure as the readiness check raises it (gpu_nodes/proof/judgement.py `failure_message`), and CTRF's
schema (tests/cli/fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema.validators import validator_for

from gpu_nodes.proof.judgement import Judgement, failure_message
from gpu_nodes.proof.target import DeclaredGpus, NodeTarget
from tests.fakes import target

CTRF_SCHEMA = Path(__file__).parent / "fixtures/ctrf.schema.json"
RUNBOOK = ("labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded")
PREFLIGHT = {
    "passed": True,
    "driverVersion": "580.105.08",
    "gpuCount": 4,
    "gpuModels": ["NVIDIA H100 80GB HBM3"],
    "runtime": {"name": "containerd"},
}


def entry(gate: str | None = "lifted", measured: dict[str, Any] | None = None, **checklist: str | None) -> dict[str, Any]:
    """A node's report: the runbook's five items passed unless `checklist` says otherwise (None: the item
    is not in its checklist); `measured` as the report keeps the figures of the items that measure."""
    items = {**dict.fromkeys(RUNBOOK, "pass"), **checklist}
    report: dict[str, Any] = {
        "preflight": PREFLIGHT,
        "checklist": {key: value for key, value in items.items() if value is not None},
        "gate": gate,
        "quarantine": None,
    }
    if measured is not None:
        report["measured"] = measured
    return report


def stays_gated(node: str, problems: list[tuple[str | None, str]], waited: float = 630) -> str:
    """The message `pulumi up` fails with for a node whose items fail, as the readiness check words it."""
    judgement = Judgement(
        checklist={item: "fail" for item, _ in problems if item},
        problems=problems,
        failed_jobs=[],
        unfinished_jobs=[],
        gate_up=True,
    )
    return failure_message(NodeTarget(**{**vars(target()), "node": node}), judgement, waited, DeclaredGpus(4, 1))


def ctrf_errors(document: dict[str, Any]) -> list[str]:
    """What CTRF's schema refuses in a document: `<path>: <why>` each, none when it validates."""
    schema = json.loads(CTRF_SCHEMA.read_text())
    # The validator of the draft the schema declares (its `$schema`: draft-07).
    validator = validator_for(schema)(schema)
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(document)]
