"""What the proof items beyond the runbook ask of a node, and how one look judges them from what the node's pods said:
DCGM's diagnostics (the `dcgm` container's JSON report), NCCL's bus bandwidth (the `nccl` container's table, held to
a floor) and the exporter's metrics (the page its pod serves). Each check gives the item's lines (none: it passes),
what was measured, and whether waiting can change the answer.

Pure: the texts come in (gpu_nodes/proof/judgement.py reads them through `PodOutputs`), records go out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_nodes.bandwidth_floors import floor_for
from gpu_nodes.proof.dcgm import read_diagnostic
from gpu_nodes.proof.exporter_metrics import missing_fields, read_exporter_metrics
from gpu_nodes.proof.nccl import read_all_reduce

GIB = 1024**3


@dataclass(frozen=True)
class DiagnosticsCheck:
    """A node's DCGM diagnostics: its Job, and the level it runs."""

    job: str
    level: int


@dataclass(frozen=True)
class BandwidthCheck:
    """A node's all-reduce: its Job, the GPUs it spans, and the group's own floor in GB/s (None: the GPU model's)."""

    job: str
    gpus: int
    floor_gbps: float | None = None


@dataclass(frozen=True)
class MetricsCheck:
    """A node's exporter: where its pods are, the port they serve, and how many GPUs it must report."""

    namespace: str
    selector: Mapping[str, str]
    port: int
    gpus: int
    path: str = "/metrics"


@dataclass(frozen=True)
class ImexCheck:
    """A node of an NVLink domain: its IMEX Job, and the clique its label must name (nvlinkDomain.clique)."""

    job: str
    clique: str


@dataclass(frozen=True)
class Finding:
    """One item's answer on one look: why it fails (no lines: it passes), what was measured, and whether waiting can
    change it (a finished Job's report cannot)."""

    problems: tuple[str, ...] = ()
    measured: Mapping[str, Any] | None = None
    final: bool = False


# Nothing read yet: the Job runs, or the exporter is not up.
PENDING = Finding()


def diagnostics_finding(check: DiagnosticsCheck, log: str | None, job_failed: bool) -> Finding:
    """DCGM's verdict from the finished Job's log: each failed test with DCGM's own words. A Job that failed without a
    report, or a report that is not DCGM's, fails too, saying so."""
    report = read_diagnostic(log) if log is not None else None
    level = f"DCGM diagnostics level {check.level}"
    if report is None:
        if job_failed:
            return Finding(final=True)  # the Job's own failure line says why
        if log is None:
            # The API could not hand the log over (its node's kubelet busy, say): looked at again until the wait ends.
            return Finding((f"{level}: the Job {check.job} succeeded, but its log could not be read",))
        return Finding((f"{level}: the Job {check.job} succeeded, but its log holds no DCGM report",), final=True)
    measured = {
        "level": check.level,
        "dcgmVersion": report.version,
        "tests": dict(report.tests),
        "failures": [str(f) for f in report.failures],
    }
    problems = [f"{level} failed: {failure}" for failure in report.failures]
    if report.runtime_error:
        problems.append(f"{level} could not run: {report.runtime_error}")
    if not report.tests and not report.runtime_error:
        problems.append(f"{level}: DCGM's report lists no test")
    return Finding(tuple(problems), measured, final=True)


def bandwidth_finding(check: BandwidthCheck, log: str | None, model: str | None) -> Finding:
    """NCCL's bus bandwidth from the finished Job's log (out of place, at the largest size), held to the group's floor,
    else the one NVIDIA's and the clouds' figures give for the node's GPU model and count."""
    if log is None:
        return Finding((f"all_reduce_perf: the Job {check.job} ended, but its log could not be read",))
    run = read_all_reduce(log)
    if run is None or run.largest is None:
        errors = "; ".join(run.errors) if run is not None and run.errors else "its log holds no all_reduce_perf table"
        return Finding((f"all_reduce_perf ran no size: {errors}",), final=True)
    floor, source = _floor(check, model)
    busbw = run.bus_bandwidth
    measured = {
        "gbps": busbw,
        "floorGbps": floor,
        "floorSource": source,
        "messageBytes": run.largest.size,
    }
    size = f"{run.largest.size / GIB:g} GiB"
    problems: list[str] = []
    if run.out_of_bounds:
        problems.append(f"all_reduce_perf found wrong values in {run.out_of_bounds} test(s): a GPU or its links return bad data")
    if floor is None:
        problems.append(
            f"no bus-bandwidth floor is known for {check.gpus} x {model or 'an unknown GPU model'}: set "
            "verification.performance.minBusBandwidth"
        )
    elif busbw is None or busbw < floor:
        problems.append(
            f"all_reduce_perf bus bandwidth {busbw:g} GB/s at {size}, below the floor {floor:g} GB/s ({source})"
            if busbw is not None
            else f"all_reduce_perf reported no bus bandwidth at {size}"
        )
    return Finding(tuple(problems), measured, final=True)


def _floor(check: BandwidthCheck, model: str | None) -> tuple[float | None, str]:
    if check.floor_gbps is not None:
        return check.floor_gbps, "verification.performance.minBusBandwidth"
    known = floor_for(model, check.gpus) if model else None
    return (known.gbps, known.source) if known else (None, "none known")


def metrics_finding(check: MetricsCheck, pod: str | None, page: str | None, error: str | None) -> Finding:
    """The four fields for every GPU the node offers, on the page its exporter pod serves. Not final: an exporter
    starts, and DCGM fills its fields, a while after its pod runs."""
    if pod is None:
        return Finding((error or "no dcgm-exporter pod runs on the node",))
    if page is None:
        return Finding((f"dcgm-exporter pod {pod} did not answer on port {check.port}: {error or 'no answer'}",))
    scrape = read_exporter_metrics(page)
    missing = missing_fields(scrape, check.gpus)
    measured = {"gpus": len(scrape.gpus), "fields": sorted(scrape.fields), "missing": list(missing)}
    return Finding(tuple(f"dcgm-exporter pod {pod}: {line}" for line in missing), measured)


@dataclass(frozen=True)
class Measured:
    """What the proof items measured on the node, as its report gives it (`measured`)."""

    diagnostics: Mapping[str, Any] | None = None
    bus_bandwidth: Mapping[str, Any] | None = None
    metrics: Mapping[str, Any] | None = None

    def as_output(self) -> dict[str, Any]:
        return {"diagnostics": self.diagnostics, "busBandwidth": self.bus_bandwidth, "metrics": self.metrics}
