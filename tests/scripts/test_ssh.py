"""The preflight script over real SSH, sent exactly as the component sends it, to fake machines:
a healthy one, one switched to faults, one with private files, one for sudo, one with a hardened
toolkit, and machines for a DRA group, ready or short of one of the DRA driver's prerequisites.

pulumi-command's remote.CopyToRemote copies the parts directory over SFTP to remote_dir(),
then its remote.Command runs preflight_command() (which checks the copy against the
script's digest and runs it with `--runtime containerd --expect-gpus 2`); here the OpenSSH
sftp and ssh clients do the same against a real sshd (tests/sshd.py) whose host key is
pinned.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_nodes.preflight.command import REFUSED_EXIT, SCRIPT_DIR, preflight_command, remote_dir, script_root
from tests.specs import group_spec
from tests.sshd import MachineSpec, SshServer, copy_to_remote, fakehost, require_sshd, run_ssh, running_sshd, throwaway_user

from .preflight_node import CHECK_NAMES, FAILED_EXIT, PASSED_EXIT, parse_one_object

REMOTE_COMMAND = preflight_command(group_spec(gpusPerNode=2))
HOSTNAME = "gpu-ssh-test"


def pinned_copy(server: SshServer, tmp_path: Path) -> Path:
    """known_hosts holding the server's real host key, and the script copied as root, as the node's
    -preflight-script resource copies it before its command runs."""
    known_hosts = server.known_hosts(tmp_path / "known_hosts")
    proc = copy_to_remote(server, known_hosts, SCRIPT_DIR, remote_dir())
    assert proc.returncode == 0, proc.stderr
    return known_hosts


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    require_sshd()
    with running_sshd(tmp_path_factory.mktemp("sshd"), MachineSpec(hostname=HOSTNAME, gpus=2)) as srv:
        yield srv


@pytest.fixture
def pinned(server: SshServer, tmp_path: Path) -> Path:
    return pinned_copy(server, tmp_path)


def test_the_copy_lands_where_the_command_reads_it(server: SshServer, pinned: Path) -> None:
    copied = server.machine.machine_path(remote_dir()) / SCRIPT_DIR.name
    assert sorted(p.name for p in copied.iterdir()) == sorted(p.name for p in SCRIPT_DIR.glob("*.sh")), copied
    assert all((copied / p.name).read_bytes() == p.read_bytes() for p in SCRIPT_DIR.glob("*.sh")), copied


def test_healthy_machine_passes_over_ssh(server: SshServer, pinned: Path) -> None:
    proc = run_ssh(server, pinned, REMOTE_COMMAND)
    report = parse_one_object(proc.stdout, proc.stderr)
    assert proc.returncode == PASSED_EXIT, proc.stderr
    assert report["ok"] is True, report["checks"]
    assert report["hostname"] == HOSTNAME
    assert [c["name"] for c in report["checks"]] == CHECK_NAMES
    assert len(report["gpus"]) == 2


def preflight_in_mode(server: SshServer, pinned: Path, mode: str) -> subprocess.CompletedProcess[str]:
    """The component's command line while the fake machine is in `mode`; healthy again after."""
    server.set_mode(mode)
    try:
        return run_ssh(server, pinned, REMOTE_COMMAND)
    finally:
        server.set_mode("healthy")


def test_broken_driver_fails_over_ssh_without_restarting_sshd(server: SshServer, pinned: Path) -> None:
    proc = preflight_in_mode(server, pinned, "driver")
    report = parse_one_object(proc.stdout, proc.stderr)
    driver = next(c for c in report["checks"] if c["name"] == "driver")
    assert proc.returncode == FAILED_EXIT, proc.stderr
    assert driver["ok"] is False
    assert driver["detail"] == f"nvidia-smi failed (exit 9): {fakehost.SMI_DRIVER_ERROR}"


