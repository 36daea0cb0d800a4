"""The fleet file: what the command refuses before any stack runs, each mistake named."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_nodes.cli.fleet_file import read_fleet
from gpu_nodes.errors import FleetError, GpuNodesError
from tests.cli.fleets import ROOT, fleet, fleet_raw, group
from tests.factories import SSH_KEY

SSH = "gpu-nodes:sshPrivateKey"


def one(*more: dict, **extra) -> dict:
    """A fleet of group `a` (and `more`), `extra` at its top."""
    return fleet_raw(group("a", "n1"), *more, **extra)


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
        (one(group("b", "n1")), "nodeGroups[1].nodes: got 'n1'; a node may belong to one group"),
        (one(stacks={"rack/a": ["a"]}), "stacks: got stack name 'rack/a'; Pulumi takes 1 to 100"),
        (one(stacks={"x" * 101: ["a"]}), "Pulumi takes 1 to 100 letters"),
        (one(group("b", "n2"), stacks={"s1": ["a"]}), "nodeGroups[1].name: got 'b'; in no stack; add it to one of s1"),
        (one(stacks={"s1": ["a"], "s2": ["a"]}), "stacks.s2: got 'a'; a group has one stack, and 'a' is already in stack 's1'"),
        (one(stacks={"s1": ["zz"]}), "stacks.s1: got 'zz'; expected a group under nodeGroups: a"),
        (one(owner="nope"), "owner: got 'nope'; expected one of the stacks: a"),
        (one(config={"gpu-nodes:nodeGroups": []}), "config.gpu-nodes:nodeGroups: got []; set by the command"),
        (one(config={"gpu-nodes:sshPrivateKey": "k"}), "config.gpu-nodes:sshPrivateKey: got a value of 1 character; a secret"),
        (one(config={"kubeconfig": "x"}), "config.kubeconfig: got 'x'; not a stack setting"),
        (one(secrets={"gpu-nodes:sshPrivateKey": "plain"}), "expected {file: PATH} or {env: NAME}"),
        (one(surprise=1), "surprise: got 1; unknown key"),
        (one(program="/nonexistent"), "program: got '/nonexistent'; /nonexistent has no Pulumi.yaml"),
        (one(owner=["a"]), "owner: got ['a']; expected a string"),
        (one(program=3), "program: got 3; expected a string"),
        (one(config=["kubernetes:kubeconfig"]), "config: got ['kubernetes:kubeconfig']; expected an object"),
        (one(secrets="~/.ssh/id"), "secrets: got '~/.ssh/id'; expected an object"),
        (one(stacks=["a"]), "stacks: got ['a']; expected an object"),
        (one(stacks={}), "stacks: got {}; expected a mapping of stack name"),
        (one(stacks={"s": "a"}), "stacks.s: got 'a'; expected a list of group names"),
        (one(nodeGroup=[]), "nodeGroup: got []; unknown key; did you mean nodeGroups?"),
        (one(config={"gpu-nodes:runtimeClas": "x"}), "did you mean gpu-nodes:runtimeClass?"),
        (one(config={"gpu-nodes:surprise": 1}), "config.gpu-nodes:surprise: got 1; unknown key"),
        (one(config={"kubernetes:kubeconfig": 5}), "config.kubernetes:kubeconfig: got 5; expected a string"),
        (one(config={"gpu-nodes:insecureSkipHostKeyCheck": "yes"}), "config.gpu-nodes:insecureSkipHostKeyCheck: got 'yes'"),
        (one(secrets={SSH: {"env": ""}}), f"secrets.{SSH}.env: got ''"),
        (one(secrets={SSH: {"env": "1KEY"}}), f"secrets.{SSH}.env: got '1KEY'"),
        (one(secrets={SSH: {"env": 7}}), f"secrets.{SSH}.env: got 7; expected a string"),
        (one(secrets={SSH: {"file": ""}}), f"secrets.{SSH}.file: got ''"),
        (one(secrets={SSH: {"path": "k"}}), f"secrets.{SSH}.path: got 'k'; unknown key; allowed keys: file, env"),
        (
            one(secrets={SSH: {"file": "k", "env": "K"}}),
            "expected {file: PATH} or {env: NAME}, one of them",
        ),
        (one(secrets={"gpu-nodes:runtimeClass": {"env": "K"}}), "not a secret: put it under config"),
        (one(secrets={"gpu-nodes:sshKey": {"env": "K"}}), "did you mean gpu-nodes:sshPrivateKey?"),
        (fleet_raw(group("a", "n1", gpusPerNode="four")), "nodeGroups[0].gpusPerNode: got 'four'"),
        (fleet_raw(), "nodeGroups: got []; expected a list with at least one node group"),
        (one(config={"gpu-nodes:runtimeClass": "Bad_Name"}), "gpu-nodes:runtimeClass: got 'Bad_Name'"),
        (
            one(group("b", "n2"), secrets={"gpu-nodes:imagePullSecret": {"env": "PULL"}}),
            "secrets.gpu-nodes:imagePullSecret: got {'env': 'PULL'}; a private registry across stacks is not supported yet",
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
        "owner-a-list",
        "program-a-number",
        "config-a-list",
        "secrets-a-string",
        "stacks-a-list",
        "stacks-empty",
        "stack-members-a-string",
        "top-level-typo",
        "config-key-typo",
        "config-unknown-own-key",
        "kubeconfig-a-number",
        "boolean-a-word",
        "secret-env-empty",
        "secret-env-no-name",
        "secret-env-a-number",
        "secret-file-empty",
        "secret-source-typo",
        "secret-two-sources",
        "secret-that-is-config",
        "secret-key-typo",
        "group-field-wrong-type",
        "no-groups",
        "bad-runtime-class",
        "pull-secret-across-stacks",
    ],
)
def test_a_bad_fleet_is_refused_naming_the_key(raw: dict, expected: str):
    found = problems(raw)
    assert any(expected in p for p in found), f"no problem says {expected!r}: {found}"


def test_every_mistake_is_reported_at_once():
    found = problems(one(group("b", "n1"), owner="nope", surprise=1))
    assert len(found) == 3, found


def test_a_secret_is_read_from_its_file(tmp_path: Path):
    key = tmp_path / "id"
    key.write_text(SSH_KEY)
    read = fleet(group("a", "n1"), secrets={SSH: {"file": str(key)}})
    assert [s.read() for s in read.secrets] == [SSH_KEY], read.secrets


def test_a_secret_that_is_no_key_is_named_by_its_length_where_it_is_read(tmp_path: Path):
    key = tmp_path / "id.pub"
    key.write_text("ssh-ed25519 AAAAC3Nza me@host")
    read = fleet(group("a", "n1"), secrets={SSH: {"file": str(key)}})
    with pytest.raises(GpuNodesError) as caught:
        read.secrets[0].read()
    assert "a value of 29 characters; this is a public key" in str(caught.value), caught.value
    assert "AAAA" not in str(caught.value), caught.value


def test_a_secret_in_config_is_never_shown():
    found = problems(one(config={"gpu-nodes:sshPrivateKey": SSH_KEY}))
    assert not any("PRIVATE KEY" in p for p in found), found


def test_a_secret_from_an_unset_variable_names_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FLEET_TEST_KEY", raising=False)
    read = fleet(group("a", "n1"), secrets={SSH: {"env": "FLEET_TEST_KEY"}})
    with pytest.raises(Exception, match="FLEET_TEST_KEY is not set"):
        read.secrets[0].read()
