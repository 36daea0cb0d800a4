"""The cuda check (35-check-cuda.sh), --min-cuda: whether the verification's CUDA image starts and
runs on the machine, by NVIDIA's rule: the driver's CUDA version (nvidia-smi's header), the
toolkit's mode (its version and config.toml `mode`), and, in legacy mode, the driver branches the
image's NVIDIA_REQUIRE_CUDA lists (35-check-cuda.sh cites the upstream files). Headers are real
nvidia-smi output or laid out as driver R550 prints it (fakehost.smi_table); the config.toml is the
toolkit's generated default (fixtures/README.md names each source)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from .preflight_node import FIXTURES, GPU_LINES, PASSED_EXIT, FakeNode, fakehost

CONFIG = (FIXTURES / "nvidia-container-toolkit-config.toml").read_text()
PART = Path(__file__).resolve().parents[2] / "gpu_nodes/scripts/preflight/35-check-cuda.sh"


def config(mode: str | None = "auto", disable_require: bool = False) -> str:
    """The toolkit's generated config.toml with `mode` set to mode (None: the line removed)."""
    assert '\nmode = "auto"\n' in CONFIG and "\ndisable-require = false\n" in CONFIG, "the fixture changed"
    text = CONFIG.replace('\nmode = "auto"\n', "\n" if mode is None else f'\nmode = "{mode}"\n')
    return text.replace("\ndisable-require = false\n", "\ndisable-require = true\n") if disable_require else text


def nvidia_smi(node: FakeNode, fixture: str) -> None:
    """--query-gpu answers as before; plain `nvidia-smi` prints the recorded table."""
    node.healthy_nvidia_smi(GPU_LINES, (FIXTURES / fixture).read_text())


def driver(node: FakeNode, version: str, cuda: str) -> None:
    """nvidia-smi of a driver: its header laid out as R550 prints it, and the query lines."""
    lines = GPU_LINES.replace("550.54.15", version)
    node.healthy_nvidia_smi(lines, fakehost.smi_table(fakehost.MachineSpec(driver=version, cuda_version=cuda)))


@dataclass(frozen=True)
class Case:
    name: str
    toolkit: str
    config: str | None
    driver: tuple[str, str]  # driver version, CUDA version of its header
    image: str  # --min-cuda
    ok: bool
    says: tuple[str, ...]
    warning: bool = False
    extra: tuple[str, ...] = ()