def test_a_machine_switched_to_other_gpus_reports_them_and_still_passes(server: SshServer, pinned: Path) -> None:
    """Preflight alone has no group to compare with: the readiness check does that (docs/tenants.md, "GPU facts")."""
    proc = preflight_in_mode(server, pinned, "other-model")
    report = parse_one_object(proc.stdout, proc.stderr)
    assert proc.returncode == PASSED_EXIT and report["ok"] is True, report["checks"]
    assert {g["name"] for g in report["gpus"]} == {"NVIDIA H100 PCIe"}, report["gpus"]
    assert {g["memoryMiB"] for g in report["gpus"]} == {81559}, report["gpus"]


def test_a_containerd_not_restarted_after_nvidia_ctk_fails_with_restart(server: SshServer, pinned: Path) -> None:
    """The machine's files carry the nvidia drop-in; its running containerd (crictl info) has not loaded it."""
    healthy = parse_one_object(run_ssh(server, pinned, REMOTE_COMMAND).stdout)
    assert healthy["runtime"]["source"] == "crictl-info", healthy["runtime"]
    proc = preflight_in_mode(server, pinned, "runtime-not-restarted")
    report = parse_one_object(proc.stdout, proc.stderr)
    runtime = next(c for c in report["checks"] if c["name"] == "runtime")
    assert proc.returncode == FAILED_EXIT and runtime["ok"] is False, runtime
    assert (
        "its files add it (containerd config dump) but the running containerd has not loaded them: restart containerd"
        in runtime["detail"]
    )


def test_a_machine_whose_gpu_needs_a_reset_fails_naming_it(server: SshServer, pinned: Path) -> None:
    """The mode the e2e tier breaks a machine with (tools/fakehost/break.sh reset-required)."""
    proc = preflight_in_mode(server, pinned, "reset-required")
    report = parse_one_object(proc.stdout, proc.stderr)
    health = next(c for c in report["checks"] if c["name"] == "gpu-health")
    assert proc.returncode == FAILED_EXIT and health["ok"] is False, report["checks"]
    assert "GPU 00000000:08:00.0: GPU Recovery Action: Reset" in health["detail"], health
    assert "GPU 00000000:08:00.0: GPU Reset Status > Reset Required: Yes" in health["detail"], health
    assert "00000000:07:00.0" not in health["detail"], health


def test_a_machine_whose_cdi_spec_cannot_be_built_fails_a_cdi_group_with_the_toolkits_error(
    server: SshServer, pinned: Path
) -> None:
    """The mode tools/fakehost/break.sh cdi-generation: `nvidia-ctk cdi generate` fails as upstream
    does when it finds no device edits; a gpuAccess: cdi group's device plugin builds its spec so."""
    server.set_mode("cdi-generation")
    try:
        proc = run_ssh(server, pinned, preflight_command(group_spec(gpusPerNode=2, gpuAccess="cdi")))
    finally:
        server.set_mode("healthy")
    report = parse_one_object(proc.stdout, proc.stderr)
    generation = next(c for c in report["checks"] if c["name"] == "cdi-generation")
    assert proc.returncode == FAILED_EXIT and generation["ok"] is False, generation
    assert f"nvidia-ctk cdi generate failed (exit 1): {fakehost.CDI_EMPTY_DEVICE_ERROR}" in generation["detail"], generation
    toolkit = report["toolkit"]
    assert (toolkit["mode"], toolkit["cdiGeneration"]) == ("jit-cdi", "failed"), toolkit


def test_mismatched_host_key_is_refused(server: SshServer, tmp_path: Path) -> None:
    other = tmp_path / "other_host_key"
    fakehost.ensure_key(other, "not-the-server")
    known_hosts = server.known_hosts(tmp_path / "known_hosts", host_key=fakehost.public_key_line(other))
    proc = run_ssh(server, known_hosts, "echo reached", stdin="")
    assert proc.returncode == 255
    assert "reached" not in proc.stdout
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in proc.stderr


