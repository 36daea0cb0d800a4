"""The runtime check (60-check-runtime.sh) from the runtime's files: containerd through `config dump`
or its files with their import and merge rules, docker's daemon.json, CRI-O's drop-ins, k3s and
RKE2, --runtime auto following kubelet's endpoint, and --require-default-runtime. Machines carry
upstream files (fixtures/README.md names each source); the running runtime's word
(61-running-runtime.sh) is tested in test_61_running_runtime.py."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import (
    K3S_CONFIG,
    NVIDIA_V2,
    RKE2_CONFIG,
    docker_ce_machine,
    fixture,
    k3s_machine,
    k3s_v2_systemd_cgroup,
    kubelet_systemd,
)
from .preflight_node import FAILED_EXIT, NVIDIA_DROPIN, PASSED_EXIT, FakeNode

DAEMON_NVIDIA_NOT_DEFAULT = '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}\n'
DAEMON_WITHOUT_NVIDIA = '{"log-driver": "json-file", "exec-opts": ["native.cgroupdriver=systemd"]}\n'
NOT_DEFAULT_DUMP = '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n' + NVIDIA_V2
NVIDIA_V3_RUNTIME = (
    # What nvidia-ctk (1.18+) adds for containerd 2 (config version 3), without --set-as-default.
    "\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
    '  runtime_type = "io.containerd.runc.v2"\n'
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\n"
    '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
)
REQUIRE_DEFAULT = ("--require-default-runtime",)


def runtime_report(name: str, default: bool, class_needed: bool, source: str, certain: bool) -> dict[str, object]:
    """The report's whole "runtime" object."""
    return {
        "runtime": {
            "name": name,
            "nvidiaDefault": default,
            "runtimeClassNeeded": class_needed,
            "source": source,
            "certain": certain,
        }
    }


# ------------------------------------------------------------------ arrangements


def dump(text: str):
    """containerd whose `config dump` prints text."""

    def arrange(node: FakeNode) -> None:
        path = node.file("dump.toml", text)
        node.command("containerd", f'[ "$*" = "config dump" ] || exit 1\ncat {path}')

    return arrange


def containerd_prints(text: str):
    """containerd printing text whatever it is asked, `config dump` included."""
    return lambda node: node.command("containerd", f"cat <<'__END__'\n{text}__END__")


def no_containerd(node: FakeNode) -> None:
    node.drop_command("containerd")


