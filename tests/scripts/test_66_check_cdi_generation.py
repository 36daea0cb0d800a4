"""The cdi-generation check (66-check-cdi-generation.sh): where the toolkit's mode needs a CDI spec
(jit-cdi builds one at each container start, cdi injects devices from one) or the group uses
gpuAccess: cdi (the device plugin builds one the same way), `nvidia-ctk cdi generate` must build
it on the machine, into the script's temporary directory. The fake nvidia-ctk answers as upstream
does (fakehost.nvidia_ctk: the spec shape of upstream's TestGenerateSpec, the error its CDI library
gives a device with no edits); 66-check-cdi-generation.sh cites the upstream files."""

from __future__ import annotations

from pathlib import Path

import pytest

from .check_cases import CheckCase, run_case
from .preflight_node import CDI_SPEC, FAILED_EXIT, PASSED_EXIT, FakeNode, fakehost

# The toolkit release from which auto means jit-cdi is 1.18.0 (internal/info/auto.go); 1.19.1 is
# the release the empty-device-edits failure was reported with.
JIT_CDI_TOOLKIT = "1.19.1"
UPSTREAM_ERROR = fakehost.CDI_EMPTY_DEVICE_ERROR
LEGACY_FIX = 'set mode = "legacy" under [nvidia-container-runtime] in /etc/nvidia-container-runtime/config.toml'
CONFIG_PATH = "etc/nvidia-container-runtime/config.toml"
AUTO = "/etc/nvidia-container-runtime/config.toml mode auto: auto"


def toolkit(version: str, mode: str = "auto", fails: bool = False):
    """nvidia-ctk of version, config.toml's mode, and `cdi generate` failing as upstream when fails."""

    def arrange(node: FakeNode) -> None:
        node.toolkit(version, fakehost.toolkit_config(mode))
        node.nvidia_ctk(version, generation_fails=fails)

    return arrange


def without_nvidia_ctk(node: FakeNode) -> None:
    node.file(CONFIG_PATH, fakehost.toolkit_config("jit-cdi"))
    node.drop_command("nvidia-ctk")
    node.command("nvidia-container-runtime", "exit 0")


def version_unknown(node: FakeNode) -> None:
    """nvidia-ctk whose --version fails: auto's mode is then unknown, and the generation is tried."""
    node.file(CONFIG_PATH, fakehost.toolkit_config())
    body = fakehost.nvidia_ctk(JIT_CDI_TOOLKIT, CDI_SPEC).removeprefix("#!/bin/bash\n")
    node.command("nvidia-ctk", f'[ "$1" = --version ] && exit 1\n{body}')


