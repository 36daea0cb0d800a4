"""The kubelet-feature-gates check (80-check-kubelet-feature-gates.sh): the DevicePlugins gate was
removed in Kubernetes 1.28 and kubelet refuses to start with it set, wherever kubelet reads its
flags and config from (50-kubelet-settings.sh): flags files, units and drop-ins, the running
kubelet's command line, YAML and JSON config files and their drop-in directories, k3s's
kubelet-arg. The EKS config is upstream's (fixtures/README.md)."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import fixture, k3s_machine
from .preflight_node import FAILED_EXIT, PASSED_EXIT, FakeNode

GATE_IN_CONFIG_YAML = "DevicePlugins gate set in /var/lib/kubelet/config.yaml (DevicePlugins=true)"


def files(*pairs: tuple[str, str]):
    """The node with these files (path, text) added or replaced."""
    return lambda node: [node.file(path, text) for path, text in pairs]


def old_kubelet_with_gate(node: FakeNode) -> None:
    node.kubelet("v1.25.16")
    node.file("etc/default/kubelet", "KUBELET_EXTRA_ARGS=--feature-gates=DevicePlugins=true\n")


def unknown_kubelet_with_gate(node: FakeNode) -> None:
    node.drop_command("kubelet")
    node.file(
        "etc/systemd/system/kubelet.service.d/20-gpu.conf",
        '[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--feature-gates=DevicePlugins=false"\n',
    )


def running_kubelets(node: FakeNode) -> None:
    node.kubelet_process(4242, "/usr/bin/kubelet", "--feature-gates", "DevicePlugins=true,Other=false")
    node.kubelet_process(4243, "/usr/bin/not-kubelet", "--feature-gates=DevicePlugins=true")


def eks_config_with_gate(node: FakeNode) -> None:
    eks = fixture("eks-al2-kubelet-config.json")
    assert '"NodeSwap": false' in eks
    node.file(
        "etc/kubernetes/kubelet/kubelet-config.json",
        eks.replace('"NodeSwap": false', '"NodeSwap": false,\n    "DevicePlugins": true'),
    )
    # EKS AL2 names its config in the kubelet unit itself, not in a drop-in.
    node.file(
        "etc/systemd/system/kubelet.service",
        "[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/kubelet-config.json"
        " --kubeconfig /var/lib/kubelet/kubeconfig\n",
    )


def k3s_kubelet_arg(node: FakeNode) -> None:
    # k3s and RKE2 take kubelet flags as kubelet-arg in their own config file.
    k3s_machine(node, fixture("k3s-v2-config.toml"))
    node.file("etc/rancher/k3s/config.yaml", 'kubelet-arg:\n  - "feature-gates=DevicePlugins=true"\n')


CASES = [
    CheckCase(
        "gate on kubelet 1.30 fails",
        files(("var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--feature-gates=DevicePlugins=true"\n')),
        exit=FAILED_EXIT,
        ok=False,
        starts="DevicePlugins gate set in /var/lib/kubelet/kubeadm-flags.env (DevicePlugins=true): kubelet v1.30.2 (>= 1.28)",
    ),
    CheckCase(
        "gate on kubelet 1.25 passes with a warning",
        old_kubelet_with_gate,
        exit=PASSED_EXIT,
        ok=True,
        starts="warning: DevicePlugins gate set in /etc/default/kubelet (DevicePlugins=true)",
    ),
    CheckCase(
        "gate with an unknown kubelet version fails",
        unknown_kubelet_with_gate,
        exit=FAILED_EXIT,
        ok=False,
        says=("kubelet version is unknown (kubelet is not on PATH)",),
    ),
    CheckCase(
        "gate in the running kubelet's command line",
        running_kubelets,
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in the command line of kubelet (pid 4242) (DevicePlugins=true)",
    ),
    CheckCase(
        "gate in the kubelet config file named by --config",
        files(
            ("var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--config=/etc/kubernetes/kubelet.yaml"\n'),
            ("etc/kubernetes/kubelet.yaml", "kind: KubeletConfiguration\nfeatureGates:\n  DevicePlugins: true\n"),
        ),
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in /etc/kubernetes/kubelet.yaml (DevicePlugins=true)",
    ),
    CheckCase(
        "a commented-out gate is ignored",
        files(("etc/default/kubelet", "# KUBELET_EXTRA_ARGS=--feature-gates=DevicePlugins=true\n")),
        exit=PASSED_EXIT,
        starts="no DevicePlugins feature gate (kubelet v1.30.2; read: ",
    ),
    CheckCase(
        "gate in EKS's JSON kubelet config",
        eks_config_with_gate,
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in /etc/kubernetes/kubelet/kubelet-config.json (DevicePlugins=true)",
    ),
    CheckCase(
        "EKS's JSON kubelet config without the gate passes",
        files(
            ("etc/kubernetes/kubelet/kubelet-config.json", fixture("eks-al2-kubelet-config.json")),
            (
                "etc/systemd/system/kubelet.service",
                "[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/kubelet-config.json\n",
            ),
        ),
        exit=PASSED_EXIT,
        says=("/etc/kubernetes/kubelet/kubelet-config.json",),
    ),
    CheckCase(
        "gate in one-line JSON",
        files(
            (
                "var/lib/kubelet/config.yaml",
                '{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","featureGates":'
                '{"RotateKubeletServerCertificate":true,"DevicePlugins":false}}\n',
            )
        ),
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in /var/lib/kubelet/config.yaml (DevicePlugins=false)",
    ),
    CheckCase(
        'gate as the quoted YAML key "DevicePlugins"',
        files(("var/lib/kubelet/config.yaml", 'kind: KubeletConfiguration\nfeatureGates:\n  "DevicePlugins": true\n')),
        exit=FAILED_EXIT,
        starts=GATE_IN_CONFIG_YAML,
    ),
    CheckCase(
        "gate as the quoted YAML key 'DevicePlugins'",
        files(("var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\nfeatureGates:\n  'DevicePlugins': true\n")),
        exit=FAILED_EXIT,
        starts=GATE_IN_CONFIG_YAML,
    ),
    CheckCase(
        "gate in a kubelet.conf.d drop-in",
        files(
            (
                "etc/kubernetes/kubelet.conf.d/20-gpu.conf",
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  DevicePlugins: true\n",
            )
        ),
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in /etc/kubernetes/kubelet.conf.d/20-gpu.conf (DevicePlugins=true)",
    ),
    CheckCase(
        "gate in a drop-in of the directory --config-dir names",
        files(
            (
                "var/lib/kubelet/kubeadm-flags.env",
                'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock'
                ' --config-dir=/etc/kubelet.d"\n',
            ),
            ("etc/kubelet.d/50-gates.conf", "kind: KubeletConfiguration\nfeatureGates:\n  DevicePlugins: true\n"),
            # kubelet reads only *.conf there
            ("etc/kubelet.d/50-gates.conf.bak", "featureGates:\n  DevicePlugins: false\n"),
        ),
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in /etc/kubelet.d/50-gates.conf (DevicePlugins=true):",
    ),
    CheckCase(
        "another gate whose name ends in DevicePlugins is not the gate",
        files(("var/lib/kubelet/config.yaml", "featureGates:\n  KubeletTracing: true\n  MyDevicePlugins: true\n")),
        exit=PASSED_EXIT,
    ),
    CheckCase(
        "gate in k3s's kubelet-arg",
        k3s_kubelet_arg,
        runtime="k3s",
        exit=FAILED_EXIT,
        starts="DevicePlugins gate set in /etc/rancher/k3s/config.yaml (DevicePlugins=true)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_kubelet_feature_gates_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "kubelet-feature-gates")
