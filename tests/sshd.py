"""A real OpenSSH server on loopback, serving a fake GPU machine, for tests.

Usage, in a test module or conftest::

    from tests.sshd import SshServer, require_sshd, running_sshd

    @pytest.fixture(scope="module")
    def server(tmp_path_factory) -> Iterator[SshServer]:
        require_sshd()
        with running_sshd(tmp_path_factory.mktemp("sshd"), MachineSpec(gpus=2)) as srv:
            yield srv

The server is `/usr/sbin/sshd` (Debian `openssh-server`) with its own config (key auth
only, no PAM, `PermitRootLogin prohibit-password`, `StrictModes no`), a throwaway
ed25519 host key and client key from ssh-keygen, pid file and log in the work dir.
It runs in a private mount namespace where tools/fakehost lays a fake GPU machine
over / (see tools/fakehost/fakehost.py: this module only wraps it for pytest).
"""

from __future__ import annotations

import getpass
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import pytest

FAKEHOST_PY = Path(__file__).resolve().parents[1] / "tools" / "fakehost" / "fakehost.py"
PORT_ATTEMPTS = 3


def _load_fakehost() -> ModuleType:
    # Loaded by path: tools/ is not a package, and "tools" is too common a name to import.
    if "fakehost" in sys.modules:
        return sys.modules["fakehost"]
    spec = importlib.util.spec_from_file_location("fakehost", FAKEHOST_PY)
    assert spec is not None and spec.loader is not None, FAKEHOST_PY
    module = importlib.util.module_from_spec(spec)
    sys.modules["fakehost"] = module
    spec.loader.exec_module(module)
    return module


fakehost = _load_fakehost()
MachineSpec = fakehost.MachineSpec


@dataclass(frozen=True)
class SshServer:
    """How to reach the server, as pulumi-command's remote.Connection would."""

    host: str
    port: int
    user: str
    client_key: str  # the private key, OpenSSH PEM text
    client_key_file: Path
    host_key: str  # "ssh-ed25519 AAAA...": what to pin
    machine: Any  # the fakehost.FakeHost behind it

    def known_hosts(self, path: Path, host_key: str | None = None) -> Path:
        """Writes a known_hosts file pinning host_key (default: the server's own)."""
        path.write_text(fakehost.known_hosts_line(self.host, self.port, host_key or self.host_key) + "\n")
        return path

    def ssh_command(self, known_hosts: Path, remote_command: str) -> list[str]:
        """An ssh client command line that refuses any host key but the pinned one."""
        return ["ssh", *self._client_options(known_hosts, "-p"), f"{self.user}@{self.host}", remote_command]

    def sftp_command(self, known_hosts: Path, batch: Path) -> list[str]:
        """An sftp client running the commands in batch, with the same pinned key."""
        return ["sftp", *self._client_options(known_hosts, "-P"), "-b", str(batch), f"{self.user}@{self.host}"]

    def _client_options(self, known_hosts: Path, port_flag: str) -> list[str]:
        options = {
            "StrictHostKeyChecking": "yes",
            "UserKnownHostsFile": str(known_hosts),
            "GlobalKnownHostsFile": "/dev/null",
            "IdentitiesOnly": "yes",
            "BatchMode": "yes",
            "ConnectTimeout": "10",
            "LogLevel": "ERROR",
        }
        args = ["-F", "/dev/null", port_flag, str(self.port), "-i", str(self.client_key_file)]
        for key, value in options.items():
            args += ["-o", f"{key}={value}"]
        return args

    def set_mode(self, mode: str) -> None:
        """healthy, or driver: nvidia-smi then fails as with a lost driver."""
        fakehost.set_mode(self.machine.mode_file, mode)


