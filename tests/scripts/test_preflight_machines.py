"""preflight.sh against the machines of issue 9: files in the formats real machines carry.

Runtime detection on docker + cri-dockerd and k3s/RKE2 machines, the removed DevicePlugins
gate in JSON / quoted YAML / drop-in kubelet configs, containerd's file fallback with its
import and merge rules, and --require-default-runtime. Fixtures are upstream files
(fixtures/README.md names each source).
"""

from __future__ import annotations

import pytest

from .preflight_node import FIXTURES, NVIDIA_DROPIN, FakeNode

HEALTHY_EXIT = 0
FAILED_EXIT = 1
USAGE_EXIT = 2

CRI_DOCKERD_FLAGS = (
    'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/cri-dockerd.sock'
    ' --pod-infra-container-image=registry.k8s.io/pause:3.9"\n'
)
DAEMON_NVIDIA_NOT_DEFAULT = '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}\n'
DAEMON_WITHOUT_NVIDIA = '{"log-driver": "json-file", "exec-opts": ["native.cgroupdriver=systemd"]}\n'
K3S_CONFIG = "var/lib/rancher/k3s/agent/etc/containerd/config.toml"
RKE2_CONFIG = "var/lib/rancher/rke2/agent/etc/containerd/config.toml"


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


# ------------------------------------------------- item 5: --runtime auto


def test_auto_on_docker_cri_dockerd_machine_follows_kubelet_endpoint(node: FakeNode) -> None:
    docker_ce_machine(node, DAEMON_NVIDIA_NOT_DEFAULT)
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.report["runtime"]["name"] == "docker", runtime
    assert runtime["detail"].startswith(
        "auto chose docker (kubelet --container-runtime-endpoint unix:///var/run/cri-dockerd.sock"
        " in /var/lib/kubelet/kubeadm-flags.env); "
    ), runtime
    assert runtime["ok"] is True
    assert result.returncode == HEALTHY_EXIT, result.stderr


def test_auto_on_docker_machine_without_nvidia_advises_docker_not_containerd(node: FakeNode) -> None:
    docker_ce_machine(node, DAEMON_WITHOUT_NVIDIA)
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert "nvidia-ctk runtime configure --runtime=docker" in runtime["detail"], runtime
    assert "--runtime=containerd" not in runtime["detail"], runtime


def test_auto_without_endpoint_flag_picks_the_cri_socket_that_exists(node: FakeNode) -> None:
    # No flag anywhere (kubelet's default endpoint is containerd's, but cri-dockerd's socket
    # listening says who serves CRI): cri-dockerd wins over the containerd socket docker-ce leaves.
    docker_ce_machine(node, DAEMON_NVIDIA_NOT_DEFAULT)
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.report["runtime"]["name"] == "docker", runtime
    assert runtime["detail"].startswith("auto chose docker (CRI socket /var/run/cri-dockerd.sock); "), runtime


def test_auto_reads_container_runtime_endpoint_from_kubelet_config(node: FakeNode) -> None:
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    node.file(
        "var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        'containerRuntimeEndpoint: "unix:///var/run/crio/crio.sock"\n',
    )
    node.file(
        "etc/crio/crio.conf.d/99-nvidia.toml",
        '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n',
    )
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.report["runtime"]["name"] == "cri-o", runtime
    assert runtime["detail"].startswith(
        "auto chose cri-o (kubelet containerRuntimeEndpoint unix:///var/run/crio/crio.sock in /var/lib/kubelet/config.yaml); "
    ), runtime


def test_auto_endpoint_of_running_kubelet_wins_over_files(node: FakeNode) -> None:
    docker_ce_machine(node, DAEMON_NVIDIA_NOT_DEFAULT)
    node.file(
        "var/lib/kubelet/kubeadm-flags.env",
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n',
    )
    node.kubelet_process(777, "/usr/bin/kubelet", "--container-runtime-endpoint", "unix:///run/cri-dockerd.sock")
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.report["runtime"]["name"] == "docker", runtime
    where = "kubelet --container-runtime-endpoint unix:///run/cri-dockerd.sock in the command line of kubelet (pid 777)"
    assert where in runtime["detail"], runtime


