"""The runtime-entry check (66-check-runtime-entry.sh): the nvidia runtime's entry itself, as the source
the runtime check decided by holds it (config dump, the files, crictl info, daemon.json, docker info, CRI-O's
files). Its binary must be an executable nvidia-container-runtime on the machine (a bare name looked up on
the daemon's PATH), containerd's runtime_type must not be empty, and its cgroup driver must agree with
kubelet's. Machines carry upstream files (fixtures/README.md); variants are in machines.py."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import (
    CONTAINERD_2,
    NVIDIA_DROPIN_BEFORE_1_20,
    NVIDIA_RUNTIME,
    containerd,
    containerd_2,
    containerd_dropin,
    docker_ce_machine,
    fixture,
    k3s_machine,
    k3s_v2_systemd_cgroup,
    kubelet_systemd,
    nvidia_dropin,
)
from .preflight_node import FAILED_EXIT, PASSED_EXIT, FakeNode, fakehost

MISSING = "/opt/nvidia/toolkit/nvidia-container-runtime"
CRIO_DROPIN = "etc/crio/crio.conf.d/99-nvidia.toml"


def then(*steps):
    return lambda node: [step(node) for step in steps]


def not_executable(node: FakeNode) -> None:
    (node.root / NVIDIA_RUNTIME.lstrip("/")).chmod(0o644)


def docker_daemon(daemon_json: str):
    return lambda node: docker_ce_machine(node, daemon_json)


def crio(dropin: str, *, crio_conf: str = '[crio.runtime]\ndefault_runtime = "crun"\n', kubelet=kubelet_systemd):
    """A CRI-O machine (no containerd) with crio.conf and the nvidia drop-in, and kubelet's config."""

    def arrange(node: FakeNode) -> None:
        node.drop_command("containerd")
        node.remove("etc/containerd")
        node.file("etc/crio/crio.conf", crio_conf)
        node.file(CRIO_DROPIN, dropin)
        kubelet(node)

    return arrange


# What `nvidia-ctk runtime configure --runtime=crio --set-as-default` writes (its crio engine:
# runtime_path and runtime_type "oci", pkg/config/engine/crio/crio.go AddRuntimeWithOptions).
CRIO_NVIDIA = (
    '[crio.runtime]\ndefault_runtime = "nvidia"\n\n'
    f'[crio.runtime.runtimes.nvidia]\nruntime_path = "{NVIDIA_RUNTIME}"\nruntime_type = "oci"\n'
)
# A RuntimeClass-only setup whose daemon.json names the runtime by a bare name, as nvidia-ctk writes it for docker.
DAEMON_BARE = '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}\n'
SYSTEMD_MISMATCH = "kubelet cgroupDriver systemd in /var/lib/kubelet/config.yaml"

