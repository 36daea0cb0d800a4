"""The command provider the engine runs (the stand-in where the real plugin is not installed),
pinned to pulumi-command 1.2.1's documented behaviour: real engine, real sshd on loopback."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engine.listener import counting_listener
from tests.engine.project import Project, explain, new_project
from tests.sshd import MachineSpec, SshServer, fakehost, require_sshd, running_sshd, throwaway_user

pytestmark = pytest.mark.engine

# Resources from spec.json beside the program, so that each test says what it deploys.
PROGRAM = """
import json
import pathlib

import pulumi
from pulumi_command import remote

spec = json.loads((pathlib.Path(__file__).parent / "spec.json").read_text())
key = pulumi.Config().require_secret("privateKey")


def connection(c):
    c = dict(c)
    proxy = c.pop("proxy", None)
    return remote.ConnectionArgs(
        **c, private_key=key, proxy=remote.ProxyConnectionArgs(**proxy, private_key=key) if proxy else None
    )


for r in spec.get("commands", []):
    command = remote.Command(r["name"], connection=connection(r["connection"]), **r.get("args", {}))
    pulumi.export(r["name"], {"stdout": command.stdout, "stderr": command.stderr})
for r in spec.get("copies", []):
    remote.CopyToRemote(
        r["name"], connection=connection(r["connection"]), source=pulumi.FileArchive(r["source"]),
        remote_path=r["remotePath"], triggers=r.get("triggers"),
    )
