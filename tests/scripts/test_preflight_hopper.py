"""Hopper machines as nvidia-smi reports them: an 8 x H100 SXM5 node with a trained NVSwitch fabric,
and an H100 NVL (PCIe) node without one. Each -q is a real recording, header and first GPU
(fixtures/README.md); the --query-gpu line is that GPU's fields from the same recording."""

from __future__ import annotations

import pytest

from .preflight_node import FIXTURES, FakeNode, fakehost

FAILED_EXIT = 1
SXM_Q = (FIXTURES / "nvidia-smi-q-h100-sxm5-fabric-completed.txt").read_text()
NVL_Q = (FIXTURES / "nvidia-smi-q-h100-nvl-pcie.txt").read_text()
SXM_LINE = "0, NVIDIA H100 80GB HBM3, GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1, 565.57.01, 81559\n"
NVL_LINE = "0, NVIDIA H100 NVL, GPU-806f8ea2-6428-1096-a076-bb687fb45fb0, 550.54.14, 95830\n"


@pytest.fixture
def sxm(node: FakeNode) -> FakeNode:
    node.nvidia_smi_with_table(SXM_LINE, fakehost.smi_table(fakehost.MachineSpec()), SXM_Q)
    return node


@pytest.fixture
def nvl(node: FakeNode) -> FakeNode:
    node.nvidia_smi_with_table(NVL_LINE, fakehost.smi_table(fakehost.MachineSpec()), NVL_Q)
    return node


def test_an_h100_sxm_with_its_fabric_trained_passes(sxm: FakeNode) -> None:
    fab = sxm.preflight("--expect-gpus", "1").check("fabric")
    assert fab == {"name": "fabric", "ok": True, "detail": "1 GPU(s) report their NVSwitch fabric Completed, Success"}, fab


def test_an_h100_nvl_has_no_fabric_to_ask_about(nvl: FakeNode) -> None:
    fab = nvl.preflight("--expect-gpus", "1").check("fabric")
    assert fab == {
        "name": "fabric",
        "ok": True,
        "detail": "no NVSwitch fabric: the GPUs report none and no NVSwitch is present",
    }, fab


def test_mig_single_on_an_h100_without_mig_names_its_bus(sxm: FakeNode) -> None:
    result = sxm.preflight("--expect-gpus", "1", "--mig-strategy", "single")
    mig = result.check("mig")
    assert result.returncode == FAILED_EXIT and "0 of 1 are: GPU 00000000:18:00.0 Disabled" in mig["detail"], mig


def test_the_nvl_is_not_the_sxm_model(nvl: FakeNode) -> None:
    """An H100 NVL (PCIe) machine in a group that declares the SXM part."""
    model = nvl.preflight("--expect-gpus", "1", "--gpu-model", "NVIDIA H100 80GB HBM3").check("gpu-model")
    assert model["ok"] is False and "found NVIDIA H100 NVL" in model["detail"], model


def test_the_report_carries_the_facts_the_labels_are_made_from(sxm: FakeNode) -> None:
    report = sxm.preflight("--expect-gpus", "1").report
    assert report["gpus"] == [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1", "memoryMiB": 81559}
    ], report
    assert report["driverVersion"] == "565.57.01", report
