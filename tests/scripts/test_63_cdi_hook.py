"""The CDI hook program (63-cdi-hook.sh), under --require-cdi: the plugin's CDI specs run hooks
(update-ldcache, create-symlinks, ...) as the program at NVIDIA_CDI_HOOK_PATH, on the host, when a
container starts (k8s-device-plugin api/config/v1/consts.go DefaultNvidiaCTKPath;
nvidia-container-toolkit internal/discover/hooks.go); --cdi-hook-path says where (the group's
devicePlugin.cdiHookPath)."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import CONTAINERD_2, containerd, containerd_2
from .preflight_node import FAILED_EXIT, FakeNode

NVIDIA_CTK = ("--require-cdi", "--cdi-hook-path", "/usr/bin/nvidia-ctk")
OPERATOR_HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"


def containerd_2_then(*steps):
    """containerd 2 (CDI on, the nvidia runtime added), then steps."""
    return lambda node: [containerd(node, CONTAINERD_2, containerd_2()), *(step(node) for step in steps)]


def operator_hook(node: FakeNode) -> None:
    node.file(OPERATOR_HOOK, "#!/bin/bash\nexit 0\n").chmod(0o755)


CASES = [
    CheckCase(
        "the hook program on the machine passes",
        containerd_2_then(),
        NVIDIA_CTK,
        ok=True,
        says=("CDI hooks run /usr/bin/nvidia-ctk",),
    ),
    CheckCase(
        "a hook program that cannot run fails",
        containerd_2_then(lambda node: (node.root / "usr/bin/nvidia-ctk").chmod(0o644)),
        NVIDIA_CTK,
        ok=False,
        says=("as /usr/bin/nvidia-ctk, which is not an executable file",),
    ),
    CheckCase(
        # Where the GPU Operator installs the toolkit (NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go,
        # DefaultNvidiaCDIHookPath).
        "a hook program elsewhere is checked where the group says",
        containerd_2_then(operator_hook),
        ("--require-cdi", "--cdi-hook-path", OPERATOR_HOOK),
        ok=True,
        says=(f"CDI hooks run {OPERATOR_HOOK}",),
    ),
    CheckCase(
        # By hand, as the runbook runs it: upstream's default /usr/bin/nvidia-ctk.
        "without a hook path the plugin's default is checked",
        containerd_2_then(lambda node: node.remove("usr/bin/nvidia-ctk")),
        ("--require-cdi",),
        ok=False,
        says=("run their hooks as /usr/bin/nvidia-ctk",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_hook_program(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "cdi")


def test_a_missing_hook_program_fails_naming_the_path_and_where_nvidia_ctk_is(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2())
    node.remove("usr/bin/nvidia-ctk")
    result = node.preflight(*NVIDIA_CTK)
    cdi = result.check("cdi")
    assert result.returncode == FAILED_EXIT and cdi["ok"] is False, cdi
    assert "the device plugin's CDI specs run their hooks as /usr/bin/nvidia-ctk, which is not on this machine" in cdi["detail"]
    assert f"nvidia-ctk is at {node.bin}/nvidia-ctk: set devicePlugin.cdiHookPath to it" in cdi["detail"], cdi


def test_a_hook_program_this_user_cannot_see_is_not_called_missing(open_node: FakeNode) -> None:
    """As another user a directory it may not search hides the program: say so, not "missing"."""
    containerd(open_node, CONTAINERD_2, containerd_2())
    (open_node.root / "usr/bin").chmod(0o700)
    cdi = open_node.preflight(*NVIDIA_CTK, env={"USER": "nobody"}, uid=65534).check("cdi")
    assert cdi["ok"] is False, cdi
    assert "cannot tell whether /usr/bin/nvidia-ctk can run: /usr/bin may not be read or searched by this user" in cdi["detail"]
    assert "not on this machine" not in cdi["detail"], cdi