CASES = [
    # containerd: the binary
    CheckCase(
        "the healthy drop-in's entry passes and says what it runs",
        exit=PASSED_EXIT,
        ok=True,
        says=(
            f"BinaryName {NVIDIA_RUNTIME} is an executable file",
            "runtime_type io.containerd.runc.v2",
            "read containerd config dump",
        ),
    ),
    CheckCase(
        "a BinaryName that names a missing file fails and says where the runtime is",
        containerd_dropin(nvidia_dropin(binary=MISSING)),
        exit=FAILED_EXIT,
        ok=False,
        says=(
            f'BinaryName = "{MISSING}"',
            "is not on this machine",
            "read containerd config dump",
            f"nvidia-container-runtime is at {NVIDIA_RUNTIME}",
            "--nvidia-runtime-path",
            "restart containerd",
        ),
    ),
    CheckCase(
        "a BinaryName that is not executable fails",
        not_executable,
        exit=FAILED_EXIT,
        ok=False,
        says=(f"{NVIDIA_RUNTIME} is not an executable file",),
    ),
    CheckCase(
        "an entry without BinaryName runs plain runc",
        containerd_dropin(fakehost.containerd_nvidia_dropin().replace(f'  BinaryName = "{NVIDIA_RUNTIME}"\n', "")),
        ok=False,
        says=("no BinaryName", "runs runc itself"),
    ),
    CheckCase(
        "a bare BinaryName is found on the PATH systemd gives services",
        containerd_dropin(nvidia_dropin(binary="nvidia-container-runtime")),
        ok=True,
        says=(f"BinaryName nvidia-container-runtime is {NVIDIA_RUNTIME} on the daemon's PATH",),
    ),
    CheckCase(
        "a bare BinaryName that no PATH directory holds fails",
        containerd_dropin(nvidia_dropin(binary="nvidia-container-runtime.cdi")),
        ok=False,
        says=('BinaryName = "nvidia-container-runtime.cdi"', "no directory of the daemon's PATH"),
    ),
    CheckCase(
        "a relative BinaryName fails",
        containerd_dropin(nvidia_dropin(binary="bin/nvidia-container-runtime")),
        ok=False,
        says=("a relative path",),
    ),
    # containerd: runtime_type
    CheckCase(
        "an empty runtime_type, as nvidia-ctk before 1.20.0 copied it from runc, fails",
        then(kubelet_systemd, containerd_dropin(NVIDIA_DROPIN_BEFORE_1_20)),
        exit=FAILED_EXIT,
        ok=False,
        says=(
            "runtime_type is empty",
            "container.Runtime.Name must be set",
            "1.20.0",
            'runtime_type = "io.containerd.runc.v2"',
        ),
        never=("SystemdCgroup",),
    ),
    # containerd: the cgroup driver
    CheckCase(
        "SystemdCgroup unset while kubelet uses systemd fails",
        kubelet_systemd,
        exit=FAILED_EXIT,
        ok=False,
        says=("SystemdCgroup unset (cgroupfs)", SYSTEMD_MISMATCH, "SystemdCgroup = true", "restart containerd"),
    ),
    CheckCase(
        "SystemdCgroup = true with kubelet on systemd passes",
        then(kubelet_systemd, containerd_dropin(nvidia_dropin(systemd_cgroup=True))),
        exit=PASSED_EXIT,
        ok=True,
        says=("SystemdCgroup = true agrees with " + SYSTEMD_MISMATCH,),
    ),
    CheckCase(
        "SystemdCgroup = true with kubelet's default cgroupfs fails",
        containerd_dropin(nvidia_dropin(systemd_cgroup=True)),
        ok=False,
        says=("SystemdCgroup = true (systemd)", "kubelet's default, cgroupfs", "SystemdCgroup = false"),
    ),
    CheckCase(
        "the running containerd's entry decides",
        lambda node: node.crictl(fakehost.crictl_info(default_runtime="nvidia", nvidia=True, systemd_cgroup=True)),
        ok=False,
        says=("SystemdCgroup = true (systemd)", "read crictl info (the running containerd)"),
    ),
    CheckCase(
        "containerd 2.0's dump with the nvidia runtime added passes",
        lambda node: containerd(node, CONTAINERD_2, containerd_2()),
        exit=PASSED_EXIT,
        ok=True,
    ),
    # k3s and RKE2: k3s renders runc's and the nvidia runtime's options from one setting
    CheckCase(
        "k3s that passes SystemdCgroup to the nvidia runtime passes",
        lambda node: k3s_machine(node, k3s_v2_systemd_cgroup()),
        runtime="k3s",
        exit=PASSED_EXIT,
        ok=True,
        says=("SystemdCgroup = true agrees with runc's entry (SystemdCgroup = true)",),
    ),
    CheckCase(
        "k3s before it passed SystemdCgroup to the nvidia runtime fails",
        lambda node: k3s_machine(node, fixture("k3s-v2-config.toml")),
        runtime="k3s",
        exit=FAILED_EXIT,
        ok=False,
        says=("SystemdCgroup unset (cgroupfs)", "disagrees with runc's entry (SystemdCgroup = true)", "k3s pull request 8470"),
    ),
    # docker
    CheckCase(
        "docker's bare path, as nvidia-ctk writes it, is found on the PATH",
        docker_daemon(fixture("docker-daemon-nvidia-ctk.json")),
        runtime="docker",
        exit=PASSED_EXIT,
        ok=True,
        says=(f"path nvidia-container-runtime is {NVIDIA_RUNTIME} on the daemon's PATH",),
    ),
    CheckCase(
        "docker's path to a missing file fails",
        docker_daemon(DAEMON_BARE.replace('"nvidia-container-runtime"', f'"{MISSING}"')),
        runtime="docker",
        exit=FAILED_EXIT,
        ok=False,
        says=(f'"path": "{MISSING}"', "/etc/docker/daemon.json", "restart docker"),
    ),
    CheckCase(
        "the running dockerd's path decides",
        then(
            docker_daemon(fixture("docker-daemon-nvidia-ctk.json")),
            lambda node: node.docker(fakehost.docker_info(nvidia=True).replace('"nvidia-container-runtime"', f'"{MISSING}"')),
        ),
        runtime="docker",
        ok=False,
        says=(f'"path": "{MISSING}"', "read docker info (the running dockerd)"),
    ),
    # CRI-O
    CheckCase(
        "CRI-O's drop-in as nvidia-ctk writes it passes with kubelet on systemd",
        crio(CRIO_NVIDIA),
        runtime="cri-o",
        exit=PASSED_EXIT,
        ok=True,
        says=(f"runtime_path {NVIDIA_RUNTIME} is an executable file", "cgroup_manager systemd (CRI-O's default)"),
    ),
    CheckCase(
        "CRI-O's runtime_path to a missing file fails: CRI-O ignores the handler",
        crio(CRIO_NVIDIA.replace(NVIDIA_RUNTIME, MISSING)),
        runtime="cri-o",
        ok=False,
        says=(f'runtime_path = "{MISSING}"', "ignores the handler", "restart crio"),
    ),
    CheckCase(
        "CRI-O without runtime_path looks for a binary named after the handler",
        crio(CRIO_NVIDIA.replace(f'runtime_path = "{NVIDIA_RUNTIME}"\n', "")),
        runtime="cri-o",
        ok=False,
        says=('no runtime_path (read /etc/crio/crio.conf, /etc/crio/crio.conf.d/99-nvidia.toml): CRI-O looks for "nvidia"',),
    ),
    CheckCase(
        "CRI-O's systemd cgroup manager with kubelet's default cgroupfs fails",
        crio(CRIO_NVIDIA, kubelet=lambda node: None),
        runtime="cri-o",
        ok=False,
        says=("cgroup_manager systemd (CRI-O's default)", "kubelet's default, cgroupfs", "did not receive slice as parent"),
    ),
    CheckCase(
        "CRI-O on cgroupfs with a conmon cgroup that is not pod fails",
        crio(
            CRIO_NVIDIA,
            crio_conf='[crio.runtime]\ncgroup_manager = "cgroupfs"\nconmon_cgroup = "system.slice/conmon"\n',
            kubelet=lambda node: None,
        ),
        runtime="cri-o",
        ok=False,
        says=('conmon_cgroup = "system.slice/conmon"', "should be 'pod' or empty"),
    ),
    CheckCase(
        "an entry written as an inline table is not judged rather than misread",
        containerd_dropin(
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
            f'  options = {{ BinaryName = "{MISSING}" }}\n'
        ),
        ok=True,
        says=("an inline table, which this check does not read: not judged",),
    ),
    # nothing to judge
    CheckCase(
        "without an nvidia runtime there is no entry to judge",
        containerd_dropin('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'),
        ok=True,
        starts="no nvidia runtime entry to judge",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_runtime_entry_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "runtime-entry")