def unavailable_reason() -> str | None:
    """Why a fake-machine sshd cannot run here, or None when it can."""
    if not fakehost.SSHD.exists():
        return f"{fakehost.SSHD} is missing: apt-get install -y openssh-server"
    if os.geteuid() != 0:
        return "a private mount namespace for the fake machine needs root"
    missing = [tool for tool in ("ssh", "ssh-keygen", "unshare", "useradd") if shutil.which(tool) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    return None


def require_sshd() -> None:
    """Skips the calling test when sshd cannot run, but fails it under CI=true:
    CI installs openssh-server, so a missing one there is a broken CI, not a skip."""
    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI is set but the SSH tests cannot run: {reason}")
    pytest.skip(reason)


@contextmanager
def running_sshd(
    workdir: Path, spec: MachineSpec | None = None, host: str = "127.0.0.1", state: str = "server"
) -> Iterator[SshServer]:
    """Starts sshd on host and a free port in workdir, and stops it on exit. Its state goes to workdir/<state>: with
    the spec's hostname there, workdir is where tools/fakehost keeps machines, as the e2e's .state/fakehosts is."""
    client_key_file = workdir / "id_ed25519"
    fakehost.ensure_key(client_key_file, "sshd-test-client")
    machine = _start(workdir / state, spec or MachineSpec(), host, client_key_file)
    try:
        yield SshServer(
            host=host,
            port=machine.port,
            user=getpass.getuser(),
            client_key=client_key_file.read_text(),
            client_key_file=client_key_file,
            host_key=machine.host_key(),
            machine=machine,
        )
    finally:
        machine.stop()


def _start(state: Path, spec: MachineSpec, host: str, client_key_file: Path) -> Any:
    client_public = client_key_file.with_suffix(".pub").read_text()
    error: RuntimeError | None = None
    for _ in range(PORT_ATTEMPTS):  # the free port can be taken before sshd binds it
        machine = fakehost.FakeHost(state=state, host=host, port=fakehost.free_port(host), spec=spec)
        machine.prepare(client_public)
        try:
            machine.start()
            return machine
        except RuntimeError as exc:
            error = exc
    raise RuntimeError(f"sshd did not start after {PORT_ATTEMPTS} ports") from error


@contextmanager
def throwaway_user(prefix: str = "gpn", home: bool = False) -> Iterator[str]:
    """A local non-root login user for the duration, removed afterwards (with its home, when
    `home`: where preflight.become copies the script).

    Create it before starting the sshd that should know it: the fake machine's /etc is
    an overlay taken when sshd starts. Its password is '*' (no password, not locked:
    sshd without PAM refuses accounts locked with '!'); the key comes from the server's
    AuthorizedKeysFile, which is the same for every user."""
    name = f"{prefix}{os.getpid()}"[:32]
    subprocess.run(["userdel", name], capture_output=True, check=False)  # a leftover from a killed run
    where = ["--create-home", "--home-dir", f"/home/{name}"] if home else ["--no-create-home", "--home-dir", "/nonexistent"]
    subprocess.run(["useradd", *where, "--shell", "/bin/bash", name], check=True, capture_output=True)
    try:
        subprocess.run(["usermod", "--password", "*", name], check=True, capture_output=True)
        yield name
    finally:
        _remove_user(name)


def _remove_user(name: str) -> None:
    # A session of the user may still be ending when the test is done, and plain userdel
    # refuses a user with processes: force it, and check that it is gone.
    for _ in range(30):
        subprocess.run(["userdel", "--force", "--remove", name], capture_output=True, check=False)
        if subprocess.run(["id", name], capture_output=True, check=False).returncode != 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"could not remove the test user {name}: run userdel --force {name}")


def run_ssh(
    server: SshServer, known_hosts: Path, remote_command: str, stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Runs remote_command over ssh with stdin, as pulumi-command's remote.Command does."""
    return subprocess.run(
        server.ssh_command(known_hosts, remote_command),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def copy_to_remote(
    server: SshServer, known_hosts: Path, local_dir: Path, remote_path: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Copies local_dir over SFTP into remote_path/<its name>, making the parents, as
    pulumi-command's remote.CopyToRemote copies a directory FileArchive."""
    target = PurePosixPath(remote_path) / local_dir.name
    parents = [target, *target.parents][::-1][1:]  # /var, /var/lib, ..., target
    batch = [f"-mkdir {parent}" for parent in parents]
    batch += [f"put {shlex.quote(str(path))} {target / path.name}" for path in sorted(local_dir.iterdir()) if path.is_file()]
    batch_file = known_hosts.with_name(f"{known_hosts.name}.sftp")
    batch_file.write_text("\n".join(batch) + "\n")
    return subprocess.run(
        server.sftp_command(known_hosts, batch_file), capture_output=True, text=True, timeout=timeout, check=False
    )


__all__: Sequence[str] = (
    "MachineSpec",
    "copy_to_remote",
    "SshServer",
    "require_sshd",
    "run_ssh",
    "running_sshd",
    "throwaway_user",
    "unavailable_reason",
)
