"""--require-cdi (gpuAccess: cdi): kubelet and the runtime must pass the plugin's CDI devices on
to a tenant's pod. containerd configs are upstream files (fixtures/README.md names each); the
nvidia runtime tables appended to them are what `nvidia-ctk runtime configure` adds, and what
`containerd config dump` then shows."""

from __future__ import annotations

import pytest

from .preflight_node import FIXTURES, FakeNode, heredoc

PASSED_EXIT = 0
FAILED_EXIT = 1

# `containerd --version` prints the binary, its package, version and revision
# (containerd's cmd/containerd/command: "%s %s %s %s").
CONTAINERD_2 = "containerd github.com/containerd/containerd/v2 v2.0.5 fb4c30d4ede3531652d86197bf3fc9515e5276d9"
CONTAINERD_17 = "containerd github.com/containerd/containerd v1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da"
NVIDIA_V3 = """
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]
  runtime_type = 'io.containerd.runc.v2'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]
  BinaryName = '/usr/bin/nvidia-container-runtime'
"""
NVIDIA_V2 = """
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
BinaryName = "/usr/bin/nvidia-container-runtime"
"""


def containerd(node: FakeNode, version: str, dump: str) -> None:
    answers = f'  --version) echo "{version}" ;;\n  "config dump")\n{heredoc(dump)}\n;;\n  *) exit 1 ;;'
    node.command("containerd", f'case "$*" in\n{answers}\nesac')


def containerd_2(enable_cdi: str | None = "true") -> str:
    config = (FIXTURES / "containerd-2.0-config-v3.toml").read_text()
    assert "    enable_cdi = true\n" in config, "the fixture no longer sets enable_cdi"
    if enable_cdi != "true":  # a variant: CDI turned off, or the line gone
        config = config.replace("    enable_cdi = true\n", "" if enable_cdi is None else f"    enable_cdi = {enable_cdi}\n")
    return config + NVIDIA_V3


def containerd_17(enable_cdi: bool) -> str:
    config = (FIXTURES / "containerd-1.7-config.toml").read_text()
    if enable_cdi:  # a variant: what the CDI instructions for 1.7 add
        config = config.replace(
            '[plugins."io.containerd.grpc.v1.cri"]\n', '[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n'
        )
    return config + NVIDIA_V2


@pytest.mark.parametrize(("dump", "why"), [(containerd_2(), "enable_cdi true"), (containerd_2(None), "enable_cdi unset")])
def test_containerd_2_resolves_cdi_devices_unless_turned_off(node: FakeNode, dump: str, why: str) -> None:
    containerd(node, CONTAINERD_2, dump)
    result = node.preflight("--require-cdi")
    cdi = result.check("cdi")
    assert cdi["ok"] is True, f"{why}: {cdi}\n{result.stderr}"
    assert "containerd (containerd v2.0.5) resolves CDI devices" in cdi["detail"], cdi
    assert result.returncode == PASSED_EXIT, result.stderr


def test_containerd_2_with_cdi_turned_off_fails_with_the_fix(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2("false"))
    result = node.preflight("--require-cdi")
    cdi = result.check("cdi")
    assert result.returncode == FAILED_EXIT and cdi["ok"] is False, cdi
    assert "has CDI turned off (enable_cdi = false; read containerd config dump)" in cdi["detail"], cdi
    assert "set enable_cdi = true under [plugins.'io.containerd.cri.v1.runtime']" in cdi["detail"], cdi


def test_containerd_17_without_enable_cdi_fails_with_the_fix(node: FakeNode) -> None:
    containerd(node, CONTAINERD_17, containerd_17(enable_cdi=False))
    result = node.preflight("--require-cdi")
    cdi = result.check("cdi")
    assert result.returncode == FAILED_EXIT and cdi["ok"] is False, cdi
    assert "containerd 1.x needs enable_cdi = true and none is set" in cdi["detail"], cdi
    assert 'set enable_cdi = true under [plugins."io.containerd.grpc.v1.cri"]' in cdi["detail"], cdi
    assert "restart containerd" in cdi["detail"], cdi


def test_containerd_17_with_enable_cdi_passes(node: FakeNode) -> None:
    containerd(node, CONTAINERD_17, containerd_17(enable_cdi=True))
    result = node.preflight("--require-cdi")
    assert result.check("cdi")["ok"] is True, result.check("cdi")
    assert result.returncode == PASSED_EXIT, result.stderr


def test_a_kubelet_before_1_29_passes_no_cdi_devices(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2())
    node.kubelet("v1.28.9")
    cdi = node.preflight("--require-cdi").check("cdi")
    assert cdi["ok"] is False, cdi
    assert "kubelet v1.28.9 passes no CDI devices" in cdi["detail"] and "upgrade kubelet to 1.29" in cdi["detail"], cdi


def test_docker_behind_cri_dockerd_cannot_take_the_cdi_path(node: FakeNode) -> None:
    node.command("dockerd", "exit 0")
    node.file("etc/docker/daemon.json", (FIXTURES / "docker-daemon-nvidia-ctk-default.json").read_text())
    cdi = node.preflight("--require-cdi", runtime="docker").check("cdi")
    assert cdi["ok"] is False, cdi
    assert "cri-dockerd passes no CDI devices" in cdi["detail"] and "gpuAccess defaultRuntime" in cdi["detail"], cdi


