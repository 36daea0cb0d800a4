"""--min-cuda: the driver's CUDA version, from nvidia-smi's header, against the CUDA version of the
verification's CUDA image. Headers are real nvidia-smi output (fixtures/README.md names each)."""

from __future__ import annotations

import pytest

from .preflight_node import FIXTURES, GPU_LINES, FakeNode

PASSED_EXIT = 0
FAILED_EXIT = 1
USAGE_EXIT = 2


def nvidia_smi(node: FakeNode, fixture: str) -> None:
    """--query-gpu answers as before; plain `nvidia-smi` prints the recorded table."""
    node.healthy_nvidia_smi(GPU_LINES, (FIXTURES / fixture).read_text())


@pytest.mark.parametrize(("fixture", "cuda"), [("nvidia-smi-a100-sxm4-570.txt", "12.8"), ("nvidia-smi-a40-550.txt", "12.4")])
def test_the_drivers_cuda_version_is_reported(node: FakeNode, fixture: str, cuda: str) -> None:
    nvidia_smi(node, fixture)
    result = node.preflight()
    assert result.report["cudaVersion"] == cuda, result.report
    assert result.check("cuda") == {"name": "cuda", "ok": True, "detail": f"not requested (the driver supports CUDA {cuda})"}


def test_an_image_for_an_older_cuda_passes(node: FakeNode) -> None:
    nvidia_smi(node, "nvidia-smi-a40-550.txt")
    result = node.preflight("--min-cuda", "11.7")
    assert result.check("cuda")["ok"] is True, result.check("cuda")
    assert "supports CUDA 12.4 >= 11.7" in result.check("cuda")["detail"], result.check("cuda")
    assert result.returncode == PASSED_EXIT, result.stderr


def test_an_image_for_a_newer_cuda_is_refused_naming_both_versions_and_the_ways_out(node: FakeNode) -> None:
    nvidia_smi(node, "nvidia-smi-a40-550.txt")
    result = node.preflight("--min-cuda", "12.5")
    cuda = result.check("cuda")
    assert result.returncode == FAILED_EXIT and cuda["ok"] is False, cuda
    assert "supports CUDA up to 12.4, but the verification's CUDA image is built for CUDA 12.5" in cuda["detail"], cuda
    assert "upgrade the driver" in cuda["detail"] and "verification.cudaImage" in cuda["detail"], cuda


def test_versions_compare_as_numbers(node: FakeNode) -> None:
    nvidia_smi(node, "nvidia-smi-a100-sxm4-570.txt")
    assert node.preflight("--min-cuda", "12.10").check("cuda")["ok"] is False, "12.8 taken for newer than 12.10"


def test_no_cuda_version_in_the_header_fails_when_one_is_needed(node: FakeNode) -> None:
    node.nvidia_smi(GPU_LINES)  # the query lines, whatever it is asked
    result = node.preflight("--min-cuda", "11.7")
    assert result.check("cuda")["ok"] is False and "names no CUDA Version" in result.check("cuda")["detail"], result.check("cuda")
    assert result.report["cudaVersion"] is None, result.report


def test_a_malformed_min_cuda_is_a_usage_error(node: FakeNode) -> None:
    result = node.preflight("--min-cuda", "12")
    assert result.returncode == USAGE_EXIT, result.stderr
    assert "--min-cuda wants a CUDA version like 12.4, got '12'" in result.check("usage")["detail"], result.report
