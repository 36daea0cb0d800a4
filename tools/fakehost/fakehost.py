"""Fake GPU machines behind real OpenSSH servers, on loopback.

One implementation serves two users: ``tests/sshd.py`` (a throwaway server per test
module) and ``tools/fakehost/*.sh`` (long-lived machines for the e2e environment).

Each machine is a real ``/usr/sbin/sshd`` started inside its own mount and UTS
namespace (``unshare --mount --uts --propagation private``). In that namespace a
prepared tree is laid over ``/etc``, ``/var/lib``, ``/usr/local``, ``/usr/bin`` and ``/run``
as read-only overlayfs layers (the real files stay visible beneath), so whoever logs in sees a GPU
node: stub ``nvidia-smi``, ``nvidia-ctk``, ``containerd`` and ``kubelet`` on the default PATH,
``/usr/bin/nvidia-container-runtime`` and ``nvidia-ctk`` beside it, containerd configured for nvidia by a
drop-in, a kubelet device-plugin socket. ``MachineSpec(toolkit_install="operator")`` has the toolkit as
the GPU Operator's toolkit container installs it instead (``OPERATOR_TOOLKIT_ROOT``).
Nothing on the real filesystem changes, and the preflight script runs unchanged
with ``--root /``. One place is writable, as on a real machine: ``/var/lib/gpu-nodes``
(a tmpfs of the namespace, gone with its sshd), where preflight copies its script over SFTP
(``Subsystem sftp internal-sftp``). From outside, ``FakeHost.machine_path`` reads it.
Needs root, ``unshare`` (util-linux) and overlayfs.

The nvidia-smi stub reads a mode file that lives outside the overlays, so a
machine can be broken and healed without restarting its sshd (``set_mode``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
MODES = (
    "healthy",
    "driver",
    "other-model",
    "runtime-not-restarted",
    "reset-required",
    "cdi-generation",
    # What the stand-ins of NVIDIA's container programs (tools/fakehost/standins.py) answer; nvidia-smi and
    # preflight see a healthy machine in each.
    "persistence-mode-off",
    "p2p-disabled",
    "metrics-stopped",
    # NVIDIA's IMEX daemon (MachineSpec.imex_daemon): its service failed, or a peer left out of its nodes config.
    "imex-down",
    "imex-peer-missing",
)
# The GPU that mode reset-required faults (index; bus 00000000:08:00.0).
FAULTY_GPU = 1
# Directories the fake machine is laid over, relative to /.
OVERLAID = ("etc", "var/lib", "usr/local", "usr/bin", "run", "dev")
# The one writable place on the machine: a tmpfs in its namespace.
WRITABLE = "/var/lib/gpu-nodes"
READY_TIMEOUT_S = 10.0
SMI_DRIVER_ERROR = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)
NODE_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
# Real-format samples the fake machines answer with (tests/scripts/fixtures/README.md names each source).
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "scripts" / "fixtures"
TOOLKIT_CONFIG_PATH = "/etc/nvidia-container-runtime/config.toml"


# The container toolkit a healthy machine has: the first release that fixes every advisory.
HEALTHY_TOOLKIT = "1.19.1"
# Who installs the toolkit the runtime runs: its packages (/usr/bin, its config in /etc/nvidia-container-runtime), or
# the GPU Operator's toolkit container (OPERATOR_TOOLKIT_ROOT, its config beside its binaries).
TOOLKIT_INSTALLS = ("packages", "operator")
# Where the GPU Operator's toolkit container installs the toolkit: its values.yaml's toolkit.installDir, /usr/local/nvidia,
# plus "toolkit" (nvidia-container-toolkit cmd/nvidia-ctk-installer/main.go, toolkitRoot), and where it writes its
# config there (toolkit/toolkit.go, installToolkitConfig).
OPERATOR_TOOLKIT_ROOT = "/usr/local/nvidia/toolkit"
OPERATOR_TOOLKIT_CONFIG = f"{OPERATOR_TOOLKIT_ROOT}/.config/nvidia-container-runtime/config.toml"


@dataclass(frozen=True)
class MachineSpec:
    """What the fake machine looks like from inside."""

    hostname: str = "gpu-node"
    gpus: int = 4
    # R580, a long-term support branch NVIDIA patches (gpu_nodes/advisories.py, DRIVER_BRANCHES), at the
    # release that fixes every bulletin of 2026 there (5861's "Tesla | Linux(R580)" row): a newcomer's
    # first run shows no security warning. A test of an old or unpatched driver sets its own.
    driver: str = "580.178.04"
    # What nvidia-smi's header says the driver supports: 13.0 for the R580 branch.
    cuda_version: str = "13.0"
    gpu_name: str = "NVIDIA A100-SXM4-80GB"
    memory_mib: int = 81920
    # What `nvidia-smi --query-gpu=compute_cap` prints for it: 8.0 for the A100.
    compute_cap: str = "8.0"
    # A release open to none of NVIDIA's toolkit advisories (gpu_nodes/advisories.py): auto mode is jit-cdi.
    toolkit_version: str = HEALTHY_TOOLKIT
    # nvidia-container-runtime.mode in the toolkit's config.toml (its generated default: auto).
    toolkit_mode: str = "auto"
    kubelet_version: str = "v1.30.2"
    # Modes as many distros ship them: containerd's config 0600 and /var/lib/kubelet
    # 0750, root's. Only root (or sudo) can read them: see docs/machines.md, "Privileges".
    private_files: bool = False
    # Login users who may run anything as root through sudo without a password (NOPASSWD),
    # as cloud images set up their default user.
    sudoers: tuple[str, ...] = ()
    # The container toolkit hardened (isolation: strict) rather than as it ships.
    hardened_toolkit: bool = False
    # containerd resolves CDI devices: its drop-in sets enable_cdi = true (containerd 1.7 needs it) and the
    # running containerd has loaded it (crictl info: enableCDI), as NVIDIA's DRA driver needs.
    cdi: bool = False
    # containerd's default runtime: nvidia (`nvidia-ctk runtime configure --set-as-default`), or runc, as the
    # CDI path needs (k8s-device-plugin docs/cdi.md), NVIDIA's DRA driver's included.
    default_runtime: str = "nvidia"
    # Feature gates kubelet's config file sets (featureGates), e.g. (("DynamicResourceAllocation", False),).
    kubelet_feature_gates: tuple[tuple[str, bool], ...] = ()
    # Who installed the toolkit the runtime runs (TOOLKIT_INSTALLS): "operator" puts it under OPERATOR_TOOLKIT_ROOT,
    # points containerd's nvidia entry there, and leaves no nvidia-ctk on PATH.
    toolkit_install: str = "packages"
    # With toolkit_install "operator": an older toolkit of this version from the packages left in /usr/bin (on PATH,
    # with /etc's config.toml), which the runtime does not run; "" for none.
    stale_toolkit: str = ""

    @property
    def nvidia_runtime(self) -> str:
        """The nvidia-container-runtime containerd's nvidia entry names (BinaryName)."""
        return f"{OPERATOR_TOOLKIT_ROOT}/nvidia-container-runtime" if self.toolkit_install == "operator" else NVIDIA_RUNTIME

    # Each GPU's compute mode as `nvidia-smi -q` prints it: Default as a GPU ships; Exclusive_Process once
    # an MPS control daemon has set it; Prohibited or Exclusive_Thread set by someone else.
    compute_mode: str = "Default"
    # The driver's MPS programs in /usr/bin, as its compute utilities install them (Ubuntu's
    # nvidia-compute-utils-<branch>): what the container toolkit puts in an MPS control daemon's container.
    mps_programs: bool = True
    # A machine of a multi-node NVLink domain (GB200 NVL72 and its kin): every GPU's fabric trained (State Completed,
    # Status Success) in this clique, "<ClusterUUID>.<CliqueId>" (nvlink_machine); "" for none (Fabric N/A, as Ampere).
    nvlink_clique: str = ""
    # NVIDIA's IMEX daemon on the machine (IMEX_DAEMONS): "" none; "host" installed, its service active, its nodes
    # config listing `imex_peers`; "off" installed with its service disabled, as NVIDIA's DRA driver's ComputeDomains want.
    imex_daemon: str = ""
    imex_peers: tuple[str, ...] = ()
    # The IMEX channels the driver made (/dev/nvidia-caps-imex-channels/channel<N>, laid over /dev).
    imex_channels: tuple[int, ...] = ()
    # The GPU Operator's toolkit in NRI mode (nri_machine): no nvidia runtime entry, the runtime's NRI socket, the
    # management device's CDI spec.
    nri: bool = False