CASES = [
    CheckCase(
        "legacy mode is not tried",
        toolkit("1.17.8"),
        exit=PASSED_EXIT,
        ok=True,
        starts=f"not tried: the toolkit runs in legacy mode ({AUTO}, legacy before toolkit 1.18.0)",
        report={"toolkit.mode": "legacy", "toolkit.cdiGeneration": "not tried"},
    ),
    CheckCase(
        "jit-cdi (auto from 1.18.0) builds the spec",
        toolkit(JIT_CDI_TOOLKIT),
        exit=PASSED_EXIT,
        ok=True,
        says=(f"the toolkit's jit-cdi mode ({AUTO}, jit-cdi from toolkit 1.18.0)", "generate built one here, with 5 CDI devices"),
        report={"toolkit.mode": "jit-cdi", "toolkit.cdiGeneration": "ok"},
    ),
    CheckCase(
        "jit-cdi that cannot build its spec fails with the toolkit's error",
        toolkit(JIT_CDI_TOOLKIT, fails=True),
        exit=FAILED_EXIT,
        ok=False,
        says=(f"nvidia-ctk cdi generate failed (exit 1): {UPSTREAM_ERROR}", "fix or reinstall the NVIDIA driver", LEGACY_FIX),
        report={"toolkit.mode": "jit-cdi", "toolkit.cdiGeneration": "failed"},
    ),
    CheckCase(
        "cdi mode builds the spec",
        toolkit("1.17.8", "cdi"),
        ok=True,
        says=("the toolkit's cdi mode (/etc/nvidia-container-runtime/config.toml mode cdi)", "5 CDI devices"),
        report={"toolkit.mode": "cdi", "toolkit.cdiGeneration": "ok"},
    ),
    CheckCase(
        "csv mode is not tried",
        toolkit("1.17.8", "csv"),
        ok=True,
        starts="not tried: the toolkit runs in csv mode",
        report={"toolkit.mode": "csv", "toolkit.cdiGeneration": "not tried"},
    ),
    CheckCase(
        "gpuAccess cdi is tried in legacy mode and fails without the legacy fix",
        toolkit("1.17.8", "legacy", fails=True),
        ("--require-cdi",),
        ok=False,
        says=("gpuAccess: cdi", UPSTREAM_ERROR, "fix or reinstall the NVIDIA driver"),
        never=('mode = "legacy"',),
        report={"toolkit.mode": "legacy", "toolkit.cdiGeneration": "failed"},
    ),
    CheckCase(
        "gpuAccess cdi builds the spec in legacy mode",
        toolkit("1.17.8", "legacy"),
        ("--require-cdi",),
        ok=True,
        says=("gpuAccess: cdi", "5 CDI devices"),
        report={"toolkit.cdiGeneration": "ok"},
    ),
    CheckCase(
        "a mode the toolkit does not know fails",
        toolkit("1.17.8", "nvml"),
        ok=False,
        says=("mode nvml is not a mode of the toolkit", "refuses every GPU container"),
        report={"toolkit.mode": "invalid", "toolkit.cdiGeneration": "not tried"},
    ),
    CheckCase(
        "a toolkit of unknown version is tried",
        version_unknown,
        ok=True,
        says=("the toolkit's mode is unknown", "auto, and the toolkit version is unknown", "5 CDI devices"),
        report={"toolkit.mode": None, "toolkit.cdiGeneration": "ok"},
    ),
    CheckCase(
        # The container-toolkit check passes on nvidia-container-runtime alone; a mode that needs a
        # spec with nothing to build it is not known to work.
        "without nvidia-ctk the generation could not be tried",
        without_nvidia_ctk,
        ok=False,
        starts="could not be tried: no nvidia-ctk (the toolkit containerd's nvidia runtime runs, BinaryName "
        "/usr/bin/nvidia-container-runtime)",
        report={"toolkit.mode": "jit-cdi", "toolkit.cdiGeneration": "not tried"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_cdi_generation_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "cdi-generation")


def test_a_generation_that_hangs_fails_at_nvidia_smis_time(node: FakeNode) -> None:
    """It asks the driver through NVML, as nvidia-smi does: a wedged driver hangs it."""
    node.file(CONFIG_PATH, fakehost.toolkit_config("jit-cdi"))
    node.command("nvidia-ctk", f'[ "$1" = cdi ] && exec sleep 30\necho "NVIDIA Container Toolkit CLI version {JIT_CDI_TOOLKIT}"')
    result = node.preflight(env={"PREFLIGHT_NVIDIA_SMI_TIMEOUT": "1"})
    check = result.check("cdi-generation")
    assert check["ok"] is False and "nvidia-ctk cdi generate did not finish within 1s" in check["detail"], check
    assert result.report["toolkit"]["cdiGeneration"] == "failed", result.report["toolkit"]
    assert result.seconds < 15, result.seconds


def test_the_spec_is_written_only_to_the_scripts_temporary_directory(node: FakeNode) -> None:
    """Nothing the host keeps: the output goes under TMPDIR, and the EXIT trap removes it."""
    toolkit(JIT_CDI_TOOLKIT)(node)
    outputs = node.base / "outputs"
    body = fakehost.nvidia_ctk(JIT_CDI_TOOLKIT, CDI_SPEC).removeprefix("#!/bin/bash\n")
    node.command("nvidia-ctk", f'[ "$1" = cdi ] && echo "${{@: -1}}" >>{outputs}\n{body}')
    before = sorted(node.base.iterdir())
    result = node.preflight()
    assert result.check("cdi-generation")["ok"] is True, result.check("cdi-generation")
    (output,) = outputs.read_text().splitlines()
    assert output.startswith(f"--output={node.base}/") and output.endswith(".yaml"), output
    assert not Path(output.removeprefix("--output=")).exists(), output
    assert sorted(p for p in node.base.iterdir() if p != outputs) == before, "the temporary directory stayed"
    assert not [p for p in node.root.rglob("*") if "cdi" in p.name], "a CDI spec under the machine's root"


def test_the_generation_reads_the_driver_root_the_runtime_reads(node: FakeNode) -> None:
    """jit-cdi builds its spec from nvidia-container-cli.root (internal/modifier/cdi.go, WithDriverRoot)."""
    calls = node.base / "calls"
    text = fakehost.toolkit_config("jit-cdi").replace('#root = "/run/nvidia/driver"', 'root = "/run/nvidia/driver"')
    node.file(CONFIG_PATH, text)
    body = fakehost.nvidia_ctk(JIT_CDI_TOOLKIT, CDI_SPEC).removeprefix("#!/bin/bash\n")
    node.command("nvidia-ctk", f'[ "$1" = cdi ] && echo "$*" >>{calls}\n{body}')
    assert node.preflight().check("cdi-generation")["ok"] is True
    assert " --driver-root=/run/nvidia/driver" in calls.read_text(), calls.read_text()
