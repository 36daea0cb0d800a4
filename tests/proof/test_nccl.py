"""all_reduce_perf runs read from recorded nccl-tests output (fixtures/README.md names the source of each)."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.nccl import AllReduceRun, Placement, read_all_reduce
from tests.proof.recorded import fixture_names, recorded

H100 = "all_reduce_perf-h100-sxm-8gpu-single-node-nvls.txt"
H100_SRUN = "all_reduce_perf-h100-sxm-2node-16gpu-srun-prefixed-nocheck.txt"
A100_LEGACY = "all_reduce_perf-a100-sxm4-40gb-8gpu-legacy-format.txt"
V100_LEGACY = "all_reduce_perf-v100-pcie-4gpu-no-nvlink-legacy-format.txt"
H100_NVL = "all_reduce_perf-h100-nvl-pcie-2x2gpu-fixed-step-good.txt"
GH200_WRONG = "all_reduce_perf-gh200-2node-wrong-results-failed.txt"
GH200_BUSY = "all_reduce_perf-gh200-cuda-device-busy-failure.txt"
DGX_A100 = "all_reduce_perf-dgx-a100-4gpu-nvswitch.table.txt"
DGX_A100_NO_P2P = "all_reduce_perf-dgx-a100-4gpu-p2p-disabled-degraded.table.txt"
A40_PAIR = "all_reduce_perf-a40-2gpu-nvlink-bridge-pair.table.txt"
A40_ACROSS_SOCKETS = "all_reduce_perf-a40-4gpu-sys-boundary-p2p-disabled-degraded.table.txt"
GIB = 1024**3


def read(name: str) -> AllReduceRun:
    return read_all_reduce(recorded(name))


@pytest.mark.parametrize(
    ("name", "rows", "largest", "bus_bandwidth"),
    [
        (H100, 6, 4 * GIB, 473.60),
        (H100_SRUN, 11, 8 * GIB, 155.57),
        (A100_LEGACY, 34, 8 * GIB, 235.26),
        (V100_LEGACY, 25, 128 * 1024**2, 9.40),
        (H100_NVL, 11, 1_500_000, 11.23),
        (GH200_WRONG, 25, 128 * 1024**2, 22.87),
        (DGX_A100, 4, 8 * GIB, 234.72),
        (DGX_A100_NO_P2P, 4, 8 * GIB, 5.20),
        (A40_PAIR, 4, 8 * GIB, 47.49),
        (A40_ACROSS_SOCKETS, 4, 8 * GIB, 1.35),
    ],
)
def test_the_bus_bandwidth_is_the_out_of_place_busbw_of_the_largest_size(name, rows, largest, bus_bandwidth):
    run = read(name)
    assert (len(run.rows), run.largest and run.largest.size, run.bus_bandwidth) == (rows, largest, bus_bandwidth), name


@pytest.mark.parametrize(
    ("name", "average"),
    [(H100, 439.369), (H100_SRUN, 142.735), (A100_LEGACY, 68.4048), (V100_LEGACY, 4.22207), (GH200_WRONG, 4.79995)],
)
def test_the_footers_average_is_the_mean_of_every_sizes_busbw_in_both_placements(name, average):
    """src/common.cu adds each measurement's busbw to bw[0] and divides by their count: read, never judged."""
    run = read(name)
    every = [row.out_of_place.busbw for row in run.rows] + [row.in_place.busbw for row in run.rows]
    assert run.average_busbw == average, name
    assert abs(sum(every) / len(every) - average) < 0.005, name


def test_a_sweep_from_small_sizes_averages_far_below_what_the_links_carry():
    run = read(A100_LEGACY)
    assert (run.average_busbw, run.bus_bandwidth) == (68.4048, 235.26), A100_LEGACY


@pytest.mark.parametrize(
    ("name", "devices"),
    [
        (H100, ("NVIDIA H100 80GB HBM3",) * 8),
        (H100_SRUN, ("NVIDIA H100 80GB HBM3",) * 16),
        (A100_LEGACY, ("A100-SXM4-40GB",) * 8),
        (V100_LEGACY, ("Tesla V100-PCIE-32GB",) * 4),
        (H100_NVL, ("NVIDIA H100 NVL",) * 4),
        (DGX_A100, ()),
    ],
)
def test_each_ranks_gpu_is_named_as_cuda_names_it(name, devices):
    assert read(name).devices == devices, name


@pytest.mark.parametrize(("name", "version"), [(GH200_WRONG, "2.17.8"), (H100_NVL, "2.18.3"), (H100, None)])
def test_the_nccl_tests_version_is_read_where_printed(name, version):
    assert read(name).version == version, name


@pytest.mark.parametrize("name", [n for n in fixture_names("all_reduce_perf-*") if n != GH200_BUSY])
def test_a_finished_run_has_its_out_of_bounds_count(name):
    run = read(name)
    assert run.out_of_bounds == (4 if name == GH200_WRONG else 0), name


