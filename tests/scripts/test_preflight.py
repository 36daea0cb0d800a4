"""The preflight script (gpu_nodes/scripts/preflight/*.sh, joined) under real bash, against prepared roots and stub commands.

Every test asserts the exit code and the named check's ok and detail in the one JSON
object the script prints (parsed with json: invalid output fails the test).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.runbook import operator_preflight
from gpu_nodes.preflight.command import REFUSED_EXIT, SCRIPT_DIR, preflight_command, remote_dir
from tests.specs import group_spec

from .preflight_node import BASH, CHECK_NAMES, SCRIPT, FakeNode

HEALTHY_EXIT = 0
FAILED_EXIT = 1
USAGE_EXIT = 2


# ------------------------------------------------------------- healthy node


def test_healthy_node_passes_every_check_in_order(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.report["ok"] is True
    assert [c["name"] for c in result.report["checks"]] == CHECK_NAMES
    assert all(c["ok"] for c in result.report["checks"]), result.report["checks"]


def test_healthy_node_reports_hostname_driver_and_gpus(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.report["hostname"] == "gpu-node-1"
    assert result.report["driverVersion"] == "550.54.15"
    assert result.report["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": "GPU-66666666-7777-8888-9999-000000000000",
        "memoryMiB": 81920,
    }


def test_stdout_holds_only_the_json_and_stderr_the_summary(node: FakeNode) -> None:
    node.command("nvidia-ctk", 'echo "stray line on stdout"; echo "NVIDIA Container Toolkit CLI version 1.17.8"')
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.stdout.count("\n") == 1 and result.stdout.startswith("{"), result.stdout
    assert "preflight: gpu-node-1 is READY" in result.stderr


def test_runs_with_neither_jq_nor_python_on_path(node: FakeNode) -> None:
    for tool in ("jq", "python", "python3"):
        assert shutil.which(tool, path=node.path_env()) is None, tool
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.report["ok"] is True


# ----------------------------- run over SSH (the component's command lines, the runbook's)
#
# The component copies the parts directory to the machine (CopyToRemote, here
# node.copy_script()) and runs preflight_command(): it joins the copy, checks it against the
# script's digest and feeds it to `bash -s`. The runbook sends the plain script to `bash -s`
# on stdin, as an operator would. Both run here as sshd runs them, `bash -c COMMAND`.


def _component_form(node: FakeNode, min_driver: str | None = None) -> tuple[str, bytes]:
    spec = group_spec(preflight={"minDriver": min_driver} if min_driver else {}).preflight
    return preflight_command(spec, 2, root=node.remote_root), b""


def _runbook_form(_node: FakeNode) -> tuple[str, bytes]:
    return operator_preflight(group_spec(gpusPerNode=2))


@pytest.mark.parametrize("form", [_component_form, _runbook_form], ids=["component", "runbook"])
def test_the_script_survives_commands_that_read_stdin(node: FakeNode, form: Callable[[FakeNode], tuple[str, bytes]]) -> None:
    # The script reaches `bash -s` on stdin in both forms: a tool reading stdin must not eat it.
    node.copy_script()
    node.command("nvidia-ctk", 'cat >/dev/null; echo "NVIDIA Container Toolkit CLI version 1.17.8"')
    result = node.run_command_line(*form(node))
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert [c["name"] for c in result.report["checks"]] == CHECK_NAMES


def test_component_command_line_passes_the_arguments_to_the_script(node: FakeNode) -> None:
    node.copy_script()
    result = node.run_command_line(*_component_form(node, min_driver="555.42"))
    assert result.returncode == FAILED_EXIT, result.stderr
    assert result.check("driver-version")["detail"] == "550.54.15 < 555.42: upgrade the NVIDIA driver"
    assert result.report["hostname"] == "gpu-node-1" and len(result.report["gpus"]) == 2, result.report


def test_component_command_line_gives_bash_exactly_the_script(node: FakeNode) -> None:
    """What `bash -s` reads is the script, byte for byte, joined from the copy."""
    node.copy_script()
    received = node.base / "received.sh"
    # A bash first on PATH that keeps what `bash -s` would read; the command line's own bash -c runs as usual.
    node.command("bash", f'[ "$1" = -s ] || exec {BASH} "$@"\ncat >{received}\necho "{{}}"')
    result = node.run_command_line(*_component_form(node))
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert received.read_bytes() == SCRIPT.encode(), "bash -s did not get the script as it is in the repository"


def _change_one_part(copy: Path) -> None:
    part = copy / "30-check-driver.sh"
    part.write_text(part.read_text().replace("nvidia-smi", "nvidia-smi-evil", 1))


@pytest.mark.parametrize(
    "tamper",
    [
        _change_one_part,
        lambda copy: (copy / "40-check-toolkit.sh").unlink(),  # a partial copy
        lambda copy: (copy / "95-extra.sh").write_text("echo extra\n"),
    ],
    ids=["changed", "partial", "extra"],
)
def test_a_copy_that_is_not_the_script_is_refused_and_nothing_runs(node: FakeNode, tamper: Callable[[Path], object]) -> None:
    copy = node.copy_script()
    tamper(copy)
    marker = node.base / "ran"
    node.command("nvidia-smi", f"touch {marker}")
    proc = node.spawn_command_line(_component_form(node)[0])
    stdout, stderr = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == REFUSED_EXIT and stdout == "", (proc.returncode, stdout, stderr)
    digest = hashlib.sha256(SCRIPT.encode()).hexdigest()
    assert f"refusing to run {copy}/*.sh: its sha256 is " in stderr and f", expected {digest}" in stderr, stderr
    assert not marker.exists(), "part of the script ran"


def test_a_missing_copy_is_refused_naming_the_copy(node: FakeNode) -> None:
    proc = node.spawn_command_line(_component_form(node)[0])
    stderr = proc.stderr.decode()
    assert proc.returncode == REFUSED_EXIT and proc.stdout == b"", (proc.returncode, stderr)
    assert f"no script to read at {remote_dir(node.remote_root)}/preflight" in stderr, stderr
    assert "-preflight-script" in stderr, stderr


def test_the_command_line_leaves_the_copy_as_it_found_it(node: FakeNode) -> None:
    """Nothing deletes the copy (a node's delete does not contact its machine), and nothing is added
    to it: every run, a replacement's included, finds the same parts."""
    copy = node.copy_script()
    for _ in range(2):  # --target-replace: the replacement runs with the old command still in the state
        result = node.run_command_line(*_component_form(node))
        assert result.returncode == HEALTHY_EXIT, result.stderr
    assert sorted(p.name for p in Path(remote_dir(node.remote_root)).iterdir()) == [SCRIPT_DIR.name]
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in SCRIPT_DIR.glob("*.sh")), copy


