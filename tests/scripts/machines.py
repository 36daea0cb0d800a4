"""Machines that differ from the healthy FakeNode in the files real machines carry: docker-ce with
cri-dockerd, k3s, and containerd binaries answering `--version` and `config dump`. Fixtures are
upstream files (fixtures/README.md names each source); the nvidia runtime tables appended to them
are what `nvidia-ctk runtime configure` adds, and what `containerd config dump` then shows."""

from __future__ import annotations

from .preflight_node import CDI_SPEC, FIXTURES, FakeNode, fakehost, heredoc

CRI_DOCKERD_FLAGS = (
    'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock'
    ' --pod-infra-container-image=registry.k8s.io/pause:3.9"\n'
)
K3S_CONFIG = "var/lib/rancher/k3s/agent/etc/containerd/config.toml"
RKE2_CONFIG = "var/lib/rancher/rke2/agent/etc/containerd/config.toml"

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


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def docker_ce_machine(node: FakeNode, daemon_json: str) -> FakeNode:
    """docker-ce + cri-dockerd: containerd.io is installed (binary, config with CRI off,
    its socket), dockerd serves the containers, kubelet talks to cri-dockerd."""
    node.file("etc/containerd/config.toml", fixture("docker-ce-containerd.toml"))
    node.remove("etc/containerd/conf.d")
    dump = "disabled_plugins = ['io.containerd.grpc.v1.cri']"
    node.command("containerd", f'[ "$*" = "config dump" ] || exit 1\necho "{dump}"')
    node.command("dockerd", "exit 0")
    node.file("etc/docker/daemon.json", daemon_json)
    node.unix_socket("run/containerd/containerd.sock")
    node.unix_socket("var/run/cri-dockerd.sock")
    node.file("var/lib/kubelet/kubeadm-flags.env", CRI_DOCKERD_FLAGS)
    return node


def k3s_machine(node: FakeNode, config: str) -> FakeNode:
    """k3s: no containerd and no kubelet binary on PATH, its own containerd config and socket."""
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    node.command("k3s", 'echo "k3s version v1.31.4+k3s1 (a5ef2a0b)"')
    node.file(K3S_CONFIG, config)
    node.file(K3S_CONFIG + ".tmpl", '{{ template "base" . }}\n')
    node.unix_socket("run/k3s/containerd/containerd.sock")
    return node


def containerd(node: FakeNode, version: str, dump: str) -> None:
    """containerd answering `--version` with version and `config dump` with dump."""
    answers = f'  --version) echo "{version}" ;;\n  "config dump")\n{heredoc(dump)}\n;;\n  *) exit 1 ;;'
    node.command("containerd", f'case "$*" in\n{answers}\nesac')


def containerd_2(enable_cdi: str | None = "true") -> str:
    """containerd 2.0's config as its dump shows it, the nvidia runtime added (runc stays the default)."""
    config = fixture("containerd-2.0-config-v3.toml")
    assert "    enable_cdi = true\n" in config, "the fixture no longer sets enable_cdi"
    if enable_cdi != "true":  # a variant: CDI turned off, or the line gone
        config = config.replace("    enable_cdi = true\n", "" if enable_cdi is None else f"    enable_cdi = {enable_cdi}\n")
    return config + NVIDIA_V3


def containerd_17(enable_cdi: bool) -> str:
    """containerd 1.7's config as its dump shows it, the nvidia runtime added."""
    config = fixture("containerd-1.7-config.toml")
    if enable_cdi:  # a variant: what the CDI instructions for 1.7 add
        config = config.replace(
            '[plugins."io.containerd.grpc.v1.cri"]\n', '[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n'
        )
    return config + NVIDIA_V2


def containerd_17_cdi_on(node: FakeNode, version: str) -> None:
    """containerd `version` whose files set enable_cdi = true (the CDI instructions for 1.7), as its dump shows."""
    containerd(node, f"containerd github.com/containerd/containerd {version} 05044ec0", containerd_17(enable_cdi=True))


def runc_default(node: FakeNode) -> None:
    """containerd 2 with the nvidia runtime added and runc the default."""
    containerd(node, CONTAINERD_2, containerd_2())


# ------------------------------------------------------------- the nvidia runtime's entry

# Where the toolkit's packages install the runtime; what `nvidia-ctk runtime configure` names for
# containerd and CRI-O (cmd/nvidia-ctk/runtime/configure/configure.go, defaultNVIDIARuntimeExpecutablePath).
NVIDIA_RUNTIME = "/usr/bin/nvidia-container-runtime"


def kubelet_systemd(node: FakeNode) -> None:
    """kubeadm's kubelet config with cgroupDriver: systemd, as the fake machines carry it."""
    node.file("var/lib/kubelet/config.yaml", fakehost.KUBELET_CONFIG)


def nvidia_dropin(systemd_cgroup: bool = False, binary: str = NVIDIA_RUNTIME) -> str:
    """The drop-in nvidia-ctk writes (fakehost.containerd_nvidia_dropin), with SystemdCgroup = true when runc's
    entry has it (nvidia-ctk copies runc's options) and BinaryName = binary."""
    text = fakehost.containerd_nvidia_dropin(systemd_cgroup)
    return text.replace(f'BinaryName = "{NVIDIA_RUNTIME}"', f'BinaryName = "{binary}"')


