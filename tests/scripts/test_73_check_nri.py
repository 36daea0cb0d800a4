"""The nri check (73-check-nri.sh), --toolkit nri (the group's containerToolkit: nri): a machine whose toolkit the GPU
Operator installed in NRI mode (cdi.nriPluginEnabled) has no nvidia runtime and is not refused for it; the runtime's NRI
socket, the management device's CDI spec and a toolkit whose NRI plugin serves other namespaces (1.20.0) are judged,
and the toolkit judged is the installer's. Without --toolkit nri such a machine fails the runtime check, which says
what it looks like and what to set."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import OPERATOR_CTK, nri_machine
from .preflight_node import FAILED_EXIT, PASSED_EXIT, FakeNode

NRI = ("--toolkit", "nri", "--require-cdi", "--cdi-hook-path", OPERATOR_CTK)

CASES = [
    CheckCase("not requested", args=(), ok=True, detail="not requested"),
    CheckCase(
        "the Operator's NRI mode passes",
        nri_machine,
        NRI,
        exit=PASSED_EXIT,
        ok=True,
        detail="the runtime's NRI socket /var/run/nri/nri.sock; the management device's CDI spec "
        "/var/run/cdi/management.nvidia.com-gpu.yaml; toolkit 1.20.0 at /usr/local/nvidia/toolkit/nvidia-ctk, whose NRI "
        "plugin serves NVIDIA's pods of the namespaces its installer lists",
    ),
    CheckCase(
        "no NRI socket fails with how to turn NRI on",
        lambda node: nri_machine(node, socket=False),
        NRI,
        exit=FAILED_EXIT,
        ok=False,
        says=("no NRI socket at /var/run/nri/nri.sock", "disable = false"),
    ),
    CheckCase(
        "no management spec fails",
        lambda node: nri_machine(node, spec=False),
        NRI,
        exit=FAILED_EXIT,
        ok=False,
        says=("no /var/run/cdi/management.nvidia.com-gpu.yaml",),
    ),
    CheckCase(
        "a 1.19 toolkit serves only its own namespace",
        lambda node: nri_machine(node, version="1.19.1"),
        NRI,
        exit=FAILED_EXIT,
        ok=False,
        says=("toolkit 1.19.1 at /usr/local/nvidia/toolkit/nvidia-ctk < 1.20.0", "only into pods of the toolkit's own namespace"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_nri(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "nri")


def test_in_nri_mode_the_runtime_passes_without_an_nvidia_entry_and_the_installers_toolkit_is_judged(node: FakeNode) -> None:
    result = nri_machine(node).preflight(*NRI)
    runtime, toolkit = result.check("runtime"), result.check("container-toolkit")
    assert runtime["ok"] and "as the toolkit's NRI mode leaves it" in runtime["detail"], runtime
    assert toolkit["ok"] and toolkit["detail"].startswith(f"{OPERATOR_CTK} (the toolkit the GPU Operator's installer put"), (
        toolkit
    )
    assert result.report["toolkit"]["path"] == OPERATOR_CTK and result.report["toolkit"]["version"] == "1.20.0"
    assert result.returncode == PASSED_EXIT, [c for c in result.report["checks"] if not c["ok"]]


def test_without_containertoolkit_nri_such_a_machine_is_recognised_and_named(node: FakeNode) -> None:
    runtime = nri_machine(node).preflight().check("runtime")
    assert runtime["ok"] is False, runtime
    assert "looks set up by the GPU Operator's toolkit in NRI mode" in runtime["detail"], runtime
    assert "give its group containerToolkit: nri (with gpuAccess: cdi)" in runtime["detail"], runtime


def test_a_toolkit_argument_it_does_not_know_is_a_usage_error(node: FakeNode) -> None:
    from .preflight_node import USAGE_EXIT

    result = node.preflight("--toolkit", "hook")
    assert result.returncode == USAGE_EXIT and "--toolkit wants runtime or nri" in result.check("usage")["detail"]
