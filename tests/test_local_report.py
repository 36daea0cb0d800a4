"""`make local-up`'s table: one row per node with the runbook's checklist and the gate."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.pulumi_mocks import ROOT

HEALTHY = {
    "preflight": {
        "passed": True,
        "driverVersion": "550.54.15",
        "gpuCount": 4,
        "gpuModels": ["NVIDIA A100-SXM4-80GB"],
        "runtime": {"name": "containerd"},
    },
    # The local stack proves each node with every item (tools/local/stack_config.py, `--proof full`).
    "checklist": dict.fromkeys(
        [
            "labelled",
            "tainted",
            "pluginRunning",
            "gpusRegistered",
            "workloadSucceeded",
            "secureAccess",
            "diagnosticsPassed",
            "bandwidthMet",
            "metricsExported",
        ],
        "pass",
    ),
    "gate": "lifted",
}


def table(report: dict) -> list[list[str]]:
    run = subprocess.run(
        [sys.executable, "-m", "tools.local.report"],
        cwd=ROOT,
        input=json.dumps(report),
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.split("  ") for line in run.stdout.splitlines()]


def cells(line: list[str]) -> list[str]:
    return [cell.strip() for cell in line if cell.strip()]


def test_each_node_has_its_checklist_and_gate():
    header, row = (cells(line) for line in table({"local-gpu": {"gpu-node-1": HEALTHY}}))
    columns = ["LABEL", "TAINT", "PLUGIN", "GPUS-REGISTERED", "GPU-WORKLOAD", "ACCESS", "DCGM", "BUSBW", "METRICS"]
    assert header[-12:] == [*columns, "IMEX", "GATE", "QUARANTINE"], header
    assert row[:3] == ["local-gpu", "gpu-node-1", "passed"], row
    # A node of no NVLink domain has no imexChannel item.
    assert row[-12:] == ["pass"] * len(columns) + ["-", "lifted", "-"], row


def test_a_failed_item_and_a_gate_still_up_stand_out():
    degraded = {**HEALTHY, "checklist": {**HEALTHY["checklist"], "gpusRegistered": "fail"}, "gate": "up"}
    row = cells(table({"local-gpu": {"gpu-node-2": degraded}})[1])
    assert row[-9:] == ["FAIL", "pass", "pass", "pass", "pass", "pass", "-", "up", "-"], row