# Who runs the machine's IMEX daemon (MachineSpec.imex_daemon).
IMEX_DAEMONS = ("", "host", "off")
# The IMEX package's program and its config, as NVIDIA's IMEX guide lays them out ("Getting Started with IMEX",
# "IMEX Service Config Options"): the config names the nodes config (IMEX_NODE_CONFIG_FILE, here its default).
IMEX_PROGRAM = "/usr/bin/nvidia-imex"
IMEX_CONFIG = "/etc/nvidia-imex/config.cfg"
IMEX_NODES_CONFIG = "/etc/nvidia-imex/nodes_config.cfg"
IMEX_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
# The NRI socket the runtime serves (the NRI API's DefaultSocketPath; gpu-operator controllers/object_controls.go
# DefaultRuntimeNRISocketFile) and the management device's CDI spec the toolkit's installer writes in CDI mode
# (nvidia-container-toolkit cmd/nvidia-ctk-installer/toolkit/toolkit.go, generateCDISpec).
NRI_SOCKET = "/run/nri/nri.sock"
MANAGEMENT_CDI_SPEC = "/run/cdi/management.nvidia.com-gpu.yaml"
# The toolkit a GPU Operator in NRI mode runs: the first whose NRI plugin serves pods outside its own namespace.
NRI_TOOLKIT = "1.20.0"


def nvlink_machine(spec: MachineSpec, clique: str, peers: tuple[str, ...], channels: tuple[int, ...] = (0,)) -> MachineSpec:
    """The machine as a GB200 NVL72 tray looks to preflight: its fabric trained in `clique`, NVIDIA's IMEX daemon
    running and listing `peers`, and `channels` made (the device plugin's IMEX path)."""
    return replace(spec, nvlink_clique=clique, imex_daemon="host", imex_peers=peers, imex_channels=channels)


def nri_machine(spec: MachineSpec) -> MachineSpec:
    """The machine as the GPU Operator's toolkit leaves it in NRI mode (cdi.nriPluginEnabled): the toolkit under its
    root, no nvidia runtime in containerd's config, CDI on in the running containerd, its NRI socket, the management
    device's CDI spec; runc the default runtime."""
    spec = replace(spec, toolkit_install="operator", toolkit_version=NRI_TOOLKIT, toolkit_mode="cdi")
    return replace(spec, nri=True, cdi=True, default_runtime="runc")


def dra_ready(spec: MachineSpec) -> MachineSpec:
    """The machine as NVIDIA's DRA driver wants it (gpu_nodes/scripts/preflight/68-check-dra.sh): kubelet
    v1.34.2, an R580 driver (CUDA 13.0), CDI on in the running containerd. Each of these knobs, turned back,
    fails one dra-* check. runc stays containerd's default runtime, as the CDI path needs (`isolation`)."""
    return replace(spec, kubelet_version="v1.34.2", driver="580.95.05", cuda_version="13.0", cdi=True, default_runtime="runc")


# ------------------------------------------------------------------ keys


def ensure_key(path: Path, comment: str, key_type: str = "ed25519") -> None:
    """Creates a key pair at path once; later calls keep it (stable keys)."""
    if path.exists() and path.with_suffix(".pub").exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, path.with_suffix(".pub")):
        stale.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


def public_key_line(private_key: Path) -> str:
    """'ssh-ed25519 AAAA...' without the comment: the authorized_keys form that
    pulumi-command's connection.hostKey and a known_hosts entry both take."""
    key_type, blob = private_key.with_suffix(".pub").read_text().split()[:2]
    return f"{key_type} {blob}"


