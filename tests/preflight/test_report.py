"""The script's report read from a preflight command's stdout, and what is read as no report: a
machine not yet checked (Pulumi's mocks answer None; a team's own mocks may answer anything)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpu_nodes.preflight.command import parse_report, preflight_warnings
from gpu_nodes.preflight.report import NOT_CHECKED, passing_report, read_report


def report_with(**changes: Any) -> str:
    return json.dumps({**passing_report(), **changes})


def gpu_with(**changes: Any) -> str:
    return report_with(gpus=[{**passing_report()["gpus"][0], **changes}])


# What a preflight command's stdout may hold that is no report, one row each.
NOT_REPORTS: dict[str, object] = {
    "no value (Pulumi's mocks: the outputs are the inputs)": None,
    "empty": "",
    "not JSON": "preflight: no script to read at /var/lib/gpu-nodes/preflight",
    "bytes": json.dumps(passing_report()).encode(),
    "a number, not text": 42,
    "JSON null": "null",
    "a JSON list": json.dumps([passing_report()]),
    "a JSON string": json.dumps(json.dumps(passing_report())),
    "an object of another kind": json.dumps({"id": "gpu-a-01-preflight_id"}),
    "no ok": json.dumps({key: value for key, value in passing_report().items() if key != "ok"}),
    "ok as text": report_with(ok="true"),
    "no gpus": json.dumps({key: value for key, value in passing_report().items() if key != "gpus"}),
    "gpus as an object": report_with(gpus={"0": passing_report()["gpus"][0]}),
    "a GPU as text": report_with(gpus=["NVIDIA H100 80GB HBM3"]),
    "a GPU's memory as text": gpu_with(memoryMiB="80GB"),
    "a GPU's index as a bool": gpu_with(index=True),
    "a GPU's name as a number": gpu_with(name=100),
    "no checks": json.dumps({key: value for key, value in passing_report().items() if key != "checks"}),
    "a check as text": report_with(checks=["driver"]),
    "a check without its name": report_with(checks=[{"ok": True, "detail": ""}]),
    "a check judged as text": report_with(checks=[{"name": "driver", "ok": "yes"}]),
    "a check's detail as a number": report_with(checks=[{"name": "driver", "ok": True, "detail": 550}]),
    "the driver's version as a number": report_with(driverVersion=550.54),
    "the runtime as text": report_with(runtime="containerd"),
    "gpuFeatures as a list": report_with(gpuFeatures=["HGX"]),
    "a clique as a number": report_with(gpuFeatures={"clique": 7}),
}


@pytest.mark.parametrize("stdout", NOT_REPORTS.values(), ids=list(NOT_REPORTS))
def test_stdout_that_is_no_report_is_a_machine_not_yet_checked(stdout: object) -> None:
    assert read_report(stdout) is None, stdout
    assert parse_report(stdout) == NOT_CHECKED == {"checked": False}, stdout
    assert preflight_warnings(stdout) == [], stdout


# Reports as the script has printed them, which must read as reports (and read the same).
REPORTS: dict[str, dict[str, Any]] = {
    "passing": passing_report(),
    "failed, no GPU found": {
        **passing_report(),
        "ok": False,
        "gpus": [],
        "checks": [{"name": "driver", "ok": False, "detail": "no driver"}],
    },
    "nulls where the script knew nothing": {**passing_report(), "driverVersion": None, "cudaVersion": None, "mig": None},
    "the script's first shape, before cudaVersion": {
        "ok": True,
        "hostname": "gpu-host",
        "driverVersion": "535.104.05",
        "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-1", "memoryMiB": 81920}],
        "runtime": {"name": "containerd", "nvidiaDefault": True, "runtimeClassNeeded": False},
        "checks": [{"name": "driver", "ok": True, "detail": "535.104.05"}],
    },
    "GPU features and MIG devices": {
        **passing_report(),
        "gpuFeatures": {"machine": "DGX H100", "migCapable": True, "clique": None, "computeCapability": "9.0"},
        "mig": {"0": {"1g.10gb": 7}},
    },
}


@pytest.mark.parametrize("report", REPORTS.values(), ids=list(REPORTS))
def test_a_report_reads_as_itself(report: dict[str, Any]) -> None:
    stdout = json.dumps(report)
    assert read_report(stdout) == report, stdout
    summary = parse_report(stdout)
    assert "checked" not in summary and summary["passed"] is report["ok"], summary
    assert summary["gpuCount"] == len(report["gpus"]), summary


def test_not_checked_is_a_fresh_copy_each_time() -> None:
    """A node's report entry: changing one must not change another's, or the constant."""
    first = parse_report(None)
    first["checked"] = True
    assert parse_report(None) == {"checked": False} == NOT_CHECKED