# ------------------------------------------------------------------ runtime


def test_containerd_dropin_is_seen_through_config_dump(node: FakeNode) -> None:
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "containerd config dump" in runtime["detail"]
    assert result.report["runtime"] == {
        "name": "containerd",
        "nvidiaDefault": True,
        "runtimeClassNeeded": False,
        "source": "config-dump",
        "certain": True,
    }


def test_containerd_dropin_is_read_from_files_without_containerd_binary(node: FakeNode) -> None:
    node.drop_command("containerd")
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "/etc/containerd/conf.d/99-nvidia.toml" in runtime["detail"]
    assert result.report["runtime"]["nvidiaDefault"] is True


def test_containerd_import_outside_conf_d_is_followed(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd/conf.d")
    node.file("etc/containerd/config.toml", 'version = 2\nimports = [\n  "runtimes/*.toml",\n]\n')
    node.file("etc/containerd/runtimes/nvidia.toml", '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"]\n')
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "/etc/containerd/runtimes/nvidia.toml" in runtime["detail"]


def test_containerd_without_nvidia_runtime_fails(node: FakeNode) -> None:
    node.command("containerd", "cat <<'__END__'\nversion = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n__END__")
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert "no nvidia runtime" in runtime["detail"]
    assert "nvidia-ctk runtime configure --runtime=containerd" in runtime["detail"]


def test_containerd_nvidia_not_default_needs_runtime_class(node: FakeNode) -> None:
    dump = '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
    dump += '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
    node.command("containerd", f"cat <<'__END__'\n{dump}__END__")
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "default is runc" in runtime["detail"]
    assert result.report["runtime"] == {
        "name": "containerd",
        "nvidiaDefault": False,
        "runtimeClassNeeded": True,
        "source": "config-dump",
        "certain": True,
    }


def test_containerd_config_dump_failure_falls_back_to_files(node: FakeNode) -> None:
    node.command("containerd", 'echo "failed to load config" >&2; exit 1')
    result = node.preflight()
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "config dump failed (exit 1: failed to load config)" in runtime["detail"]


def _docker_node(node: FakeNode, daemon_json: str) -> FakeNode:
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.file("etc/docker/daemon.json", daemon_json)
    return node


def test_docker_with_default_nvidia_runtime_passes(node: FakeNode) -> None:
    daemon = '{\n  "default-runtime": "nvidia",\n  "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}\n}\n'
    result = _docker_node(node, daemon).preflight(runtime="docker")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert result.report["runtime"] == {
        "name": "docker",
        "nvidiaDefault": True,
        "runtimeClassNeeded": False,
        "source": "files",
        "certain": True,
    }


def test_docker_nvidia_runtime_not_default_needs_runtime_class(node: FakeNode) -> None:
    daemon = '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}, "log-driver": "json-file"}'
    result = _docker_node(node, daemon).preflight(runtime="docker")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "RuntimeClass with handler nvidia" in runtime["detail"]
    assert result.report["runtime"] == {
        "name": "docker",
        "nvidiaDefault": False,
        "runtimeClassNeeded": True,
        "source": "files",
        "certain": True,
    }


def test_malformed_daemon_json_fails_the_runtime_check(node: FakeNode) -> None:
    daemon = '{\n  "default-runtime": "nvidia",\n  "runtimes": {"nvidia": {"path": "nvidia-container-runtime",}}\n}\n'
    result = _docker_node(node, daemon).preflight(runtime="docker")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert runtime["detail"].startswith("docker: /etc/docker/daemon.json is not valid JSON (expected a quoted key at line 3")


def test_crio_dropin_configures_nvidia(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.file("etc/crio/crio.conf", '[crio.runtime]\ndefault_runtime = "crun"\n')
    node.file(
        "etc/crio/crio.conf.d/99-nvidia.toml",
        '[crio.runtime]\ndefault_runtime = "nvidia"\n\n'
        '[crio.runtime.runtimes.nvidia]\nruntime_path = "/usr/bin/nvidia-container-runtime"\n',
    )
    result = node.preflight(runtime="cri-o")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["ok"] is True
    assert "/etc/crio/crio.conf.d/99-nvidia.toml" in runtime["detail"]
    assert result.report["runtime"] == {
        "name": "cri-o",
        "nvidiaDefault": True,
        "runtimeClassNeeded": False,
        "source": "files",
        "certain": True,
    }


def test_auto_follows_kubelet_endpoint_and_says_so(node: FakeNode) -> None:
    node.file("etc/docker/daemon.json", "{}")
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["detail"].startswith(
        "auto chose containerd (kubelet --container-runtime-endpoint unix:///run/containerd/containerd.sock"
        " in /var/lib/kubelet/kubeadm-flags.env); "
    )
    assert result.report["runtime"]["name"] == "containerd"


def test_auto_chooses_containerd_on_path_when_kubelet_and_sockets_say_nothing(node: FakeNode) -> None:
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    node.file("etc/docker/daemon.json", "{}")
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert runtime["detail"].startswith("auto chose containerd (no CRI socket found; containerd on PATH); ")


def test_auto_without_any_runtime_fails(node: FakeNode) -> None:
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    result = node.preflight(runtime="auto")
    runtime = result.check("runtime")
    assert result.returncode == FAILED_EXIT
    assert runtime["ok"] is False
    assert runtime["detail"].startswith("auto: no container runtime found")
    assert result.report["runtime"]["name"] is None


# ------------------------------------------------------------------- driver


def test_missing_nvidia_smi_fails_driver(node: FakeNode) -> None:
    node.drop_command("nvidia-smi")
    result = node.preflight()
    driver = result.check("driver")
    assert result.returncode == FAILED_EXIT
    assert driver["ok"] is False
    assert driver["detail"].startswith("nvidia-smi not found on PATH")
    assert result.report["driverVersion"] is None


def test_hanging_nvidia_smi_is_bounded_by_the_timeout(node: FakeNode) -> None:
    node.command("nvidia-smi", "sleep 30")
    result = node.preflight(env={"PREFLIGHT_NVIDIA_SMI_TIMEOUT": "0.5"})
    driver = result.check("driver")
    assert result.returncode == FAILED_EXIT
    assert driver["ok"] is False
    assert driver["detail"].startswith("nvidia-smi did not answer within 0.5s")
    assert result.seconds < 4, result.seconds


def test_hanging_nvidia_smi_is_bounded_without_coreutils_timeout(node: FakeNode) -> None:
    no_timeout = node.base / "no-timeout"
    no_timeout.mkdir()
    for tool in node.system_bin.iterdir():
        if tool.name != "timeout":
            (no_timeout / tool.name).symlink_to(tool.resolve())
    node.system_bin = no_timeout
    node.command("nvidia-smi", "sleep 30")
    result = node.preflight(env={"PREFLIGHT_NVIDIA_SMI_TIMEOUT": "0.5"})
    assert result.returncode == FAILED_EXIT
    assert result.check("driver")["detail"].startswith("nvidia-smi did not answer within 0.5s")
    assert result.seconds < 4, result.seconds


def test_nvidia_smi_driver_error_fails_driver_with_its_message(node: FakeNode) -> None:
    message = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running."
    )
    node.nvidia_smi(message, exit_code=9)
    result = node.preflight()
    driver = result.check("driver")
    assert result.returncode == FAILED_EXIT
    assert driver["ok"] is False
    assert driver["detail"] == f"nvidia-smi failed (exit 9): {message}"


def test_nvidia_smi_error_with_exit_zero_still_fails(node: FakeNode) -> None:
    node.nvidia_smi("Failed to initialize NVML: Driver/library version mismatch", exit_code=0)
    result = node.preflight()
    driver = result.check("driver")
    assert result.returncode == FAILED_EXIT
    assert driver["detail"] == "nvidia-smi failed (exit 0): Failed to initialize NVML: Driver/library version mismatch"


def test_no_gpus_found_fails_driver_and_count(node: FakeNode) -> None:
    node.nvidia_smi("No devices were found", exit_code=6)
    result = node.preflight()
    assert result.returncode == FAILED_EXIT
    assert result.check("driver")["detail"] == "nvidia-smi failed (exit 6): No devices were found"
    assert result.check("gpu-count")["ok"] is False
    assert result.check("gpu-count")["detail"].startswith("found 0 GPU(s), expected 2")
    assert result.report["gpus"] == []


def test_gpu_count_mismatch_fails_gpu_count_only(node: FakeNode) -> None:
    result = node.preflight(gpus=8)
    count = result.check("gpu-count")
    assert result.returncode == FAILED_EXIT
    assert count == {"name": "gpu-count", "ok": False, "detail": "found 2 GPU(s), expected 8"}
    assert [c["name"] for c in result.report["checks"] if not c["ok"]] == ["gpu-count"]


def test_memory_with_mib_suffix_and_name_with_spaces_are_parsed(node: FakeNode) -> None:
    node.healthy_nvidia_smi("0, NVIDIA H100 80GB HBM3, GPU-abc, 550.54.15, 81559 MiB\n1, Tesla T4, GPU-def, 550.54.15, 15360 MiB")
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert [(g["name"], g["memoryMiB"]) for g in result.report["gpus"]] == [("NVIDIA H100 80GB HBM3", 81559), ("Tesla T4", 15360)]


def test_unreadable_nvidia_smi_line_fails_driver(node: FakeNode) -> None:
    node.nvidia_smi("0, NVIDIA A100, GPU-abc, 550.54.15, [N/A]")
    result = node.preflight(gpus=1)
    driver = result.check("driver")
    assert result.returncode == FAILED_EXIT
    assert driver["detail"] == "cannot read this line of nvidia-smi --query-gpu output: 0, NVIDIA A100, GPU-abc, 550.54.15, [N/A]"


# ------------------------------------------------------------ driver version


def test_driver_below_min_driver_fails(node: FakeNode) -> None:
    result = node.preflight("--min-driver", "555.42")
    version = result.check("driver-version")
    assert result.returncode == FAILED_EXIT
    assert version == {"name": "driver-version", "ok": False, "detail": "550.54.15 < 555.42: upgrade the NVIDIA driver"}


@pytest.mark.parametrize("minimum", ["535.0", "550.9", "550.54.15", "550"])
def test_driver_at_or_above_min_driver_passes_comparing_numbers(node: FakeNode, minimum: str) -> None:
    result = node.preflight("--min-driver", minimum)
    version = result.check("driver-version")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert version == {"name": "driver-version", "ok": True, "detail": f"550.54.15 >= {minimum}"}


def test_driver_version_without_min_driver_is_not_requested(node: FakeNode) -> None:
    result = node.preflight()
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.check("driver-version") == {"name": "driver-version", "ok": True, "detail": "not requested"}


# ------------------------------------------------------------------ toolkit


def test_toolkit_version_is_reported(node: FakeNode) -> None:
    result = node.preflight()
    toolkit = result.check("container-toolkit")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert toolkit == {
        "name": "container-toolkit",
        "ok": True,
        "detail": "nvidia-ctk: NVIDIA Container Toolkit CLI version 1.17.8",
    }


def test_missing_toolkit_fails(node: FakeNode) -> None:
    node.drop_command("nvidia-ctk")
    result = node.preflight()
    toolkit = result.check("container-toolkit")
    assert result.returncode == FAILED_EXIT
    assert toolkit["ok"] is False
    assert toolkit["detail"].startswith("neither nvidia-ctk nor nvidia-container-runtime is on PATH")


# The first line nvidia-ctk --version prints, as in NVIDIA/nvidia-container-toolkit issue 50.
CTK_1_12 = 'echo "NVIDIA Container Toolkit CLI version 1.12.0"; echo "commit: 62bd015475656ef795cb0d59cc4030a6bd4a9526"'


def test_a_toolkit_at_the_minimum_passes(node: FakeNode) -> None:
    toolkit = node.preflight("--min-toolkit", "1.17.8").check("container-toolkit")
    assert toolkit == {
        "name": "container-toolkit",
        "ok": True,
        "detail": "nvidia-ctk: NVIDIA Container Toolkit CLI version 1.17.8 (>= 1.17.8)",
    }, toolkit


def test_a_toolkit_open_to_the_cve_fails_naming_it(node: FakeNode) -> None:
    node.command("nvidia-ctk", CTK_1_12)
    result = node.preflight("--min-toolkit", "1.17.8")
    toolkit = result.check("container-toolkit")
    assert result.returncode == FAILED_EXIT and toolkit["ok"] is False, toolkit
    assert "version 1.12.0 < 1.17.8: releases before 1.17.8 are open to CVE-2025-23266" in toolkit["detail"], toolkit
    assert toolkit["detail"].endswith("upgrade the NVIDIA Container Toolkit"), toolkit


def test_a_higher_minimum_names_no_cve_for_a_patched_toolkit(node: FakeNode) -> None:
    toolkit = node.preflight("--min-toolkit", "1.18.0").check("container-toolkit")
    assert toolkit["ok"] is False and "1.17.8 < 1.18.0; upgrade" in toolkit["detail"], toolkit
    assert "CVE" not in toolkit["detail"], toolkit


def test_a_toolkit_of_unknown_version_fails_a_minimum(node: FakeNode) -> None:
    node.drop_command("nvidia-ctk")
    node.command("nvidia-container-runtime", "exit 0")
    toolkit = node.preflight("--min-toolkit", "1.17.8").check("container-toolkit")
    assert toolkit["ok"] is False and "its version is unknown: install nvidia-ctk 1.17.8 or later" in toolkit["detail"], toolkit


def test_a_malformed_minimum_is_a_usage_error(node: FakeNode) -> None:
    result = node.preflight("--min-toolkit", "latest")
    assert result.returncode == USAGE_EXIT and "--min-toolkit wants a version like 1.17.8" in result.stderr, result.stderr


# ------------------------------------------------------------ kubelet socket


def test_missing_kubelet_socket_fails(node: FakeNode) -> None:
    node.remove("var/lib/kubelet/device-plugins/kubelet.sock")
    result = node.preflight()
    sock = result.check("device-plugin-socket")
    assert result.returncode == FAILED_EXIT
    assert sock["ok"] is False
    assert sock["detail"].startswith("/var/lib/kubelet/device-plugins/kubelet.sock is missing")


def test_regular_file_instead_of_kubelet_socket_fails(node: FakeNode) -> None:
    node.remove("var/lib/kubelet/device-plugins/kubelet.sock")
    node.file("var/lib/kubelet/device-plugins/kubelet.sock", "")
    result = node.preflight()
    sock = result.check("device-plugin-socket")
    assert result.returncode == FAILED_EXIT
    assert sock["ok"] is False
    assert "exists but is not a socket" in sock["detail"]


# ------------------------------------------------------ kubelet feature gates


def test_device_plugins_gate_on_kubelet_1_30_fails(node: FakeNode) -> None:
    node.file("var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--feature-gates=DevicePlugins=true"\n')
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["ok"] is False
    assert gates["detail"].startswith(
        "DevicePlugins gate set in /var/lib/kubelet/kubeadm-flags.env (DevicePlugins=true): kubelet v1.30.2 (>= 1.28)"
    )


def test_device_plugins_gate_on_kubelet_1_25_passes_with_warning(node: FakeNode) -> None:
    node.kubelet("v1.25.16")
    node.file("etc/default/kubelet", "KUBELET_EXTRA_ARGS=--feature-gates=DevicePlugins=true\n")
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert gates["ok"] is True
    assert gates["detail"].startswith("warning: DevicePlugins gate set in /etc/default/kubelet (DevicePlugins=true)")


def test_device_plugins_gate_with_unknown_kubelet_version_fails(node: FakeNode) -> None:
    node.drop_command("kubelet")
    node.file(
        "etc/systemd/system/kubelet.service.d/20-gpu.conf",
        '[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--feature-gates=DevicePlugins=false"\n',
    )
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["ok"] is False
    assert "kubelet version is unknown (kubelet is not on PATH)" in gates["detail"]


def test_device_plugins_gate_in_running_kubelet_command_line_is_found(node: FakeNode) -> None:
    node.kubelet_process(4242, "/usr/bin/kubelet", "--feature-gates", "DevicePlugins=true,Other=false")
    node.kubelet_process(4243, "/usr/bin/not-kubelet", "--feature-gates=DevicePlugins=true")
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["detail"].startswith("DevicePlugins gate set in the command line of kubelet (pid 4242) (DevicePlugins=true)")


def test_device_plugins_gate_in_kubelet_config_file_is_found(node: FakeNode) -> None:
    node.file("var/lib/kubelet/kubeadm-flags.env", 'KUBELET_KUBEADM_ARGS="--config=/etc/kubernetes/kubelet.yaml"\n')
    node.file("etc/kubernetes/kubelet.yaml", "kind: KubeletConfiguration\nfeatureGates:\n  DevicePlugins: true\n")
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == FAILED_EXIT
    assert gates["detail"].startswith("DevicePlugins gate set in /etc/kubernetes/kubelet.yaml (DevicePlugins=true)")


def test_commented_out_gate_is_ignored(node: FakeNode) -> None:
    node.file("etc/default/kubelet", "# KUBELET_EXTRA_ARGS=--feature-gates=DevicePlugins=true\n")
    result = node.preflight()
    gates = result.check("kubelet-feature-gates")
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert gates["detail"].startswith("no DevicePlugins feature gate (kubelet v1.30.2; read: ")


# -------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        ([], "missing --runtime containerd|docker|cri-o|k3s|rke2|auto"),
        (["--runtime", "containerd"], "missing --expect-gpus N"),
        (
            ["--runtime", "podman", "--expect-gpus", "2"],
            "unknown runtime 'podman': want containerd, docker, cri-o, k3s, rke2 or auto",
        ),
        (["--runtime", "containerd", "--expect-gpus", "two"], "--expect-gpus wants a whole number, got 'two'"),
        (["--runtime", "containerd", "--expect-gpus"], "--expect-gpus needs a value"),
        (
            ["--runtime", "containerd", "--expect-gpus", "2", "--min-driver", "latest"],
            "--min-driver wants a version like 535.104.05, got 'latest'",
        ),
        (["--runtime", "containerd", "--expect-gpus", "2", "--verbose"], "unknown argument: --verbose"),
        (
            ["--runtime", "containerd", "--expect-gpus", "2", "--root", "/nonexistent/root"],
            "--root '/nonexistent/root' is not a directory",
        ),
        (["--help"], "help requested: no checks were run"),
    ],
)
def test_usage_error_exits_2_with_valid_json(bare_node: FakeNode, args: list[str], detail: str) -> None:
    result = bare_node.run(*args, with_root=False)
    assert result.returncode == USAGE_EXIT, result.stderr
    assert result.report["ok"] is False
    assert result.report["checks"] == [{"name": "usage", "ok": False, "detail": detail}]
    assert result.report["runtime"] == {
        "name": None,
        "nvidiaDefault": False,
        "runtimeClassNeeded": False,
        "source": None,
        "certain": False,
    }


