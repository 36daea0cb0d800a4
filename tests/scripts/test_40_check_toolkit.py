"""The container-toolkit check (40-check-toolkit.sh): nvidia-ctk's version judged against NVIDIA's
toolkit advisories as the component passes them (gpu_nodes/advisories.py), those accepted named as
such, and with --min-toolkit at least that version."""

from __future__ import annotations

import json

import pytest

from gpu_nodes.advisories import TOOLKIT_ADVISORIES

from .check_cases import CheckCase, run_case
from .machines import OPERATOR_CTK, OPERATOR_RUNTIME, docker_ce_machine, operator_toolkit, operator_toolkit_machine
from .preflight_node import FAILED_EXIT, NVIDIA_RUNTIME, PASSED_EXIT, TOOLKIT_CONFIG, USAGE_EXIT, FakeNode, fakehost

# The first line nvidia-ctk --version prints, as in NVIDIA/nvidia-container-toolkit issue 50.
CTK_1_12 = 'echo "NVIDIA Container Toolkit CLI version 1.12.0"; echo "commit: 62bd015475656ef795cb0d59cc4030a6bd4a9526"'
# Every advisory of the table, as preflight_arguments passes them.
ADVISORIES = tuple(word for a in TOOLKIT_ADVISORIES for word in ("--toolkit-advisory", a.script_argument()))
CVE_2026_24260 = next(a for a in TOOLKIT_ADVISORIES if a.cve == "CVE-2026-24260")
# The toolkit the healthy node's containerd runs, as the check names it: its packages' nvidia-ctk beside the runtime.
PACKAGED = "/usr/bin/nvidia-ctk (the toolkit containerd's nvidia runtime runs, BinaryName /usr/bin/nvidia-container-runtime)"


def runtime_without_ctk(node: FakeNode) -> None:
    node.drop_command("nvidia-ctk")
    node.command("nvidia-container-runtime", "exit 0")


def no_toolkit(node: FakeNode) -> None:
    """No toolkit: neither its nvidia-ctk nor the runtime containerd's entry names."""
    node.drop_command("nvidia-ctk")
    node.remove(NVIDIA_RUNTIME)


def toolkit(version: str):
    """nvidia-ctk of version, the healthy machine's config.toml kept."""
    return lambda node: node.toolkit(version, TOOLKIT_CONFIG)


def but_accepted(cve: str) -> tuple[str, ...]:
    """ADVISORIES with cve marked as accepted (preflight.acceptToolkitAdvisories)."""
    args = list(ADVISORIES)
    for i, word in enumerate(args):
        if word.startswith(f"{cve}="):
            args[i - 1] = "--accepted-toolkit-advisory"
    return tuple(args)


