"""The driver, gpu-count, gpu-model, driver-version and driver-advisories checks (30-check-driver.sh):
what `nvidia-smi --query-gpu` answers, bounded by a timeout, the GPUs the report lists from it, and
the driver against NVIDIA's display-driver bulletins and patched branches."""

from __future__ import annotations

import pytest

from gpu_nodes.advisories import DRIVER_BULLETINS, PATCHED_DRIVER_BRANCHES

from .check_cases import CheckCase, run_case
from .hopper import nvl, sxm
from .preflight_node import FAILED_EXIT, GPU_LINES, PASSED_EXIT, FakeNode

DRIVER_ERROR = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)
UNREADABLE_LINE = "0, NVIDIA A100, GPU-abc, 550.54.15, [N/A]"
# An H100 PCIe card beside an SXM one, in the --query-gpu format of the other tests.
MIXED_LINES = (
    "0, NVIDIA H100 80GB HBM3, GPU-11111111-2222-3333-4444-555555555555, 550.54.15, 81559\n"
    "1, NVIDIA H100 PCIe, GPU-66666666-7777-8888-9999-000000000000, 550.54.15, 81559\n"
)

# ------------------------------------------------------------------- driver

DRIVER_FAILURES = [
    CheckCase(
        "missing nvidia-smi",
        lambda node: node.drop_command("nvidia-smi"),
        exit=FAILED_EXIT,
        ok=False,
        starts="nvidia-smi not found on PATH",
        report={"driverVersion": None},
    ),
    CheckCase(
        "nvidia-smi's driver error, with its message",
        lambda node: node.nvidia_smi(DRIVER_ERROR, exit_code=9),
        exit=FAILED_EXIT,
        ok=False,
        detail=f"nvidia-smi failed (exit 9): {DRIVER_ERROR}",
    ),
    CheckCase(
        "nvidia-smi's error with exit 0",
        lambda node: node.nvidia_smi("Failed to initialize NVML: Driver/library version mismatch", exit_code=0),
        exit=FAILED_EXIT,
        detail="nvidia-smi failed (exit 0): Failed to initialize NVML: Driver/library version mismatch",
    ),
    CheckCase(
        "an unreadable nvidia-smi line",
        lambda node: node.nvidia_smi(UNREADABLE_LINE),
        gpus=1,
        exit=FAILED_EXIT,
        detail=f"cannot read this line of nvidia-smi --query-gpu output: {UNREADABLE_LINE}",
    ),
]


@pytest.mark.parametrize("case", DRIVER_FAILURES, ids=[c.name for c in DRIVER_FAILURES])
def test_an_nvidia_smi_that_cannot_answer_fails_the_driver_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "driver")


def without_coreutils_timeout(node: FakeNode) -> None:
    no_timeout = node.base / "no-timeout"
    no_timeout.mkdir()
    for tool in node.system_bin.iterdir():
        if tool.name != "timeout":
            (no_timeout / tool.name).symlink_to(tool.resolve())
    node.system_bin = no_timeout


@pytest.mark.parametrize(
    "tools", [lambda node: None, without_coreutils_timeout], ids=["coreutils timeout", "without coreutils timeout"]
)
def test_hanging_nvidia_smi_is_bounded_by_the_timeout(node: FakeNode, tools) -> None:
    tools(node)
    node.command("nvidia-smi", "sleep 30")
    result = node.preflight(env={"PREFLIGHT_NVIDIA_SMI_TIMEOUT": "0.5"})
    driver = result.check("driver")
    assert result.returncode == FAILED_EXIT
    assert driver["ok"] is False
    assert driver["detail"].startswith("nvidia-smi did not answer within 0.5s")
    assert result.seconds < 4, result.seconds


def test_no_gpus_found_fails_driver_and_count(node: FakeNode) -> None:
    node.nvidia_smi("No devices were found", exit_code=6)
    result = node.preflight()
    assert result.returncode == FAILED_EXIT
    assert result.check("driver")["detail"] == "nvidia-smi failed (exit 6): No devices were found"
    assert result.check("gpu-count")["ok"] is False
    assert result.check("gpu-count")["detail"].startswith("found 0 GPU(s), expected 2")
    assert result.report["gpus"] == []