def test_unknown_host_key_is_refused(server: SshServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    proc = run_ssh(server, empty, "echo reached", stdin="")
    assert proc.returncode == 255
    assert "reached" not in proc.stdout
    assert "Host key verification failed" in proc.stderr


def test_server_offers_the_pinned_key_form_pulumi_command_takes(server: SshServer) -> None:
    # connection.hostKey is parsed as one authorized_keys line: "<type> <base64>".
    key_type, blob = server.host_key.split(" ")
    assert key_type == "ssh-ed25519"
    assert blob.startswith("AAAAC3NzaC1lZDI1NTE5")
    assert "BEGIN OPENSSH PRIVATE KEY" in server.client_key


def test_server_offers_every_host_key_type_and_ed25519_scans_as_the_pinned_key(server: SshServer) -> None:
    # A stock sshd serves ed25519, ecdsa and rsa keys; the client must settle on the pinned one.
    offered = {key_type: fakehost.scan_host_key(server.host, server.port, key_type) for key_type in fakehost.HOST_KEY_TYPES}
    assert [key.split(" ")[0] for key in offered.values()] == ["ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"], offered
    assert offered["ed25519"] == server.host_key, offered


# ------------------------------------------------------- privileges (issue 9, item 7)
#
# A machine whose containerd config is 0600 and /var/lib/kubelet 0750 (root's), as many
# distros ship them. Preflight must run as root (docs/machines.md, "Privileges"); a user who cannot
# read those files is told so, and is never told "no nvidia runtime" or "kubelet is not
# running" on the strength of files it did not see.


@pytest.fixture(scope="module")
def private_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshServer, str]]:
    require_sshd()
    with throwaway_user() as user:
        spec = MachineSpec(hostname="gpu-private", gpus=2, private_files=True)
        with running_sshd(tmp_path_factory.mktemp("sshd-private"), spec) as srv:
            yield srv, user


def test_root_passes_on_a_machine_with_private_files(private_server: tuple[SshServer, str], tmp_path: Path) -> None:
    server, _user = private_server
    known_hosts = pinned_copy(server, tmp_path)
    proc = run_ssh(server, known_hosts, REMOTE_COMMAND)
    report = parse_one_object(proc.stdout, proc.stderr)
    assert proc.returncode == PASSED_EXIT, report["checks"]
    assert report["ok"] is True


def test_non_root_user_is_told_what_it_cannot_read(private_server: tuple[SshServer, str], tmp_path: Path) -> None:
    server, user = private_server
    known_hosts = pinned_copy(server, tmp_path)  # as root: the copy is readable by all, the machine's files are not
    as_user = dataclasses.replace(server, user=user)
    proc = run_ssh(as_user, known_hosts, REMOTE_COMMAND)
    report = parse_one_object(proc.stdout, proc.stderr)
    checks = {c["name"]: c for c in report["checks"]}
    assert proc.returncode == FAILED_EXIT, proc.stderr
    # What a user may run still works: the driver answers.
    assert checks["driver"]["ok"] is True, checks["driver"]
    runtime = checks["runtime"]["detail"]
    assert runtime.startswith(f"containerd: cannot read /etc/containerd/config.toml as user {user}: "), runtime
    assert "containerd config dump failed" not in runtime and "no nvidia runtime" not in runtime, runtime
    assert report["runtime"]["certain"] is False
    sock = checks["device-plugin-socket"]["detail"]
    assert sock.startswith(
        f"cannot read /var/lib/kubelet/device-plugins/kubelet.sock (/var/lib/kubelet is not searchable) as user {user}"
    ), sock
    assert "kubelet is not running" not in sock, sock
    gates = checks["kubelet-feature-gates"]
    assert gates["ok"] is False
    expected = "cannot read /var/lib/kubelet/kubeadm-flags.env (/var/lib/kubelet is not searchable)"
    assert gates["detail"].startswith(expected), gates


# ------------------------------------------------------- become: sudo (issue 20)
#
# Root cannot log in on cloud images and hardened fleets; `preflight.become: sudo` logs in as
# the user, copies the script into its home and runs it as root through `sudo -n`. The
# machine's files are private (root's), so only a real sudo lets the checks pass.

