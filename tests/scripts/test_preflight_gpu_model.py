"""--gpu-model: every GPU of the machine is the group's declared model, as nvidia-smi names it."""

from __future__ import annotations

from .preflight_node import FakeNode

FAILED_EXIT = 1
# An H100 PCIe card beside an SXM one, in the --query-gpu format of the other tests.
MIXED_LINES = (
    "0, NVIDIA H100 80GB HBM3, GPU-11111111-2222-3333-4444-555555555555, 550.54.15, 81559\n"
    "1, NVIDIA H100 PCIe, GPU-66666666-7777-8888-9999-000000000000, 550.54.15, 81559\n"
)


def test_a_machine_of_the_declared_model_passes(node: FakeNode) -> None:
    result = node.preflight("--gpu-model", "NVIDIA A100-SXM4-80GB")
    assert result.check("gpu-model") == {"name": "gpu-model", "ok": True, "detail": "all 2 GPU(s) are NVIDIA A100-SXM4-80GB"}


def test_a_machine_of_another_model_fails_naming_both(node: FakeNode) -> None:
    result = node.preflight("--gpu-model", "NVIDIA H100 80GB HBM3")
    check = result.check("gpu-model")
    assert result.returncode == FAILED_EXIT and check["ok"] is False, check
    assert "found NVIDIA A100-SXM4-80GB, and the group declares gpuModel 'NVIDIA H100 80GB HBM3'" in check["detail"], check


def test_one_gpu_of_another_model_fails_the_machine(node: FakeNode) -> None:
    node.healthy_nvidia_smi(MIXED_LINES)
    check = node.preflight("--expect-gpus", "2", "--gpu-model", "NVIDIA H100 80GB HBM3").check("gpu-model")
    assert check["ok"] is False and "found NVIDIA H100 80GB HBM3, NVIDIA H100 PCIe" in check["detail"], check


def test_without_nvidia_smi_the_model_is_unknown(node: FakeNode) -> None:
    node.drop_command("nvidia-smi")
    check = node.preflight("--gpu-model", "NVIDIA H100 80GB HBM3").check("gpu-model")
    assert check == {
        "name": "gpu-model",
        "ok": False,
        "detail": "GPU model unknown (see the driver check), need NVIDIA H100 80GB HBM3",
    }, check


def test_without_a_declared_model_it_is_not_requested(node: FakeNode) -> None:
    assert node.preflight().check("gpu-model") == {"name": "gpu-model", "ok": True, "detail": "not requested"}