def test_gpu_count_mismatch_fails_gpu_count_only(node: FakeNode) -> None:
    result = node.preflight(gpus=8)
    count = result.check("gpu-count")
    assert result.returncode == FAILED_EXIT
    assert count == {"name": "gpu-count", "ok": False, "detail": "found 2 GPU(s), expected 8"}
    assert [c["name"] for c in result.report["checks"] if not c["ok"]] == ["gpu-count"]


# ------------------------------------------------------------- the GPUs reported


def test_healthy_node_reports_hostname_driver_and_gpus(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == PASSED_EXIT, result.stderr
    assert result.report["hostname"] == "gpu-node-1"
    assert result.report["driverVersion"] == "550.54.15"
    assert result.report["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": "GPU-66666666-7777-8888-9999-000000000000",
        "memoryMiB": 81920,
    }


def test_memory_with_mib_suffix_and_name_with_spaces_are_parsed(node: FakeNode) -> None:
    node.healthy_nvidia_smi("0, NVIDIA H100 80GB HBM3, GPU-abc, 550.54.15, 81559 MiB\n1, Tesla T4, GPU-def, 550.54.15, 15360 MiB")
    result = node.preflight()
    assert result.returncode == PASSED_EXIT, result.stderr
    assert [(g["name"], g["memoryMiB"]) for g in result.report["gpus"]] == [("NVIDIA H100 80GB HBM3", 81559), ("Tesla T4", 15360)]


def test_an_h100_sxm_reports_the_facts_the_labels_are_made_from(node: FakeNode) -> None:
    report = sxm(node).preflight("--expect-gpus", "1").report
    assert report["gpus"] == [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1", "memoryMiB": 81559}
    ], report
    assert report["driverVersion"] == "565.57.01", report


# ------------------------------------------------------------------ gpu-model

GPU_MODEL_CASES = [
    CheckCase(
        "a machine of the declared model passes",
        args=("--gpu-model", "NVIDIA A100-SXM4-80GB"),
        detail="all 2 GPU(s) are NVIDIA A100-SXM4-80GB",
        ok=True,
    ),
    CheckCase(
        "a machine of another model fails naming both",
        args=("--gpu-model", "NVIDIA H100 80GB HBM3"),
        exit=FAILED_EXIT,
        ok=False,
        says=("found NVIDIA A100-SXM4-80GB, and the group declares gpuModel 'NVIDIA H100 80GB HBM3'",),
    ),
    CheckCase(
        "one GPU of another model fails the machine",
        lambda node: node.healthy_nvidia_smi(MIXED_LINES),
        ("--expect-gpus", "2", "--gpu-model", "NVIDIA H100 80GB HBM3"),
        ok=False,
        says=("found NVIDIA H100 80GB HBM3, NVIDIA H100 PCIe",),
    ),
    CheckCase(
        # An H100 NVL (PCIe) machine in a group that declares the SXM part.
        "the H100 NVL is not the SXM model",
        nvl,
        ("--expect-gpus", "1", "--gpu-model", "NVIDIA H100 80GB HBM3"),
        ok=False,
        says=("found NVIDIA H100 NVL",),
    ),
    CheckCase(
        "without nvidia-smi the model is unknown",
        lambda node: node.drop_command("nvidia-smi"),
        ("--gpu-model", "NVIDIA H100 80GB HBM3"),
        ok=False,
        detail="GPU model unknown (see the driver check), need NVIDIA H100 80GB HBM3",
    ),
    CheckCase("without a declared model it is not requested", ok=True, detail="not requested"),
]


@pytest.mark.parametrize("case", GPU_MODEL_CASES, ids=[c.name for c in GPU_MODEL_CASES])
def test_the_gpu_model_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "gpu-model")


# ------------------------------------------------------------ driver-version

DRIVER_VERSION_CASES = [
    CheckCase(
        "below --min-driver fails",
        args=("--min-driver", "555.42"),
        exit=FAILED_EXIT,
        ok=False,
        detail="550.54.15 < 555.42: upgrade the NVIDIA driver",
    ),
    *(
        CheckCase(
            f"at or above --min-driver {minimum}",
            args=("--min-driver", minimum),
            exit=PASSED_EXIT,
            ok=True,
            detail=f"550.54.15 >= {minimum}",
        )
        for minimum in ["535.0", "550.9", "550.54.15", "550"]
    ),
    CheckCase("without --min-driver it is not requested", exit=PASSED_EXIT, ok=True, detail="not requested"),
]


