"""The mig check (37-check-mig.sh), --mig-strategy: GPUs in MIG mode, read from `nvidia-smi -q`.
The A100 block is a real one (fixtures/README.md names it); the variants change its MIG mode lines
and say so. The H100 is a real recording too (hopper.py)."""

from __future__ import annotations

from .hopper import sxm
from .preflight_node import FAILED_EXIT, FIXTURES, GPU_LINES, PASSED_EXIT, FakeNode

DISABLED = (FIXTURES / "nvidia-smi-q-a100-sxm4-mig-disabled.txt").read_text()
MIG_LINES = (
    "    MIG Mode\n        Current                           : Disabled\n        Pending                           : Disabled\n"
)
assert MIG_LINES in DISABLED, "the fixture's MIG mode lines moved"


def mig_mode(current: str, pending: str | None = None) -> str:
    """The fixture's first GPU with its MIG mode changed (a variant)."""
    lines = MIG_LINES.replace("Current                           : Disabled", f"Current                           : {current}")
    lines = lines.replace(
        "Pending                           : Disabled", f"Pending                           : {pending or current}"
    )
    return DISABLED.replace(MIG_LINES, lines)


def two_gpus(first: str, second: str) -> str:
    """Two GPU blocks, the second a copy of the first with its own bus id (a variant)."""
    block = mig_mode(second).split("GPU 00000000:07:00.0\n", 1)[1]
    return mig_mode(first) + "\nGPU 00000000:0F:00.0\n" + block


def nvidia_smi_q(node: FakeNode, text: str) -> None:
    node.nvidia_smi_with_table(GPU_LINES, text, q=text)


def test_single_with_mig_disabled_fails_naming_the_gpu_and_the_fix(node: FakeNode) -> None:
    nvidia_smi_q(node, DISABLED)
    result = node.preflight("--mig-strategy", "single")
    mig = result.check("mig")
    assert result.returncode == FAILED_EXIT and mig["ok"] is False, mig
    assert "every GPU in MIG mode, and 0 of 1 are: GPU 00000000:07:00.0 Disabled" in mig["detail"], mig
    assert "nvidia-smi -i <index> -mig 1" in mig["detail"], mig


def test_single_with_mig_enabled_passes(node: FakeNode) -> None:
    nvidia_smi_q(node, mig_mode("Enabled"))
    result = node.preflight("--mig-strategy", "single")
    assert result.check("mig") == {"name": "mig", "ok": True, "detail": "1 of 1 GPU(s) in MIG mode (migStrategy single)"}
    assert result.returncode == PASSED_EXIT, result.stderr


def test_single_needs_every_gpu_mixed_needs_one(node: FakeNode) -> None:
    nvidia_smi_q(node, two_gpus("Enabled", "Disabled"))
    single = node.preflight("--mig-strategy", "single").check("mig")
    assert single["ok"] is False and "1 of 2 are: GPU 00000000:0F:00.0 Disabled" in single["detail"], single
    mixed = node.preflight("--mig-strategy", "mixed").check("mig")
    assert mixed["ok"] is True, mixed


def test_mixed_without_any_gpu_in_mig_mode_fails(node: FakeNode) -> None:
    nvidia_smi_q(node, two_gpus("Disabled", "Disabled"))
    mig = node.preflight("--mig-strategy", "mixed").check("mig")
    assert mig["ok"] is False and "at least one GPU in MIG mode, and none is" in mig["detail"], mig


def test_an_enabled_mode_still_pending_says_to_reset_the_gpu(node: FakeNode) -> None:
    nvidia_smi_q(node, mig_mode("Disabled", pending="Enabled"))
    mig = node.preflight("--mig-strategy", "single").check("mig")
    assert mig["ok"] is False and "(Enabled is pending: reset the GPU)" in mig["detail"], mig


def test_the_driver_model_lines_after_it_are_not_taken_for_the_mig_mode(node: FakeNode) -> None:
    # Driver Model has its own Current/Pending (N/A) lines right after MIG Mode.
    nvidia_smi_q(node, mig_mode("Enabled"))
    assert node.preflight("--mig-strategy", "single").check("mig")["ok"] is True


def test_without_a_strategy_mig_is_not_requested(node: FakeNode) -> None:
    nvidia_smi_q(node, DISABLED)
    assert node.preflight().check("mig") == {"name": "mig", "ok": True, "detail": "not requested"}


def test_single_on_an_h100_without_mig_names_its_bus(node: FakeNode) -> None:
    result = sxm(node).preflight("--expect-gpus", "1", "--mig-strategy", "single")
    mig = result.check("mig")
    assert result.returncode == FAILED_EXIT and "0 of 1 are: GPU 00000000:18:00.0 Disabled" in mig["detail"], mig