BECOME = group_spec(gpusPerNode=2, preflight={"become": "sudo"})
BECOME_COMMAND = preflight_command(BECOME)


@pytest.fixture(scope="module")
def sudo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshServer, str, str]]:
    require_sshd()
    with throwaway_user("gpns", home=True) as sudoer, throwaway_user("gpnu", home=True) as plain:
        spec = MachineSpec(hostname="gpu-sudo", gpus=2, private_files=True, sudoers=(sudoer,))
        with running_sshd(tmp_path_factory.mktemp("sshd-sudo"), spec) as srv:
            yield srv, sudoer, plain


def copy_as(server: SshServer, user: str, known_hosts: Path) -> SshServer:
    """The copy as the component makes it with become: into the login user's home."""
    as_user = dataclasses.replace(server, user=user)
    proc = copy_to_remote(as_user, known_hosts, SCRIPT_DIR, remote_dir(script_root(BECOME.preflight)))
    assert proc.returncode == 0, proc.stderr
    return as_user


def test_a_sudoer_runs_every_check_as_root(sudo_server: tuple[SshServer, str, str], tmp_path: Path) -> None:
    server, sudoer, _plain = sudo_server
    as_user = copy_as(server, sudoer, server.known_hosts(tmp_path / "known_hosts"))
    proc = run_ssh(as_user, tmp_path / "known_hosts", BECOME_COMMAND)
    report = parse_one_object(proc.stdout, proc.stderr)
    assert proc.returncode == PASSED_EXIT, report["checks"]
    assert report["ok"] is True and report["runtime"]["certain"] is True, report["checks"]
    assert server.machine.machine_path(f"/home/{sudoer}/{remote_dir(script_root(BECOME.preflight))}").is_dir()


def test_a_user_without_sudo_is_told_so_and_nothing_runs(sudo_server: tuple[SshServer, str, str], tmp_path: Path) -> None:
    server, _sudoer, plain = sudo_server
    as_user = copy_as(server, plain, server.known_hosts(tmp_path / "known_hosts"))
    proc = run_ssh(as_user, tmp_path / "known_hosts", BECOME_COMMAND)
    assert proc.returncode == REFUSED_EXIT and proc.stdout == "", (proc.returncode, proc.stdout)
    expected = f"preflight: {plain} may not run sudo without a password here (preflight.become: sudo runs sudo -n)"
    assert expected in proc.stderr, proc.stderr


# ------------------------------------------------------- a hardened container toolkit
#
# A fake machine whose container toolkit is hardened (fakehost.TOOLKIT_CONFIG_HARDENED), checked
# with the component's own command lines: strict isolation passes it, the default mode refuses it,
# naming the setting.


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    require_sshd()
    spec = MachineSpec(hostname="gpu-hardened", gpus=2, hardened_toolkit=True)
    with running_sshd(tmp_path_factory.mktemp("sshd"), spec) as srv:
        yield srv


@pytest.fixture
def hardened_pinned(hardened: SshServer, tmp_path: Path) -> Path:
    return pinned_copy(hardened, tmp_path)


def isolation_check(server: SshServer, known_hosts: Path, isolation: str) -> tuple[int, dict]:
    proc = run_ssh(server, known_hosts, preflight_command(group_spec(gpusPerNode=2, isolation=isolation)))
    report = parse_one_object(proc.stdout, proc.stderr)
    (check,) = [c for c in report["checks"] if c["name"] == "isolation"]
    return proc.returncode, check


def test_strict_isolation_passes_a_hardened_machine(hardened: SshServer, hardened_pinned: Path) -> None:
    code, check = isolation_check(hardened, hardened_pinned, "strict")
    assert code == PASSED_EXIT and check["ok"] is True, check