"""

# The one writable place on a fake machine (a tmpfs of its sshd's namespace).
WORK = "/var/lib/gpu-nodes"


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Iterator[SshServer]:
    require_sshd()
    with running_sshd(tmp_path_factory.mktemp("machine"), MachineSpec(hostname="standin-machine")) as server:
        yield server


@pytest.fixture(scope="module")
def bastion(tmp_path_factory, machine) -> Iterator[SshServer]:
    """A second sshd in front of the machine, taking the same client key (the program has one)."""
    workdir = tmp_path_factory.mktemp("bastion")
    shutil.copy(machine.client_key_file, workdir / "id_ed25519")
    shutil.copy(machine.client_key_file.with_suffix(".pub"), workdir / "id_ed25519.pub")
    with running_sshd(workdir, MachineSpec(hostname="standin-bastion"), host="127.0.0.2") as server:
        yield server


def deploy(tmp_path: Path, machine: SshServer, spec: dict[str, Any]) -> Project:
    project = new_project(tmp_path, PROGRAM)
    project.set_secret("privateKey", machine.client_key)
    write_spec(project, spec)
    return project


def write_spec(project: Project, spec: dict[str, Any]) -> None:
    (project.dir / "spec.json").write_text(json.dumps(spec))


def to(server: SshServer, host_key: str | None = None, **extra: Any) -> dict[str, Any]:
    """A connection to server, its ed25519 key pinned unless host_key says otherwise."""
    return {"host": server.host, "port": server.port, "user": server.user, "host_key": host_key or server.host_key, **extra}


def command(name: str, connection: dict[str, Any], **args: Any) -> dict[str, Any]:
    return {"commands": [{"name": name, "connection": connection, "args": args}]}


def machine_file(machine: SshServer, path: str) -> str:
    found = machine.machine.machine_path(path)
    return found.read_text() if found.exists() else ""


def test_create_runs_on_the_machine_and_keeps_stdout_and_stderr(tmp_path, machine):
    project = deploy(
        tmp_path, machine, command("hello", to(machine), create="hostname; echo to-stderr >&2; cat", stdin="from-stdin\n")
    )
    project.up()
    outputs = project.outputs()["hello"]
    assert outputs == {"stdout": "standin-machine\nfrom-stdin", "stderr": "to-stderr"}, f"hello: {outputs}"


def test_the_connection_is_a_secret_in_the_state(tmp_path, machine):
    project = deploy(tmp_path, machine, command("secret", to(machine), create="true"))
    project.up()
    state = project.resource("secret")
    assert state is not None, "secret: not in the state"
    for side in ("inputs", "outputs"):
        assert state[side]["connection"].get("4dabf18193072939515e22adb298388d") == "1b47061264138c4ac30d75fd1eb44270", (
            f"secret: {side}.connection is not a secret: {state[side]['connection']}"
        )
    assert "PRIVATE KEY" not in json.dumps(state), "secret: the private key is in the state in plain text"


def test_a_pinned_key_of_another_type_is_the_one_asked_for(tmp_path, machine):
    ecdsa = machine.machine.host_key("ecdsa")
    project = deploy(tmp_path, machine, command("ecdsa", to(machine, host_key=ecdsa), create="echo reached"))
    project.up()
    assert project.outputs()["ecdsa"]["stdout"] == "reached", "ecdsa: the machine was not reached with its pinned ecdsa key"


def test_a_host_key_mismatch_fails_and_keeps_nothing(tmp_path, machine):
    stranger = tmp_path / "stranger"
    fakehost.ensure_key(stranger, "not-the-machine")
    wrong = fakehost.public_key_line(stranger)
    project = deploy(
        tmp_path,
        machine,
        command("mismatch", to(machine, host_key=wrong, dial_error_limit=0), create="touch /var/lib/gpu-nodes/ran"),
    )
    result = project.up(check=False)
    assert result.returncode != 0, explain("mismatch: a wrong host key was accepted", result)
    assert "ssh: host key mismatch" in result.stdout, explain("mismatch: the failure does not say so", result)
    assert project.resource("mismatch") is None, "mismatch: a failed create is in the state"
    assert not machine.machine.machine_path(f"{WORK}/ran").exists(), "mismatch: the command ran"


def test_an_rsa_host_key_asks_for_sha1_signatures_which_openssh_refuses(tmp_path, machine):
    rsa = machine.machine.host_key("rsa")
    project = deploy(tmp_path, machine, command("rsa", to(machine, host_key=rsa, dial_error_limit=0), create="true"))
    result = project.up(check=False)
    assert result.returncode != 0, explain("rsa: an ssh-rsa pin reached an OpenSSH 8.8+ server", result)
    assert "no common algorithm for host key" in result.stdout and '"ssh-rsa"' in result.stdout, explain(
        "rsa: the failure does not name the refused algorithm", result
    )


@pytest.mark.parametrize("limit", [0, 2])
def test_failed_dials_are_retried_until_more_than_dial_error_limit_failed(tmp_path, machine, limit):
    with counting_listener(silent=False) as broken:
        connection = {"host": "127.0.0.1", "port": broken.port, "user": "root", "dial_error_limit": limit}
        project = deploy(tmp_path, machine, command("retries", connection, create="true"))
        result = project.up(check=False)
    assert result.returncode != 0, explain("retries: a server that hangs up was reached", result)
    assert broken.accepted == limit + 1, f"retries: dialErrorLimit {limit} dialled {broken.accepted} times"


def test_per_dial_timeout_ends_an_attempt_at_a_server_that_never_answers(tmp_path, machine):
    with counting_listener(silent=True) as stuck:
        connection = {"host": "127.0.0.1", "port": stuck.port, "user": "root", "dial_error_limit": 1, "per_dial_timeout": 1}
        project = deploy(tmp_path, machine, command("stuck", connection, create="true"))
        started = time.monotonic()
        result = project.up(check=False, timeout=120)
        took = time.monotonic() - started
    assert result.returncode != 0, explain("stuck: a silent server was reached", result)
    # Without a per-dial limit the first attempt would wait forever (pulumi's own timeout ends the test).
    assert stuck.accepted == 2, f"stuck: {stuck.accepted} attempts in {took:.1f}s, expected 2 of 1 s each"
    assert "perDialTimeout" in result.stdout, explain("stuck: the failure does not say the dial timed out", result)


# What each `logging` value echoes of a command's streams into the engine's display, as pulumi-command 1.2.1
# sends them (provider/pkg/provider/remote/logging.go, ShouldLogStdout and ShouldLogStderr; commandOutputs.go
# `run` writes the streams named to util.LogOutput, one status message per line): unset is both.
ECHOED = {None: {"out", "err"}, "stdoutAndStderr": {"out", "err"}, "stdout": {"out"}, "stderr": {"err"}, "none": set()}


@pytest.mark.parametrize("logging", list(ECHOED), ids=lambda v: str(v))
def test_logging_chooses_the_streams_echoed_and_both_are_kept_whatever_it_says(tmp_path, machine, logging):
    args = {"create": "echo marker-out-1; echo marker-err-1 >&2"} | ({"logging": logging} if logging else {})
    project = deploy(tmp_path, machine, command("echoed", to(machine), **args))
    # The non-interactive display prints the resource's row again at each status message, the message
    # in it; the stack's outputs (which hold both streams) are left out of what it prints.
    shown = project.up("--suppress-outputs").stdout
    echoed = {stream for stream in ("out", "err") if f"marker-{stream}-1" in shown}
    assert echoed == ECHOED[logging], f"logging {logging}: echoed {sorted(echoed)}:\n{shown}"
    assert project.outputs()["echoed"] == {"stdout": "marker-out-1", "stderr": "marker-err-1"}, project.outputs()


def logged(name: str, what: str) -> str:
    return f"echo {what} >> {WORK}/{name}.log"


def test_changed_triggers_replace_the_command_creating_first(tmp_path, machine):
    def spec(trigger: str) -> dict[str, Any]:
        return command(
            "replaced",
            to(machine),
            create=logged("replaced", f"create-{trigger}"),
            delete=logged("replaced", f"delete-{trigger}"),
            triggers=[trigger],
        )

    project = deploy(tmp_path, machine, spec("one"))
    project.up()
    write_spec(project, spec("two"))
    assert project.steps().get("replaced") == "replace", f"replaced: planned {project.steps()}"
    project.up()
    assert machine_file(machine, f"{WORK}/replaced.log").split() == ["create-one", "create-two", "delete-one"], (
        f"replaced: ran {machine_file(machine, f'{WORK}/replaced.log').split()}"
    )


def test_a_changed_command_line_updates_in_place_running_create_again_or_update(tmp_path, machine):
    project = deploy(tmp_path, machine, command("updated", to(machine), create=logged("updated", "create-1")))
    project.up()
    write_spec(project, command("updated", to(machine), create=logged("updated", "create-2")))
    assert project.steps().get("updated") == "update", f"updated: planned {project.steps()}"
    project.up()
    write_spec(
        project, command("updated", to(machine), create=logged("updated", "create-2"), update=logged("updated", "update-3"))
    )
    project.up()
    assert machine_file(machine, f"{WORK}/updated.log").split() == ["create-1", "create-2", "update-3"], (
        f"updated: ran {machine_file(machine, f'{WORK}/updated.log').split()}"
    )
    assert project.pulumi("preview", "--expect-no-changes", check=False).returncode == 0, "updated: changes after up"


def test_destroy_runs_the_delete_line_and_refresh_changes_nothing(tmp_path, machine):
    project = deploy(
        tmp_path, machine, command("deleted", to(machine), create=logged("deleted", "create"), delete=logged("deleted", "delete"))
    )
    project.up()
    refresh = project.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert refresh.returncode == 0, explain("deleted: refresh finds drift in a command", refresh)
    project.pulumi("destroy", "--yes", "--skip-preview")
    assert machine_file(machine, f"{WORK}/deleted.log").split() == ["create", "delete"], (
        f"deleted: ran {machine_file(machine, f'{WORK}/deleted.log').split()}"
    )


def test_a_failed_create_keeps_nothing_in_state_and_the_next_run_creates_it(tmp_path, machine):
    project = deploy(tmp_path, machine, command("flaky", to(machine), create="echo it-broke >&2; exit 3"))
    result = project.up(check=False)
    assert result.returncode != 0, explain("flaky: exit 3 was taken for success", result)
    assert "Process exited with status 3" in result.stdout and "it-broke" in result.stdout, explain(
        "flaky: the failure lacks the exit status or the command's own words", result
    )
    assert project.resource("flaky") is None, "flaky: a failed create is in the state"
    write_spec(project, command("flaky", to(machine), create="echo fixed"))
    assert project.steps().get("flaky") == "create", f"flaky: planned {project.steps()}"
    project.up()
    assert project.outputs()["flaky"]["stdout"] == "fixed", "flaky: the second run did not create it"


def test_copy_to_remote_copies_a_directory_archive_over_sftp(tmp_path, machine):
    source = tmp_path / "parts"
    (source / "nested").mkdir(parents=True)
    (source / "00-first.sh").write_text("echo first\n")
    (source / "nested" / "deep.txt").write_text("deep\n")
    spec = {"copies": [{"name": "copy", "connection": to(machine), "source": str(source), "remotePath": f"{WORK}/copies/one"}]}
    project = deploy(tmp_path, machine, spec)
    project.up()
    landed = machine.machine.machine_path(f"{WORK}/copies/one/parts")
    assert sorted(str(p.relative_to(landed)) for p in landed.rglob("*")) == ["00-first.sh", "nested", "nested/deep.txt"], (
        f"copy: landed {sorted(landed.rglob('*'))}"
    )
    assert (landed / "nested" / "deep.txt").read_text() == "deep\n", "copy: the content differs"
    assert project.pulumi("preview", "--expect-no-changes", check=False).returncode == 0, "copy: changes after up"


@pytest.fixture(scope="module")
def user_machine(tmp_path_factory) -> Iterator[SshServer]:
    """A machine reached as a non-root user with a home, as preflight.become logs in."""
    require_sshd()
    # The user first: the fake machine's /etc is taken when its sshd starts.
    workdir = tmp_path_factory.mktemp("user-machine")
    with throwaway_user("gpnc", home=True) as user, running_sshd(workdir, MachineSpec(hostname="standin-user")) as server:
        yield dataclasses.replace(server, user=user)


def test_a_relative_remote_path_lands_in_the_login_users_home(tmp_path, user_machine):
    """Where preflight.become copies the script: SFTP starts in the user's home."""
    source = tmp_path / "preflight"
    source.mkdir()
    (source / "00-common.sh").write_text("echo common\n")
    copy = {"name": "copy", "connection": to(user_machine), "source": str(source), "remotePath": ".gpu-nodes/preflight/abc"}
    project = deploy(tmp_path, user_machine, {"copies": [copy]})
    project.up()
    landed = user_machine.machine.machine_path(f"/home/{user_machine.user}/.gpu-nodes/preflight/abc/preflight/00-common.sh")
    assert landed.read_text() == "echo common\n", f"copy: not in the user's home: {landed}"


def test_a_machine_behind_a_proxy_is_reached_through_it(tmp_path, machine, bastion):
    connection = to(
        machine, proxy={"host": bastion.host, "port": bastion.port, "user": bastion.user, "host_key": bastion.host_key}
    )
    project = deploy(tmp_path, machine, command("behind", connection, create="hostname"))
    logins_before = bastion_logins(bastion)
    project.up()
    assert project.outputs()["behind"]["stdout"] == "standin-machine", f"behind: ran on {project.outputs()['behind']}"
    assert bastion_logins(bastion) == logins_before + 1, "behind: the bastion saw no login"


def bastion_logins(bastion: SshServer) -> int:
    return bastion.machine.log_file.read_text().count("Accepted publickey")