# ------------------------------------------- item 6: the removed DevicePlugins gate


def test_gate_in_eks_json_kubelet_config_is_found(node: FakeNode) -> None:
    eks = fixture("eks-al2-kubelet-config.json")
    assert '"NodeSwap": false' in eks
    with_gate = eks.replace('"NodeSwap": false', '"NodeSwap": false,\n    "DevicePlugins": true')
    node.file("etc/kubernetes/kubelet/kubelet-config.json", with_gate)
    # EKS AL2 names its config in the kubelet unit itself, not in a drop-in.
    node.file(
        "etc/systemd/system/kubelet.service",
        "[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/kubelet-config.json"
        " --kubeconfig /var/lib/kubelet/kubeconfig\n",
    )
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    expected = "DevicePlugins gate set in /etc/kubernetes/kubelet/kubelet-config.json (DevicePlugins=true)"
    assert gates["detail"].startswith(expected), gates


def test_eks_json_kubelet_config_without_the_gate_passes(node: FakeNode) -> None:
    node.file("etc/kubernetes/kubelet/kubelet-config.json", fixture("eks-al2-kubelet-config.json"))
    unit = "[Service]\nExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet/kubelet-config.json\n"
    node.file("etc/systemd/system/kubelet.service", unit)
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert "/etc/kubernetes/kubelet/kubelet-config.json" in gates["detail"], gates


def test_gate_in_one_line_json_is_found(node: FakeNode) -> None:
    node.file(
        "var/lib/kubelet/config.yaml",
        '{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","featureGates":{"RotateKubeletServerCertificate":true,"DevicePlugins":false}}\n',
    )
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["detail"].startswith("DevicePlugins gate set in /var/lib/kubelet/config.yaml (DevicePlugins=false)"), gates


@pytest.mark.parametrize("key", ['"DevicePlugins"', "'DevicePlugins'"])
def test_gate_as_quoted_yaml_key_is_found(node: FakeNode, key: str) -> None:
    node.file("var/lib/kubelet/config.yaml", f"kind: KubeletConfiguration\nfeatureGates:\n  {key}: true\n")
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["detail"].startswith("DevicePlugins gate set in /var/lib/kubelet/config.yaml (DevicePlugins=true)"), gates


def test_gate_in_kubelet_conf_d_dropin_is_found(node: FakeNode) -> None:
    node.file(
        "etc/kubernetes/kubelet.conf.d/20-gpu.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  DevicePlugins: true\n",
    )
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    expected = "DevicePlugins gate set in /etc/kubernetes/kubelet.conf.d/20-gpu.conf (DevicePlugins=true)"
    assert gates["detail"].startswith(expected), gates


def test_gate_in_dropin_of_the_dir_named_by_config_dir_is_found(node: FakeNode) -> None:
    node.file(
        "var/lib/kubelet/kubeadm-flags.env",
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock'
        ' --config-dir=/etc/kubelet.d"\n',
    )
    node.file("etc/kubelet.d/50-gates.conf", "kind: KubeletConfiguration\nfeatureGates:\n  DevicePlugins: true\n")
    # kubelet reads only *.conf there
    node.file("etc/kubelet.d/50-gates.conf.bak", "featureGates:\n  DevicePlugins: false\n")
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["detail"].startswith("DevicePlugins gate set in /etc/kubelet.d/50-gates.conf (DevicePlugins=true):"), gates


def test_other_gate_whose_name_ends_in_device_plugins_is_not_the_gate(node: FakeNode) -> None:
    node.file("var/lib/kubelet/config.yaml", "featureGates:\n  KubeletTracing: true\n  MyDevicePlugins: true\n")
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.check("kubelet-feature-gates")


# --------------------------------------------- item 8: containerd file fallback


def _fallback(node: FakeNode) -> FakeNode:
    """containerd without a working `config dump`: the files are all there is."""
    node.drop_command("containerd")
    return node