def test_default_isolation_refuses_a_hardened_machine_naming_the_setting(hardened: SshServer, hardened_pinned: Path) -> None:
    code, check = isolation_check(hardened, hardened_pinned, "default")
    assert code == FAILED_EXIT and check["ok"] is False, check
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in check["detail"], check
    assert "set the group's isolation: strict" in check["detail"], check


# ------------------------------------------------------------------ NVIDIA's DRA driver
#
# Fake machines for a DRA group (allocator: dra), checked with the component's own command line: one
# as the DRA driver wants it (fakehost.dra_ready) passes every check; each knob turned back fails its
# dra-* check, and only that one besides what it also breaks for everyone.

DRA_COMMAND = preflight_command(group_spec(gpusPerNode=2, allocator="dra"))
DRA_READY = fakehost.dra_ready(MachineSpec(hostname="gpu-dra", gpus=2))
DRA_MACHINES = {
    "ready": (DRA_READY, []),
    "kubelet 1.33": (dataclasses.replace(DRA_READY, kubelet_version="v1.33.5"), ["dra-kubelet"]),
    "driver R560": (dataclasses.replace(DRA_READY, driver="560.35.03", cuda_version="12.6"), ["dra-driver-version"]),
    "toolkit 1.17.8": (dataclasses.replace(DRA_READY, toolkit_version="1.17.8"), ["container-toolkit", "dra-toolkit"]),
    # A DRA group takes the CDI path (gpuAccess cdi), whose own check fails too.
    "CDI off": (dataclasses.replace(DRA_READY, cdi=False), ["cdi", "dra-cdi"]),
    "DRA gate off": (
        dataclasses.replace(DRA_READY, kubelet_feature_gates=(("DynamicResourceAllocation", False),)),
        ["dra-feature-gates"],
    ),
}


@pytest.mark.parametrize("machine", list(DRA_MACHINES))
def test_a_dra_machine_over_ssh(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, machine: str) -> None:
    require_sshd()
    spec, failed = DRA_MACHINES[machine]
    with running_sshd(tmp_path_factory.mktemp("sshd"), spec) as server:
        proc = run_ssh(server, pinned_copy(server, tmp_path), DRA_COMMAND)
    report = parse_one_object(proc.stdout, proc.stderr)
    assert [c["name"] for c in report["checks"]] == CHECK_NAMES
    assert [c["name"] for c in report["checks"] if not c["ok"]] == failed, proc.stderr
    assert proc.returncode == (FAILED_EXIT if failed else PASSED_EXIT), proc.stderr


# ------------------------------------------------------- the GPU Operator's container toolkit
#
# Fake machines whose toolkit the GPU Operator's toolkit container installed (fakehost.MachineSpec(toolkit_install=
# "operator")): under /usr/local/nvidia/toolkit, containerd's nvidia entry pointing there, nothing on PATH; and one
# with an older toolkit of the packages left in /usr/bin beside it. The component's own command line (NVIDIA's
# toolkit advisories among its arguments) judges the Operator's, the one in use, on both.

OPERATOR_MACHINES = {
    "operator only": MachineSpec(hostname="gpu-operator", gpus=2, toolkit_install="operator"),
    "operator beside an old packaged toolkit": MachineSpec(
        hostname="gpu-operator", gpus=2, toolkit_install="operator", stale_toolkit="1.17.7"
    ),
}


@pytest.mark.parametrize("machine", list(OPERATOR_MACHINES))
def test_an_operator_toolkit_machine_over_ssh(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, machine: str) -> None:
    require_sshd()
    with running_sshd(tmp_path_factory.mktemp("sshd"), OPERATOR_MACHINES[machine]) as server:
        proc = run_ssh(server, pinned_copy(server, tmp_path), REMOTE_COMMAND)
    report = parse_one_object(proc.stdout, proc.stderr)
    assert [c["name"] for c in report["checks"] if not c["ok"]] == [], proc.stderr
    assert proc.returncode == PASSED_EXIT, proc.stderr
    root = fakehost.OPERATOR_TOOLKIT_ROOT
    toolkit = report["toolkit"]
    assert (toolkit["path"], toolkit["runtimeBinary"], toolkit["config"], toolkit["version"]) == (
        f"{root}/nvidia-ctk",
        f"{root}/nvidia-container-runtime",
        fakehost.OPERATOR_TOOLKIT_CONFIG,
        fakehost.HEALTHY_TOOLKIT,
    ), toolkit


