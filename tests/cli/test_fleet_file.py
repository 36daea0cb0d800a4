"""The fleet file: what the command refuses before any stack runs, each mistake named."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_nodes.cli.fleet_file import read_fleet
from gpu_nodes.errors import FleetError
from tests.cli.fleets import ROOT, fleet, fleet_raw, group


def problems(raw: dict) -> list[str]:
    with pytest.raises(FleetError) as caught:
        read_fleet(Path("/fleets/fleet.yaml"), raw)
    return caught.value.problems


def test_by_default_each_group_is_a_stack_named_after_it_and_the_first_owns():
    read = fleet(group("a100", "n1"), group("h100", "n2"))
    assert read.stacks == {"a100": ("a100",), "h100": ("h100",)}, read.stacks
    assert read.owner == "a100" and read.program == ROOT, (read.owner, read.program)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (fleet_raw(group("a", "n1"), group("b", "n1")), "nodeGroups[1].nodes: got 'n1'; a node may belong to one group"),
        (fleet_raw(group("a", "n1"), stacks={"rack/a": ["a"]}), "stacks: got stack name 'rack/a'; Pulumi takes 1 to 100"),
        (fleet_raw(group("a", "n1"), stacks={"x" * 101: ["a"]}), "Pulumi takes 1 to 100 letters"),
        (fleet_raw(group("a", "n1"), group("b", "n2"), stacks={"s1": ["a"]}), "stacks: group 'b' is in no stack"),
        (fleet_raw(group("a", "n1"), stacks={"s1": ["a"], "s2": ["a"]}), "stacks.s2: group 'a' is already in stack 's1'"),
        (fleet_raw(group("a", "n1"), stacks={"s1": ["zz"]}), "stacks.s1: group 'zz' is not under nodeGroups"),
        (fleet_raw(group("a", "n1"), owner="nope"), "owner: got 'nope'; expected one of the stacks: a"),
        (fleet_raw(group("a", "n1"), config={"gpu-nodes:nodeGroups": []}), "config.gpu-nodes:nodeGroups: set by the command"),
        (fleet_raw(group("a", "n1"), config={"gpu-nodes:sshPrivateKey": "k"}), "config.gpu-nodes:sshPrivateKey: a secret"),
        (fleet_raw(group("a", "n1"), config={"kubeconfig": "x"}), "config.kubeconfig: not a stack setting"),
        (fleet_raw(group("a", "n1"), secrets={"gpu-nodes:sshPrivateKey": "plain"}), "expected {file: PATH} or {env: NAME}"),
        (fleet_raw(group("a", "n1"), surprise=1), "surprise: unknown key"),
        (fleet_raw(group("a", "n1"), program="/nonexistent"), "program: got '/nonexistent'; /nonexistent has no Pulumi.yaml"),
        (fleet_raw(group("a", "n1"), config={"gpu-nodes:runtimeClass": "Bad_Name"}), "gpu-nodes:runtimeClass: got 'Bad_Name'"),
        (
            fleet_raw(group("a", "n1"), group("b", "n2"), secrets={"gpu-nodes:imagePullSecret": {"env": "PULL"}}),
            "secrets.gpu-nodes:imagePullSecret: a private registry across stacks is not supported yet",
        ),
    ],
    ids=[
        "node-in-two-groups",
        "stack-name-with-slash",
        "stack-name-too-long",
        "group-in-no-stack",
        "group-in-two-stacks",
        "unknown-group",
        "unknown-owner",
        "node-groups-under-config",
        "secret-under-config",
        "key-without-namespace",
        "secret-without-source",
        "unknown-key",
        "no-program",
        "bad-runtime-class",
        "pull-secret-across-stacks",
    ],
)
def test_a_bad_fleet_is_refused_naming_the_key(raw: dict, expected: str):
    found = problems(raw)
    assert any(expected in p for p in found), f"no problem says {expected!r}: {found}"


def test_every_mistake_is_reported_at_once():
    found = problems(fleet_raw(group("a", "n1"), group("b", "n1"), owner="nope", surprise=1))
    assert len(found) == 3, found


def test_a_secret_is_read_from_its_file(tmp_path: Path):
    key = tmp_path / "id"
    key.write_text("KEY")
    read = fleet(group("a", "n1"), secrets={"gpu-nodes:sshPrivateKey": {"file": str(key)}})
    assert [s.read() for s in read.secrets] == ["KEY"], read.secrets


def test_a_secret_from_an_unset_variable_names_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FLEET_TEST_KEY", raising=False)
    read = fleet(group("a", "n1"), secrets={"gpu-nodes:sshPrivateKey": {"env": "FLEET_TEST_KEY"}})
    with pytest.raises(Exception, match="FLEET_TEST_KEY is not set"):
        read.secrets[0].read()
