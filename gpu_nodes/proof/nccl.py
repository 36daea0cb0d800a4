"""An `all_reduce_perf` run of NVIDIA's nccl-tests, read from its output.

The output is fixed-format text written by NVIDIA/nccl-tests `src/util.cu` (tag v2.19.6):

    # nccl-tests version 2.19.6 nccl-headers=... nccl-library=...
    #  Rank  0 Group  0 Pid 295203 on    node005 device  0 [0x18] NVIDIA H100 80GB HBM3
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
      4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 439.369

- A row is the size in bytes, the element count, type, reduction, root, then time (us), algorithm
  and bus bandwidth (GB/s) and wrong elements for the out-of-place run, and the same for the in-place
  run (`writeBenchmarkLinePreamble`, `writeBenchmarkLineBody`); `#wrong` is `N/A` when the run does
  not check (`-c 0`). Options add columns (`-I`: per-iteration times after each placement; `-S`: a
  timestamp), and releases before about 2.10 wrote 12 columns: no `root`, and an `error` column (the
  largest relative error) for `#wrong`. So each row is split on whitespace and read by the column
  names of the table's header line, never by offsets; without a header, by the column count (13 or 12).
- The bus bandwidth is what the hardware carried: for all-reduce, algbw x 2(n-1)/n
  (`doc/PERFORMANCE.md`, "Bus bandwidth"), comparable across GPU counts. Like NVIDIA's AI Cluster
  Runtime (NVIDIA/aicr `validators/performance/nccl_all_reduce_bw_constraint.go`, which takes "the
  out-of-place busbw from the last row"), a run is measured by the out-of-place bus bandwidth of its
  largest size (`bus_bandwidth`).
- `# Avg bus bandwidth` is the mean of the bus bandwidth of every size and both placements
  (`src/common.cu`: each measurement adds its busbw to `bw[0]`, then `bw[0] /= bw_count[0]`): a sweep
  from small sizes, which are bound by latency, pulls it far below what the links carry (8 x A100:
  235.26 GB/s at 8 GiB, an average of 68.4). It is read, never judged.
- `# Out of bounds values : N OK|FAILED` counts the (size, placement, rank) tests that found a wrong
  element (`common.cu`: `if (args->reportErrors && *wrongElts) args->errors[0]++`).
- A failure prints `<host>: Test CUDA failure <file>:<line> '<message>'` or `Test NCCL failure`
  (`src/common.h`, CUDACHECK and NCCLCHECK), then ` .. <host> pid <pid>: Test failure <file>:<line>`
  for each function it unwinds (TESTCHECK); too few GPUs print `Invalid number of GPUs: N requested
  but only M were found.` (util.cu); those lines are the run's `errors`.

Lines of others may come between: NCCL's own (`NCCL_DEBUG=INFO`), a launcher's prefix on every line
(Slurm's `srun --label`: ` 0: `; Open MPI's `--tag-output`: `[1,0]<stdout>:`, openpmix/prrte PR 1407).
A prefix is taken off; a line that does not read as a row is passed over.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Column names of the header line (util.cu writeResultHeader), and of the legacy one.
COLUMNS = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
LEGACY_COLUMNS = ("size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error")

# A launcher's prefix: Slurm's ` 0: `, Open MPI's `[1,0]<stdout>:` (or `[1,0][host:pid]<stdout>:`).
_PREFIX = re.compile(r"^(?:\s*\d+:\s?|\[[^\]]*,\d+\](?:\[[^\]]*\])?(?:<std(?:out|err|diag)>)?:\s?)")
_DEVICE = re.compile(r"^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+\S+\s+device\s+\d+\s+\[[^\]]*\]\s+(?P<name>.+?)\s*$")
_VERSION = re.compile(r"^#\s*nccl-tests version (\S+)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")
_AVERAGE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_ERROR = re.compile(r"Test (?:CUDA |NCCL )?failure|Invalid number of GPUs: \d+ requested")


@dataclass(frozen=True)
class Placement:
    """One half of a row: the out-of-place or the in-place run at that size."""

    time_us: float
    algbw: float  # GB/s
    busbw: float  # GB/s
    wrong: int | None  # wrong elements; None where not checked (`N/A`) or not written (legacy format)
    max_error: float | None = None  # the legacy format's largest relative error


@dataclass(frozen=True)
class AllReduceRow:
    size: int  # bytes
    count: int  # elements
    type: str
    redop: str
    out_of_place: Placement
    in_place: Placement


@dataclass(frozen=True)
class AllReduceRun:
    """What one `all_reduce_perf` printed."""

    rows: tuple[AllReduceRow, ...]
    out_of_bounds: int | None  # None where the footer is missing: the run did not finish
    average_busbw: float | None  # the mean over every size and placement: read, never judged
    errors: tuple[str, ...]
    devices: tuple[str, ...] = ()  # each rank's GPU, as CUDA names it, in rank order
    version: str | None = None  # nccl-tests' own, from 2.17 on

    @property
    def largest(self) -> AllReduceRow | None:
        """The row of the largest size (the last of them, as AICR reads the last row)."""
        if not self.rows:
            return None
        biggest = max(row.size for row in self.rows)
        return [row for row in self.rows if row.size == biggest][-1]

    @property
    def bus_bandwidth(self) -> float | None:
        """The out-of-place bus bandwidth at the largest size, GB/s: what a floor is compared with."""
        largest = self.largest
        return largest.out_of_place.busbw if largest else None

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the run proves nothing, one line each: its errors, wrong results, no rows, no summary."""
        found = list(self.errors)
        if self.out_of_bounds:
            found.append(f"all_reduce_perf found wrong results in {self.out_of_bounds} of its tests (Out of bounds values)")
        if not self.rows:
            found.append("all_reduce_perf printed no result")
        elif self.out_of_bounds is None:
            found.append("all_reduce_perf stopped before its summary")
        return tuple(found)