def without_containerd_at_all(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd")


def containerd_files(config: str, *dropins: tuple[str, str], keep_nvidia_dropin: bool = True):
    """containerd without a working `config dump` (the files are all there is), with this config.toml."""

    def arrange(node: FakeNode) -> None:
        node.drop_command("containerd")
        node.file("etc/containerd/config.toml", config)
        if not keep_nvidia_dropin:
            node.remove("etc/containerd/conf.d/99-nvidia.toml")
        for path, text in dropins:
            node.file(path, text)

    return arrange


def import_outside_conf_d(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd/conf.d")
    node.file("etc/containerd/config.toml", 'version = 2\nimports = [\n  "runtimes/*.toml",\n]\n')
    node.file("etc/containerd/runtimes/nvidia.toml", NVIDIA_V2)


def containerd_1x_registry_dropin(node: FakeNode) -> None:
    # containerd 1.x merges imports per top-level plugin: this registry drop-in replaces all
    # of plugins."io.containerd.grpc.v1.cri", taking the nvidia runtime of config.toml with it.
    containerd_files(
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n',
        (
            "etc/containerd/conf.d/10-registry.toml",
            '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n',
        ),
        keep_nvidia_dropin=False,
    )(node)
    version = "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da"
    node.command("containerd", f'case "$*" in --version) echo "{version}";; *) exit 1;; esac')


def docker_daemon(daemon_json: str):
    """A docker machine (no containerd) with this daemon.json."""

    def arrange(node: FakeNode) -> None:
        without_containerd_at_all(node)
        node.file("etc/docker/daemon.json", daemon_json)

    return arrange


def docker_ce(daemon_json: str, *then):
    return lambda node: [docker_ce_machine(node, daemon_json), *(step(node) for step in then)]


def k3s(config: str):
    return lambda node: k3s_machine(node, config)


def crio_dropin(node: FakeNode) -> None:
    without_containerd_at_all(node)
    kubelet_systemd(node)  # CRI-O's default cgroup manager is systemd
    node.file("etc/crio/crio.conf", '[crio.runtime]\ndefault_runtime = "crun"\n')
    node.file(
        "etc/crio/crio.conf.d/99-nvidia.toml",
        '[crio.runtime]\ndefault_runtime = "nvidia"\n\n'
        '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n',
    )


def crio_endpoint_in_kubelet_config(node: FakeNode) -> None:
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    node.file(
        "var/lib/kubelet/config.yaml",
        'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: "unix:///var/run/crio/crio.sock"\n',
    )
    node.file(
        "etc/crio/crio.conf.d/99-nvidia.toml",
        '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n',
    )


def running_kubelet_says_cri_dockerd(node: FakeNode) -> None:
    docker_ce_machine(node, DAEMON_NVIDIA_NOT_DEFAULT)
    node.file(
        "var/lib/kubelet/kubeadm-flags.env",
        'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n',
    )
    node.kubelet_process(777, "/usr/bin/kubelet", "--container-runtime-endpoint", "unix:///run/cri-dockerd.sock")


def rke2_files(node: FakeNode) -> None:
    without_containerd_at_all(node)
    node.file(RKE2_CONFIG, k3s_v2_systemd_cgroup().replace("k3s", "rke2"))
    node.unix_socket("run/k3s/containerd/containerd.sock")


def rke2_with_its_containerd(node: FakeNode) -> None:
    rke2_files(node)
    rke2_containerd = node.file("var/lib/rancher/rke2/bin/containerd", "")
    # RKE2's containerd, given its config, dumps it; here the dump adds nvidia as the default.
    rke2_containerd.write_text(
        "#!/bin/bash\n"
        f'[ "$*" = "--config {node.root}/{RKE2_CONFIG} config dump" ] || {{ echo "unexpected: $*" >&2; exit 1; }}\n'
        "cat <<'__END__'\n" + NVIDIA_DROPIN + "__END__\n"
    )
    rke2_containerd.chmod(0o755)


def rke2_kubelet_running(node: FakeNode) -> None:
    rke2_files(node)
    node.file("var/lib/kubelet/kubeadm-flags.env", "# not used by RKE2\n")
    node.kubelet_process(
        4321,
        "/var/lib/rancher/rke2/data/v1.31.4-rke2r1-0123/bin/kubelet",
        "--container-runtime-endpoint=unix:///run/k3s/containerd/containerd.sock",
    )


def k3s_without_nvidia() -> str:
    config = fixture("k3s-v2-config.toml")
    return config[: config.index('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]')]


def no_runtime_and_no_endpoint(node: FakeNode) -> None:
    without_containerd_at_all(node)
    node.remove("var/lib/kubelet/kubeadm-flags.env")


# ------------------------------------------------------------------------- table

NOT_DEFAULT = "nvidia is not the default runtime (the default is runc)"
CASES = [
    # containerd: config dump, or its files
    CheckCase(
        "containerd drop-in seen through config dump",
        exit=PASSED_EXIT,
        ok=True,
        says=("containerd config dump",),
        report=runtime_report("containerd", True, False, "config-dump", True),
    ),
    CheckCase(
        "config dump verdict is certain", exit=PASSED_EXIT, report={"runtime.source": "config-dump", "runtime.certain": True}
    ),
    CheckCase(
        "containerd drop-in read from files without the containerd binary",
        no_containerd,
        exit=PASSED_EXIT,
        ok=True,
        says=("/etc/containerd/conf.d/99-nvidia.toml",),
        report={"runtime.nvidiaDefault": True},
    ),
    CheckCase(
        "containerd import outside conf.d is followed",
        import_outside_conf_d,
        exit=PASSED_EXIT,
        ok=True,
        says=("/etc/containerd/runtimes/nvidia.toml",),
    ),
    CheckCase(
        "containerd without nvidia runtime fails",
        containerd_prints('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'),
        exit=FAILED_EXIT,
        ok=False,
        says=("no nvidia runtime", "nvidia-ctk runtime configure --runtime=containerd"),
    ),
    CheckCase(
        "containerd nvidia not default needs a RuntimeClass",
        containerd_prints(NOT_DEFAULT_DUMP),
        exit=PASSED_EXIT,
        ok=True,
        says=("default is runc",),
        report=runtime_report("containerd", False, True, "config-dump", True),
    ),
    CheckCase(
        "config dump failure falls back to files",
        lambda node: node.command("containerd", 'echo "failed to load config" >&2; exit 1'),
        exit=PASSED_EXIT,
        ok=True,
        says=("config dump failed (exit 1: failed to load config)",),
    ),
    CheckCase(
        "version 2 config without imports never reads conf.d",
        containerd_files(
            "# containerd 1.7 default\nversion = 2\n\n"
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        ),
        exit=FAILED_EXIT,
        ok=False,
        says=("has no nvidia runtime", "/etc/containerd/conf.d/99-nvidia.toml is not imported"),
        report={"runtime.source": "file-fallback", "runtime.certain": False},
    ),
    CheckCase(
        "version 1 config without version or imports never reads conf.d",
        containerd_files('[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n'),
        exit=FAILED_EXIT,
        says=("has no nvidia runtime",),
    ),
    CheckCase(
        "containerd 1.x drop-in replaces the whole plugin section",
        containerd_1x_registry_dropin,
        exit=FAILED_EXIT,
        says=("has no nvidia runtime", '/etc/containerd/conf.d/10-registry.toml replaces plugins."io.containerd.grpc.v1.cri"'),
        report={"runtime.certain": False},
    ),
    CheckCase(
        "containerd 2.x version 3 drop-ins merge deeply",
        containerd_files(
            "version = 3\nimports = ['/etc/containerd/conf.d/*.toml']\n\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'nvidia'\n\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n  runtime_type = 'io.containerd.runc.v2'\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\n"
            "  BinaryName = '/usr/bin/nvidia-container-runtime'\n",
            (
                "etc/containerd/conf.d/10-cni.toml",
                "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\n  bin_dir = '/opt/cni/bin'\n",
            ),
            keep_nvidia_dropin=False,
        ),
        exit=PASSED_EXIT,
        says=("less certain",),
        report=runtime_report("containerd", True, False, "file-fallback", False),
    ),
    CheckCase(
        "only imported drop-ins count",
        containerd_files('version = 2\nimports = ["/etc/containerd/conf.d/10-*.toml"]\n'),
        exit=FAILED_EXIT,
        says=("has no nvidia runtime",),
    ),
    # real config dumps (containerd 1.7 and 2.x)
    CheckCase(
        "containerd 2 dump without nvidia fails",
        dump(fixture("containerd-2.0-config-v3.toml")),
        exit=FAILED_EXIT,
        says=("containerd has no nvidia runtime (read containerd config dump)",),
    ),
    CheckCase(
        "containerd 2 dump with nvidia not default passes",
        dump(fixture("containerd-2.0-config-v3.toml") + NVIDIA_V3_RUNTIME),
        exit=PASSED_EXIT,
        report={"runtime.runtimeClassNeeded": True},
    ),
    CheckCase(
        "containerd 2 dump with nvidia not default, default required",
        dump(fixture("containerd-2.0-config-v3.toml") + NVIDIA_V3_RUNTIME),
        REQUIRE_DEFAULT,
        exit=FAILED_EXIT,
        says=(NOT_DEFAULT,),
    ),
    CheckCase(
        # default_runtime_name = "nvidia" alone is no nvidia runtime: containerd has nothing to run.
        "containerd 1.7 default nvidia without the runtime table fails",
        dump(fixture("containerd-1.7-cri-default-nvidia-without-runtime.toml")),
        exit=FAILED_EXIT,
        says=("containerd has no nvidia runtime",),
        report={"runtime.nvidiaDefault": False},
    ),
    # docker and CRI-O
    CheckCase(
        "docker with default nvidia runtime passes",
        docker_daemon(
            '{\n  "default-runtime": "nvidia",\n  "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}\n}\n'
        ),
        runtime="docker",
        exit=PASSED_EXIT,
        ok=True,
        report=runtime_report("docker", True, False, "files", True),
    ),
    CheckCase(
        "docker nvidia runtime not default needs a RuntimeClass",
        docker_daemon('{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}, "log-driver": "json-file"}'),
        runtime="docker",
        exit=PASSED_EXIT,
        ok=True,
        says=("RuntimeClass with handler nvidia",),
        report=runtime_report("docker", False, True, "files", True),
    ),
    CheckCase(
        "malformed daemon.json fails the runtime check",
        docker_daemon('{\n  "default-runtime": "nvidia",\n  "runtimes": {"nvidia": {"path": "nvidia-container-runtime",}}\n}\n'),
        runtime="docker",
        exit=FAILED_EXIT,
        ok=False,
        starts="docker: /etc/docker/daemon.json is not valid JSON (expected a quoted key at line 3",
    ),
    CheckCase(
        "docker's documented full daemon.json has no nvidia runtime",
        docker_ce(fixture("docker-daemon-full-example-linux.json")),
        runtime="docker",
        exit=FAILED_EXIT,
        ok=False,
        says=("nvidia-ctk runtime configure --runtime=docker",),
    ),
    CheckCase(
        "docker daemon.json as nvidia-ctk writes it",
        docker_ce(fixture("docker-daemon-nvidia-ctk.json")),
        runtime="docker",
        exit=PASSED_EXIT,
        ok=True,
        report={"runtime.name": "docker", "runtime.nvidiaDefault": False, "runtime.runtimeClassNeeded": True},
    ),
    CheckCase(
        "docker daemon.json as nvidia-ctk --set-as-default writes it",
        docker_ce(fixture("docker-daemon-nvidia-ctk-default.json")),
        runtime="docker",
        exit=PASSED_EXIT,
        ok=True,
        report={"runtime.name": "docker", "runtime.nvidiaDefault": True, "runtime.runtimeClassNeeded": False},
    ),
    CheckCase(
        "CRI-O drop-in configures nvidia",
        crio_dropin,
        runtime="cri-o",
        exit=PASSED_EXIT,
        ok=True,
        says=("/etc/crio/crio.conf.d/99-nvidia.toml",),
        report=runtime_report("cri-o", True, False, "files", True),
    ),
    # k3s and RKE2
    CheckCase(
        "k3s generated config with nvidia extra runtime",
        k3s(k3s_v2_systemd_cgroup()),
        runtime="k3s",
        exit=PASSED_EXIT,
        starts=f"k3s: nvidia runtime configured but the default is runc (read /{K3S_CONFIG}",
        says=("k3s renders it from /var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl at each start",),
        report=runtime_report("k3s", False, True, "files", True),
    ),
    CheckCase(
        "k3s v3 config with nvidia default",
        k3s(fixture("k3s-v3-config-default-nvidia.toml")),
        runtime="k3s",
        exit=PASSED_EXIT,
        report={"runtime.nvidiaDefault": True},
    ),
    CheckCase(
        "k3s without nvidia says to restart k3s",
        k3s(k3s_without_nvidia()),
        runtime="k3s",
        exit=FAILED_EXIT,
        says=("k3s has no nvidia runtime", "restart k3s"),
        never=("nvidia-ctk runtime configure --runtime=containerd",),
    ),
    CheckCase(
        "RKE2 config is read through its own containerd",
        rke2_with_its_containerd,
        runtime="rke2",
        exit=PASSED_EXIT,
        says=("/var/lib/rancher/rke2/bin/containerd config dump",),
        report={"runtime.source": "config-dump", "runtime.nvidiaDefault": True},
    ),
    # --runtime auto
    CheckCase(
        "auto follows kubelet's endpoint and says so",
        lambda node: node.file("etc/docker/daemon.json", "{}"),
        runtime="auto",
        exit=PASSED_EXIT,
        starts="auto chose containerd (kubelet --container-runtime-endpoint unix:///run/containerd/containerd.sock"
        " in /var/lib/kubelet/kubeadm-flags.env); ",
        report={"runtime.name": "containerd"},
    ),
    CheckCase(
        "auto chooses containerd on PATH when kubelet and sockets say nothing",
        lambda node: [node.remove("var/lib/kubelet/kubeadm-flags.env"), node.file("etc/docker/daemon.json", "{}")],
        runtime="auto",
        exit=PASSED_EXIT,
        starts="auto chose containerd (no CRI socket found; containerd on PATH); ",
    ),
    CheckCase(
        "auto without any runtime fails",
        no_runtime_and_no_endpoint,
        runtime="auto",
        exit=FAILED_EXIT,
        ok=False,
        starts="auto: no container runtime found",
        report={"runtime.name": None},
    ),
    CheckCase(
        "auto on a docker + cri-dockerd machine follows kubelet's endpoint",
        docker_ce(DAEMON_NVIDIA_NOT_DEFAULT),
        runtime="auto",
        exit=PASSED_EXIT,
        ok=True,
        starts="auto chose docker (kubelet --container-runtime-endpoint unix:///var/run/cri-dockerd.sock"
        " in /var/lib/kubelet/kubeadm-flags.env); ",
        report={"runtime.name": "docker"},
    ),
    CheckCase(
        "auto on a docker machine without nvidia advises docker, not containerd",
        docker_ce(DAEMON_WITHOUT_NVIDIA),
        runtime="auto",
        exit=FAILED_EXIT,
        ok=False,
        says=("nvidia-ctk runtime configure --runtime=docker",),
        never=("--runtime=containerd",),
    ),
    CheckCase(
        # No flag anywhere (kubelet's default endpoint is containerd's, but cri-dockerd's socket
        # listening says who serves CRI): cri-dockerd wins over the containerd socket docker-ce leaves.
        "auto without an endpoint flag picks the CRI socket that exists",
        docker_ce(DAEMON_NVIDIA_NOT_DEFAULT, lambda node: node.remove("var/lib/kubelet/kubeadm-flags.env")),
        runtime="auto",
        starts="auto chose docker (CRI socket /var/run/cri-dockerd.sock); ",
        report={"runtime.name": "docker"},
    ),
    CheckCase(
        "auto reads the endpoint from kubelet's config",
        crio_endpoint_in_kubelet_config,
        runtime="auto",
        starts="auto chose cri-o (kubelet containerRuntimeEndpoint unix:///var/run/crio/crio.sock"
        " in /var/lib/kubelet/config.yaml); ",
        report={"runtime.name": "cri-o"},
    ),
    CheckCase(
        "auto: the endpoint of the running kubelet wins over files",
        running_kubelet_says_cri_dockerd,
        runtime="auto",
        says=("kubelet --container-runtime-endpoint unix:///run/cri-dockerd.sock in the command line of kubelet (pid 777)",),
        report={"runtime.name": "docker"},
    ),
    CheckCase(
        "auto on a k3s machine picks k3s",
        k3s(fixture("k3s-v2-config.toml")),
        runtime="auto",
        starts="auto chose k3s (CRI socket /run/k3s/containerd/containerd.sock, /var/lib/rancher/k3s); ",
        report={"runtime.name": "k3s"},
    ),
    CheckCase(
        "auto on an RKE2 machine picks rke2",
        rke2_kubelet_running,
        runtime="auto",
        exit=PASSED_EXIT,
        report={"runtime.name": "rke2"},
    ),
    # --require-default-runtime
    CheckCase(
        "default required, nvidia not the default",
        containerd_prints(NOT_DEFAULT_DUMP),
        REQUIRE_DEFAULT,
        exit=FAILED_EXIT,
        ok=False,
        says=(NOT_DEFAULT, "nvidia-ctk runtime configure --runtime=containerd --set-as-default", "RuntimeClass"),
        report={"runtime.runtimeClassNeeded": True},
    ),
    CheckCase("default not required, nvidia not the default still passes", containerd_prints(NOT_DEFAULT_DUMP), exit=PASSED_EXIT),
    CheckCase("default required, nvidia the default passes", args=REQUIRE_DEFAULT, exit=PASSED_EXIT),
    CheckCase(
        "default required on docker names docker",
        docker_ce(DAEMON_NVIDIA_NOT_DEFAULT),
        REQUIRE_DEFAULT,
        runtime="docker",
        exit=FAILED_EXIT,
        says=("nvidia-ctk runtime configure --runtime=docker --set-as-default",),
    ),
    CheckCase(
        "default required on k3s says --default-runtime",
        k3s(fixture("k3s-v2-config.toml")),
        REQUIRE_DEFAULT,
        runtime="k3s",
        exit=FAILED_EXIT,
        says=("--default-runtime=nvidia",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_runtime_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "runtime")


# ------------------------------------------- reads a non-root user cannot make

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
    assert result.returncode == PASSED_EXIT, result.check("runtime")