def test_dump_verdict_is_certain(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.report["runtime"]["source"] == "config-dump"
    assert result.report["runtime"]["certain"] is True


def test_version_2_config_without_imports_never_reads_conf_d(node: FakeNode) -> None:
    _fallback(node)
    node.file(
        "etc/containerd/config.toml",
        "# containerd 1.7 default\nversion = 2\n\n"
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n',
    )
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert "has no nvidia runtime" in runtime["detail"], runtime
    assert "/etc/containerd/conf.d/99-nvidia.toml is not imported" in runtime["detail"], runtime
    assert result.report["runtime"]["source"] == "file-fallback"
    assert result.report["runtime"]["certain"] is False


def test_version_1_config_without_version_or_imports_never_reads_conf_d(node: FakeNode) -> None:
    _fallback(node)
    node.file("etc/containerd/config.toml", '[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n')
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "has no nvidia runtime" in runtime["detail"], runtime


def test_containerd_1x_dropin_replaces_the_whole_plugin_section(node: FakeNode) -> None:
    # containerd 1.x merges imports per top-level plugin: this registry drop-in replaces all
    # of plugins."io.containerd.grpc.v1.cri", taking the nvidia runtime of config.toml with it.
    _fallback(node)
    node.file(
        "etc/containerd/config.toml",
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n',
    )
    node.remove("etc/containerd/conf.d/99-nvidia.toml")
    registry = '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n'
    node.file("etc/containerd/conf.d/10-registry.toml", registry)
    version = "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da"
    node.command("containerd", f'case "$*" in --version) echo "{version}";; *) exit 1;; esac')
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "has no nvidia runtime" in runtime["detail"], runtime
    assert '/etc/containerd/conf.d/10-registry.toml replaces plugins."io.containerd.grpc.v1.cri"' in runtime["detail"], runtime
    assert result.report["runtime"]["certain"] is False


def test_containerd_2x_version_3_dropins_merge_deeply(node: FakeNode) -> None:
    _fallback(node)
    node.file(
        "etc/containerd/config.toml",
        "version = 3\nimports = ['/etc/containerd/conf.d/*.toml']\n\n"
        "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'nvidia'\n\n"
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n  runtime_type = 'io.containerd.runc.v2'\n",
    )
    node.remove("etc/containerd/conf.d/99-nvidia.toml")
    cni = "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\n  bin_dir = '/opt/cni/bin'\n"
    node.file("etc/containerd/conf.d/10-cni.toml", cni)
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, runtime
    assert result.report["runtime"] == {
        "name": "containerd",
        "nvidiaDefault": True,
        "runtimeClassNeeded": False,
        "source": "file-fallback",
        "certain": False,
    }
    assert "less certain" in runtime["detail"], runtime


def test_only_imported_dropins_count(node: FakeNode) -> None:
    _fallback(node)
    node.file("etc/containerd/config.toml", 'version = 2\nimports = ["/etc/containerd/conf.d/10-*.toml"]\n')
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "has no nvidia runtime" in runtime["detail"], runtime


# --------------------------------------------------------- item 9: k3s and RKE2


def test_k3s_generated_config_with_nvidia_extra_runtime(node: FakeNode) -> None:
    k3s_machine(node, fixture("k3s-v2-config.toml"))
    result = node.preflight(runtime="k3s")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, runtime
    expected = f"k3s: nvidia runtime configured but the default is runc (read /{K3S_CONFIG}"
    assert runtime["detail"].startswith(expected), runtime
    assert "k3s renders it from /var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl at each start" in runtime["detail"]
    assert result.report["runtime"] == {
        "name": "k3s",
        "nvidiaDefault": False,
        "runtimeClassNeeded": True,
        "source": "files",
        "certain": True,
    }


def test_k3s_v3_config_with_nvidia_default(node: FakeNode) -> None:
    k3s_machine(node, fixture("k3s-v3-config-default-nvidia.toml"))
    result = node.preflight(runtime="k3s")
    assert result.returncode == HEALTHY_EXIT, result.check("runtime")
    assert result.report["runtime"]["nvidiaDefault"] is True


def test_k3s_without_nvidia_says_to_restart_k3s(node: FakeNode) -> None:
    config = fixture("k3s-v2-config.toml")
    config = config[: config.index('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]')]
    k3s_machine(node, config)
    result = node.preflight(runtime="k3s")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "k3s has no nvidia runtime" in runtime["detail"], runtime
    assert "restart k3s" in runtime["detail"], runtime
    assert "nvidia-ctk runtime configure --runtime=containerd" not in runtime["detail"], runtime


def test_auto_on_k3s_machine_picks_k3s(node: FakeNode) -> None:
    k3s_machine(node, fixture("k3s-v2-config.toml"))
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.report["runtime"]["name"] == "k3s", runtime
    expected = "auto chose k3s (CRI socket /run/k3s/containerd/containerd.sock, /var/lib/rancher/k3s); "
    assert runtime["detail"].startswith(expected), runtime


def test_rke2_config_is_read_through_its_own_containerd(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.file(RKE2_CONFIG, fixture("k3s-v2-config.toml").replace("k3s", "rke2"))
    rke2_containerd = node.file("var/lib/rancher/rke2/bin/containerd", "")
    # RKE2's containerd, given its config, dumps it; here the dump adds nvidia as the default.
    rke2_containerd.write_text(
        "#!/bin/bash\n"
        f'[ "$*" = "--config {node.root}/{RKE2_CONFIG} config dump" ] || {{ echo "unexpected: $*" >&2; exit 1; }}\n'
        "cat <<'__END__'\n" + NVIDIA_DROPIN + "__END__\n"
    )
    rke2_containerd.chmod(0o755)
    node.unix_socket("run/k3s/containerd/containerd.sock")
    result = node.preflight(runtime="rke2")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, runtime
    assert "/var/lib/rancher/rke2/bin/containerd config dump" in runtime["detail"], runtime
    assert result.report["runtime"]["source"] == "config-dump"
    assert result.report["runtime"]["nvidiaDefault"] is True


def test_auto_on_rke2_machine_picks_rke2(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.file(RKE2_CONFIG, fixture("k3s-v2-config.toml").replace("k3s", "rke2"))
    node.unix_socket("run/k3s/containerd/containerd.sock")
    node.file("var/lib/kubelet/kubeadm-flags.env", "# not used by RKE2\n")
    node.kubelet_process(
        4321,
        "/var/lib/rancher/rke2/data/v1.31.4-rke2r1-0123/bin/kubelet",
        "--container-runtime-endpoint=unix:///run/k3s/containerd/containerd.sock",
    )
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.report["runtime"]["name"] == "rke2", runtime
    assert result.returncode == HEALTHY_EXIT, runtime


# ------------------------------------------------ item 1: --require-default-runtime


NOT_DEFAULT_DUMP = (
    '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
)


def test_require_default_runtime_fails_when_nvidia_is_not_default(node: FakeNode) -> None:
    node.command("containerd", f"cat <<'__END__'\n{NOT_DEFAULT_DUMP}__END__")
    result = node.preflight("--require-default-runtime")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert "nvidia is not the default runtime (the default is runc)" in runtime["detail"], runtime
    assert "nvidia-ctk runtime configure --runtime=containerd --set-as-default" in runtime["detail"], runtime
    assert "RuntimeClass" in runtime["detail"], runtime
    assert result.report["runtime"]["runtimeClassNeeded"] is True


def test_without_require_default_runtime_not_default_still_passes(node: FakeNode) -> None:
    node.command("containerd", f"cat <<'__END__'\n{NOT_DEFAULT_DUMP}__END__")
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.check("runtime")


def test_require_default_runtime_passes_when_nvidia_is_default(node: FakeNode) -> None:
    result = node.preflight("--require-default-runtime")
    assert result.returncode == HEALTHY_EXIT, result.check("runtime")


def test_require_default_runtime_on_docker_names_docker(node: FakeNode) -> None:
    docker_ce_machine(node, DAEMON_NVIDIA_NOT_DEFAULT)
    result = node.preflight("--require-default-runtime", runtime="docker")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "nvidia-ctk runtime configure --runtime=docker --set-as-default" in runtime["detail"], runtime


def test_docker_documented_full_daemon_json_has_no_nvidia_runtime(node: FakeNode) -> None:
    docker_ce_machine(node, fixture("docker-daemon-full-example-linux.json"))
    result = node.preflight(runtime="docker")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert "nvidia-ctk runtime configure --runtime=docker" in runtime["detail"], runtime


@pytest.mark.parametrize(
    ("name", "default", "class_needed"),
    [("docker-daemon-nvidia-ctk.json", False, True), ("docker-daemon-nvidia-ctk-default.json", True, False)],
)
def test_docker_daemon_json_as_nvidia_ctk_writes_it(node: FakeNode, name: str, default: bool, class_needed: bool) -> None:
    docker_ce_machine(node, fixture(name))
    result = node.preflight(runtime="docker")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.check("runtime")["ok"] is True
    report = result.report["runtime"]
    assert (report["name"], report["nvidiaDefault"], report["runtimeClassNeeded"]) == ("docker", default, class_needed), report


def test_require_default_runtime_on_k3s_says_default_runtime_flag(node: FakeNode) -> None:
    k3s_machine(node, fixture("k3s-v2-config.toml"))
    result = node.preflight("--require-default-runtime", runtime="k3s")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "--default-runtime=nvidia" in runtime["detail"], runtime


def test_gate_in_k3s_kubelet_arg_is_found(node: FakeNode) -> None:
    # k3s and RKE2 take kubelet flags as kubelet-arg in their own config file.
    k3s_machine(node, fixture("k3s-v2-config.toml"))
    node.file("etc/rancher/k3s/config.yaml", 'kubelet-arg:\n  - "feature-gates=DevicePlugins=true"\n')
    result = node.preflight(runtime="k3s")
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["detail"].startswith("DevicePlugins gate set in /etc/rancher/k3s/config.yaml (DevicePlugins=true)"), gates


# ------------------------------------------ real config dumps (containerd 1.7 and 2.x)

NVIDIA_V3_RUNTIME = (
    # What nvidia-ctk (1.18+) adds for containerd 2 (config version 3), without --set-as-default.
    "\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
    '  runtime_type = "io.containerd.runc.v2"\n'
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\n"
    '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
)


def _dump(node: FakeNode, text: str) -> None:
    dump = node.file("dump.toml", text)
    node.command("containerd", f'[ "$*" = "config dump" ] || exit 1\ncat {dump}')


def test_containerd_2_dump_without_nvidia_fails(node: FakeNode) -> None:
    _dump(node, fixture("containerd-2.0-config-v3.toml"))
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "containerd has no nvidia runtime (read containerd config dump)" in runtime["detail"], runtime


def test_containerd_2_dump_with_nvidia_not_default(node: FakeNode) -> None:
    _dump(node, fixture("containerd-2.0-config-v3.toml") + NVIDIA_V3_RUNTIME)
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.check("runtime")
    assert result.report["runtime"]["runtimeClassNeeded"] is True
    strict = node.preflight("--require-default-runtime")
    assert strict.returncode == FAILED_EXIT
    assert "nvidia is not the default runtime (the default is runc)" in strict.check("runtime")["detail"]


def test_containerd_1_7_default_nvidia_without_the_runtime_table_fails(node: FakeNode) -> None:
    # default_runtime_name = "nvidia" alone is no nvidia runtime: containerd has nothing to run.
    _dump(node, fixture("containerd-1.7-cri-default-nvidia-without-runtime.toml"))
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert "containerd has no nvidia runtime" in runtime["detail"], runtime
    assert result.report["runtime"]["nvidiaDefault"] is False


# ------------------------------------------- item 7: reads a non-root user cannot make

NOBODY = 65534


def test_unlistable_conf_d_is_reported_not_skipped(open_node: FakeNode) -> None:
    # conf.d 0700: as another user the glob finds nothing there, which must not read as
    # "no drop-ins" (the nvidia runtime is in one of them).
    open_node.drop_command("containerd")
    (open_node.root / "etc/containerd/conf.d").chmod(0o700)
    result = open_node.preflight(env={"USER": "nobody"}, uid=NOBODY)
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["detail"].startswith("containerd: cannot read /etc/containerd/conf.d as user nobody: "), runtime
    assert "no nvidia runtime" not in runtime["detail"], runtime


def test_same_tree_as_root_passes(open_node: FakeNode) -> None:
    open_node.drop_command("containerd")
    (open_node.root / "etc/containerd/conf.d").chmod(0o700)
    result = open_node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.check("runtime")