@pytest.mark.parametrize("case", DRIVER_VERSION_CASES, ids=[c.name for c in DRIVER_VERSION_CASES])
def test_the_driver_version_check_compares_numbers(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "driver-version")


# ------------------------------------------------------------ driver-advisories

# What every command line passes (gpu_nodes/preflight/command.py): the bulletins, the patched branches.
BULLETIN_ARGS = (
    *(word for b in DRIVER_BULLETINS for word in ("--driver-advisory", b.script_argument())),
    "--patched-driver-branches",
    ",".join(str(branch) for branch in PATCHED_DRIVER_BRANCHES),
)


def driver(version: str):
    """The healthy node's GPUs with another driver, as nvidia-smi reports it."""
    return lambda node: node.healthy_nvidia_smi(GPU_LINES.replace("550.54.15", version))


DRIVER_ADVISORY_CASES = [
    CheckCase("without bulletins or branches it is not requested", exit=PASSED_EXIT, ok=True, detail="not requested"),
    CheckCase(
        "a driver on a branch past its end of life, open to every bulletin, is a warning by default",
        args=BULLETIN_ARGS,
        exit=PASSED_EXIT,
        ok=True,
        starts="warning: driver 550.54.15: branch R550 is past its end of life, NVIDIA no longer patches it "
        "(patched: R580, R595, R610, R615, R620)",
        says=(
            "bulletin 5747 (CVE-2025-33219, CVE-2025-33220): never fixed on R550, "
            "fixed in 535.288.01 / 570.211.01 / 580.126.09 / 590.48.01",
            "bulletin 5861 (CVE-2026-47572, ",
            "CVE-2026-47601 and 101 more)",
            "preflight.driverAdvisories to refuse",
        ),
        report={"driverAdvisories": {"branch": "R550", "branchPatched": False, "openBulletins": ["5747", "5821", "5861"]}},
    ),
    CheckCase(
        "the same driver fails where the group refuses driver advisories",
        args=(*BULLETIN_ARGS, "--refuse-driver-advisories"),
        exit=FAILED_EXIT,
        ok=False,
        starts="driver 550.54.15: branch R550 is past its end of life",
        ends="upgrade the driver (preflight.driverAdvisories is refuse)",
    ),
    CheckCase(
        "a patched branch below its fix names the release of its own branch",
        driver("580.126.09"),
        BULLETIN_ARGS,
        ok=True,
        says=("bulletin 5821 (", "fixed in 580.159.03 on this branch", "bulletin 5861 (", "fixed in 580.178.04 on this branch"),
        never=("past its end of life", "5747"),
        report={"driverAdvisories": {"branch": "R580", "branchPatched": True, "openBulletins": ["5821", "5861"]}},
    ),
    CheckCase(
        "a driver with every fix on a patched branch passes plainly",
        driver("580.178.04"),
        BULLETIN_ARGS,
        ok=True,
        detail="driver 580.178.04 on branch R580, a branch NVIDIA patches: open to none of NVIDIA's 3 bulletin(s)",
    ),
    CheckCase(
        "a branch newer than the lifecycle table is not past its end",
        driver("625.10.02"),
        BULLETIN_ARGS,
        ok=True,
        detail="driver 625.10.02 on branch R625, a branch NVIDIA patches: open to none of NVIDIA's 3 bulletin(s)",
    ),
    CheckCase(
        "with the driver unknown and refused, the machine fails",
        lambda node: node.drop_command("nvidia-smi"),
        (*BULLETIN_ARGS, "--refuse-driver-advisories"),
        ok=False,
        starts="driver version unknown (see the driver check)",
        report={"driverAdvisories": {"branch": None, "branchPatched": None, "openBulletins": []}},
    ),
]


@pytest.mark.parametrize("case", DRIVER_ADVISORY_CASES, ids=[c.name for c in DRIVER_ADVISORY_CASES])
def test_the_driver_advisories_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "driver-advisories")
