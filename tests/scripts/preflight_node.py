"""A prepared machine for the preflight script: a --root tree plus stub commands.

Each test builds the node it needs: `FakeNode.healthy(...)` gives one that passes
every check (containerd configured by an nvidia drop-in, 2 GPUs, kubelet 1.30),
and the methods change one thing at a time. `run()` executes the script (its parts
joined by gpu_nodes/preflight/command.py, as the component sends it) under real
bash with PATH = the stub dir + a dir of symlinks to a handful of coreutils, so
neither jq nor python can be found by the script. `run_command_line()` runs a
remote command line as sshd would: the component's, which reads the script from
its copy (`copy_script()` puts one under the node, as CopyToRemote does on a
machine), or the runbook's, which sends it on stdin.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_nodes.preflight.command import SCRIPT_DIR, preflight_script, remote_dir
from gpu_nodes.preflight.report import CHECKS
from tests.sshd import fakehost

# The script as every machine gets it: gpu_nodes/scripts/preflight/*.sh, joined.
SCRIPT = preflight_script()
# Real files from upstream; fixtures/README.md names the source of each.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BASH = shutil.which("bash") or "/bin/bash"
# All the script (and the stubs) may use from the system; no jq, no python.
SYSTEM_TOOLS = ("bash", "cat", "mktemp", "rm", "sleep", "timeout")
# What the component's command lines use besides SYSTEM_TOOLS; only run_command_line() adds them.
COMMAND_LINE_TOOLS = ("sha256sum",)
# Every check, in the order the report lists them: the package's list, held to the script here.
CHECK_NAMES = list(CHECKS)
# The script tests' machine runs an R550 driver (CUDA 12.4), past its end of life and open to NVIDIA's
# bulletins of 2026, which the driver, CUDA and advisory checks' tests judge; fakehost's default machine
# (what `make local-up` runs) has a driver NVIDIA patches. MACHINE's nvidia-smi header and -q agree with
# GPU_LINES' driver.
DRIVER = "550.54.15"
MACHINE = fakehost.MachineSpec(driver=DRIVER, cuda_version="12.4")
GPU_LINES = (
    f"0, NVIDIA A100-SXM4-80GB, GPU-11111111-2222-3333-4444-555555555555, {DRIVER}, 81920\n"
    f"1, NVIDIA A100-SXM4-80GB, GPU-66666666-7777-8888-9999-000000000000, {DRIVER}, 81920\n"
)
# What `nvidia-ctk cdi generate` writes for those GPUs (fakehost.cdi_spec, upstream's spec shape).
CDI_SPEC = fakehost.cdi_spec([line.split(", ")[2] for line in GPU_LINES.splitlines()], DRIVER)
# One description of a healthy containerd setup, shared with the fake machines.
CONTAINERD_CONFIG = fakehost.CONTAINERD_CONFIG
NVIDIA_DROPIN = fakehost.CONTAINERD_NVIDIA_DROPIN
# The nvidia-container-runtime the drop-in's BinaryName names, where the toolkit's packages install it.
NVIDIA_RUNTIME = fakehost.NVIDIA_RUNTIME
# The toolkit's config.toml (internal/config: /etc/nvidia-container-runtime/config.toml), as installed.
TOOLKIT_CONFIG_PATH = fakehost.TOOLKIT_CONFIG_PATH
TOOLKIT_CONFIG = fakehost.TOOLKIT_CONFIG
HEALTHY_TOOLKIT = fakehost.HEALTHY_TOOLKIT
# /proc/devices as the kernel prints it (fs/proc/devices.c, devinfo_show; fs/char_dev.c, chrdev_show:
# "%3d %s"), with the NVIDIA drivers among the kernel's own. nvidia's major is fixed (195,
# NV_MAJOR_DEVICE_NUMBER in nvidia-modprobe's modprobe-utils/nvidia-modprobe-utils.c; "nvidia-frontend"
# before driver 550.40); nvidia-uvm's and nvidia-caps' are handed out when the modules load.
PROC_DEVICES = (
    "Character devices:\n  1 mem\n  4 /dev/vc/0\n  4 tty\n  5 /dev/tty\n 10 misc\n"
    "195 nvidia\n508 nvidia-uvm\n511 nvidia-caps\n"
    "\nBlock devices:\n  7 loop\n  8 sd\n259 blkext\n"
)
# The 2-GPU node's NVIDIA device nodes and the numbers nvidia-modprobe makes them with (nvidiaN N,
# nvidiactl 255, nvidia-modeset 254, nvidia-uvm 0 and -tools 1; nvidia-capN N, here MIG's config and
# monitor caps as /proc/driver/nvidia-caps/mig-minors numbers them).
DEVICE_NODES = {
    "nvidia0": "195:0",
    "nvidia1": "195:1",
    "nvidiactl": "195:255",
    "nvidia-modeset": "195:254",
    "nvidia-uvm": "508:0",
    "nvidia-uvm-tools": "508:1",
    "nvidia-caps/nvidia-cap1": "511:1",
    "nvidia-caps/nvidia-cap2": "511:2",
}
# What stands on the node's PATH and is also a file of its tree: the packages' /usr/bin/nvidia-ctk, which preflight
# runs because it sits beside the nvidia-container-runtime that the runtime's nvidia entry names (40-check-toolkit.sh).
PACKAGED_COMMANDS = ("nvidia-ctk",)
KUBEADM_FLAGS = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n'
# What the script exits with: 90-main.sh ends on `$ALL_OK` (every required check passed or not) and
# returns 2 on a usage error; 10-report.sh's EXIT trap exits 1 when it stops early. The component's
# command line refuses a copy that is not the script with the package's REFUSED_EXIT (3).
PASSED_EXIT = 0
FAILED_EXIT = 1
USAGE_EXIT = 2


def script_file() -> Path:
    """SCRIPT in a file any user may read, outside every node's tree: run from a file, as a machine
    runs it by hand, since it is more than the 128 KiB Linux allows a single argument."""
    path = Path(tempfile.gettempdir()) / f"gpu-nodes-preflight-{hashlib.sha256(SCRIPT.encode()).hexdigest()[:12]}.sh"
    if not path.exists():
        staged = path.with_suffix(f".{os.getpid()}")
        staged.write_text(SCRIPT)
        staged.chmod(0o644)
        staged.replace(path)
    return path


def make_system_bin(directory: Path, tools: tuple[str, ...] = SYSTEM_TOOLS) -> Path:
    """A bin dir of symlinks to tools (SYSTEM_TOOLS) only."""
    directory.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found is not None, f"{tool} is needed to run the tests"
        if not (directory / tool).exists():
            (directory / tool).symlink_to(found)
    return directory


def heredoc(text: str) -> str:
    """A stub's line that prints text verbatim (a quoted heredoc), its final newlines folded to one."""
    return f"cat <<'__END__'\n{text.rstrip(chr(10))}\n__END__"