def test_a_placement_holds_time_algbw_busbw_and_wrong_elements():
    run = read(H100)
    assert run.largest is not None, H100
    assert run.largest.out_of_place == Placement(15870.0, 270.63, 473.60, 0), H100
    assert run.largest.in_place == Placement(15773.0, 272.30, 476.53, 0), H100


def test_wrong_elements_are_read_per_placement_and_named_as_a_problem():
    run = read(GH200_WRONG)
    wrong = [(row.size, row.out_of_place.wrong, row.in_place.wrong) for row in run.rows if row.out_of_place.wrong]
    assert wrong == [(1048576, 96, 32)], GH200_WRONG
    assert "all_reduce_perf found wrong results in 4 of its tests (Out of bounds values)" in run.problems, GH200_WRONG


def test_a_run_that_does_not_check_has_no_wrong_count():
    """`validation: 0` (-c 0) prints `N/A` in the #wrong columns."""
    run = read(H100_SRUN)
    assert {(row.out_of_place.wrong, row.in_place.wrong) for row in run.rows} == {(None, None)}, H100_SRUN


def test_the_legacy_format_gives_the_largest_relative_error_not_a_count():
    run = read(V100_LEGACY)
    first = run.rows[0]
    assert (first.out_of_place.wrong, first.out_of_place.max_error, first.in_place.max_error) == (None, 1e-07, 0.0), V100_LEGACY


def test_the_test_failure_lines_of_a_failed_run_are_its_errors():
    run = read(GH200_WRONG)
    assert run.errors == (
        ".. gpu-1-1 pid 662195: Test failure common.cu:1189",
        ".. gpu-1-7 pid 2448661: Test failure common.cu:1189",
    ), GH200_WRONG


def test_a_run_that_could_not_start_has_its_cuda_error_and_no_rows():
    run = read(GH200_BUSY)
    assert run.rows == () and run.bus_bandwidth is None and run.out_of_bounds is None, GH200_BUSY
    assert run.errors[0] == "gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'"
    assert len(run.errors) == 12, GH200_BUSY
    assert run.problems[-1] == "all_reduce_perf printed no result", GH200_BUSY


def test_too_few_gpus_is_an_error():
    """src/util.cu writeDeviceReport prints both lines to stderr when -g asks for more GPUs than CUDA sees."""
    header = "".join(recorded(H100).splitlines(keepends=True)[:3])
    log = header + "Invalid number of GPUs: 8 requested but only 4 were found.\n"
    log += "Please check the number of processes and GPUs per process.\n"
    run = read_all_reduce(log)
    assert run.errors == ("Invalid number of GPUs: 8 requested but only 4 were found.",), log
    assert run.rows == (), log


def test_a_run_cut_short_has_no_summary_and_says_so():
    lines = recorded(H100).splitlines(keepends=True)
    cut = "".join(lines[:18])
    run = read_all_reduce(cut)
    assert (len(run.rows), run.out_of_bounds, run.average_busbw) == (3, None, None), cut
    assert run.problems == ("all_reduce_perf stopped before its summary",), cut


@pytest.mark.parametrize(
    ("launcher", "prefix"),
    [
        ("Open MPI --tag-output", "[1,0]<stdout>:"),
        ("PRRTE tag-detailed", "[1,0][node005:295203]<stdout>:"),
        ("Slurm srun --label", " 0: "),
    ],
)
def test_a_launchers_prefix_on_every_line_reads_as_the_plain_run(launcher, prefix):
    """openpmix/prrte PR 1407 (tag: `[jobid,rank]<stream>:`); Slurm's ` 0: ` as recorded in nccl-tests issue 290."""
    prefixed = "".join(prefix + line for line in recorded(H100).splitlines(keepends=True))
    assert read_all_reduce(prefixed) == read(H100), launcher


def test_nccl_info_lines_between_rows_are_passed_over():
    """NCCL_DEBUG=INFO writes `<host>:<pid>:<tid> [<dev>] NCCL INFO ...` lines into the table (recorded in the A100 sample)."""
    lines = recorded(H100).splitlines(keepends=True)
    info = "node005:295203:295203 [0] NCCL INFO comm 0x5633e0 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE\n"
    interleaved = "".join(line + info for line in lines)
    assert read_all_reduce(interleaved) == read(H100), "H100 with NCCL INFO lines"


def test_the_largest_size_wins_wherever_its_row_stands():
    lines = recorded(H100).splitlines(keepends=True)
    head, rows, foot = lines[:15], lines[15:21], lines[21:]
    assert [line.split()[0] for line in rows] == [str(2**n) for n in range(27, 33)], H100
    reordered = "".join(head + rows[::-1] + foot)
    run = read_all_reduce(reordered)
    assert run.largest is not None and (run.largest.size, run.bus_bandwidth) == (4 * GIB, 473.60), reordered


@pytest.mark.parametrize("text", ["", "all_reduce_perf: command not found\n", "# nThread 1 nGpus 8\n"])
def test_a_log_without_a_run_reads_as_an_empty_run(text):
    run = read_all_reduce(text)
    assert (run.rows, run.out_of_bounds, run.average_busbw, run.bus_bandwidth) == ((), None, None, None), text
