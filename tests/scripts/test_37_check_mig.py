"""The mig check (37-check-mig.sh), --mig-strategy: GPUs in MIG mode, read from `nvidia-smi -q`,
and with --mig-devices the MIG devices of each GPU, read from `nvidia-smi -L`. The A100 block is a
real one (fixtures/README.md names it); the variants change its MIG mode lines and say so. The H100
is a real recording too (hopper.py), and so is each `nvidia-smi -L` listing (fixtures/README.md)."""

from __future__ import annotations

from .hopper import sxm
from .preflight_node import FAILED_EXIT, FIXTURES, GPU_LINES, PASSED_EXIT, FakeNode, heredoc

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


# `nvidia-smi -L` of GPUs in MIG mode, each listed with the MIG devices under it.
RTX_PRO_L = (FIXTURES / "nvidia-smi-L-rtx-pro-6000-mig.txt").read_text()
BESIDE_WHOLE_GPUS_L = (FIXTURES / "nvidia-smi-L-a100-mig-beside-whole-gpus.txt").read_text()
NO_INSTANCE_L = (FIXTURES / "nvidia-smi-L-a30-mig-no-instance.txt").read_text()
EIGHT_LAYOUTS_L = (FIXTURES / "nvidia-smi-L-a100-eight-layouts.txt").read_text()
RTX_GPU_0 = "GPU 0 (GPU-02b2a5a5-8d75-2edd-920c-a6eab03752e3)"
RTX_GPU_1 = "GPU 1 (GPU-333dd542-00f1-e792-cf6b-db256f9ef1b3)"


def two_gpus(first: str, second: str) -> str:
    """Two GPU blocks, the second a copy of the first with its own bus id (a variant)."""
    return gpus(first, second)


def gpus(first: str, *others: str) -> str:
    """One GPU block per MIG mode, each after the first a copy of it with its own bus id (a variant)."""
    text = mig_mode(first)
    for n, mode in enumerate(others):
        text += f"\nGPU 00000000:{0x0F + 8 * n:02X}:00.0\n" + mig_mode(mode).split("GPU 00000000:07:00.0\n", 1)[1]
    return text


def nvidia_smi_q(node: FakeNode, text: str, listing: str | None = None) -> None:
    node.nvidia_smi_with_table(GPU_LINES, text, q=text, listing=listing)


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


# --- --mig-devices: the layout each GPU has, from nvidia-smi -L ---------------------------


def test_a_layout_every_gpu_has_passes_naming_it(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus("Enabled", "Enabled"), listing=RTX_PRO_L)
    result = node.preflight("--mig-strategy", "single", "--mig-devices", "1g.24gb=4")
    assert result.check("mig") == {
        "name": "mig",
        "ok": True,
        "detail": "2 of 2 GPU(s) in MIG mode (migStrategy single), each with the MIG devices of devicePlugin.migDevices: "
        "1g.24gb=4",
    }
    assert result.returncode == PASSED_EXIT, result.stderr


def test_missing_and_extra_mig_devices_are_named_per_gpu_by_count(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus("Enabled", "Enabled"), listing=RTX_PRO_L)
    result = node.preflight("--mig-strategy", "mixed", "--mig-devices", "1g.24gb=2,2g.48gb=1")
    mig = result.check("mig")
    assert result.returncode == FAILED_EXIT and mig["ok"] is False, mig
    assert mig["detail"].startswith(
        "the MIG devices nvidia-smi -L lists differ from devicePlugin.migDevices (1g.24gb=2,2g.48gb=1 on every GPU): "
    ), mig
    for gpu in (RTX_GPU_0, RTX_GPU_1):
        assert f"{gpu} has 1g.24gb=4: 1 x 2g.48gb missing, 2 x 1g.24gb extra" in mig["detail"], mig
    assert "nvidia-mig-parted apply" in mig["detail"], mig


def test_only_the_gpu_that_differs_is_named(node: FakeNode) -> None:
    # A variant: GPU 1 of the recording without its last two MIG devices.
    listing = "\n".join(RTX_PRO_L.splitlines()[:-2]) + "\n"
    nvidia_smi_q(node, gpus("Enabled", "Enabled"), listing=listing)
    mig = node.preflight("--mig-strategy", "single", "--mig-devices", "1g.24gb=4").check("mig")
    assert mig["ok"] is False and f"{RTX_GPU_1} has 1g.24gb=2: 2 x 1g.24gb missing" in mig["detail"], mig
    assert RTX_GPU_0 not in mig["detail"], mig


