"""The dev-char-links check (67-check-dev-char.sh): where runc runs the pods with systemd cgroups, every
NVIDIA device node needs its /dev/char/MAJOR:MINOR link, or running pods lose their GPUs at the next
`systemctl daemon-reload` (NVIDIA's container toolkit troubleshooting guide; runc issue 3708).

The healthy node has the device nodes of its 2 GPUs (plain files: mknod needs root), /proc/devices and
each node's link as nvidia-modprobe writes it (FakeNode.device_nodes), runc in /usr/bin and kubelet's
default cgroup driver, cgroupfs; the rows that judge the links give kubelet the systemd driver and the
nvidia runtime SystemdCgroup = true, as nvidia-ctk writes it when runc's entry has it."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .machines import NVIDIA_RUNTIME, containerd_dropin, kubelet_systemd, nvidia_dropin
from .preflight_node import DEVICE_NODES, FAILED_EXIT, PASSED_EXIT, PROC_DEVICES, TOOLKIT_CONFIG, FakeNode

FIX = "nvidia-ctk system create-dev-char-symlinks --create-all"
SYSTEMD_KUBELET = "kubelet cgroupDriver systemd in /var/lib/kubelet/config.yaml"
SYSTEMD_ENTRY = "the nvidia runtime's SystemdCgroup = true (read containerd config dump)"
TOOLKIT_CONFIG_PATH = "etc/nvidia-container-runtime/config.toml"


def then(*steps):
    return lambda node: [step(node) for step in steps]


def systemd(node: FakeNode) -> None:
    """kubelet and the nvidia runtime on the systemd cgroup driver, as a kubeadm machine with nvidia-ctk has them."""
    kubelet_systemd(node)
    containerd_dropin(nvidia_dropin(systemd_cgroup=True))(node)


def unlinked(*numbers: str):
    return lambda node: node.unlink_dev_char(*numbers)


def link(number: str, target: str):
    return lambda node: node.dev_char_link(number, target)


def device_file(name: str):
    """One more device node under /dev, with no link."""
    return lambda node: node.file(f"dev/{name}", "")


def proc_devices(text: str):
    return lambda node: node.file("proc/devices", text)


def runtimes(value: str):
    """config.toml's nvidia-container-runtime.runtimes set to value (a TOML array)."""
    line = 'runtimes = ["docker-runc", "runc", "crun"]'
    assert line in TOOLKIT_CONFIG, "the toolkit's config.toml no longer lists its runtimes"
    return lambda node: node.file(TOOLKIT_CONFIG_PATH, TOOLKIT_CONFIG.replace(line, f"runtimes = {value}"))


def crun_only(node: FakeNode) -> None:
    """crun where runc was: the first of the toolkit's runtimes on the PATH is then crun."""
    node.remove("usr/bin/runc")
    node.file("usr/bin/crun", "#!/bin/bash\n").chmod(0o755)


def no_runtime_settings(node: FakeNode) -> None:
    """Neither kubelet's settings nor the nvidia runtime's entry: containerd without the nvidia drop-in."""
    node.remove("var/lib/kubelet/kubeadm-flags.env")
    node.remove("etc/containerd/conf.d/99-nvidia.toml")
    node.command("containerd", '[ "$*" = "config dump" ] || exit 1\necho "version = 2"')


# What `nvidia-ctk runtime configure --runtime=crio` writes (pkg/config/engine/crio/crio.go, AddRuntimeWithOptions).
CRIO_NVIDIA = f'[crio.runtime.runtimes.nvidia]\nruntime_path = "{NVIDIA_RUNTIME}"\nruntime_type = "oci"\n'


def crio(node: FakeNode) -> None:
    """A CRI-O machine (no containerd) whose crio.conf leaves cgroup_manager at CRI-O's default, systemd."""
    node.drop_command("containerd")
    node.remove("etc/containerd")
    node.file("etc/crio/crio.conf", "[crio.runtime]\n")
    node.file("etc/crio/crio.conf.d/99-nvidia.toml", CRIO_NVIDIA)


def no_device_nodes(node: FakeNode) -> None:
    node.remove("dev")


# The nodes in the order the script lists them: /dev's names sorted as bytes (LC_ALL=C), then nvidia-caps'.
EVERY_NODE = "/dev/nvidia-modeset, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia0, /dev/nvidia1, /dev/nvidiactl"