def read_all_reduce(log: str) -> AllReduceRun:
    """The run in an `all_reduce_perf` log; an empty run when the log holds none of it."""
    columns: Sequence[str] | None = None
    rows: list[AllReduceRow] = []
    errors: list[str] = []
    devices: list[str] = []
    version = out_of_bounds = average = None
    for line in _lines(log):
        if line.startswith("#"):
            names = line[1:].split()
            if names[:3] == ["size", "count", "type"]:
                columns = names
            elif match := _DEVICE.match(line):
                devices.append(match["name"])
            elif match := _VERSION.match(line):
                version = match[1]
            elif match := _OUT_OF_BOUNDS.match(line):
                out_of_bounds = int(match[1])
            elif match := _AVERAGE.match(line):
                average = float(match[1])
        elif _ERROR.search(line):
            errors.append(line)
        elif (row := _row(line.split(), columns)) is not None:
            rows.append(row)
    return AllReduceRun(tuple(rows), out_of_bounds, average, tuple(errors), tuple(devices), version)


def _lines(log: str) -> Iterator[str]:
    for line in log.splitlines():
        yield _PREFIX.sub("", line, count=1).strip()


def _row(fields: Sequence[str], header: Sequence[str] | None) -> AllReduceRow | None:
    """A result row read by the header's column names (by the column count without a header), or None."""
    columns = header or {len(COLUMNS): COLUMNS, len(LEGACY_COLUMNS): LEGACY_COLUMNS}.get(len(fields))
    if columns is None or len(fields) < 4 or not (fields[0].isdigit() and fields[1].isdigit()):
        return None
    try:
        out_of_place, in_place = (_placement(fields, columns, which) for which in (0, 1))
    except (ValueError, IndexError):
        return None
    return AllReduceRow(int(fields[0]), int(fields[1]), fields[2], fields[3], out_of_place, in_place)


def _placement(fields: Sequence[str], columns: Sequence[str], which: int) -> Placement:
    def value(name: str) -> str:
        return fields[_positions(columns, name)[which]]

    time = "cputime" if "cputime" in columns else "time"
    if "#wrong" in columns:
        wrong = value("#wrong")
        return Placement(float(value(time)), float(value("algbw")), float(value("busbw")), _count(wrong))
    error = value("error")
    return Placement(float(value(time)), float(value("algbw")), float(value("busbw")), None, _number(error))


def _positions(columns: Sequence[str], name: str) -> tuple[int, int]:
    found = [index for index, column in enumerate(columns) if column == name]
    if len(found) < 2:
        raise ValueError(f"the header has no out-of-place and in-place {name!r}")
    return found[0], found[1]


def _count(text: str) -> int | None:
    """`%6g` of the wrong elements (`0`, `96`, `1e+06`), or `N/A`."""
    return None if text == "N/A" else int(float(text))


def _number(text: str) -> float | None:
    return None if text == "N/A" else float(text)