R470 = ("470.256.02", "11.4")
R525 = ("525.147.05", "12.0")
R535 = ("535.183.01", "12.2")
R545 = ("545.29.06", "12.3")
R550 = ("550.127.05", "12.4")
R565 = ("565.57.01", "12.7")
R570 = ("570.124.06", "12.8")
R575 = ("575.57.08", "12.9")
R580 = ("580.95.05", "13.0")
R590 = ("590.48.01", "13.1")
R595 = ("595.71.05", "13.2")
CASES = [
    Case("newer driver, any mode", "1.17.8", config(), R570, "12.5", True, ("supports CUDA 12.8 >= 12.5",)),
    Case(
        "legacy (auto before 1.18), branch listed",
        "1.17.8",
        config(),
        R535,
        "12.5",
        True,
        ("legacy mode", "auto, legacy before toolkit 1.18.0", "lists the R535 branch", "minor-version compatibility"),
    ),
    Case("legacy, R550 listed for 12.5", "1.17.8", config("legacy"), R550, "12.5", True, ("lists the R550 branch",)),
    Case(
        "legacy, branch not listed",
        "1.17.8",
        config(),
        R545,
        "12.5",
        False,
        (
            'refuses to start it ("unsatisfied condition: cuda>=12.5"',
            "R470, R535, R550 branches",
            "one for CUDA 12.5 or later (555.42.02 or newer)",
            "verification.cudaImage",
        ),
    ),
    Case("legacy asked for on 1.18", "1.18.0", config("legacy"), R545, "12.5", False, ("legacy mode", "refuses to start it")),
    Case(
        "no config.toml: auto",
        "1.17.8",
        None,
        R545,
        "12.5",
        False,
        ("no /etc/nvidia-container-runtime/config.toml", "legacy mode"),
    ),
    Case("mode line removed: auto", "1.17.8", config(None), R545, "12.5", False, ("mode unset", "legacy mode")),
    Case(
        "jit-cdi (auto from 1.18)",
        "1.18.0",
        config(),
        R545,
        "12.5",
        True,
        ("jit-cdi mode", "auto, jit-cdi from toolkit 1.18.0", "checks no NVIDIA_REQUIRE_CUDA", "minor-version compatibility"),
    ),
    Case(
        "jit-cdi asked for on 1.17",
        "1.17.8",
        config("jit-cdi"),
        R545,
        "12.5",
        True,
        ("jit-cdi mode", "checks no NVIDIA_REQUIRE_CUDA"),
    ),
    Case(
        "mode as a TOML literal string",
        "1.17.8",
        config("legacy").replace('"legacy"', "'jit-cdi'"),
        R545,
        "12.5",
        True,
        ("jit-cdi mode",),
    ),
    Case("cdi mode", "1.17.8", config("cdi"), R545, "12.5", True, ("cdi mode", "checks no NVIDIA_REQUIRE_CUDA")),
    Case("disable-require", "1.17.8", config("legacy", disable_require=True), R545, "12.5", True, ("disable-require = true",)),
    Case(
        "CUDA 13 image, jit-cdi: forward compatibility only",
        "1.18.0",
        config(),
        R550,
        "13.0",
        True,
        ("checks no NVIDIA_REQUIRE_CUDA", "forward compatibility"),
        warning=True,
    ),
    Case(
        "CUDA 13 image, legacy, R550 listed",
        "1.17.8",
        config(),
        R550,
        "13.0",
        True,
        ("lists the R550 branch", "forward compatibility"),
        True,
    ),
    Case(
        "CUDA 13 image, legacy, R545 not listed",
        "1.17.8",
        config(),
        R545,
        "13.0",
        False,
        ("R535, R550, R565, R570, R575 branches",),
    ),
    Case(
        "image not in the table",
        "1.17.8",
        config(),
        R545,
        "12.7",
        True,
        ("which driver branches NVIDIA's CUDA 12.7 images list is not known",),
        True,
    ),
    Case(
        "CUDA 13.4 image, legacy: its images' branches are not in the table",
        "1.17.8",
        config(),
        R595,
        "13.4",
        True,
        ("which driver branches NVIDIA's CUDA 13.4 images list is not known",),
        True,
    ),
    Case("mode not the toolkit's", "1.17.8", config("nvml"), R545, "12.5", False, ("mode nvml is not a mode of the toolkit",)),
    Case(
        "gpuAccess cdi: no nvidia runtime involved",
        "1.17.8",
        config("legacy"),
        R545,
        "12.5",
        True,
        ("injects the group's CDI devices itself", "minor-version compatibility"),
        extra=("--require-cdi",),
    ),
]


# One case per row of CUDA_IMAGE_BRANCHES beyond those above, in legacy mode (toolkit 1.17.8, `auto`):
# a driver older than the image on a branch its NVIDIA_REQUIRE_CUDA lists starts it, one on a branch
# it does not list is refused, naming the branches and the first driver of the image's CUDA version
# (the release notes' Table 3). 13.2 drops R550, which 13.0 and 13.1 still list.
ROWS = [
    Case("11.8 lists R470", "1.17.8", config(), R470, "11.8", True, ("lists the R470 branch", "minor-version compatibility")),
    Case("12.1 lists R525", "1.17.8", config(), R525, "12.1", True, ("lists the R525 branch",)),
    Case("12.3 lists R525", "1.17.8", config(), R525, "12.3", True, ("lists the R525 branch",)),
    Case(
        "12.9 does not list R545",
        "1.17.8",
        config(),
        R545,
        "12.9",
        False,
        ("R535, R550, R560, R565, R570, R580 branches", "(575.51.03 or newer)"),
    ),
    Case("13.1 lists R580", "1.17.8", config(), R580, "13.1", True, ("lists the R580 branch", "minor-version compatibility")),
    Case(
        "13.1 does not list R575",
        "1.17.8",
        config(),
        R575,
        "13.1",
        False,
        ("R535, R550, R560, R565, R570, R580 branches", "(590.44.01 or newer)"),
    ),
    Case("13.2 lists R590", "1.17.8", config(), R590, "13.2", True, ("lists the R590 branch", "minor-version compatibility")),
    Case(
        "13.2 no longer lists R550",
        "1.17.8",
        config(),
        R550,
        "13.2",
        False,
        ("R535, R570, R580, R590 branches", "one for CUDA 13.2 or later (595.45.04 or newer)"),
    ),
    Case("13.3 lists R595", "1.17.8", config(), R595, "13.3", True, ("lists the R595 branch", "minor-version compatibility")),
    Case(
        "13.3 does not list R565",
        "1.17.8",
        config(),
        R565,
        "13.3",
        False,
        ("R535, R570, R580, R590, R595 branches", "(610.43.02 or newer)"),
    ),
]