CASES = [
    # where it is not judged
    CheckCase(
        "kubelet's default cgroupfs driver and an entry without SystemdCgroup are not judged, and say so",
        unlinked(),
        exit=PASSED_EXIT,
        ok=True,
        starts="not judged: cgroupfs (the nvidia runtime's SystemdCgroup unset (read containerd config dump), "
        "kubelet's default, cgroupfs (no cgroupDriver in its flags or config))",
        says=("only runc with systemd cgroups loses devices on a daemon-reload",),
        never=("/dev/char/",),
    ),
    CheckCase(
        "crun, the toolkit's first low-level runtime on the PATH, is not judged",
        then(systemd, unlinked(), crun_only),
        ok=True,
        starts="not judged: the nvidia runtime runs /usr/bin/crun, the first of config.toml's runtimes (docker-runc runc crun) "
        "on the daemon's PATH, not runc",
    ),
    CheckCase(
        "crun named first in config.toml's runtimes is what the nvidia runtime runs, runc beside it or not",
        then(systemd, unlinked(), runtimes('["crun", "docker-runc", "runc"]'), lambda n: n.file("usr/bin/crun", "").chmod(0o755)),
        ok=True,
        starts="not judged: the nvidia runtime runs /usr/bin/crun, the first of config.toml's runtimes (crun docker-runc runc)",
    ),
    # judged: the links are there
    CheckCase(
        "runc with systemd cgroups passes when every NVIDIA device node has its link, and names them",
        systemd,
        exit=PASSED_EXIT,
        ok=True,
        starts=f"every NVIDIA device node has its /dev/char link ({EVERY_NODE}, "
        "/dev/nvidia-caps/nvidia-cap1, /dev/nvidia-caps/nvidia-cap2; runc with systemd cgroups: ",
        says=(SYSTEMD_ENTRY, SYSTEMD_KUBELET, "low-level runtime /usr/bin/runc, the first of config.toml's runtimes"),
    ),
    CheckCase(
        "a link written with an absolute target under the machine's /dev leads to its node too",
        then(systemd, lambda node: node.dev_char_link("195:0", str(node.root / "dev/nvidia0"))),
        ok=True,
        starts=f"every NVIDIA device node has its /dev/char link ({EVERY_NODE}, ",
    ),
    CheckCase(
        "a driver before 550.40 lists its major as nvidia-frontend, which the GPU nodes' links use",
        then(systemd, proc_devices(PROC_DEVICES.replace("195 nvidia\n", "195 nvidia-frontend\n"))),
        ok=True,
        starts=f"every NVIDIA device node has its /dev/char link ({EVERY_NODE}, ",
    ),
    CheckCase(
        "no NVIDIA device nodes under /dev: nothing to link",
        then(systemd, no_device_nodes),
        ok=True,
        starts="no NVIDIA device nodes under /dev to link (runc with systemd cgroups: ",
    ),
    CheckCase(
        "the nvidia runtime's SystemdCgroup = true is judged although kubelet says cgroupfs (runtime-entry fails that)",
        then(containerd_dropin(nvidia_dropin(systemd_cgroup=True)), unlinked("195:0")),
        ok=False,
        says=(f"runc with systemd cgroups: {SYSTEMD_ENTRY};", "/dev/char/195:0 for /dev/nvidia0 is missing"),
    ),
    CheckCase(
        "kubelet's systemd driver is judged although the nvidia runtime's entry says cgroupfs",
        then(kubelet_systemd, unlinked("195:0")),
        ok=False,
        says=(f"runc with systemd cgroups: {SYSTEMD_KUBELET};",),
    ),
    CheckCase(
        "CRI-O's default cgroup_manager, systemd, is judged",
        then(crio, unlinked("195:0")),
        runtime="cri-o",
        ok=False,
        says=("runc with systemd cgroups: CRI-O's cgroup_manager systemd (its default);", "/dev/char/195:0 for /dev/nvidia0"),
    ),
    CheckCase(
        "with neither kubelet's settings nor the nvidia runtime's entry, it is judged as systemd",
        then(no_runtime_settings, unlinked("195:0")),
        ok=False,
        says=("no runtime entry or kubelet settings say the cgroup driver, judged as systemd",),
    ),
    CheckCase(
        "no low-level runtime of the toolkit's on the PATH: runc is assumed, and said",
        then(systemd, lambda node: node.remove("usr/bin/runc")),
        ok=True,
        says=("none of config.toml's runtimes (docker-runc runc crun) is on the daemon's PATH: runc assumed",),
    ),
    CheckCase(
        "no runtimes in config.toml: the toolkit's default list",
        then(systemd, lambda node: node.remove(TOOLKIT_CONFIG_PATH)),
        ok=True,
        says=("/usr/bin/runc, the first of the toolkit's default runtimes (docker-runc runc crun) on the daemon's PATH",),
    ),
    # judged: links missing or wrong
    CheckCase(
        "missing links fail, naming each link and its node, and the command that makes them",
        then(systemd, unlinked()),
        exit=FAILED_EXIT,
        ok=False,
        starts="running pods lose NVIDIA devices at the next systemctl daemon-reload "
        '("Failed to initialize NVML: Unknown Error") without their /dev/char links (runc with systemd cgroups: ',
        says=(
            *(f"/dev/char/{number} for /dev/{name} is missing" for name, number in DEVICE_NODES.items()),
            f"run {FIX} (the GPU Operator's validator does)",
        ),
    ),
    CheckCase(
        "one missing link is named alone",
        then(systemd, unlinked("508:0")),
        ok=False,
        says=("/dev/char/508:0 for /dev/nvidia-uvm is missing",),
        never=("/dev/char/195:0", "/dev/char/508:1"),
    ),
    CheckCase(
        "a link that leads to another node fails",
        then(systemd, link("195:1", "../nvidia0")),
        ok=False,
        says=("/dev/char/195:1 leads elsewhere, not to /dev/nvidia1",),
    ),
    CheckCase(
        "a dangling link fails",
        then(systemd, link("195:255", "../nvidia-gone")),
        ok=False,
        says=("/dev/char/195:255 for /dev/nvidiactl is a dangling link",),
    ),
    CheckCase(
        "a plain file where the link belongs fails",
        then(systemd, unlinked("195:254"), lambda node: node.file("dev/char/195:254", "")),
        ok=False,
        says=("/dev/char/195:254 is not a link to /dev/nvidia-modeset",),
    ),
    CheckCase(
        "a GPU's node is numbered by its name, with /proc/devices' nvidia major",
        then(systemd, device_file("nvidia7")),
        ok=False,
        says=("/dev/char/195:7 for /dev/nvidia7 is missing",),
    ),
    CheckCase(
        "the MIG caps' nodes are numbered with /proc/devices' nvidia-caps major",
        then(systemd, device_file("nvidia-caps/nvidia-cap21")),
        ok=False,
        says=("/dev/char/511:21 for /dev/nvidia-caps/nvidia-cap21 is missing",),
    ),
    # nodes upstream does not link, or whose number is unknown
    CheckCase(
        "NVSwitch, NVLink and nvidia-fs nodes are not required to have links, as nvidia-ctk makes none",
        then(systemd, *(device_file(name) for name in ("nvidia-nvswitchctl", "nvidia-nvswitch0", "nvidia-nvlink", "nvidia-fs0"))),
        ok=True,
        never=("nvswitch", "nvlink", "nvidia-fs"),
    ),
    CheckCase(
        "a node whose driver /proc/devices does not list is not judged, and named",
        then(systemd, proc_devices(PROC_DEVICES.replace("508 nvidia-uvm\n", ""))),
        ok=True,
        ends="; not judged: /dev/nvidia-uvm (/proc/devices lists no nvidia-uvm driver), "
        "/dev/nvidia-uvm-tools (/proc/devices lists no nvidia-uvm driver)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_dev_char_links(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "dev-char-links")


NOBODY = 65534


def test_a_config_toml_that_may_not_be_read_leaves_the_toolkits_default_runtimes_and_says_so(open_node: FakeNode) -> None:
    """The low-level runtime is then the toolkit's default choice: judged as runc rather than passed as
    crun, since the file that could name crun was not seen."""
    systemd(open_node)
    open_node.unlink_dev_char("195:0")
    (open_node.root / TOOLKIT_CONFIG_PATH).chmod(0o600)
    check = open_node.preflight(env={"USER": "nobody"}, uid=NOBODY).check("dev-char-links")
    assert check["ok"] is False, check
    assert (
        "/usr/bin/runc, the first of the toolkit's default runtimes "
        "(/etc/nvidia-container-runtime/config.toml may not be read) (docker-runc runc crun)" in check["detail"]
    ), check