# What nvidia-ctk before 1.20.0 dropped in when runc's entry had options but no runtime_type (a config
# that sets only [...runtimes.runc.options] SystemdCgroup = true): it copied runc's table as it was, so the
# nvidia runtime had no runtime_type either (nvidia-container-toolkit issue 1956; from 1.20.0
# AddRuntimeWithOptions in pkg/config/engine/containerd/config.go fills in io.containerd.runc.v2).
NVIDIA_DROPIN_BEFORE_1_20 = nvidia_dropin(systemd_cgroup=True).replace('  runtime_type = "io.containerd.runc.v2"\n', "")


def containerd_dropin(text: str):
    """containerd whose nvidia drop-in is text, as its config dump shows it (the healthy node's dump is the drop-in)."""

    def arrange(node: FakeNode) -> None:
        node.file("etc/containerd/conf.d/99-nvidia.toml", text)
        node.command("containerd", f'[ "$*" = "config dump" ] || exit 1\n{heredoc(text)}')

    return arrange


def k3s_v2_systemd_cgroup() -> str:
    """k3s's generated config (fixtures/k3s-v2-config.toml) as k3s writes it since it passes its SystemdCgroup
    setting to the nvidia runtimes too (k3s-io/k3s pull request 8470): SystemdCgroup = true beside BinaryName."""
    config = fixture("k3s-v2-config.toml")
    for binary in (NVIDIA_RUNTIME, NVIDIA_RUNTIME + "-experimental"):
        line = f'  BinaryName = "{binary}"\n'
        assert line in config, f"the fixture no longer has {line!r}"
        config = config.replace(line, line + "  SystemdCgroup = true\n")
    return config


# ------------------------------------------------- the GPU Operator's container toolkit

OPERATOR_RUNTIME = f"{fakehost.OPERATOR_TOOLKIT_ROOT}/nvidia-container-runtime"
OPERATOR_CTK = f"{fakehost.OPERATOR_TOOLKIT_ROOT}/nvidia-ctk"


def operator_toolkit_machine(node: FakeNode, version: str = fakehost.HEALTHY_TOOLKIT, config: str | None = None) -> FakeNode:
    """The toolkit as the GPU Operator's toolkit container installs it (fakehost.MachineSpec(toolkit_install="operator")):
    nvidia-ctk and nvidia-container-runtime of `version` under /usr/local/nvidia/toolkit, its config.toml beside them
    (`config`, default fakehost.operator_toolkit_config()), containerd's nvidia entry pointing there; the packages'
    toolkit gone (no nvidia-ctk on PATH, nothing in /usr/bin or /etc/nvidia-container-runtime)."""
    node.drop_command("nvidia-ctk")
    node.remove(NVIDIA_RUNTIME)
    node.remove("etc/nvidia-container-runtime")
    operator_toolkit(node, version, config)
    return node


def operator_toolkit(node: FakeNode, version: str, config: str | None = None) -> None:
    """The GPU Operator's toolkit of `version` under /usr/local/nvidia/toolkit, and containerd's entry pointing there;
    whatever else the node has stays."""
    root = fakehost.OPERATOR_TOOLKIT_ROOT.lstrip("/")
    node.file(f"{root}/nvidia-ctk", fakehost.nvidia_ctk(version, CDI_SPEC)).chmod(0o755)
    runtime = node.file(f"{root}/nvidia-container-runtime", f'#!/bin/bash\necho "NVIDIA Container Runtime version {version}"\n')
    runtime.chmod(0o755)
    node.file(fakehost.OPERATOR_TOOLKIT_CONFIG, config if config is not None else fakehost.operator_toolkit_config())
    containerd_dropin(fakehost.containerd_nvidia_dropin(binary=OPERATOR_RUNTIME))(node)


# ------------------------------------------ the GPU Operator's container toolkit in NRI mode


def nri_machine(node: FakeNode, version: str = fakehost.NRI_TOOLKIT, socket: bool = True, spec: bool = True) -> FakeNode:
    """The toolkit as the GPU Operator's toolkit container leaves it with cdi.nriPluginEnabled (fakehost.nri_machine):
    the toolkit of `version` under /usr/local/nvidia/toolkit in CDI mode, containerd with no nvidia runtime, its NRI
    and CDI on (fakehost.containerd_nri_dropin) and runc its default, the NRI socket (`socket`) and the management
    device's CDI spec (`spec`); the packages' toolkit gone."""
    operator_toolkit_machine(node, version, fakehost.operator_toolkit_config(mode="cdi"))
    node.remove("etc/containerd/conf.d/99-nvidia.toml")
    dropin = fakehost.containerd_nri_dropin()
    node.file("etc/containerd/conf.d/10-nri.toml", dropin)
    node.command("containerd", f'[ "$*" = "config dump" ] || exit 1\n{heredoc(dropin)}')
    node.crictl(fakehost.crictl_info(default_runtime="runc", nvidia=False, enable_cdi=True))
    if socket:
        node.unix_socket("var/run/nri/nri.sock")
    if spec:
        node.file(
            "var/run/cdi/management.nvidia.com-gpu.yaml",
            CDI_SPEC.replace("kind: nvidia.com/gpu", "kind: management.nvidia.com/gpu"),
        )
    return node
