"""The script's arguments (20-arguments.sh): a usage error runs no check, exits 2 and still prints
one valid report, its one check `usage` saying what was wrong."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from .preflight_node import USAGE_EXIT, FakeNode

NO_RUNTIME = {"name": None, "nvidiaDefault": False, "runtimeClassNeeded": False, "source": None, "certain": False}


@dataclass(frozen=True)
class Usage:
    name: str
    args: tuple[str, ...]
    detail: str
    # On the healthy node with --runtime containerd --expect-gpus 2 and --root; else the bare
    # script, no --root.
    prepared: bool = False
    env: dict[str, str] | None = None


CASES = [
    Usage("no arguments", (), "missing --runtime containerd|docker|cri-o|k3s|rke2|auto"),
    Usage("no --expect-gpus", ("--runtime", "containerd"), "missing --expect-gpus N"),
    Usage(
        "unknown runtime",
        ("--runtime", "podman", "--expect-gpus", "2"),
        "unknown runtime 'podman': want containerd, docker, cri-o, k3s, rke2 or auto",
    ),
    Usage(
        "--expect-gpus not a number",
        ("--runtime", "containerd", "--expect-gpus", "two"),
        "--expect-gpus wants a whole number, got 'two'",
    ),
    Usage("--expect-gpus without a value", ("--runtime", "containerd", "--expect-gpus"), "--expect-gpus needs a value"),
    Usage(
        "malformed --min-driver",
        ("--runtime", "containerd", "--expect-gpus", "2", "--min-driver", "latest"),
        "--min-driver wants a version like 535.104.05, got 'latest'",
    ),
    Usage("unknown argument", ("--runtime", "containerd", "--expect-gpus", "2", "--verbose"), "unknown argument: --verbose"),
    Usage(
        "--root not a directory",
        ("--runtime", "containerd", "--expect-gpus", "2", "--root", "/nonexistent/root"),
        "--root '/nonexistent/root' is not a directory",
    ),
    Usage("--help", ("--help",), "help requested: no checks were run"),
    Usage(
        "unknown --allocator", ("--allocator", "gpu-operator"), "--allocator wants devicePlugin or dra, got 'gpu-operator'", True
    ),
    Usage(
        "malformed --min-toolkit", ("--min-toolkit", "latest"), "--min-toolkit wants a version like 1.17.8, got 'latest'", True
    ),
    Usage(
        "--driver-advisory without its bulletin id",
        ("--driver-advisory", "CVE-2025-33219=580.126.09"),
        "--driver-advisory wants BULLETIN:CVE-ID[,CVE-ID...][,+N]=FIXED[,FIXED...] such as "
        "5747:CVE-2025-33219=580.126.09, got 'CVE-2025-33219=580.126.09'",
        True,
    ),
    Usage(
        "--patched-driver-branches with a branch name",
        ("--patched-driver-branches", "R580"),
        "--patched-driver-branches wants driver branches such as 580,595,620, got 'R580'",
        True,
    ),
    Usage("malformed --min-cuda", ("--min-cuda", "12"), "--min-cuda wants a CUDA version like 12.4, got '12'", True),
    Usage("unknown --isolation", ("--isolation", "paranoid"), "--isolation wants default or strict, got 'paranoid'", True),
    *(
        Usage(
            f"--cdi-hook-path {value!r} not absolute",
            ("--require-cdi", "--cdi-hook-path", value),
            f"--cdi-hook-path wants an absolute path like /usr/bin/nvidia-ctk, got '{value}'",
            True,
        )
        for value in ["usr/bin/nvidia-ctk", ""]
    ),
    Usage(
        "--mig-devices without a strategy",
        ("--mig-devices", "1g.10gb=7"),
        "--mig-devices needs --mig-strategy single or mixed",
        True,
    ),
    *(
        Usage(
            f"malformed --mig-devices {value!r}",
            ("--mig-strategy", "mixed", "--mig-devices", value),
            "--mig-devices wants PROFILE=COUNT[,PROFILE=COUNT...] such as 1g.10gb=7 or 1g.10gb=3,2g.20gb=2, each COUNT"
            f" 1 to 7 and each PROFILE a MIG profile (devicePlugin.migDevices), got '{value}'",
            True,
        )
        for value in ["1g.10gb", "1g.10gb=0", "1g.10gb=8", "big=1", "1g.10gb+xyz=1", "1g.10gb=3,", "", "1g.10gb=07"]
    ),
    Usage(
        "a profile twice in --mig-devices",
        ("--mig-strategy", "mixed", "--mig-devices", "1g.10gb=3,1g.10gb=2"),
        "--mig-devices names 1g.10gb twice: '1g.10gb=3,1g.10gb=2'",
        True,
    ),
    Usage(
        "several profiles under single",
        ("--mig-strategy", "single", "--mig-devices", "1g.10gb=3,2g.20gb=2"),
        "--mig-devices takes one profile with --mig-strategy single (the device plugin wants one MIG device type), "
        "got '1g.10gb=3,2g.20gb=2'",
        True,
    ),
    Usage(
        "bad PREFLIGHT_NVIDIA_SMI_TIMEOUT",
        (),
        "PREFLIGHT_NVIDIA_SMI_TIMEOUT wants a positive number of seconds, got 'soon'",
        True,
        {"PREFLIGHT_NVIDIA_SMI_TIMEOUT": "soon"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_usage_error_exits_2_with_valid_json(request: pytest.FixtureRequest, case: Usage) -> None:
    if case.prepared:
        result = request.getfixturevalue("node").preflight(*case.args, env=case.env)
    else:
        result = request.getfixturevalue("bare_node").run(*case.args, with_root=False)
    shown = f"{case.name}: {result.report}\nstderr:\n{result.stderr}"
    assert result.returncode == USAGE_EXIT, shown
    assert result.report["ok"] is False, shown
    assert result.report["checks"] == [{"name": "usage", "ok": False, "detail": case.detail}], shown
    assert result.report["runtime"] == NO_RUNTIME, shown
    assert case.detail in result.stderr, shown


def test_the_joined_parts_declare_each_name_once(bare_node: FakeNode) -> None:
    """The parts run as one script: a name two parts declare readonly is a bash error on every run."""
    result = bare_node.run("--help", with_root=False)
    assert "readonly variable" not in result.stderr, result.stderr