def scan_host_key(host: str, port: int, key_type: str = "ed25519") -> str:
    """The server's host key of one type as `ssh-keyscan -t TYPE` reads it off the wire,
    in the form an operator pins: 'ssh-ed25519 AAAA...'."""
    found = subprocess.run(
        ["ssh-keyscan", "-T", "5", "-p", str(port), "-t", key_type, host],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    lines = [line.split()[1:3] for line in found.splitlines() if line and not line.startswith("#")]
    if len(lines) != 1:
        raise RuntimeError(f"ssh-keyscan -t {key_type} {host}:{port} found {len(lines)} keys: {found!r}")
    return " ".join(lines[0])


def known_hosts_line(host: str, port: int, host_key: str) -> str:
    """A known_hosts entry pinning host_key for host:port."""
    name = host if port == 22 else f"[{host}]:{port}"
    return f"{name} {host_key}"


# --------------------------------------------------------- the fake machine


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def make_unix_socket(path: Path) -> None:
    """Leaves a real unix socket inode at path, as kubelet does.

    bind() takes at most 107 bytes of path, so it binds by a relative name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    cwd = os.getcwd()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(path.parent)
        sock.bind(path.name)
    finally:
        os.chdir(cwd)
        sock.close()


def pci_bus_id(index: int) -> str:
    """The PCI bus id nvidia-smi prints for the machine's GPU of this index (the fake machines put GPU i on bus i+7)."""
    return f"00000000:{index + 7:02X}:00.0"


def query_gpu_lines(spec: MachineSpec) -> str:
    """`nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader`: one line per GPU,
    each UUID derived from the machine's hostname and the GPU's index (stable across restarts)."""
    lines = []
    for index in range(spec.gpus):
        gpu_uuid = uuid.uuid5(uuid.NAMESPACE_DNS, f"{spec.hostname}.gpu{index}")
        lines.append(f"{index}, {spec.gpu_name}, GPU-{gpu_uuid}, {spec.driver}, {spec.memory_mib}")
    return "\n".join(lines)


def smi_list(query_lines: str) -> str:
    """`nvidia-smi -L` of the GPUs of --query-gpu lines (index, name, uuid, driver, memory), none in
    MIG mode: one line per GPU, as the recordings print it (tests/scripts/fixtures/nvidia-smi-L-*.txt)."""
    lines = []
    for line in query_lines.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 5:
            lines.append(f"GPU {fields[0]}: {', '.join(fields[1:-3])} (UUID: {fields[-3]})")
    return "\n".join(lines)


def smi_table(spec: MachineSpec) -> str:
    """The header of plain `nvidia-smi`, laid out as driver R550 prints it
    (tests/scripts/fixtures/nvidia-smi-a40-550.txt), with this machine's driver and CUDA version."""
    rule = "+" + "-" * 89 + "+"
    header = f"| NVIDIA-SMI {spec.driver:<22}Driver Version: {spec.driver:<15}CUDA Version: {spec.cuda_version:<9}|"
    return f"{rule}\n{header}\n|{'-' * 41}+{'-' * 24}+{'-' * 22}|"


def smi_q(spec: MachineSpec, reset_required: int | None = None) -> str:
    """`nvidia-smi -q`, cut to what preflight reads: per GPU its bus id, MIG mode (off), its reset
    status, recovery action, compute mode and remapped rows (healthy, laid out as the real H100 recording,
    tests/scripts/fixtures/nvidia-smi-q-h100-sxm5-fabric-completed.txt) and fabric, which an
    Ampere part reports as N/A (tests/scripts/fixtures/README.md names real samples). The GPU of
    index reset_required reports what an R570+ driver does after a fault the GPU must be reset
    for: Reset Required Yes and recovery action Reset."""
    blocks = [
        f"Driver Version                            : {spec.driver}\n"
        f"CUDA Version                              : {spec.cuda_version}\n"
    ]
    for index in range(spec.gpus):
        faulty = index == reset_required
        blocks.append(
            f"GPU {pci_bus_id(index)}\n"
            f"    Product Name                          : {spec.gpu_name}\n"
            "    MIG Mode\n"
            "        Current                           : Disabled\n"
            "        Pending                           : Disabled\n"
            "    GPU Reset Status\n"
            f"        Reset Required                    : {'Yes' if faulty else 'No'}\n"
            "        Drain and Reset Recommended       : No\n"
            f"    GPU Recovery Action                   : {'Reset' if faulty else 'None'}\n"
            f"    Compute Mode                          : {spec.compute_mode}\n"
            "    Remapped Rows\n"
            "        Correctable Error                 : 0\n"
            "        Uncorrectable Error               : 0\n"
            "        Pending                           : No\n"
            "        Remapping Failure Occurred        : No\n"
            + _fabric(spec)
        )
    return "\n".join(blocks)


def _fabric(spec: MachineSpec) -> str:
    """A GPU's Fabric section: N/A as Ampere prints it, or, on a machine of an NVLink domain, trained in its clique
    as the recorded H100 prints it (tests/scripts/fixtures/nvidia-smi-q-h100-sxm5-fabric-completed.txt: State,
    Status, CliqueId, ClusterUUID)."""
    if not spec.nvlink_clique:
        return "    Fabric\n        State                             : N/A\n        Status                            : N/A\n"
    cluster, clique = spec.nvlink_clique.rsplit(".", 1)
    return (
        "    Fabric\n"
        "        State                             : Completed\n"
        "        Status                            : Success\n"
        f"        CliqueId                          : {clique}\n"
        f"        ClusterUUID                       : {cluster}\n"
    )


def other_model(spec: MachineSpec) -> MachineSpec:
    """The machine with H100 PCIe cards in place of its GPUs: a machine in the wrong group."""
    return replace(spec, gpu_name="NVIDIA H100 PCIe", memory_mib=81559, compute_cap="9.0")


def _smi_answers(spec: MachineSpec, reset_required: int | None = None) -> str:
    caps = "\n".join([spec.compute_cap] * spec.gpus)
    return f"""case "$*" in
  *--query-gpu=compute_cap*)
    cat <<'EOF'
{caps}
EOF
    ;;
  *--query-gpu=*)
    cat <<'EOF'
{query_gpu_lines(spec)}
EOF
    ;;
  -q)
    cat <<'EOF'
{smi_q(spec, reset_required)}
EOF
    ;;
  -L)
    cat <<'EOF'
{smi_list(query_gpu_lines(spec))}
EOF
    ;;
  *)
    cat <<'EOF'
{smi_table(spec)}
EOF
    ;;
esac"""


def _nvidia_smi(spec: MachineSpec, mode_file: Path) -> str:
    return f"""#!/bin/bash
# Fake nvidia-smi (tools/fakehost). The mode file switches it between a healthy
# driver, one that no longer answers, other GPUs, and a GPU that must be reset; see tools/fakehost/break.sh.
mode=$(cat {shlex.quote(str(mode_file))} 2>/dev/null)
if [ "$mode" = driver ]; then
  echo {shlex.quote(SMI_DRIVER_ERROR)}
  exit 9
fi
if [ "$mode" = other-model ]; then
{_smi_answers(other_model(spec))}
  exit 0
fi
if [ "$mode" = reset-required ]; then
{_smi_answers(spec, reset_required=FAULTY_GPU)}
  exit 0
fi
{_smi_answers(spec)}
"""


# What crictl says to a user who may not use containerd's socket (root's, 0660).
CRICTL_DENIED = (
    'level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint '
    r"\"unix:///run/containerd/containerd.sock\": rpc error: code = Unavailable desc = connection error: "
    r'desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: permission denied\""'
)


def _crictl(
    mode_file: Path, enable_cdi: bool = False, default_runtime: str = "nvidia", binary: str = "", nvidia: bool = True
) -> str:
    """crictl answering `info` as the running containerd: nvidia loaded and the default, as the
    drop-in says; in mode runtime-not-restarted, what containerd still runs when nobody restarted
    it after `nvidia-ctk runtime configure` (runc, no nvidia), while its files say nvidia."""
    return f"""#!/bin/bash
# Fake crictl (tools/fakehost): only `crictl [flags] info` is simulated.
[ "${{!#}}" = info ] || {{ echo "fake crictl: only info is simulated" >&2; exit 1; }}
[ "$(id -u)" = 0 ] || {{ echo {shlex.quote(CRICTL_DENIED)} >&2; exit 1; }}
if [ "$(cat {shlex.quote(str(mode_file))} 2>/dev/null)" = runtime-not-restarted ]; then
  cat <<'EOF'
{crictl_info(systemd_cgroup=True)}
EOF
  exit 0
fi
cat <<'EOF'
{crictl_info(default_runtime=default_runtime, nvidia=nvidia, enable_cdi=enable_cdi, systemd_cgroup=True, binary=binary)}
EOF
"""


def _simple_stub(name: str, version_text: str, extra_case: str = "") -> str:
    return f"""#!/bin/bash
# Fake {name} (tools/fakehost).
case "$*" in
  --version | version) echo {shlex.quote(version_text)} ;;
{extra_case}  *) echo "fake {name}: only --version is simulated" >&2; exit 1 ;;
esac
"""


# The toolkit's CDI spec version for a spec of device nodes, mounts and hooks (the version upstream's
# generate test expects), and the one nvidia-ctk logs when every device it found is empty.
CDI_SPEC_VERSION = "0.5.0"
CDI_EMPTY_SPEC_VERSION = "0.3.0"
# What `nvidia-ctk cdi generate` logs and exits 1 with when the driver's devices are not found: its
# spec's merged "all" device (pkg/nvcdi/transform/merged-device.go) has no edits, and writing the spec
# through the CDI library refuses it (container-device-interface pkg/cdi/device.go validate, wrapped by
# pkg/cdi/spec.go; "failed to write spec" by nvidia-container-toolkit pkg/nvcdi/spec/spec.go, Save).
CDI_EMPTY_DEVICE_ERROR = 'failed to write spec: invalid CDI Spec: failed add device "all": invalid device, empty device edits'


def cdi_spec(uuids: list[str], driver: str) -> str:
    """The spec `nvidia-ctk cdi generate` writes for GPUs of these UUIDs (index order), shaped as the
    expected spec of upstream's TestGenerateSpec (cmd/nvidia-ctk/cdi/generate/generate_test.go):
    a device per GPU by index and by UUID (the default name strategies, as `nvidia-ctk cdi list`
    lists them), the merged "all" device, and the edits every device shares."""

    def device(name: str, nodes: list[str]) -> str:
        paths = "".join(f"            - path: {n}\n              hostPath: {n}\n" for n in nodes)
        shown = f'"{name}"' if name.isdigit() else name  # YAML quotes a name that reads as a number
        return f"    - name: {shown}\n      containerEdits:\n        deviceNodes:\n{paths}"

    nodes = [f"/dev/nvidia{i}" for i in range(len(uuids))]
    devices = [device(str(i), [n]) for i, n in enumerate(nodes)]
    devices += [device(u, [n]) for u, n in zip(uuids, nodes, strict=True)]
    devices.append(device("all", nodes))
    hook = "        - hookName: createContainer\n          path: /usr/bin/nvidia-cdi-hook\n          args:\n"
    return (
        f"---\ncdiVersion: {CDI_SPEC_VERSION}\nkind: nvidia.com/gpu\ndevices:\n{''.join(devices)}"
        "containerEdits:\n    env:\n        - NVIDIA_VISIBLE_DEVICES=void\n"
        "    deviceNodes:\n        - path: /dev/nvidiactl\n          hostPath: /dev/nvidiactl\n"
        f"    hooks:\n{hook}            - nvidia-cdi-hook\n            - enable-cuda-compat\n"
        f"            - --host-driver-version={driver}\n"
        f"{hook}            - nvidia-cdi-hook\n            - update-ldcache\n            - --folder\n"
        "            - /usr/lib/x86_64-linux-gnu\n"
        f"    mounts:\n        - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.{driver}\n"
        f"          containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.{driver}\n"
        "          options:\n            - ro\n            - nosuid\n            - nodev\n            - bind\n"
    )


def nvidia_ctk(version: str, spec: str, fails: str = "false") -> str:
    """nvidia-ctk answering `--version` (as 1.17.8 prints it) and `cdi generate [--output=FILE]` as
    upstream does (cmd/nvidia-ctk/cdi/generate/generate.go): it logs to stderr in logrus' text format
    (no terminal), writes spec to FILE (".yaml" added to a name without .yaml or .json, as the CDI
    library's writer does; no FILE: stdout) and exits 0; while the shell condition fails holds, it
    logs CDI_EMPTY_DEVICE_ERROR at level error, writes nothing and exits 1 (cmd/nvidia-ctk/main.go)."""
    log = 'log() { printf \'time="2025-06-02T09:14:03Z" level=%s msg="%s"\\n\' "$1" "$2" >&2; }'
    error = CDI_EMPTY_DEVICE_ERROR.replace('"', '\\"')
    return f"""#!/bin/bash
# Fake nvidia-ctk (tools/fakehost): --version and `cdi generate`.
{log}
case "$1 $2" in
  "--version "* | "version "*)
    echo {shlex.quote(f"NVIDIA Container Toolkit CLI version {version}")}
    echo "commit: 0123abc"
    ;;
  "cdi generate")
    shift 2
    output=''
    while [ $# -gt 0 ]; do
      case $1 in
        --output=*) output=${{1#--output=}} ;;
        --output) output=$2 && shift ;;
      esac
      shift
    done
    log info "Auto-detected mode as 'nvml'"
    if {fails}; then
      log info {shlex.quote(f"Generated CDI spec with version {CDI_EMPTY_SPEC_VERSION}")}
      log error {shlex.quote(error)}
      exit 1
    fi
    log info {shlex.quote(f"Generated CDI spec with version {CDI_SPEC_VERSION}")}
    case $output in
      '') cat ;;
      *.yaml | *.json) cat >"$output" ;;
      *) cat >"$output.yaml" ;;
    esac <<'EOF'
{spec}EOF
    ;;
  *) echo "fake nvidia-ctk: only --version and cdi generate are simulated" >&2; exit 1 ;;
esac
"""


_CRI = '[plugins."io.containerd.grpc.v1.cri".containerd'
# Where the toolkit's packages install the runtime, and the BinaryName nvidia-ctk writes for containerd.
NVIDIA_RUNTIME = "/usr/bin/nvidia-container-runtime"


def _options(runtime: str, systemd_cgroup: bool, binary: str = "") -> str:
    """A runtime's options table: BinaryName when given, SystemdCgroup = true on a machine whose kubelet uses the
    systemd cgroup driver (an unset SystemdCgroup is the runc shim's false, cgroupfs)."""
    keys = (f'  BinaryName = "{binary}"\n' if binary else "") + ("  SystemdCgroup = true\n" if systemd_cgroup else "")
    return f"\n{_CRI}.runtimes.{runtime}.options]\n{keys}" if keys else ""


def containerd_config(systemd_cgroup: bool = False) -> str:
    """/etc/containerd/config.toml: runc the default, importing conf.d."""
    return (
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
        f'{_CRI}]\n  default_runtime_name = "runc"\n\n'
        f'{_CRI}.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n' + _options("runc", systemd_cgroup)
    )


def _nvidia_runtime(systemd_cgroup: bool, binary: str = "") -> str:
    return f'{_CRI}.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n' + _options(
        "nvidia", systemd_cgroup, binary or NVIDIA_RUNTIME
    )


def _enable_cdi(cdi: bool) -> str:
    """The CRI plugin's enable_cdi = true, as `nvidia-ctk runtime configure --enable-cdi` writes it, when cdi."""
    return '[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n\n' if cdi else ""


def containerd_nvidia_dropin(
    systemd_cgroup: bool = False, cdi: bool = False, default_runtime: str = "nvidia", binary: str = ""
) -> str:
    """What `nvidia-ctk runtime configure --runtime=containerd --set-as-default` drops in: a copy of runc's entry
    (its SystemdCgroup included) with BinaryName set (pkg/config/engine/containerd/config.go, AddRuntimeWithOptions);
    with cdi, and --enable-cdi, CDI turned on. Without --set-as-default (`default_runtime` runc) it sets no default.
    `binary`: the BinaryName (NVIDIA_RUNTIME); the GPU Operator's toolkit container writes its own under its toolkit
    root (cmd/nvidia-ctk-installer/container/container.go, UpdateConfig: operator.GetRuntimes WithRoot)."""
    default = f'{_CRI}]\n  default_runtime_name = "nvidia"\n\n' if default_runtime == "nvidia" else ""
    return f"version = 2\n\n{_enable_cdi(cdi)}{default}" + _nvidia_runtime(systemd_cgroup, binary)


def containerd_dump(
    systemd_cgroup: bool = False, cdi: bool = False, default_runtime: str = "nvidia", binary: str = "", nvidia: bool = True
) -> str:
    """The two merged, as `containerd config dump` prints them; without `nvidia` (a toolkit in NRI mode, which
    configures no runtime), runc's entry alone and containerd's NRI on (containerd_nri_dropin)."""
    if not nvidia:
        return (
            'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
            f'{_enable_cdi(cdi)}{_NRI}{_CRI}]\n  default_runtime_name = "{default_runtime}"\n\n'
            f'{_CRI}.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n' + _options("runc", systemd_cgroup)
        )
    return (
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
        f'{_enable_cdi(cdi)}{_CRI}]\n  default_runtime_name = "{default_runtime}"\n\n'
        + _nvidia_runtime(systemd_cgroup, binary)
        + f'\n{_CRI}.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        + _options("runc", systemd_cgroup)
    )


# containerd 1.7's NRI, turned on (it is off by default there; containerd 2.0 has it on): the plugin's table with its
# socket, where the GPU Operator's toolkit container looks for it in NRI mode.
_NRI = '[plugins."io.containerd.nri.v1.nri"]\n  disable = false\n  socket_path = "/var/run/nri/nri.sock"\n\n'


def containerd_nri_dropin(cdi: bool = True) -> str:
    """A machine whose toolkit injects through NRI: a drop-in that turns containerd 1.7's NRI on and CDI, and no nvidia
    runtime (the toolkit's installer writes none in NRI mode)."""
    return f"version = 2\n\n{_enable_cdi(cdi)}{_NRI}"


# The healthy node's (tests/scripts/preflight_node.py), whose kubelet keeps its default cgroupfs driver.
CONTAINERD_CONFIG = containerd_config()
CONTAINERD_NVIDIA_DROPIN = containerd_nvidia_dropin()
CONTAINERD_DUMP = containerd_dump()

CONTAINERD_DUMP_DENIED = (
    "containerd: failed to load TOML from /etc/containerd/config.toml: open /etc/containerd/config.toml: permission denied"
)


def toolkit_config(mode: str = "auto", hardened: bool = False) -> str:
    """The toolkit's generated config.toml (fixtures/nvidia-container-toolkit-config.toml) with mode;
    hardened: as `nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=false
    --set accept-nvidia-visible-devices-as-volume-mounts=true` writes it, where a value that is not the
    default loses its comment (nvidia-container-toolkit internal/config/toml.go, commentDefaults)."""
    text = (FIXTURES / "nvidia-container-toolkit-config.toml").read_text()
    text = text.replace('\nmode = "auto"\n', f'\nmode = "{mode}"\n')
    if hardened:
        text = text.replace(
            "#accept-nvidia-visible-devices-as-volume-mounts = false", "accept-nvidia-visible-devices-as-volume-mounts = true"
        ).replace(
            "#accept-nvidia-visible-devices-envvar-when-unprivileged = true",
            "accept-nvidia-visible-devices-envvar-when-unprivileged = false",
        )
    return text


# The toolkit's config.toml as installed, and after NVIDIA's hardening (the isolation check reads both).
TOOLKIT_CONFIG = toolkit_config()
TOOLKIT_CONFIG_HARDENED = toolkit_config(hardened=True)


def operator_toolkit_config(mode: str = "auto", hardened: bool = False) -> str:
    """The config.toml the GPU Operator's toolkit container writes beside the toolkit it installs
    (nvidia-container-toolkit cmd/nvidia-ctk-installer/toolkit/toolkit.go, installToolkitConfig): the toolkit's
    default config (toolkit_config) with the installer's values set: its binaries under OPERATOR_TOOLKIT_ROOT
    (nvidia-container-cli.path, nvidia-ctk.path, nvidia-container-runtime-hook.path), the hook's
    skip-mode-detection (the flag's default, true), the driver root (here "/", a driver installed on the machine)
    and the low-level runtimes (the runtime's own, then main.go's defaultLowLevelRuntimes, runc and crun)."""
    root = OPERATOR_TOOLKIT_ROOT
    replaced = {
        '#path = "/usr/bin/nvidia-container-cli"': f'path = "{root}/nvidia-container-cli"',
        '#root = "/run/nvidia/driver"': 'root = "/"',
        'runtimes = ["docker-runc", "runc", "crun"]': 'runtimes = ["runc", "crun"]',
        'path = "nvidia-container-runtime-hook"\nskip-mode-detection = false': (
            f'path = "{root}/nvidia-container-runtime-hook"\nskip-mode-detection = true'
        ),
        'path = "nvidia-ctk"': f'path = "{root}/nvidia-ctk"',
    }
    text = toolkit_config(mode, hardened)
    for old, new in replaced.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def crictl_info(
    default_runtime: str = "runc", nvidia: bool = False, enable_cdi: bool = False, systemd_cgroup: bool = False, binary: str = ""
) -> str:
    """`crictl info` of a running containerd (fixtures/crictl-info-containerd-1.7.json, runc only)
    with an `nvidia` runtime (a copy of runc's, nvidia-container-runtime as its binary, the way
    `nvidia-ctk runtime configure` adds it), default_runtime, enable_cdi and runc's SystemdCgroup
    (the fixture's false, or true as on a machine whose kubelet uses systemd); `binary`: the nvidia entry's
    BinaryName (NVIDIA_RUNTIME, or the GPU Operator's). Printed as crictl
    prints it: indented by two, map keys sorted (Go's encoding/json)."""
    info = json.loads((FIXTURES / "crictl-info-containerd-1.7.json").read_text())
    containerd = info["config"]["containerd"]
    runtimes = containerd["runtimes"]
    runtimes["runc"]["options"]["SystemdCgroup"] = systemd_cgroup
    if nvidia:
        runtimes["nvidia"] = json.loads(json.dumps(runtimes["runc"]))
        runtimes["nvidia"]["options"]["BinaryName"] = binary or NVIDIA_RUNTIME
    containerd["runtimes"] = dict(sorted(runtimes.items()))
    containerd["defaultRuntimeName"] = default_runtime
    info["config"]["enableCDI"] = enable_cdi
    return json.dumps(info, indent=2)


def docker_info(default_runtime: str = "runc", nvidia: bool = False) -> str:
    """`docker info --format '{{json .}}'` (fixtures/docker-info.json, runc only) with the nvidia
    runtime of daemon.json (`nvidia-ctk runtime configure --runtime=docker`) and default_runtime:
    one line, map keys sorted, as Go's encoding/json writes it."""
    info = json.loads((FIXTURES / "docker-info.json").read_text())
    if nvidia:
        info["Runtimes"]["nvidia"] = {"path": "nvidia-container-runtime"}
    info["Runtimes"] = dict(sorted(info["Runtimes"].items()))
    info["DefaultRuntime"] = default_runtime
    return json.dumps(info, separators=(",", ":"))


# runc as the fake machines have it: preflight only looks for it on the PATH.
RUNC_STUB = _simple_stub("runc", "runc version 1.2.5")
# The driver's MPS programs (nvidia-container-toolkit pkg/nvcdi/driver-nvml.go, NewDriverBinariesDiscoverer).
MPS_PROGRAMS = ("nvidia-cuda-mps-control", "nvidia-cuda-mps-server")

KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
"""


def kubelet_config(feature_gates: tuple[tuple[str, bool], ...] = ()) -> str:
    """KUBELET_CONFIG with these featureGates (KubeletConfiguration's map of gate to bool)."""
    if not feature_gates:
        return KUBELET_CONFIG
    return KUBELET_CONFIG + "featureGates:\n" + "".join(f"  {gate}: {str(on).lower()}\n" for gate, on in feature_gates)


def build_machine(tree: Path, spec: MachineSpec, mode_file: Path) -> None:
    """Writes the layers laid over / (tree/etc, tree/var/lib, ...): a healthy node."""
    if tree.exists():
        shutil.rmtree(tree)
    sbin = tree / "usr/local/sbin"
    _write(sbin / "nvidia-smi", _nvidia_smi(spec, mode_file), 0o755)
    uuids = [line.split(", ")[2] for line in query_gpu_lines(spec).splitlines()]
    generation_fails = f'[ "$(cat {shlex.quote(str(mode_file))} 2>/dev/null)" = cdi-generation ]'
    _toolkit(tree, spec, nvidia_ctk(spec.toolkit_version, cdi_spec(uuids, spec.driver), generation_fails))
    # Like the real one, config dump fails when it may not read the config.
    nvidia = not spec.nri
    dump = (
        "  'config dump')\n"
        f"    [ -r /etc/containerd/config.toml ] || {{ echo {shlex.quote(CONTAINERD_DUMP_DENIED)} >&2; exit 1; }}\n"
        f"    cat <<'EOF'\n{containerd_dump(True, spec.cdi, spec.default_runtime, spec.nvidia_runtime, nvidia)}EOF\n    ;;\n"
    )
    _write(sbin / "containerd", _simple_stub("containerd", "containerd v1.7.27 fakehost", dump), 0o755)
    _write(sbin / "crictl", _crictl(mode_file, spec.cdi, spec.default_runtime, spec.nvidia_runtime, nvidia), 0o755)
    _write(sbin / "kubelet", _simple_stub("kubelet", f"Kubernetes {spec.kubelet_version}"), 0o755)
    # The low-level runtime the nvidia runtime runs (config.toml's runtimes: docker-runc, runc, crun).
    _write(tree / "usr/bin/runc", RUNC_STUB, 0o755)
    if spec.mps_programs:
        # Preflight's mps check looks for them where the container toolkit does; nothing runs them here.
        for program in MPS_PROGRAMS:
            _write(tree / "usr/bin" / program, _simple_stub(program, f"fake {program}"), 0o755)
    # /dev and /proc are not laid over: preflight's dev-char-links check judges the real host's NVIDIA
    # device nodes (none on a machine without NVIDIA GPUs: nothing to link) and /proc/devices.
    # kubelet uses the systemd cgroup driver (KUBELET_CONFIG): so do runc and the nvidia runtime.
    _write(tree / "etc/containerd/config.toml", containerd_config(systemd_cgroup=True))
    if spec.nri:
        _nri(tree, uuids)
    else:
        dropin = containerd_nvidia_dropin(True, spec.cdi, spec.default_runtime, spec.nvidia_runtime)
        _write(tree / "etc/containerd/conf.d/99-nvidia.toml", dropin)
    _imex(tree, spec, mode_file)
    flags = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n'
    _write(tree / "var/lib/kubelet/kubeadm-flags.env", flags)
    _write(tree / "var/lib/kubelet/config.yaml", kubelet_config(spec.kubelet_feature_gates))
    make_unix_socket(tree / "var/lib/kubelet/device-plugins/kubelet.sock")
    if spec.private_files:
        for private in (tree / "etc/containerd/config.toml", tree / "etc/containerd/conf.d/99-nvidia.toml"):
            private.chmod(0o600)
        (tree / "var/lib/kubelet").chmod(0o750)
    if spec.sudoers:
        rules = "".join(f"{user} ALL=(ALL) NOPASSWD: ALL\n" for user in spec.sudoers)
        _write(tree / "etc/sudoers.d/90-gpu-nodes-fakehost", rules, 0o440)
    # Where preflight copies its script: a tmpfs is mounted here (see enter), the rest is read-only.
    (tree / WRITABLE.lstrip("/")).mkdir(parents=True, mode=0o755)
    # sshd's privilege-separation directory; usually made by the service unit.
    (tree / "run/sshd").mkdir(parents=True, mode=0o755)
    if not mode_file.exists():
        set_mode(mode_file, "healthy")


def _nri(tree: Path, uuids: list[str]) -> None:
    """What the GPU Operator's toolkit leaves in NRI mode besides the toolkit: containerd's NRI on (its drop-in), the
    socket containerd serves it on, and the management device's CDI spec (its devices: every GPU)."""
    _write(tree / "etc/containerd/conf.d/10-nri.toml", containerd_nri_dropin())
    make_unix_socket(tree / NRI_SOCKET.lstrip("/"))
    spec = cdi_spec(uuids, "").replace("kind: nvidia.com/gpu", "kind: management.nvidia.com/gpu")
    _write(tree / MANAGEMENT_CDI_SPEC.lstrip("/"), spec)


# NVIDIA's IMEX config as its package ships it, cut to the keys the IMEX guide documents ("IMEX Service Config
# Options") and laid out as kubernetes-sigs/dra-driver-nvidia-gpu templates/compute-domain-daemon-config.tmpl.cfg
# (a copy of the package's file with the driver's values): KEY=VALUE lines, # comments.
IMEX_CONFIG_TEXT = """# NVIDIA IMEX configuration file.
# Note: This configuration file is read during IMEX startup. So, IMEX
# service restart is required for new settings to take effect.
LOG_LEVEL=4
LOG_FILE_NAME=/var/log/nvidia-imex.log
DAEMONIZE=1
BIND_INTERFACE_IP=
SERVER_PORT=50000
IMEX_NODE_CONFIG_FILE=/etc/nvidia-imex/nodes_config.cfg
IMEX_WAIT_FOR_QUORUM=RECOVERY
IMEX_CMD_ENABLED=0
"""


def _imex(tree: Path, spec: MachineSpec, mode_file: Path) -> None:
    """NVIDIA's IMEX daemon (MachineSpec.imex_daemon): its program, config and nodes config, and a systemctl that
    answers `is-active nvidia-imex` for its service (failed in mode imex-down); the nodes config is a link to a file of
    the machine's state, which set_mode rewrites (a peer left out in mode imex-peer-missing). The channels the driver
    made, as files under /dev (preflight reads only their names)."""
    if spec.imex_daemon not in IMEX_DAEMONS:
        raise ValueError(f"imex_daemon must be one of {IMEX_DAEMONS}, not {spec.imex_daemon!r}")
    for channel in spec.imex_channels:
        _write(tree / IMEX_CHANNEL_DIR.lstrip("/") / f"channel{channel}", "")
    if not spec.imex_daemon:
        return
    _write(tree / IMEX_PROGRAM.lstrip("/"), _simple_stub("nvidia-imex", f"IMEX version {spec.driver}"), 0o755)
    _write(tree / IMEX_CONFIG.lstrip("/"), IMEX_CONFIG_TEXT)
    peers = mode_file.parent / "imex-peers"
    _write(peers, "".join(f"{peer}\n" for peer in spec.imex_peers))
    nodes = tree / IMEX_NODES_CONFIG.lstrip("/")
    nodes.parent.mkdir(parents=True, exist_ok=True)
    nodes.symlink_to(mode_file.parent / "imex-nodes-config")
    _imex_nodes(mode_file.parent, "healthy")
    active = "active" if spec.imex_daemon == "host" else "inactive"
    _write(
        tree / "usr/local/sbin/systemctl",
        f"""#!/bin/bash
# Fake systemctl (tools/fakehost): only `systemctl is-active nvidia-imex` is simulated.
[ "$*" = "is-active nvidia-imex" ] || {{ echo "fake systemctl: only is-active nvidia-imex is simulated" >&2; exit 1; }}
state={active}
[ "$state" = active ] && [ "$(cat {shlex.quote(str(mode_file))} 2>/dev/null)" = imex-down ] && state=failed
echo "$state"
[ "$state" = active ]
""",
        0o755,
    )


def _imex_nodes(state: Path, mode: str) -> None:
    """The IMEX daemon's nodes config in the machine's state: every peer, or, in mode imex-peer-missing, all but the last."""
    peers = (state / "imex-peers").read_text().splitlines()
    kept = peers[:-1] if mode == "imex-peer-missing" else peers
    _write(state / "imex-nodes-config", "".join(f"{peer}\n" for peer in kept))


def _toolkit(tree: Path, spec: MachineSpec, ctk: str) -> None:
    """The container toolkit: nvidia-ctk (`ctk`) beside the nvidia-container-runtime containerd's entry names, and its
    config.toml. From the packages: both in /usr/bin, nvidia-ctk also among the stubs of /usr/local/sbin (on PATH), the
    config in /etc/nvidia-container-runtime. From the GPU Operator's toolkit container: under OPERATOR_TOOLKIT_ROOT,
    its config beside them (OPERATOR_TOOLKIT_CONFIG); with `stale_toolkit`, an older packaged one in /usr/bin too."""
    if spec.toolkit_install not in TOOLKIT_INSTALLS:
        raise ValueError(f"toolkit_install must be one of {TOOLKIT_INSTALLS}, not {spec.toolkit_install!r}")
    if spec.toolkit_install == "packages":
        _write(tree / "usr/local/sbin/nvidia-ctk", ctk, 0o755)
        _toolkit_files(tree, "/usr/bin", spec.toolkit_version, ctk)
        _write(tree / TOOLKIT_CONFIG_PATH.lstrip("/"), toolkit_config(spec.toolkit_mode, spec.hardened_toolkit))
        return
    _toolkit_files(tree, OPERATOR_TOOLKIT_ROOT, spec.toolkit_version, ctk)
    _write(tree / OPERATOR_TOOLKIT_CONFIG.lstrip("/"), operator_toolkit_config(spec.toolkit_mode, spec.hardened_toolkit))
    if spec.stale_toolkit:
        stale = ctk.replace(f"version {spec.toolkit_version}", f"version {spec.stale_toolkit}")
        _toolkit_files(tree, "/usr/bin", spec.stale_toolkit, stale)
        _write(tree / TOOLKIT_CONFIG_PATH.lstrip("/"), toolkit_config())


def _toolkit_files(tree: Path, directory: str, version: str, ctk: str) -> None:
    """nvidia-ctk and nvidia-container-runtime of `version` in `directory` (on the machine)."""
    place = tree / directory.lstrip("/")
    _write(place / "nvidia-ctk", ctk, 0o755)
    runtime = _simple_stub("nvidia-container-runtime", f"NVIDIA Container Runtime version {version}")
    _write(place / "nvidia-container-runtime", runtime, 0o755)


def set_mode(mode_file: Path, mode: str) -> None:
    """healthy; driver: nvidia-smi then fails as with a lost driver; other-model: it reports other GPUs;
    runtime-not-restarted: the running containerd (crictl info) has not loaded the nvidia drop-in;
    reset-required: its GPU FAULTY_GPU reports Reset Required and recovery action Reset;
    cdi-generation: `nvidia-ctk cdi generate` finds no device edits and fails, as upstream does;
    imex-down: the nvidia-imex service has failed; imex-peer-missing: its nodes config lacks the last peer.
    For the programs NVIDIA's images run in a pod on the machine (tools/fakehost/standins.py):
    persistence-mode-off: `dcgmi diag` fails its software test on every GPU (persistence mode disabled);
    p2p-disabled: all_reduce_perf measures the bus bandwidth of a recorded run without peer-to-peer;
    metrics-stopped: dcgm-exporter's page has no GPU field lines."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    mode_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = mode_file.with_suffix(".tmp")
    tmp.write_text(mode + "\n")
    tmp.replace(mode_file)  # atomic: a running nvidia-smi never reads half a word
    if (mode_file.parent / "imex-peers").exists():
        _imex_nodes(mode_file.parent, mode)


# ---------------------------------------------------------------- the sshd

HOST_KEY_TYPES = ("ed25519", "ecdsa", "rsa")


SSHD_CONFIG = """# Generated by tools/fakehost: a throwaway server for a fake GPU machine.
ListenAddress {host}:{port}
{host_keys}
PidFile {pid_file}
AuthorizedKeysFile {authorized_keys}
# sshd reads AuthorizedKeysFile as the user logging in, who may not reach the state
# dir (tests log in as a throwaway non-root user too); the command runs as root.
AuthorizedKeysCommand /bin/cat {authorized_keys}
AuthorizedKeysCommandUser root
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UseDNS no
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
Subsystem sftp internal-sftp
# The stubs live in /usr/local/sbin, which sshd's default PATH gives root only.
SetEnv PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""


@dataclass
class FakeHost:
    """One fake machine: its state directory, address and what it looks like."""

    state: Path
    host: str
    port: int
    spec: MachineSpec
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def host_key_files(self) -> dict[str, Path]:
        """One host key per type, as a stock sshd has, so that clients must pick the pinned one."""
        return {key_type: self.state / f"ssh_host_{key_type}_key" for key_type in HOST_KEY_TYPES}

    @property
    def config_file(self) -> Path:
        return self.state / "sshd_config"

    @property
    def log_file(self) -> Path:
        return self.state / "sshd.log"

    @property
    def pid_file(self) -> Path:
        return self.state / "pid"

    @property
    def mode_file(self) -> Path:
        return self.state / "mode"

    @property
    def machine(self) -> Path:
        return self.state / "machine"

    def host_key(self, key_type: str = "ed25519") -> str:
        return public_key_line(self.host_key_files[key_type])

    def prepare(self, client_public_key: str) -> None:
        """Host key (made once, reused), authorized_keys, sshd_config, machine tree."""
        _check_overlay_safe(self.state)
        self.state.mkdir(parents=True, exist_ok=True)
        for key_type, key_file in self.host_key_files.items():
            ensure_key(key_file, f"fakehost-{self.spec.hostname}", key_type)
        _write(self.state / "authorized_keys", client_public_key.strip() + "\n", 0o600)
        config = SSHD_CONFIG.format(
            host=self.host,
            port=self.port,
            host_keys="\n".join(f"HostKey {key_file}" for key_file in self.host_key_files.values()),
            pid_file=self.state / "sshd.pid",
            authorized_keys=self.state / "authorized_keys",
        )
        _write(self.config_file, config)
        build_machine(self.machine, self.spec, self.mode_file)

    def start(self) -> int:
        """Starts sshd in its namespaces, detached; returns its pid once it accepts."""
        command = [
            "unshare", "--mount", "--uts", "--propagation", "private", "--",
            sys.executable, str(Path(__file__).resolve()), "_enter",
            "--machine", str(self.machine), "--stage", str(self.state / "stage"),
            "--hostname", self.spec.hostname, "--config", str(self.config_file),
        ]  # fmt: skip
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        self._proc = proc
        # unshare and the _enter step exec in place: this pid is sshd's.
        self.pid_file.write_text(f"{proc.pid}\n")
        try:
            _wait_until_listening(proc, self.host, self.port, self.log_file)
        except RuntimeError:
            self.stop()
            raise
        return proc.pid

    def running_pid(self) -> int | None:
        """The pid of this host's sshd if it still runs (checked by its config path)."""
        try:
            pid = int(self.pid_file.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if str(self.config_file).encode() in cmdline else None

    def machine_path(self, path: str) -> Path:
        """path as the machine sees it (its mounts included), read from outside through its sshd's /proc root."""
        pid = self.running_pid()
        if pid is None:
            raise RuntimeError(f"sshd of {self.state} is not running")
        return Path(f"/proc/{pid}/root") / path.lstrip("/")

    def stop(self) -> bool:
        """Stops this host's sshd (its listener; open sessions end by themselves)."""
        pid = self.running_pid()
        self.pid_file.unlink(missing_ok=True)
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        if self._proc is not None and self._proc.pid == pid:
            self._proc.wait()
        return True


def _check_overlay_safe(path: Path) -> None:
    # overlayfs takes lowerdir=a:b, so a ':' or ',' in the path would split it.
    if re.search(r"[:,\\]", str(path.resolve())):
        raise ValueError(f"fakehost state path {path} may not contain ':', ',' or '\\'")


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def _wait_until_listening(proc: subprocess.Popen[bytes], host: str, port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}:\n{_tail(log)}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"sshd not listening on {host}:{port} after {READY_TIMEOUT_S}s:\n{_tail(log)}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def free_port(host: str) -> int:
    """A port nothing listens on right now (sshd may still race for it: retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# -------------------------------------------- inside the namespace: _enter


def _mount_points() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        raw = line.split()[4]
        points.append(re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1), 8)), raw))
    return points


def _submounts(target: str) -> list[str]:
    """Mounts below target, outermost only (moving one moves what sits on it)."""
    below = sorted({p for p in _mount_points() if p.startswith(target + "/")})
    return [p for p in below if not any(p.startswith(q + "/") for q in below if q != p)]


MS_RDONLY = 0x1
MS_MOVE = 0x2000


def _mount(source: str, target: str, fstype: str | None = None, flags: int = 0, data: str | None = None) -> None:
    # mount(2) itself: mount(8) reports a move onto a read-only overlay as failed
    # (exit 32) after doing it, when it tries to touch the target afterwards.
    libc = ctypes.CDLL(None, use_errno=True)
    args = [None if v is None else v.encode() for v in (source, target, fstype)]
    if libc.mount(*args, ctypes.c_ulong(flags), None if data is None else data.encode()) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {source} on {target}: {os.strerror(errno)}")


def _overlay(layer: Path, target: str, stage: Path) -> None:
    """Lays layer over target, read-only; mounts under target stay visible."""
    kept = []
    for index, point in enumerate(_submounts(target)):
        parked = stage / f"{target.strip('/').replace('/', '_')}-{index}"
        parked.mkdir(parents=True, exist_ok=True)
        try:
            _mount(point, str(parked), flags=MS_MOVE)
            kept.append((parked, point))
        except OSError as exc:
            print(f"fakehost: {point} stays hidden under the fake {target}: {exc}", file=sys.stderr)
    _mount("fakehost", target, "overlay", MS_RDONLY, f"lowerdir={layer}:{target}")
    for parked, point in kept:
        _mount(str(parked), point, flags=MS_MOVE)


def enter(machine: Path, stage: Path, hostname: str, config: Path) -> None:
    """Runs as the namespace's first process: lays the machine over /, becomes sshd."""
    for rel in OVERLAID:
        # /dev only where the machine lays something over it (IMEX channels): its submounts are moved back on top.
        if (machine / rel).is_dir():
            _overlay(machine / rel, "/" + rel, stage)
    _mount("fakehost", WRITABLE, "tmpfs", 0, "mode=0755,size=16m")
    socket.sethostname(hostname)
    os.execv(str(SSHD), [str(SSHD), "-D", "-e", "-f", str(config)])


# ------------------------------------------------- the e2e machines (CLI)


REPO = Path(__file__).resolve().parents[2]
STATE = REPO / ".state" / "fakehosts"
CLIENT_KEY = STATE / "id_ed25519"
E2E_PORT = 2222
E2E_USER = "root"


def _valid_name(name: str) -> str:
    if not NODE_NAME_RE.match(name):
        raise SystemExit(f"fakehost: {name!r} is not a valid node name")
    return name


def _e2e_host(name: str) -> FakeHost:
    state = STATE / _valid_name(name)
    try:
        address = (state / "address").read_text().strip()
    except FileNotFoundError:
        raise SystemExit(f"fakehost: no machine {name!r}; start it with tools/fakehost/up.sh") from None
    return FakeHost(state=state, host=address, port=E2E_PORT, spec=MachineSpec(hostname=name))


def _assign_address(name: str) -> None:
    """Node i gets 127.0.10.i, once: the address stays with the node across restarts."""
    state = STATE / _valid_name(name)
    if (state / "address").exists():
        return
    taken = {p.read_text().strip() for p in STATE.glob("*/address")}
    for i in range(1, 255):
        if f"127.0.10.{i}" not in taken:
            _write(state / "address", f"127.0.10.{i}\n")
            return
    raise SystemExit("fakehost: all of 127.0.10.1-254 are taken")


def _known_nodes() -> list[str]:
    return sorted(p.parent.name for p in STATE.glob("*/address"))


def _entry(host: FakeHost) -> dict[str, object]:
    return {
        "name": host.spec.hostname,
        "sshHost": host.host,
        "sshPort": host.port,
        "sshUser": E2E_USER,
        # What docs/configuration.md tells operators to pin: `ssh-keyscan -t ed25519 HOST`.
        "hostKey": scan_host_key(host.host, host.port),
    }


def _write_hosts_json() -> list[dict[str, object]]:
    running = [h for h in map(_e2e_host, _known_nodes()) if h.running_pid()]
    entries = [_entry(h) for h in sorted(running, key=lambda h: tuple(map(int, h.host.split("."))))]
    _write(STATE / "hosts.json", json.dumps(entries, indent=2) + "\n")
    return entries


def cmd_up(
    names: list[str],
    dra: bool = False,
    toolkit_install: str = "packages",
    nvlink: str = "",
    nri: bool = False,
    other_gpus: bool = False,
) -> None:
    """Start the machines; with `dra`, each as NVIDIA's DRA driver wants it (`dra_ready`); `toolkit_install`:
    who installed the toolkit the runtime runs (TOOLKIT_INSTALLS). With `nvlink` (a clique, `<ClusterUUID>.<CliqueId>`)
    the machines are one NVLink domain of that clique (`nvlink_machine`): each runs NVIDIA's IMEX daemon listing all of
    them (their addresses) and has channel 0, or, with `dra`, has the daemon installed and disabled and no channel, as
    the DRA driver's ComputeDomains want. With `nri`, each is set up as the GPU Operator's NRI mode leaves it
    (`nri_machine`). With `other_gpus`, each holds the other model's GPUs (`other_model`: H100 PCIe, a Hopper part
    NVIDIA's DRA driver can split by MIG on demand)."""
    ensure_key(CLIENT_KEY, "fakehost-client")
    client_public = CLIENT_KEY.with_suffix(".pub").read_text()
    for name in names:
        _assign_address(name)
    peers = tuple(_e2e_host(name).host for name in names)
    for name in names:
        host = _e2e_host(name)
        if dra:
            host = replace(host, spec=dra_ready(host.spec))
        host = replace(host, spec=replace(host.spec, toolkit_install=toolkit_install))
        if nvlink and dra:
            host = replace(host, spec=replace(host.spec, nvlink_clique=nvlink, imex_daemon="off"))
        elif nvlink:
            host = replace(host, spec=nvlink_machine(host.spec, nvlink, peers))
        if nri:
            host = replace(host, spec=nri_machine(host.spec))
        if other_gpus:
            host = replace(host, spec=other_model(host.spec))
        if host.running_pid():
            print(f"fakehost: {name} already up on {host.host}:{host.port}", file=sys.stderr)
            continue
        host.prepare(client_public)
        pid = host.start()
        print(f"fakehost: {name} up on {host.host}:{host.port} (sshd pid {pid})", file=sys.stderr)
    print(json.dumps(_write_hosts_json(), indent=2))


def cmd_break(name: str, mode: str) -> None:
    host = _e2e_host(name)
    set_mode(host.mode_file, mode)
    print(f"fakehost: {name} is now {mode}", file=sys.stderr)


def cmd_down(names: list[str] | None = None) -> None:
    """Stops the named machines (all of them without names)."""
    for name in names or _known_nodes():
        if _e2e_host(name).stop():
            print(f"fakehost: {name} stopped", file=sys.stderr)
    if STATE.exists():
        _write_hosts_json()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="fakehost", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    upper = sub.add_parser("up")
    upper.add_argument("--dra", action="store_true", help="machines as NVIDIA's DRA driver wants them")
    upper.add_argument(
        "--toolkit", choices=TOOLKIT_INSTALLS, default="packages", help="who installed the toolkit the runtime runs"
    )
    upper.add_argument("--nvlink", default="", metavar="CLIQUE", help="the machines are one NVLink domain of this clique")
    upper.add_argument("--nri", action="store_true", help="the toolkit injects through its NRI plugin (the Operator's NRI mode)")
    upper.add_argument("--other-gpus", action="store_true", help="H100 PCIe GPUs in place of the A100s (other_model)")
    upper.add_argument("nodes", nargs="+")
    breaker = sub.add_parser("break")
    breaker.add_argument("node")
    breaker.add_argument("mode", choices=MODES)
    downer = sub.add_parser("down")
    downer.add_argument("nodes", nargs="*")
    inner = sub.add_parser("_enter")  # internal: see FakeHost.start
    for flag in ("--machine", "--stage", "--config"):
        inner.add_argument(flag, type=Path, required=True)
    inner.add_argument("--hostname", required=True)
    args = parser.parse_args(argv)
    if args.command == "up":
        cmd_up(args.nodes, args.dra, args.toolkit, args.nvlink, args.nri, args.other_gpus)
    elif args.command == "break":
        cmd_break(args.node, args.mode)
    elif args.command == "down":
        cmd_down(args.nodes)
    else:
        enter(args.machine, args.stage, args.hostname, args.config)


if __name__ == "__main__":
    main(sys.argv[1:])
