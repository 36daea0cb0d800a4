"""The running runtime (61-running-runtime.sh) decides, not its files: where `crictl info` (containerd) or `docker info`
(docker) answers, the running daemon's default runtime, runtimes and CDI setting are the verdict,
and a difference from the files says to restart it. Without crictl or docker the files decide as
before (test_60_check_runtime.py). CRI-O's drop-in in a directory CRI-O never reads is named with the
one it reads. Samples: fixtures/crictl-info-containerd-1.7.json (containerd's docs/cri/crictl.md),
fixtures/docker-info.json (moby's Info), varied by fakehost.crictl_info / docker_info."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from .machines import containerd_17_cdi_on
from .preflight_node import FAILED_EXIT, FIXTURES, PASSED_EXIT, FakeNode, fakehost, heredoc

REQUIRE_DEFAULT = "--require-default-runtime"
# containerd's files as the healthy node has them (config dump): nvidia added and the default.
RUNNING_AGREES = fakehost.crictl_info(default_runtime="nvidia", nvidia=True)
NOT_RESTARTED = fakehost.crictl_info()
NVIDIA_NOT_DEFAULT = fakehost.crictl_info(nvidia=True)


@dataclass(frozen=True)
class Case:
    name: str
    info: str
    args: tuple[str, ...]
    ok: bool
    says: tuple[str, ...]
    never: tuple[str, ...] = ()
    default: bool = False
    class_needed: bool = False
    warning: bool = False


CONTAINERD_CASES = [
    Case(
        "running containerd agrees with its files",
        RUNNING_AGREES,
        (REQUIRE_DEFAULT,),
        True,
        ("nvidia runtime configured and the default", "crictl info (the running containerd)", "agrees with its files"),
        default=True,
    ),
    Case(
        "not restarted after nvidia-ctk: no nvidia runtime running",
        NOT_RESTARTED,
        (),
        False,
        ("containerd has no nvidia runtime", "its files add it (containerd config dump)", "restart containerd"),
        never=("run nvidia-ctk runtime configure",),
    ),
    Case(
        "nvidia loaded but the running default is still runc, default required",
        NVIDIA_NOT_DEFAULT,
        (REQUIRE_DEFAULT,),
        False,
        ("the default is runc", "its files make nvidia the default (containerd config dump)", "restart containerd"),
        never=("--set-as-default",),
        class_needed=True,
    ),
    Case(
        "nvidia loaded but the running default is still runc, a RuntimeClass serves",
        NVIDIA_NOT_DEFAULT,
        (),
        True,
        ("GPU pods need a RuntimeClass", "restart containerd"),
        class_needed=True,
    ),
]


@pytest.mark.parametrize("case", CONTAINERD_CASES, ids=[c.name for c in CONTAINERD_CASES])
def test_crictl_info_is_the_verdict_for_containerd(node: FakeNode, case: Case) -> None:
    node.crictl(case.info)
    result = node.preflight(*case.args)
    runtime = result.check("runtime")
    assert runtime["ok"] is case.ok, f"{case.name}: {runtime}"
    assert runtime["detail"].startswith("warning: ") is case.warning, f"{case.name}: {runtime}"
    for text in case.says:
        assert text in runtime["detail"], f"{case.name}: {text!r} not in {runtime['detail']!r}"
    for text in case.never:
        assert text not in runtime["detail"], f"{case.name}: {text!r} in {runtime['detail']!r}"
    assert result.report["runtime"] == {
        "name": "containerd",
        "nvidiaDefault": case.default,
        "runtimeClassNeeded": case.class_needed,
        "source": "crictl-info",
        "certain": True,
    }, case.name
    assert result.returncode == (PASSED_EXIT if case.ok else FAILED_EXIT), result.stderr


def test_what_only_the_running_containerd_has_passes_with_a_warning(node: FakeNode) -> None:
    """Someone removed the drop-in (or configured containerd by hand and restarted): the next restart drops nvidia."""
    node.command("containerd", "cat <<'__END__'\nversion = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n__END__")
    node.crictl(RUNNING_AGREES)
    runtime = node.preflight(REQUIRE_DEFAULT).check("runtime")
    assert runtime["ok"] is True and runtime["detail"].startswith("warning: "), runtime
    assert "a restart of containerd would drop" in runtime["detail"], runtime


def test_without_an_answer_from_crictl_the_files_decide(node: FakeNode) -> None:
    node.crictl("", exit_code=1)
    result = node.preflight(REQUIRE_DEFAULT)
    runtime = result.check("runtime")
    assert runtime["ok"] is True, runtime
    assert "crictl info failed (exit 1" in runtime["detail"] and "containerd config dump" in runtime["detail"], runtime
    assert result.report["runtime"]["source"] == "config-dump", result.report


def test_crictl_is_asked_at_kubelets_endpoint(node: FakeNode) -> None:
    calls = node.base / "crictl-calls"
    node.command("crictl", f'echo "$*" >> {calls}\n{heredoc(RUNNING_AGREES)}')
    assert node.preflight().check("runtime")["ok"] is True
    assert calls.read_text().splitlines() == ["--runtime-endpoint unix:///run/containerd/containerd.sock info"], calls.read_text()


# ------------------------------------------------------------------------ CDI


@pytest.mark.parametrize(
    ("enable_cdi", "ok", "says"),
    [
        (True, True, "resolves CDI devices"),
        (
            False,
            False,
            "the running containerd has CDI off (crictl info), though its files set enable_cdi = true: restart containerd",
        ),
    ],
)
def test_the_running_containerds_cdi_setting_decides(node: FakeNode, enable_cdi: bool, ok: bool, says: str) -> None:
    containerd_17_cdi_on(node, "v1.7.27")
    node.crictl(fakehost.crictl_info(nvidia=True, enable_cdi=enable_cdi))
    cdi = node.preflight("--require-cdi").check("cdi")
    assert cdi["ok"] is ok and says in cdi["detail"], cdi


# --------------------------------------------------------------------- docker


def _docker(node: FakeNode, info: str) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.command("dockerd", "exit 0")
    node.file("etc/docker/daemon.json", (FIXTURES / "docker-daemon-nvidia-ctk-default.json").read_text())
    node.docker(info)


@pytest.mark.parametrize(
    ("info", "ok", "says"),
    [
        (fakehost.docker_info("nvidia", nvidia=True), True, "docker info (the running dockerd), which agrees with its files"),
        (
            fakehost.docker_info(),
            False,
            "its files add it (/etc/docker/daemon.json) but the running dockerd has not loaded them: restart docker",
        ),
    ],
)
def test_docker_info_is_the_verdict_for_docker(node: FakeNode, info: str, ok: bool, says: str) -> None:
    _docker(node, info)
    result = node.preflight(REQUIRE_DEFAULT, runtime="docker")
    runtime = result.check("runtime")
    assert runtime["ok"] is ok and says in runtime["detail"], runtime
    assert result.report["runtime"]["source"] == "docker-info", result.report


# ---------------------------------------------------------------------- CRI-O

# What `nvidia-ctk runtime configure --runtime=crio --set-as-default` writes (its crio engine).
CRIO_DROPIN = (
    '[crio.runtime]\ndefault_runtime = "nvidia"\n\n'
    '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\nruntime_type = "oci"\n'
)


def test_a_crio_drop_in_where_crio_never_reads_is_named_with_the_directory_it_reads(node: FakeNode) -> None:
    """Toolkit 1.18.0-1.19.0 wrote it to /etc/crio/conf.d: running the same command again cannot help."""
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.command("crio", "exit 0")
    node.file("etc/crio/crio.conf", '[crio.runtime]\ndefault_runtime = "crun"\n')
    node.file("etc/crio/conf.d/99-nvidia.toml", CRIO_DROPIN)
    runtime = node.preflight(runtime="cri-o").check("runtime")
    assert runtime["ok"] is False, runtime
    for text in ("/etc/crio/conf.d/99-nvidia.toml", "CRI-O reads /etc/crio/crio.conf.d", "1.19.1", "restart crio"):
        assert text in runtime["detail"], f"{text!r} not in {runtime['detail']!r}"
