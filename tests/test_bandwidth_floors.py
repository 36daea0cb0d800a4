"""The bus-bandwidth floors (gpu_nodes/bandwidth_floors.py): which machine each holds, that each is the value
its source quotes, and that recorded runs of healthy machines clear them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpu_nodes.bandwidth_floors import BANDWIDTH_FLOORS, GIB, floor_for
from gpu_nodes.proof.nccl import read_all_reduce
from tests.proof.recorded import recorded

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("model", "gpus", "gbps"),
    [
        ("NVIDIA H100 80GB HBM3", 8, 460.0),  # ND H100 v5
        ("NVIDIA H200", 8, 431.0),  # ND H200 v5
        ("NVIDIA A100-SXM4-80GB", 8, 228.0),  # ND A100 v4 80 GB
        ("NVIDIA A100-SXM4-40GB", 8, 228.0),  # ND A100 v4
        ("Tesla V100-SXM2-32GB", 8, 110.0),  # NDv2
        ("NVIDIA H100 NVL", 2, 208.0),  # NC80adis H100 v5
        ("NVIDIA A100 80GB PCIe", 2, 193.0),  # NC48ads A100 v4
        ("NVIDIA A100 80GB PCIe", 4, 25.0),  # NC96ads A100 v4
    ],
)
def test_a_machine_azure_checks_has_its_floor(model, gpus, gbps):
    floor = floor_for(model, gpus)
    assert floor is not None and floor.gbps == gbps, (model, gpus)


@pytest.mark.parametrize(
    ("model", "gpus"),
    [
        ("NVIDIA H100 80GB HBM3", 4),  # part of a machine: no source measures it
        ("A100-SXM4-40GB", 8),  # the name older drivers printed (driver 450)
        ("NVIDIA A100-SXM4-80GB", 1),
        ("NVIDIA GH200 120GB", 1),
    ],
)
def test_a_model_or_count_no_source_measures_has_no_floor(model, gpus):
    assert floor_for(model, gpus) is None, (model, gpus)


def test_each_model_and_count_has_one_floor():
    keys = [(floor.model, floor.gpus) for floor in BANDWIDTH_FLOORS]
    assert len(keys) == len(set(keys)), keys


@pytest.mark.parametrize("floor", BANDWIDTH_FLOORS, ids=lambda f: f"{f.model} x{f.gpus}")
def test_a_floor_is_the_value_and_size_its_source_quotes(floor):
    quoted = re.search(r"check_nccl_allreduce (\d+(?:\.\d+)?) \d+ (\d+)G", floor.source)
    assert quoted is not None, floor.source
    assert (float(quoted[1]), int(quoted[2]) * GIB) == (floor.gbps, floor.message_bytes), floor.source
    assert "at commit 0e0a1ac2" in floor.source, floor.source


@pytest.mark.parametrize(
    "floor", [f for f in BANDWIDTH_FLOORS if "tests/scripts/fixtures/" in f.model_source], ids=lambda f: f.model
)
def test_a_model_name_from_a_recording_here_is_in_that_recording(floor):
    path = re.search(r"tests/scripts/fixtures/[\w.-]+", floor.model_source)
    assert path is not None, floor.model_source
    assert floor.model in (ROOT / path[0]).read_text(), path[0]


@pytest.mark.parametrize(
    ("measured", "met"),
    [(460.0, True), (473.60, True), (459.99, False), (414.0, False)],  # 414 = 0.9 x 460, where AICR would pass
)
def test_a_floor_is_met_at_or_above_it_with_no_tolerance(measured, met):
    floor = floor_for("NVIDIA H100 80GB HBM3", 8)
    assert floor is not None and floor.met_by(measured) is met, measured


def test_the_recorded_8_h100_run_at_4_gib_meets_the_nd_h100_v5_floor():
    """NVIDIA/nccl-tests issue 290 (an NVIDIA maintainer: "476GB/s looks to be in the expected range for H100")."""
    name = "all_reduce_perf-h100-sxm-8gpu-single-node-nvls.txt"
    run = read_all_reduce(recorded(name))
    floor = floor_for(run.devices[0], len(run.devices))
    assert floor is not None and run.bus_bandwidth is not None and floor.met_by(run.bus_bandwidth), name


def test_the_recorded_8_a100_run_clears_the_floor_only_under_todays_name():
    """The superbenchmark run (an older driver) names its GPUs `A100-SXM4-40GB`: no floor under that name; its
    235.26 GB/s at 8 GiB clears the ND A100 v4 floor (228, at 8 GiB) for the name nvidia-smi prints today."""
    name = "all_reduce_perf-a100-sxm4-40gb-8gpu-legacy-format.txt"
    run = read_all_reduce(recorded(name))
    assert floor_for(run.devices[0], len(run.devices)) is None, name
    floor = floor_for("NVIDIA A100-SXM4-40GB", len(run.devices))
    assert floor is not None and run.bus_bandwidth is not None and floor.met_by(run.bus_bandwidth), name
