"""The script as the component and the runbook send it (gpu_nodes/preflight/command.py,
bench/runbook.py): their command lines under `bash -c`, as sshd runs them.

The component copies the parts directory to the machine (CopyToRemote, here
node.copy_script()) and runs preflight_command(): it joins the copy, checks it against the
script's digest and feeds it to `bash -s`. The runbook sends the plain script to `bash -s`
on stdin, as an operator would."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.runbook import operator_preflight
from gpu_nodes.preflight.command import REFUSED_EXIT, SCRIPT_DIR, preflight_command, remote_dir
from tests.specs import group_spec

from .preflight_node import BASH, CHECK_NAMES, FAILED_EXIT, PASSED_EXIT, SCRIPT, FakeNode


def _component_form(node: FakeNode, min_driver: str | None = None) -> tuple[str, bytes]:
    spec = group_spec(gpusPerNode=2, preflight={"minDriver": min_driver} if min_driver else {})
    return preflight_command(spec, root=node.remote_root), b""


def _runbook_form(_node: FakeNode) -> tuple[str, bytes]:
    return operator_preflight(group_spec(gpusPerNode=2))


@pytest.mark.parametrize("form", [_component_form, _runbook_form], ids=["component", "runbook"])
def test_the_script_survives_commands_that_read_stdin(node: FakeNode, form: Callable[[FakeNode], tuple[str, bytes]]) -> None:
    # The script reaches `bash -s` on stdin in both forms: a tool reading stdin must not eat it.
    node.copy_script()
    healthy = (node.bin / "nvidia-ctk").read_text().removeprefix("#!/bin/bash\n")
    node.command("nvidia-ctk", "cat >/dev/null\n" + healthy)
    result = node.run_command_line(*form(node))
    assert result.returncode == PASSED_EXIT, result.stderr
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
    assert result.returncode == PASSED_EXIT, result.stderr
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
        assert result.returncode == PASSED_EXIT, result.stderr
    assert sorted(p.name for p in Path(remote_dir(node.remote_root)).iterdir()) == [SCRIPT_DIR.name]
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in SCRIPT_DIR.glob("*.sh")), copy