CASES = [
    CheckCase(
        "the version is reported",
        toolkit("1.19.1"),
        exit=PASSED_EXIT,
        ok=True,
        detail=f"{PACKAGED}: NVIDIA Container Toolkit CLI version 1.19.1",
    ),
    CheckCase(
        "a missing toolkit fails",
        no_toolkit,
        exit=FAILED_EXIT,
        ok=False,
        starts="neither nvidia-ctk nor nvidia-container-runtime is on PATH, and no nvidia runtime entry names one (the "
        "nvidia runtime's entry names /usr/bin/nvidia-container-runtime, not an executable file here",
    ),
    CheckCase(
        "a toolkit that fixes every advisory passes",
        toolkit("1.19.1"),
        ADVISORIES,
        ok=True,
        detail=f"{PACKAGED}: NVIDIA Container Toolkit CLI version 1.19.1",
    ),
    CheckCase(
        "the last 1.18 release is open to CVE-2026-24260",
        toolkit("1.18.2"),
        ADVISORIES,
        exit=FAILED_EXIT,
        ok=False,
        detail=f"{PACKAGED}: NVIDIA Container Toolkit CLI version 1.18.2: open to NVIDIA's advisories CVE-2026-24260 "
        "(fixed in 1.19.1); upgrade the NVIDIA Container Toolkit to 1.19.1 or later",
    ),
    CheckCase(
        "an old toolkit names every advisory it is open to",
        lambda node: node.command("nvidia-ctk", CTK_1_12),
        ADVISORIES,
        exit=FAILED_EXIT,
        ok=False,
        says=tuple(f"{a.cve} (fixed in {a.fixed[0]})" for a in TOOLKIT_ADVISORIES),
        ends="upgrade the NVIDIA Container Toolkit to 1.19.1 or later",
    ),
    CheckCase(
        "an accepted advisory passes, named",
        toolkit("1.18.2"),
        but_accepted("CVE-2026-24260"),
        exit=PASSED_EXIT,
        ok=True,
        detail=f"{PACKAGED}: NVIDIA Container Toolkit CLI version 1.18.2; open to CVE-2026-24260, accepted as a risk by "
        "preflight.acceptToolkitAdvisories",
    ),
    CheckCase(
        "an accepted advisory does not clear the others",
        toolkit("1.17.7"),
        but_accepted("CVE-2026-24260"),
        ok=False,
        says=("open to NVIDIA's advisories CVE-2025-23266 (fixed in 1.17.8); CVE-2025-23267 (fixed in 1.17.8)",),
        never=("CVE-2026-24260 (fixed",),
    ),
    CheckCase(
        "a fix backported to the machine's release line clears it",
        toolkit("1.18.3"),
        ("--toolkit-advisory", "CVE-2026-24260=1.18.3,1.19.1"),
        ok=True,
        detail=f"{PACKAGED}: NVIDIA Container Toolkit CLI version 1.18.3",
    ),
    CheckCase(
        "a toolkit at the minimum passes",
        toolkit("1.19.1"),
        ("--min-toolkit", "1.19.1", *ADVISORIES),
        ok=True,
        detail=f"{PACKAGED}: NVIDIA Container Toolkit CLI version 1.19.1 (>= 1.19.1)",
    ),
    CheckCase(
        "a higher minimum names no CVE for a patched toolkit",
        toolkit("1.19.1"),
        ("--min-toolkit", "1.20.0", *ADVISORIES),
        ok=False,
        says=("1.19.1 < 1.20.0; upgrade",),
        never=("CVE",),
    ),
    CheckCase(
        "a toolkit of unknown version cannot be cleared of an advisory",
        runtime_without_ctk,
        ADVISORIES,
        ok=False,
        says=("its version is unknown, so NVIDIA's advisories cannot clear it: install nvidia-ctk 1.19.1 or later",),
    ),
    CheckCase(
        "a toolkit of unknown version fails a minimum",
        runtime_without_ctk,
        ("--min-toolkit", "1.17.8"),
        ok=False,
        says=("its version is unknown: install nvidia-ctk 1.17.8 or later",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_container_toolkit_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "container-toolkit")


# ------------------------------------------- the toolkit's config.toml, read for other checks

NOBODY = 65534


def test_a_config_toml_that_may_not_be_read_is_named_by_every_check_that_reads_it(open_node: FakeNode) -> None:
    """toolkit_config serves the CUDA and the cdi-generation checks (the toolkit's mode) and the
    isolation check (its hardening): none takes a file it may not read for a missing one, the
    toolkit's defaults."""
    (open_node.root / "etc/nvidia-container-runtime/config.toml").chmod(0o600)
    # An image for a newer CUDA than the driver's (12.4): the CUDA check then asks the toolkit's mode.
    result = open_node.preflight("--min-cuda", "13.0", env={"USER": "nobody"}, uid=NOBODY)
    unreadable = "cannot read /etc/nvidia-container-runtime/config.toml as user nobody"
    assert unreadable in result.check("cuda")["detail"], result.check("cuda")
    assert "the toolkit's mode is unknown" in result.check("cuda")["detail"], result.check("cuda")
    isolation = result.check("isolation")
    assert isolation["ok"] is False and unreadable in isolation["detail"], isolation
    generation = result.check("cdi-generation")
    assert generation["ok"] is False and unreadable in generation["detail"], generation


def test_a_malformed_advisory_is_a_usage_error(node: FakeNode) -> None:
    result = node.preflight("--toolkit-advisory", "CVE-2026-24260")
    assert result.returncode == USAGE_EXIT, result.stderr
    assert "--toolkit-advisory wants CVE-ID=FIXED" in result.check("usage")["detail"], result.check("usage")


def test_the_fix_of_cve_2026_24260_is_in_the_1_19_line_only() -> None:
    """NVIDIA's June 2026 bulletin: nothing of the 1.18 line has the fix (the rows the script judges)."""
    assert CVE_2026_24260.fixed == ("1.19.1",), CVE_2026_24260


# ------------------------------------------- the toolkit the runtime runs: the GPU Operator's

OPERATOR_CONFIG = fakehost.OPERATOR_TOOLKIT_CONFIG
OPERATOR = f"{OPERATOR_CTK} (the toolkit containerd's nvidia runtime runs, BinaryName {OPERATOR_RUNTIME})"


def test_an_operator_installed_toolkit_is_found_where_the_runtime_points_and_judged(node: FakeNode) -> None:
    """Nothing on PATH: the GPU Operator's toolkit container installed the toolkit under /usr/local/nvidia/toolkit and
    pointed containerd's nvidia entry there. That one is judged, and the machine passes, its config read."""
    operator_toolkit_machine(node)
    result = node.preflight(*ADVISORIES)
    toolkit = result.check("container-toolkit")
    assert toolkit == {
        "name": "container-toolkit",
        "ok": True,
        "detail": f"{OPERATOR}: NVIDIA Container Toolkit CLI version 1.19.1",
    }, toolkit
    assert result.returncode == PASSED_EXIT, result.stderr
    report = result.report["toolkit"]
    assert (report["path"], report["runtimeBinary"], report["config"], report["version"]) == (
        OPERATOR_CTK,
        OPERATOR_RUNTIME,
        OPERATOR_CONFIG,
        "1.19.1",
    ), report
    # Its nvidia-ctk built the CDI spec the toolkit's jit-cdi mode needs.
    assert result.report["toolkit"]["cdiGeneration"] == "ok", result.report["toolkit"]


def test_with_two_toolkits_the_one_the_runtime_runs_is_judged(node: FakeNode) -> None:
    """A patched toolkit of the packages on PATH, and the Operator's, open to an advisory, in use: the Operator's
    fails, named; the other is not the one that runs the pods."""
    operator_toolkit(node, "1.18.2")
    result = node.preflight(*ADVISORIES)
    toolkit = result.check("container-toolkit")
    assert toolkit["ok"] is False, toolkit
    assert toolkit["detail"].startswith(f"{OPERATOR}: NVIDIA Container Toolkit CLI version 1.18.2: open to NVIDIA's "), toolkit
    assert result.report["toolkit"]["path"] == OPERATOR_CTK, result.report["toolkit"]


def test_an_old_toolkit_left_on_path_does_not_fail_the_operators(node: FakeNode) -> None:
    """The reverse: an old packaged toolkit stays on PATH (and in /etc), the Operator's patched one runs the pods."""
    node.nvidia_ctk("1.17.7")
    operator_toolkit(node, "1.19.1")
    result = node.preflight(*ADVISORIES)
    assert result.check("container-toolkit")["ok"] is True, result.check("container-toolkit")
    assert result.report["toolkit"]["version"] == "1.19.1", result.report["toolkit"]


def test_every_check_that_reads_the_toolkits_config_reads_the_operators(node: FakeNode) -> None:
    """/etc's config.toml (legacy mode, not hardened) is not the one the Operator's runtime reads: its own, beside it,
    is (hardened, cdi mode); the CUDA, isolation and dev-char checks read that one."""
    operator_toolkit_machine(node, config=fakehost.operator_toolkit_config("cdi", hardened=True))
    node.file("etc/nvidia-container-runtime/config.toml", fakehost.toolkit_config("legacy"))
    result = node.preflight("--isolation", "strict", "--min-cuda", "12.5")
    isolation = result.check("isolation")
    assert isolation["ok"] is True and f"read {OPERATOR_CONFIG}" in isolation["detail"], isolation
    cuda = result.check("cuda")
    assert f"cdi mode ({OPERATOR_CONFIG} mode cdi)" in cuda["detail"], cuda
    assert result.report["toolkit"]["mode"] == "cdi", result.report["toolkit"]


def test_a_cdi_group_is_told_where_the_operators_nvidia_ctk_is(node: FakeNode) -> None:
    """The device plugin's CDI hooks run /usr/bin/nvidia-ctk by default, which an Operator-installed machine lacks."""
    operator_toolkit_machine(node)
    result = node.preflight("--require-cdi")
    cdi = result.check("cdi")
    assert cdi["ok"] is False, cdi
    assert f"nvidia-ctk is at {OPERATOR_CTK}: set devicePlugin.cdiHookPath to it" in cdi["detail"], cdi


def test_docker_runtimes_nvidia_path_names_the_toolkit(node: FakeNode) -> None:
    """dockerd's nvidia runtime (daemon.json runtimes.nvidia.path) pointing at the Operator's toolkit."""
    daemon = json.dumps({"runtimes": {"nvidia": {"path": OPERATOR_RUNTIME, "args": []}}})
    docker_ce_machine(operator_toolkit_machine(node), daemon)
    result = node.preflight(*ADVISORIES, runtime="docker")
    toolkit = result.check("container-toolkit")
    assert toolkit["ok"] is True, toolkit
    judged = f"{OPERATOR_CTK} (the toolkit docker's nvidia runtime runs, path {OPERATOR_RUNTIME})"
    assert toolkit["detail"].startswith(judged), toolkit


def test_hardening_the_operators_toolkit_is_its_toolkit_env_not_an_edit(node: FakeNode) -> None:
    """The GPU Operator's toolkit container writes its config.toml at each start from its flags (toolkit.go): strict
    isolation on an Operator-installed toolkit names its environment variables, not `nvidia-ctk config --in-place`,
    which edits /etc's."""
    operator_toolkit_machine(node)
    isolation = node.preflight("--isolation", "strict").check("isolation")
    assert isolation["ok"] is False, isolation
    assert f"the GPU Operator's toolkit container writes {OPERATOR_CONFIG} at each start: set " in isolation["detail"], isolation
    assert "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false" in isolation["detail"], isolation
    assert "nvidia-ctk config --in-place" not in isolation["detail"], isolation
