"""The fabric check (38-check-fabric.sh): the NVSwitch fabric, per GPU from nvidia-smi -q's Fabric
section (Hopper and later), else the fabric manager where NVSwitches are (Ampere). The Fabric block
is a real one (fixtures/README.md); the others change its State and Status lines and say so, nested
under the fake machines' GPUs. The H100 machines are real recordings (hopper.py)."""

from __future__ import annotations

import dataclasses

from .hopper import nvl, sxm
from .preflight_node import FAILED_EXIT, FIXTURES, GPU_LINES, MACHINE, PASSED_EXIT, FakeNode, fakehost

REAL_BLOCK = (FIXTURES / "nvidia-smi-q-fabric-insufficient-resources.txt").read_text()
AMPERE_FABRIC = "    Fabric\n        State                             : N/A\n        Status                            : N/A\n"


def fabric(state: str, status: str) -> str:
    """The real block with its State and Status changed (a variant), nested four spaces in."""
    block = REAL_BLOCK.replace(": Completed", f": {state}").replace(": Insufficient Resources", f": {status}")
    return "".join(f"    {line}\n" for line in block.splitlines())


def machine_q(*blocks: str) -> str:
    """The fake machine's -q with each GPU's Ampere Fabric section replaced by one of blocks."""
    q = fakehost.smi_q(dataclasses.replace(MACHINE, gpus=len(blocks)))
    for block in blocks:
        q = q.replace(AMPERE_FABRIC, block, 1)
    return q


def with_q(node: FakeNode, q: str) -> None:
    node.nvidia_smi_with_table(GPU_LINES, fakehost.smi_table(MACHINE), q)


def test_the_real_insufficient_resources_block_fails_naming_the_gpu(node: FakeNode) -> None:
    with_q(node, machine_q("".join(f"    {line}\n" for line in REAL_BLOCK.splitlines()), AMPERE_FABRIC))
    result = node.preflight()
    fab = result.check("fabric")
    assert result.returncode == FAILED_EXIT and fab["ok"] is False, fab
    assert "GPU 00000000:07:00.0: Completed with status Insufficient Resources" in fab["detail"], fab
    assert "error 802" in fab["detail"] and "systemctl status nvidia-fabricmanager" in fab["detail"], fab


def test_hopper_gpus_with_a_trained_fabric_pass(node: FakeNode) -> None:
    with_q(node, machine_q(fabric("Completed", "Success"), fabric("Completed", "Success")))
    result = node.preflight()
    assert result.check("fabric") == {
        "name": "fabric",
        "ok": True,
        "detail": "2 GPU(s) report their NVSwitch fabric Completed, Success",
    }
    assert result.returncode == PASSED_EXIT, result.stderr


def test_a_fabric_still_in_progress_names_that_gpu_only(node: FakeNode) -> None:
    with_q(node, machine_q(fabric("Completed", "Success"), fabric("In Progress", "N/A")))
    fab = node.preflight().check("fabric")
    assert fab["ok"] is False and "GPU 00000000:08:00.0: In Progress" in fab["detail"], fab
    assert "00000000:07:00.0" not in fab["detail"], fab


def test_pcie_and_ampere_gpus_without_nvswitches_are_not_asked(node: FakeNode) -> None:
    # The healthy node's -q is the fake machine's: Ampere, State N/A.
    assert node.preflight().check("fabric") == {
        "name": "fabric",
        "ok": True,
        "detail": "no NVSwitch fabric: the GPUs report none and no NVSwitch is present",
    }


def test_ampere_with_nvswitches_needs_the_fabric_manager_running(node: FakeNode) -> None:
    for switch in ("0000:07:00.0", "0000:08:00.0"):
        node.file(f"proc/driver/nvidia-nvswitch/devices/{switch}/information", "Fabric State: Not Configured\n")
    fab = node.preflight().check("fabric")
    assert fab["ok"] is False, fab
    assert "2 NVSwitch(es) present" in fab["detail"] and "systemctl enable --now nvidia-fabricmanager" in fab["detail"], fab
    node.file("proc/4242/comm", "nv-fabricmanage\n")  # the kernel keeps 15 characters of the name
    fab = node.preflight().check("fabric")
    assert fab["ok"] is True and "nv-fabricmanager runs" in fab["detail"], fab


def test_an_unanswered_q_is_unknown_not_fine(node: FakeNode) -> None:
    node.nvidia_smi_with_table(GPU_LINES, fakehost.smi_table(MACHINE))  # -q prints the table
    fab = node.preflight().check("fabric")
    assert fab["ok"] is False and "nvidia-smi -q listed no GPU" in fab["detail"], fab


def test_an_h100_sxm_with_its_fabric_trained_passes(node: FakeNode) -> None:
    fab = sxm(node).preflight("--expect-gpus", "1").check("fabric")
    assert fab == {"name": "fabric", "ok": True, "detail": "1 GPU(s) report their NVSwitch fabric Completed, Success"}, fab


def test_an_h100_nvl_has_no_fabric_to_ask_about(node: FakeNode) -> None:
    fab = nvl(node).preflight("--expect-gpus", "1").check("fabric")
    assert fab == {
        "name": "fabric",
        "ok": True,
        "detail": "no NVSwitch fabric: the GPUs report none and no NVSwitch is present",
    }, fab