def test_a_gpu_in_mig_mode_without_any_mig_device_fails_in_the_mig_check(node: FakeNode) -> None:
    nvidia_smi_q(node, mig_mode("Enabled"), listing=NO_INSTANCE_L)
    mig = node.preflight("--mig-strategy", "mixed", "--mig-devices", "1g.6gb=4").check("mig")
    assert mig["ok"] is False, mig
    assert "GPU 0 (GPU-0898a861-78ae-cdaf-4f1a-68992223505a) has no MIG device: 4 x 1g.6gb missing" in mig["detail"], mig
    assert "the device plugin does not start on a GPU in MIG mode without one" in mig["detail"], mig


def test_with_a_layout_mixed_needs_every_gpu_in_mig_mode(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus("Enabled", "Disabled", "Disabled", "Disabled"), listing=BESIDE_WHOLE_GPUS_L)
    mig = node.preflight("--mig-strategy", "mixed", "--mig-devices", "1g.20gb=4").check("mig")
    assert mig["ok"] is False, mig
    assert (
        "devicePlugin.migDevices (1g.20gb=4 on every GPU) needs every GPU in MIG mode, and 1 of 4 are: "
        "GPU 00000000:0F:00.0 Disabled" in mig["detail"]
    ), mig


def test_without_a_layout_mixed_takes_whole_gpus_beside_mig_ones(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus("Enabled", "Disabled", "Disabled", "Disabled"), listing=BESIDE_WHOLE_GPUS_L)
    mig = node.preflight("--mig-strategy", "mixed").check("mig")
    assert mig == {"name": "mig", "ok": True, "detail": "1 of 4 GPU(s) in MIG mode (migStrategy mixed)"}, mig


def test_compute_instances_are_counted_under_their_own_profiles(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus(*["Enabled"] * 8), listing=EIGHT_LAYOUTS_L)
    mig = node.preflight("--mig-strategy", "mixed", "--mig-devices", "1g.5gb=7").check("mig")
    assert mig["ok"] is False, mig
    gpu_4 = "GPU 4 (GPU-74fa9fb7-ccf6-8234-e597-7af8ace9a8f5)"
    assert f"{gpu_4} has 1c.3g.20gb=6: 7 x 1g.5gb missing, 6 x 1c.3g.20gb extra" in mig["detail"], mig
    assert "has 1c.7g.40gb=1,2c.7g.40gb=1,3c.7g.40gb=1: 7 x 1g.5gb missing, 1 x 1c.7g.40gb extra" in mig["detail"], mig
    assert "GPU 0 (" not in mig["detail"], mig


def test_an_nvidia_smi_l_that_fails_fails_the_check_naming_it(node: FakeNode) -> None:
    q = mig_mode("Enabled")
    node.command(
        "nvidia-smi",
        f'case "$*" in\n  *--query-gpu=*)\n{heredoc(GPU_LINES)}\n;;\n  -q)\n{heredoc(q)}\n;;\n'
        '  -L)\necho "Unable to determine the device handle for GPU 0000:07:00.0: Unknown Error"; exit 15\n;;\nesac',
    )
    mig = node.preflight("--mig-strategy", "single", "--mig-devices", "1g.10gb=7").check("mig")
    assert mig["ok"] is False, mig
    assert mig["detail"].startswith(
        "nvidia-smi -L failed (exit 15: Unable to determine the device handle for GPU 0000:07:00.0: Unknown Error), "
        "so the MIG devices are unknown"
    ), mig


def test_the_report_names_the_mig_devices_found_on_each_gpu(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus(*["Enabled"] * 8), listing=EIGHT_LAYOUTS_L)
    found = node.preflight("--mig-strategy", "mixed").report["mig"]
    assert sorted(found) == [str(i) for i in range(8)], found
    assert found["0"] == {"1g.5gb": 7} and found["4"] == {"1c.3g.20gb": 6}, found
    assert found["7"] == {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 1}, found


def test_a_gpu_outside_mig_mode_is_reported_with_no_mig_device(node: FakeNode) -> None:
    nvidia_smi_q(node, gpus("Enabled", "Disabled", "Disabled", "Disabled"), listing=BESIDE_WHOLE_GPUS_L)
    found = node.preflight("--mig-strategy", "mixed").report["mig"]
    assert found == {"0": {"1g.20gb": 4}, "1": {}, "2": {}, "3": {}}, found


def test_without_a_mig_strategy_the_report_has_no_mig_layout(node: FakeNode) -> None:
    assert node.preflight().report["mig"] is None