@pytest.mark.parametrize("case", CASES + ROWS, ids=[c.name for c in CASES + ROWS])
def test_the_cuda_rule_nvidia_applies(node: FakeNode, case: Case) -> None:
    node.toolkit(case.toolkit, case.config)
    driver(node, *case.driver)
    result = node.preflight("--min-cuda", case.image, *case.extra)
    cuda = result.check("cuda")
    assert cuda["ok"] is case.ok, f"{case.name}: {cuda}"
    assert cuda["detail"].startswith("warning: ") is case.warning, f"{case.name}: {cuda}"
    for text in case.says:
        assert text in cuda["detail"], f"{case.name}: {text!r} not in {cuda['detail']!r}"
    assert result.report["cudaVersion"] == case.driver[1], result.report


def test_without_a_toolkit_version_the_mode_of_auto_is_unknown_and_only_warns(node: FakeNode) -> None:
    node.drop_command("nvidia-ctk")
    node.command("nvidia-container-runtime", "exit 0")
    node.file("etc/nvidia-container-runtime/config.toml", config())
    driver(node, *R545)
    cuda = node.preflight("--min-cuda", "12.5").check("cuda")
    assert cuda["ok"] is True and cuda["detail"].startswith("warning: "), cuda
    assert "the toolkit's mode is unknown" in cuda["detail"] and "no nvidia-ctk (the toolkit containerd's" in cuda["detail"], cuda


def test_nvidia_ctk_is_asked_its_version_once(node: FakeNode) -> None:
    """The CUDA and the toolkit checks both need it; one `nvidia-ctk --version` serves both."""
    calls = node.base / "ctk-calls"
    node.command("nvidia-ctk", f'echo "$*" >> {calls}\necho "NVIDIA Container Toolkit CLI version 1.17.8"')
    node.file("etc/nvidia-container-runtime/config.toml", config())
    driver(node, *R535)
    result = node.preflight("--min-cuda", "12.5")
    assert result.check("cuda")["ok"] is True and result.check("container-toolkit")["ok"] is True, result.stderr
    assert calls.read_text().splitlines() == ["--version"], calls.read_text()


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


def test_versions_compare_as_numbers(node: FakeNode) -> None:
    nvidia_smi(node, "nvidia-smi-a100-sxm4-570.txt")
    cuda = node.preflight("--min-cuda", "12.10").check("cuda")
    assert "supports CUDA up to 12.8" in cuda["detail"], f"12.8 taken for newer than 12.10: {cuda}"


def test_no_cuda_version_in_the_header_fails_when_one_is_needed(node: FakeNode) -> None:
    node.nvidia_smi(GPU_LINES)  # the query lines, whatever it is asked
    result = node.preflight("--min-cuda", "11.7")
    assert result.check("cuda")["ok"] is False and "names no CUDA Version" in result.check("cuda")["detail"], result.check("cuda")
    assert result.report["cudaVersion"] is None, result.report


def script_table(name: str) -> dict[str, str]:
    """A `declare -rA NAME=( [key]=value ... )` table of 35-check-cuda.sh, in its order."""
    found = re.search(rf"^declare -rA {name}=\(\n(.*?)\n\)$", PART.read_text(), re.S | re.M)
    assert found, f"{name} not in {PART}"
    return dict(re.findall(r'^\s*\[([0-9.]+)\]="?([^"\n]*)"?$', found[1], re.M))


def test_each_cuda_version_has_its_branches_and_its_first_driver_and_a_newer_one_needs_a_newer_driver():
    branches, first = script_table("CUDA_IMAGE_BRANCHES"), script_table("CUDA_FIRST_DRIVER")
    assert list(branches) == list(first), "the two tables name different CUDA versions"
    versions = [tuple(int(p) for p in v.split(".")) for v in branches]
    assert versions == sorted(versions), "CUDA versions out of order"
    drivers = [tuple(int(p) for p in d.split(".")) for d in first.values()]
    assert drivers == sorted(drivers) and len(set(drivers)) == len(drivers), first
    assert all(branches[v].split() for v in branches), branches