# --------------------------------------------------------- NVLink domains, IMEX, and NRI mode
#
# A GB200-like machine (fakehost.nvlink_machine: its fabric trained in a clique, NVIDIA's IMEX daemon running and
# listing the domain's peers, channel 0 laid over /dev) checked with the component's command line of a device-plugin
# group of that domain; broken as break.sh breaks it (the daemon failed, a peer left out of its nodes config), it fails
# the one check and names it. And a machine of the GPU Operator's NRI mode (fakehost.nri_machine), with an NRI group's
# command line.

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
PEERS = ("10.0.0.11", "10.0.0.12")
IMEX_GROUP = group_spec(
    gpusPerNode=2,
    devicePlugin={"imex": {"channelIds": [0], "required": True}},
    nvlinkDomain={"clique": CLIQUE, "imexPeers": list(PEERS)},
)
NVLINK_MACHINE = fakehost.nvlink_machine(MachineSpec(hostname="gpu-nvl", gpus=2), CLIQUE, PEERS)


@pytest.mark.parametrize(
    ("mode", "failed", "says"),
    [
        ("healthy", [], ""),
        ("imex-down", ["imex-daemon"], "service is failed"),
        ("imex-peer-missing", ["imex-peers"], "lacks 10.0.0.12"),
    ],
)
def test_an_nvlink_domain_machine_over_ssh(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, mode: str, failed: list[str], says: str
) -> None:
    require_sshd()
    with running_sshd(tmp_path_factory.mktemp("sshd"), NVLINK_MACHINE) as server:
        fakehost.set_mode(server.machine.mode_file, mode)
        proc = run_ssh(server, pinned_copy(server, tmp_path), preflight_command(IMEX_GROUP))
    report = parse_one_object(proc.stdout, proc.stderr)
    assert [c["name"] for c in report["checks"] if not c["ok"]] == failed, proc.stderr
    for name in failed:
        assert says in next(c for c in report["checks"] if c["name"] == name)["detail"], proc.stderr
    if not failed:
        details = {c["name"]: c["detail"] for c in report["checks"]}
        assert details["imex-daemon"].endswith("are there: /dev/nvidia-caps-imex-channels/channel0"), details["imex-daemon"]
        assert CLIQUE in details["nvlink-domain"] and report["gpuFeatures"]["clique"] == CLIQUE, details["nvlink-domain"]


def test_an_nri_mode_machine_over_ssh(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    require_sshd()
    root = fakehost.OPERATOR_TOOLKIT_ROOT
    nri = group_spec(gpusPerNode=2, gpuAccess="cdi", containerToolkit="nri", devicePlugin={"cdiHookPath": f"{root}/nvidia-ctk"})
    with running_sshd(tmp_path_factory.mktemp("sshd"), fakehost.nri_machine(MachineSpec(hostname="gpu-nri", gpus=2))) as server:
        pinned = pinned_copy(server, tmp_path)
        proc = run_ssh(server, pinned, preflight_command(nri))
        refused = run_ssh(server, pinned, preflight_command(group_spec(gpusPerNode=2, gpuAccess="cdi")))
    report = parse_one_object(proc.stdout, proc.stderr)
    assert [c["name"] for c in report["checks"] if not c["ok"]] == [], proc.stderr
    assert report["toolkit"]["path"] == f"{root}/nvidia-ctk" and report["toolkit"]["version"] == fakehost.NRI_TOOLKIT
    runtime = next(c for c in parse_one_object(refused.stdout, refused.stderr)["checks"] if c["name"] == "runtime")
    assert not runtime["ok"] and "containerToolkit: nri" in runtime["detail"], runtime