def test_the_joined_parts_declare_each_name_once(bare_node: FakeNode) -> None:
    """The parts run as one script: a name two parts declare readonly is a bash error on every run."""
    result = bare_node.run("--help", with_root=False)
    assert "readonly variable" not in result.stderr, result.stderr


def test_bad_timeout_knob_is_a_usage_error(node: FakeNode) -> None:
    result = node.preflight(env={"PREFLIGHT_NVIDIA_SMI_TIMEOUT": "soon"})
    assert result.returncode == USAGE_EXIT
    assert result.check("usage")["detail"] == "PREFLIGHT_NVIDIA_SMI_TIMEOUT wants a positive number of seconds, got 'soon'"


# ------------------------------------------------------------- JSON escaping


def test_special_characters_in_gpu_names_and_hostname_are_escaped(node: FakeNode) -> None:
    odd_name = 'NVIDIA "A100"\\PCIe\tüñ\x01 ✓'
    node.file("etc/hostname", 'node "7"\\b\n')
    node.healthy_nvidia_smi(f"0, {odd_name}, GPU-x, 550.54.15, 40960")
    result = node.preflight(gpus=1)
    assert result.returncode == HEALTHY_EXIT, result.stderr
    assert result.report["hostname"] == 'node "7"\\b'
    assert result.report["gpus"][0]["name"] == odd_name
    assert odd_name in result.check("driver")["detail"]


def test_newline_in_detail_is_escaped(bare_node: FakeNode) -> None:
    result = bare_node.run("--runtime", "con\ntainerd\r", "--expect-gpus", "1", with_root=False)
    assert result.returncode == USAGE_EXIT
    expected = "unknown runtime 'con\ntainerd\r': want containerd, docker, cri-o, k3s, rke2 or auto"
    assert result.check("usage")["detail"] == expected