def test_without_require_cdi_the_check_is_not_requested(node: FakeNode) -> None:
    containerd(node, CONTAINERD_17, containerd_17(enable_cdi=False))
    result = node.preflight()
    assert result.check("cdi") == {"name": "cdi", "ok": True, "detail": "not requested"}, result.check("cdi")


def test_kubelet_is_asked_its_version_once(node: FakeNode) -> None:
    """The CDI and the feature-gate checks both need it; one `kubelet --version` serves both."""
    containerd(node, CONTAINERD_2, containerd_2())
    calls = node.base / "kubelet-calls"
    node.command("kubelet", f'echo "$*" >> {calls}\necho "Kubernetes v1.30.2"')
    assert node.preflight("--require-cdi").check("cdi")["ok"] is True
    assert calls.read_text().splitlines() == ["--version"], calls.read_text()


# --------------------------------------------------------------------------- the CDI hook program
#
# The plugin's CDI specs run hooks (update-ldcache, create-symlinks, ...) as the program at
# NVIDIA_CDI_HOOK_PATH, on the host, when a container starts (k8s-device-plugin
# api/config/v1/consts.go DefaultNvidiaCTKPath; nvidia-container-toolkit internal/discover/hooks.go).


def test_the_hook_program_on_the_machine_passes(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2())
    cdi = node.preflight("--require-cdi", "--cdi-hook-path", "/usr/bin/nvidia-ctk").check("cdi")
    assert cdi["ok"] is True, cdi
    assert "CDI hooks run /usr/bin/nvidia-ctk" in cdi["detail"], cdi


def test_a_missing_hook_program_fails_naming_the_path_and_where_nvidia_ctk_is(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2())
    node.remove("usr/bin/nvidia-ctk")
    result = node.preflight("--require-cdi", "--cdi-hook-path", "/usr/bin/nvidia-ctk")
    cdi = result.check("cdi")
    assert result.returncode == FAILED_EXIT and cdi["ok"] is False, cdi
    assert "the device plugin's CDI specs run their hooks as /usr/bin/nvidia-ctk, which is not on this machine" in cdi["detail"]
    assert f"nvidia-ctk is at {node.bin}/nvidia-ctk: set devicePlugin.cdiHookPath to it" in cdi["detail"], cdi


def test_a_hook_program_that_cannot_run_fails(node: FakeNode) -> None:
    containerd(node, CONTAINERD_2, containerd_2())
    (node.root / "usr/bin/nvidia-ctk").chmod(0o644)
    cdi = node.preflight("--require-cdi", "--cdi-hook-path", "/usr/bin/nvidia-ctk").check("cdi")
    assert cdi["ok"] is False, cdi
    assert "as /usr/bin/nvidia-ctk, which is not an executable file" in cdi["detail"], cdi


def test_a_hook_program_elsewhere_is_checked_where_the_group_says(node: FakeNode) -> None:
    """Where the GPU Operator installs the toolkit (NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go,
    DefaultNvidiaCDIHookPath)."""
    containerd(node, CONTAINERD_2, containerd_2())
    hook = node.file("usr/local/nvidia/toolkit/nvidia-cdi-hook", "#!/bin/bash\nexit 0\n")
    hook.chmod(0o755)
    cdi = node.preflight("--require-cdi", "--cdi-hook-path", "/usr/local/nvidia/toolkit/nvidia-cdi-hook").check("cdi")
    assert cdi["ok"] is True and "CDI hooks run /usr/local/nvidia/toolkit/nvidia-cdi-hook" in cdi["detail"], cdi


def test_without_a_hook_path_the_plugins_default_is_checked(node: FakeNode) -> None:
    """By hand, as the runbook runs it: upstream's default /usr/bin/nvidia-ctk."""
    containerd(node, CONTAINERD_2, containerd_2())
    node.remove("usr/bin/nvidia-ctk")
    cdi = node.preflight("--require-cdi").check("cdi")
    assert cdi["ok"] is False and "run their hooks as /usr/bin/nvidia-ctk" in cdi["detail"], cdi


@pytest.mark.parametrize("value", ["usr/bin/nvidia-ctk", ""])
def test_a_hook_path_that_is_not_absolute_is_a_usage_error(node: FakeNode, value: str) -> None:
    result = node.preflight("--require-cdi", "--cdi-hook-path", value)
    assert result.returncode == 2, result.stderr
    assert "--cdi-hook-path wants an absolute path" in result.check("usage")["detail"], result.report


def test_a_hook_program_this_user_cannot_see_is_not_called_missing(open_node: FakeNode) -> None:
    """As another user a directory it may not search hides the program: say so, not "missing"."""
    containerd(open_node, CONTAINERD_2, containerd_2())
    (open_node.root / "usr/bin").chmod(0o700)
    cdi = open_node.preflight("--require-cdi", "--cdi-hook-path", "/usr/bin/nvidia-ctk", env={"USER": "nobody"}, uid=65534)
    cdi = cdi.check("cdi")
    assert cdi["ok"] is False, cdi
    assert "cannot tell whether /usr/bin/nvidia-ctk can run: /usr/bin may not be read or searched by this user" in cdi["detail"]
    assert "not on this machine" not in cdi["detail"], cdi
