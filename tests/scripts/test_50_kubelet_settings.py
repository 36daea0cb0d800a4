"""Kubelet's settings as 50-kubelet-settings.sh reads them: its version, asked once, and the
settings under which a running pod can lose its GPUs (the systemd cgroup driver, the CPU manager's
static policy), as preflight reports them from kubelet's own files: the EKS kubelet config is
upstream's (fixtures/README.md), the kubeadm one is what the fake machines carry."""

from __future__ import annotations

from .machines import CONTAINERD_2, containerd, containerd_2
from .preflight_node import FIXTURES, FakeNode, fakehost

EKS_UNIT = "[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/kubelet-config.json\n"


def test_an_eks_json_config_says_cgroupfs(node: FakeNode) -> None:
    node.file("etc/kubernetes/kubelet/kubelet-config.json", (FIXTURES / "eks-al2-kubelet-config.json").read_text())
    node.file("etc/systemd/system/kubelet.service", EKS_UNIT)
    assert node.preflight().report["kubelet"] == {"cgroupDriver": "cgroupfs", "cpuManagerPolicy": "none"}


def test_a_kubeadm_config_says_systemd(node: FakeNode) -> None:
    node.file("var/lib/kubelet/config.yaml", fakehost.KUBELET_CONFIG)
    assert node.preflight().report["kubelet"] == {"cgroupDriver": "systemd", "cpuManagerPolicy": "none"}


def test_a_static_cpu_manager_from_the_config_or_a_flag_that_beats_it(node: FakeNode) -> None:
    node.file("var/lib/kubelet/config.yaml", fakehost.KUBELET_CONFIG + "cpuManagerPolicy: static\n")
    assert node.preflight().report["kubelet"]["cpuManagerPolicy"] == "static"
    flags = (
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --cpu-manager-policy=none"\n'
    )
    node.file("var/lib/kubelet/kubeadm-flags.env", flags)
    assert node.preflight().report["kubelet"]["cpuManagerPolicy"] == "none", "the config file beat the flag"


def test_kubelets_defaults_when_its_files_say_nothing(node: FakeNode) -> None:
    # The healthy node has kubeadm's flags file (the CRI endpoint) and no config file.
    assert node.preflight().report["kubelet"] == {"cgroupDriver": "cgroupfs", "cpuManagerPolicy": "none"}


def test_nothing_is_reported_when_no_kubelet_settings_are_found(node: FakeNode) -> None:
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    assert node.preflight().report["kubelet"] == {"cgroupDriver": None, "cpuManagerPolicy": None}


def test_kubelet_is_asked_its_version_once(node: FakeNode) -> None:
    """The CDI and the feature-gate checks both need it; one `kubelet --version` serves both."""
    containerd(node, CONTAINERD_2, containerd_2())
    calls = node.base / "kubelet-calls"
    node.command("kubelet", f'echo "$*" >> {calls}\necho "Kubernetes v1.30.2"')
    assert node.preflight("--require-cdi").check("cdi")["ok"] is True
    assert calls.read_text().splitlines() == ["--version"], calls.read_text()
