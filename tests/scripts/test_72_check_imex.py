"""The imex-daemon and imex-peers checks (72-check-imex.sh), --imex host|driver: the machine's own IMEX daemon
installed, its service active and its nodes config listing the domain's peers, with the channels the device plugin
injects made (host); or that service off, as NVIDIA's DRA driver's ComputeDomains want (driver). The IMEX config is
the fake machines' (fakehost.IMEX_CONFIG_TEXT, the keys NVIDIA's IMEX guide documents); systemctl answers as systemd
does for a unit: `is-active` prints its state and exits 0 only when active."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .preflight_node import FAILED_EXIT, GPU_LINES, PASSED_EXIT, FakeNode, fakehost

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
PEERS = "10.0.0.11,10.0.0.12"
HOST = ("--nvlink-clique", CLIQUE, "--imex", "host", "--imex-peers", PEERS)
CHANNEL = (*HOST, "--imex-channels", "0")
DRIVER = ("--allocator", "dra", "--nvlink-clique", CLIQUE, "--imex", "driver")


def systemctl(state: str):
    """systemctl answering `is-active nvidia-imex` with state."""
    return lambda node: node.command(
        "systemctl", f'[ "$*" = "is-active nvidia-imex" ] || exit 1\necho {state}\n[ {state} = active ]'
    )


def imex(
    state: str = "active",
    nodes: str | None = "10.0.0.11\n10.0.0.12\n",
    config: str | None = fakehost.IMEX_CONFIG_TEXT,
    channel: bool = True,
):
    """A machine of the clique with the IMEX package installed, its service in `state`, its config and nodes config
    (None: missing), channel0 made."""

    def arrange(node: FakeNode) -> None:
        machine = fakehost.MachineSpec(gpus=2, nvlink_clique=CLIQUE)
        node.nvidia_smi_with_table(GPU_LINES, fakehost.smi_table(machine), fakehost.smi_q(machine))
        node.file(fakehost.IMEX_PROGRAM, "#!/bin/bash\necho IMEX\n").chmod(0o755)
        systemctl(state)(node)
        if config is not None:
            node.file(fakehost.IMEX_CONFIG, config)
        if nodes is not None:
            node.file(fakehost.IMEX_NODES_CONFIG, nodes)
        if channel:
            node.file(f"{fakehost.IMEX_CHANNEL_DIR}/channel0", "")

    return arrange


DAEMON = [
    CheckCase("not requested", args=(), ok=True, detail="not requested"),
    CheckCase(
        "installed and active passes, naming the channel",
        imex(),
        CHANNEL,
        exit=PASSED_EXIT,
        ok=True,
        detail="the nvidia-imex service is active (/usr/bin/nvidia-imex); the channels the device plugin injects are there: "
        "/dev/nvidia-caps-imex-channels/channel0",
    ),
    CheckCase(
        "not installed fails with the package to install",
        systemctl("inactive"),
        HOST,
        exit=FAILED_EXIT,
        ok=False,
        starts="nvidia-imex is not installed",
        says=("install the nvidia-imex package of the driver's version (550.54.15)", "systemctl enable --now nvidia-imex"),
    ),
    CheckCase(
        "a failed service fails naming its state and the driver it must match",
        imex("failed"),
        HOST,
        exit=FAILED_EXIT,
        ok=False,
        starts="the nvidia-imex service is failed",
        says=("journalctl -u nvidia-imex", "the loaded driver, 550.54.15"),
    ),
    CheckCase(
        "a required channel that is missing fails",
        imex(channel=False),
        (*CHANNEL, "--imex-required"),
        exit=FAILED_EXIT,
        ok=False,
        says=("/dev/nvidia-caps-imex-channels/channel0 is missing", "refuse to start", "NVreg_CreateImexChannel0=1"),
    ),
    CheckCase(
        "a channel not required that is missing is a warning",
        imex(channel=False),
        CHANNEL,
        exit=PASSED_EXIT,
        ok=True,
        starts="warning: the nvidia-imex service is active",
        says=("leaves it out of every container",),
    ),
    CheckCase(
        "under the DRA driver the service must be off",
        imex(),
        DRIVER,
        ok=False,
        starts="the machine's own nvidia-imex service is active, but NVIDIA's DRA driver runs the IMEX daemons",
        says=("systemctl disable --now nvidia-imex.service && systemctl mask nvidia-imex.service",),
    ),
    CheckCase(
        "under the DRA driver an installed, disabled service passes",
        imex("inactive"),
        DRIVER,
        ok=True,
        starts="/usr/bin/nvidia-imex is installed and its service is inactive",
    ),
]


@pytest.mark.parametrize("case", DAEMON, ids=[c.name for c in DAEMON])
def test_imex_daemon(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "imex-daemon")


def test_without_systemctl_the_daemons_process_is_looked_for(node: FakeNode) -> None:
    imex()(node)
    node.drop_command("systemctl")
    node.file("proc/4242/comm", "nvidia-imex\n")
    check = node.preflight(*HOST).check("imex-daemon")
    assert check["ok"] is True and "is running" in check["detail"], check


PEERS_CASES = [
    CheckCase("not requested", args=(), ok=True, detail="not requested"),
    CheckCase(
        "every peer listed passes",
        imex(nodes="10.0.0.11\n10.0.0.12\n10.0.0.13\n"),
        HOST,
        ok=True,
        detail="/etc/nvidia-imex/nodes_config.cfg (IMEX_NODE_CONFIG_FILE in /etc/nvidia-imex/config.cfg) lists the 2 "
        "address(es) of nvlinkDomain.imexPeers and 1 other address(es)",
    ),
    CheckCase(
        "a peer missing fails naming it and the restart",
        imex(nodes="10.0.0.11\n"),
        HOST,
        exit=FAILED_EXIT,
        ok=False,
        says=("lacks 10.0.0.12 of nvlinkDomain.imexPeers", "systemctl restart nvidia-imex, which reads the file only at start"),
    ),
    CheckCase(
        "the config names another nodes file",
        imex(
            nodes=None,
            config=fakehost.IMEX_CONFIG_TEXT.replace("/etc/nvidia-imex/nodes_config.cfg", "/etc/nvidia-imex/rack-7.cfg"),
        ),
        HOST,
        ok=False,
        starts="no /etc/nvidia-imex/rack-7.cfg (IMEX_NODE_CONFIG_FILE in /etc/nvidia-imex/config.cfg)",
    ),
    CheckCase(
        "without a config the default nodes file is read, comments and blanks skipped",
        imex(config=None, nodes="# rack 7\n10.0.0.11  \n\n10.0.0.12 # tray 2\n"),
        HOST,
        ok=True,
        says=("(the default, no /etc/nvidia-imex/config.cfg)",),
    ),
    CheckCase("under the DRA driver not judged", imex("inactive"), DRIVER, ok=True, starts="not judged"),
]


@pytest.mark.parametrize("case", PEERS_CASES, ids=[c.name for c in PEERS_CASES])
def test_imex_peers(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "imex-peers")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--imex", "host"), "--imex needs --nvlink-clique"),
        (("--nvlink-clique", "4026"), "--nvlink-clique wants <ClusterUUID>.<CliqueId>"),
        (("--nvlink-clique", CLIQUE, "--imex", "driver", "--imex-peers", PEERS), "--imex-peers needs --imex host"),
        ((*HOST[:4], "--imex-peers", "gpu-01"), "--imex-peers wants IP addresses"),
        ((*DRIVER, "--imex-channels", "0"), "--imex-channels needs --imex host"),
        ((*HOST, "--imex-required"), "--imex-required needs --imex-channels"),
    ],
)
def test_a_wrong_imex_argument_is_a_usage_error(node: FakeNode, args: tuple[str, ...], says: str) -> None:
    from .preflight_node import USAGE_EXIT

    result = node.preflight(*args)
    assert result.returncode == USAGE_EXIT and says in result.check("usage")["detail"], result.check("usage")