@dataclass
class Result:
    returncode: int
    report: dict[str, Any]
    stdout: str
    stderr: str
    seconds: float

    def check(self, name: str) -> dict[str, Any]:
        """The entry of report["checks"] called name."""
        matches = [c for c in self.report["checks"] if c["name"] == name]
        assert len(matches) == 1, f"no single {name!r} check in {self.report['checks']}\n{self.stderr}"
        return matches[0]


class FakeNode:
    """A --root tree and a stub bin dir under base."""

    def __init__(self, base: Path, system_bin: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.bin = base / "bin"
        self.system_bin = system_bin
        self.root.mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ building

    def file(self, rel: str, text: str) -> Path:
        """Writes text at /rel under the node's root."""
        path = self.root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def remove(self, rel: str) -> None:
        path = self.root / rel.lstrip("/")
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()

    def command(self, name: str, body: str) -> None:
        """A stub command: a small bash script on the node's PATH. nvidia-ctk is also the packages' /usr/bin/nvidia-ctk
        in the tree (PACKAGED_COMMANDS), beside the runtime the nvidia runtime's entry names: the one preflight runs."""
        path = self.bin / name
        path.write_text("#!/bin/bash\n" + body + "\n")
        path.chmod(0o755)
        if name in PACKAGED_COMMANDS:
            self.file(f"usr/bin/{name}", path.read_text()).chmod(0o755)

    def drop_command(self, name: str) -> None:
        (self.bin / name).unlink()
        if name in PACKAGED_COMMANDS:
            (self.root / "usr/bin" / name).unlink(missing_ok=True)

    def nvidia_smi(self, stdout: str, exit_code: int = 0) -> None:
        """nvidia-smi printing stdout (verbatim, via a quoted heredoc) and exiting with exit_code."""
        self.command("nvidia-smi", f"{heredoc(stdout)}\nexit {exit_code}")

    def healthy_nvidia_smi(self, query_lines: str, table: str | None = None) -> None:
        """nvidia-smi as on a healthy machine (the fake machines' header and -q, 2 GPUs), answering
        --query-gpu with query_lines and, run plainly, printing table when given."""
        machine = dataclasses.replace(MACHINE, gpus=2)
        self.nvidia_smi_with_table(query_lines, table or fakehost.smi_table(machine), fakehost.smi_q(machine))

    def nvidia_smi_with_table(self, query_lines: str, table: str, q: str | None = None, listing: str | None = None) -> None:
        """nvidia-smi answering --query-gpu with query_lines, -q with q (default: table), -L with
        listing (default: the GPUs of query_lines, none in MIG mode), and printing table when run plainly."""
        listing = listing or fakehost.smi_list(query_lines)
        answers = (
            f"  *--query-gpu=*)\n{heredoc(query_lines)}\n;;\n  -q)\n{heredoc(q or table)}\n;;\n"
            f"  -L)\n{heredoc(listing)}\n;;\n  *)\n{heredoc(table)}\n;;"
        )
        self.command("nvidia-smi", f'case "$*" in\n{answers}\nesac')

    def toolkit(self, version: str, config: str | None = None) -> None:
        """nvidia-ctk of version (its --version output, as 1.19.1 prints it; `cdi generate` writes
        CDI_SPEC), and the toolkit's config.toml with config as its text (None: no config.toml)."""
        self.nvidia_ctk(version)
        path = self.root / TOOLKIT_CONFIG_PATH.lstrip("/")
        if config is None:
            path.unlink(missing_ok=True)
        else:
            self.file(TOOLKIT_CONFIG_PATH, config)

    def nvidia_ctk(self, version: str = HEALTHY_TOOLKIT, generation_fails: bool = False) -> None:
        """nvidia-ctk of version as the fake machines have it (fakehost.nvidia_ctk); with
        generation_fails, `cdi generate` fails as upstream does when it finds no device edits."""
        script = fakehost.nvidia_ctk(version, CDI_SPEC, "true" if generation_fails else "false")
        self.command("nvidia-ctk", script.removeprefix("#!/bin/bash\n"))

    def crictl(self, info: str, exit_code: int = 0) -> None:
        """crictl answering `crictl [flags] info` with info (the running runtime's, as crictl prints it)."""
        self.command("crictl", f'[ "${{!#}}" = info ] || exit 1\n{heredoc(info)}\nexit {exit_code}')

    def docker(self, info: str) -> None:
        """docker answering `docker info --format '{{json .}}'` with info (the running dockerd's)."""
        self.command("docker", f'[ "$*" = "info --format {{{{json .}}}}" ] || exit 1\n{heredoc(info)}')

    def device_nodes(self, nodes: dict[str, str] | None = None, proc_devices: str = PROC_DEVICES) -> None:
        """The NVIDIA device nodes under /dev (name -> MAJOR:MINOR; default DEVICE_NODES) as plain files,
        since mknod needs root and the script reads only their names, /proc/devices, and each node's
        /dev/char/MAJOR:MINOR link as nvidia-modprobe writes it (relative, ../nvidia0: symlink_char_dev)."""
        self.file("proc/devices", proc_devices)
        for name, number in (DEVICE_NODES if nodes is None else nodes).items():
            self.file(f"dev/{name}", "")
            self.dev_char_link(number, f"../{name}")

    def dev_char_link(self, number: str, target: str) -> None:
        """/dev/char/number as a symlink to target (relative to /dev/char), replacing what is there."""
        link = self.root / "dev/char" / number
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(target)

    def unlink_dev_char(self, *numbers: str) -> None:
        """Removes the /dev/char links of numbers ("195:0"), or every one when none is named: a machine
        whose NVIDIA device nodes udev never linked."""
        for number in numbers or tuple(DEVICE_NODES.values()):
            (self.root / "dev/char" / number).unlink(missing_ok=True)

    def kubelet(self, version: str) -> None:
        self.command("kubelet", f'echo "Kubernetes {version}"')

    def kubelet_socket(self) -> None:
        """A real unix socket where kubelet serves device-plugin registration."""
        self.unix_socket("var/lib/kubelet/device-plugins/kubelet.sock")

    def unix_socket(self, rel: str) -> None:
        """A real unix socket at /rel, as a listening daemon leaves it (a CRI socket, say)."""
        path = self.root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        cwd = os.getcwd()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.chdir(path.parent)  # bind() takes at most 107 bytes of path
            sock.bind(path.name)
        finally:
            os.chdir(cwd)
            sock.close()

    def kubelet_process(self, pid: int, *argv: str) -> None:
        """A running process as seen in /proc/PID/cmdline (NUL separated)."""
        path = self.root / f"proc/{pid}/cmdline"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")

    @classmethod
    def healthy(cls, base: Path, system_bin: Path) -> FakeNode:
        """Passes every check with --runtime containerd --expect-gpus 2."""
        node = cls(base, system_bin)
        node.file("etc/hostname", "gpu-node-1\n")
        node.healthy_nvidia_smi(GPU_LINES)
        # On PATH and where the toolkit's packages install it (command), beside the runtime the entry names, and
        # where the CDI specs' hooks run it from.
        node.nvidia_ctk()
        # The runtime the drop-in's BinaryName names, where the toolkit's packages install it.
        runtime = node.file(NVIDIA_RUNTIME, '#!/bin/bash\necho "NVIDIA Container Runtime version 1.17.8"\n')
        runtime.chmod(0o755)
        node.file("etc/containerd/config.toml", CONTAINERD_CONFIG)
        node.file("etc/containerd/conf.d/99-nvidia.toml", NVIDIA_DROPIN)
        node.file("etc/nvidia-container-runtime/config.toml", TOOLKIT_CONFIG)
        # The low-level runtime the nvidia runtime runs (config.toml's runtimes), where runc's packages put it.
        node.file("usr/bin/runc", fakehost.RUNC_STUB).chmod(0o755)
        node.device_nodes()
        # config dump merges the drop-in in, as the real containerd does.
        node.command("containerd", '[ "$*" = "config dump" ] || exit 1\ncat <<\'__END__\'\n' + NVIDIA_DROPIN + "__END__")
        node.kubelet("v1.30.2")
        node.kubelet_socket()
        node.file("var/lib/kubelet/kubeadm-flags.env", KUBEADM_FLAGS)
        return node

    # ------------------------------------------------------------- running

    def path_env(self) -> str:
        return f"{self.bin}:{self.system_bin}"

    def run(self, *args: str, env: dict[str, str] | None = None, with_root: bool = True, uid: int | None = None) -> Result:
        """Runs the script with args (plus --root), parses the one JSON object on stdout.
        With uid, runs it as that user (setpriv); the whole tree must then be reachable."""
        argv = [BASH, str(script_file()), *args]
        if uid is not None:
            argv = [
                shutil.which("setpriv") or "/usr/bin/setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--",
                *argv,
            ]
        if with_root:
            argv += ["--root", str(self.root)]
        started = time.monotonic()
        proc = self._spawn(argv, self.path_env(), env)
        return self._result(proc, time.monotonic() - started)

    def preflight(
        self, *extra: str, runtime: str = "containerd", gpus: int = 2, env: dict[str, str] | None = None, uid: int | None = None
    ) -> Result:
        return self.run("--runtime", runtime, "--expect-gpus", str(gpus), *extra, env=env, uid=uid)

    @property
    def remote_root(self) -> str:
        """Stands for the machine's /var/lib/gpu-nodes/preflight (the command lines take it as root)."""
        return str(self.base / "machine/var/lib/gpu-nodes/preflight")

    def copy_script(self) -> Path:
        """What the node's -preflight-script resource does: the parts directory, copied under remote_dir()."""
        target = Path(remote_dir(self.remote_root)) / SCRIPT_DIR.name
        shutil.copytree(SCRIPT_DIR, target)
        return target

    def run_command_line(self, command: str, stdin: str | bytes = b"", env: dict[str, str] | None = None) -> Result:
        """Runs command (with --root appended) as sshd runs a remote command, `bash -c`, with stdin;
        COMMAND_LINE_TOOLS are on PATH too, for the command line's own use."""
        started = time.monotonic()
        proc = self.spawn_command_line(command, stdin, env)
        return self._result(proc, time.monotonic() - started)

    def spawn_command_line(
        self, command: str, stdin: str | bytes = b"", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """run_command_line's process, for a test that expects no report (a refusal)."""
        tools = make_system_bin(self.base / "command-line-bin", COMMAND_LINE_TOOLS)
        argv = [BASH, "-c", f"{command} --root {shlex.quote(str(self.root))}"]
        return self._spawn(argv, f"{self.path_env()}:{tools}", env, stdin)

    def _spawn(
        self, argv: list[str], path: str, env: dict[str, str] | None, stdin: str | bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        full_env = {"PATH": path, "TMPDIR": str(self.base), **(env or {})}
        data = stdin.encode() if isinstance(stdin, str) else stdin
        return subprocess.run(argv, input=data, capture_output=True, env=full_env, timeout=60, check=False)

    @staticmethod
    def _result(proc: subprocess.CompletedProcess[bytes], seconds: float) -> Result:
        stdout, stderr = proc.stdout.decode(), proc.stderr.decode()
        return Result(proc.returncode, parse_one_object(stdout, stderr), stdout, stderr, seconds)


def parse_one_object(stdout: str, stderr: str = "") -> dict[str, Any]:
    """stdout must hold exactly one JSON object and nothing else."""
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"stdout is not one JSON object ({exc}):\n{stdout!r}\nstderr:\n{stderr}") from exc
    assert isinstance(report, dict), report
    return report
