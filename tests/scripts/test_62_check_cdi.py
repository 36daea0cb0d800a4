"""The cdi check (62-check-cdi.sh), --require-cdi (gpuAccess: cdi): kubelet and the runtime must
pass the plugin's CDI devices on to a tenant's pod. containerd configs are upstream files
(fixtures/README.md names each); the nvidia runtime tables appended to them are what
`nvidia-ctk runtime configure` adds, and what `containerd config dump` then shows (machines.py)."""

from __future__ import annotations

import pytest

from .machines import CONTAINERD_2, CONTAINERD_17, containerd, containerd_2, containerd_17, containerd_17_cdi_on
from .preflight_node import FAILED_EXIT, FIXTURES, PASSED_EXIT, FakeNode


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


@pytest.mark.parametrize("version", ["v1.7.0", "v1.7.1", "v1.6.33"])
def test_containerd_before_1_7_2_reads_no_cdi_devices_from_the_cri(node: FakeNode, version: str) -> None:
    containerd_17_cdi_on(node, version)
    cdi = node.preflight("--require-cdi").check("cdi")
    assert cdi["ok"] is False, cdi
    assert f"containerd {version} reads no CDI devices from the CRI (from 1.7.2 on)" in cdi["detail"], cdi
    assert "upgrade containerd to 1.7.2 or later" in cdi["detail"], cdi


def test_containerd_1_7_2_with_cdi_on_passes(node: FakeNode) -> None:
    containerd_17_cdi_on(node, "v1.7.2")
    assert node.preflight("--require-cdi").check("cdi")["ok"] is True
