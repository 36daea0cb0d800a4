"""A fake machine whose container toolkit is hardened (fakehost.TOOLKIT_CONFIG_HARDENED), checked
over real SSH with the component's own command lines: strict isolation passes it, the default
mode refuses it, naming the setting."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_nodes.preflight.command import SCRIPT_DIR, preflight_command, remote_dir
from tests.specs import group_spec
from tests.sshd import MachineSpec, SshServer, copy_to_remote, require_sshd, run_ssh, running_sshd

from .preflight_node import parse_one_object


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    require_sshd()
    spec = MachineSpec(hostname="gpu-hardened", gpus=2, hardened_toolkit=True)
    with running_sshd(tmp_path_factory.mktemp("sshd"), spec) as srv:
        yield srv


@pytest.fixture
def pinned(hardened: SshServer, tmp_path: Path) -> Path:
    known_hosts = hardened.known_hosts(tmp_path / "known_hosts")
    proc = copy_to_remote(hardened, known_hosts, SCRIPT_DIR, remote_dir())
    assert proc.returncode == 0, proc.stderr
    return known_hosts


def isolation_check(server: SshServer, known_hosts: Path, isolation: str) -> tuple[int, dict]:
    proc = run_ssh(server, known_hosts, preflight_command(group_spec(isolation=isolation).preflight, 2))
    report = parse_one_object(proc.stdout, proc.stderr)
    (check,) = [c for c in report["checks"] if c["name"] == "isolation"]
    return proc.returncode, check


def test_strict_isolation_passes_a_hardened_machine(hardened: SshServer, pinned: Path) -> None:
    code, check = isolation_check(hardened, pinned, "strict")
    assert code == 0 and check["ok"] is True, check


def test_default_isolation_refuses_a_hardened_machine_naming_the_setting(hardened: SshServer, pinned: Path) -> None:
    code, check = isolation_check(hardened, pinned, "default")
    assert code == 1 and check["ok"] is False, check
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in check["detail"], check
    assert "set the group's isolation: strict" in check["detail"], check
