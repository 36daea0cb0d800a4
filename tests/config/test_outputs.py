"""Values another resource gives (`pulumi.Output`), as `GpuFleetArgs` reads them: a node's and a
bastion's connection (sshHost, sshPort, sshUser, hostKey) is read when it resolves, and a mistake
then is refused in the words the same value known up front gets; anywhere else an Output is
refused up front, a name saying that it names resources. Under Pulumi mocks: an Output needs the
SDK's event loop."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest

from gpu_nodes import ConfigError, GpuFleetArgs
from gpu_nodes.config.node_group import NodeGroupSpec
from tests.factories import ECDSA_HOST_KEY, HOST_KEY, RSA_HOST_KEY, SSH_KEY, group, node
from tests.pulumi_mocks import run_inline

PROXY = {"host": "10.0.1.1", "user": "jump", "hostKey": HOST_KEY}


def raw_group() -> dict[str, Any]:
    """Two nodes behind a bastion."""
    return group("a100", nodes=[node("a100-node-1", 1), node("a100-node-2", 2)], preflight={"proxy": dict(PROXY)})


# Where each connection setting sits in a group, as the messages name it below `node_groups[0]`.
FIELDS = {
    "sshHost": ("nodes", 1, "sshHost"),
    "sshPort": ("nodes", 1, "sshPort"),
    "sshUser": ("nodes", 1, "sshUser"),
    "hostKey": ("nodes", 1, "hostKey"),
    "proxy.host": ("preflight", "proxy", "host"),
    "proxy.port": ("preflight", "proxy", "port"),
    "proxy.user": ("preflight", "proxy", "user"),
    "proxy.hostKey": ("preflight", "proxy", "hostKey"),
}


def with_value(field: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(raw_group())
    *path, key = FIELDS[field]
    where: Any = raw
    for step in path:
        where = where[step]
    where[key] = value
    return raw


def spec_value(spec: NodeGroupSpec, field: str) -> Any:
    """The spec's value of a connection setting (a node's, or the bastion's)."""
    attribute = {"sshHost": "ssh_host", "sshPort": "ssh_port", "sshUser": "ssh_user", "hostKey": "host_key"}
    if field.startswith("proxy."):
        assert spec.preflight.proxy is not None
        return getattr(spec.preflight.proxy, {"hostKey": "host_key"}.get(field[6:], field[6:]))
    return getattr(spec.nodes[1], attribute[field])


def read(raw: dict[str, Any]) -> NodeGroupSpec:
    (spec,) = GpuFleetArgs(node_groups=[raw], ssh_private_key=SSH_KEY).validate().node_groups
    return spec


def resolved(field: str, value: Any) -> Any:
    """What the spec holds for `field` given as an Output of `value`, once it resolves."""
    found: list[Any] = []

    def program() -> None:
        held = spec_value(read(with_value(field, pulumi.Output.from_input(value))), field)
        assert isinstance(held, pulumi.Output), f"{field}: the spec holds {held!r}, not an Output"
        held.apply(found.append)

    run_inline(program)
    return found[0]


def refused_later(field: str, value: Any) -> ConfigError:
    """The error when `field` is an Output that resolves to `value` (the read itself passes)."""
    with pytest.raises(ConfigError) as caught:
        run_inline(lambda: read(with_value(field, pulumi.Output.from_input(value))))
    return caught.value


def refused_now(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        read(raw)
    return caught.value.problems


GOOD = [
    ("sshHost", "gpu-a-02.example.com"),
    ("sshPort", 2222),
    ("sshUser", "ops"),
    ("hostKey", ECDSA_HOST_KEY),
    ("proxy.host", "10.0.1.9"),
    ("proxy.port", 2200),
    ("proxy.user", "bastion"),
    ("proxy.hostKey", ECDSA_HOST_KEY),
]


@pytest.mark.parametrize(("field", "value"), GOOD, ids=[row[0] for row in GOOD])
def test_a_connection_setting_from_another_resource_is_its_value_once_it_resolves(field, value):
    assert resolved(field, value) == value


def test_a_host_key_from_another_resource_is_read_as_one_given_as_it_is():
    """Its parse runs when it resolves: the trailing newline of `ssh-keyscan` output goes, as up front."""
    assert resolved("hostKey", HOST_KEY + "\n") == HOST_KEY


WRONG = [
    ("sshHost", "10.0.0.2:22"),
    ("sshHost", "root@10.0.0.2"),
    ("sshPort", 0),
    ("sshPort", "22"),
    ("sshUser", "-oProxyCommand=sh"),
    ("hostKey", "ssh-ed25519 AAAA"),
    ("hostKey", RSA_HOST_KEY),
    ("proxy.host", "bastion:22"),
    ("proxy.port", 70000),
    ("proxy.user", "a user"),
    ("proxy.hostKey", "not a key"),
]


@pytest.mark.parametrize(("field", "value"), WRONG, ids=[f"{f}={v!r}"[:40] for f, v in WRONG])
def test_a_wrong_value_from_another_resource_is_refused_when_it_resolves_in_the_words_it_gets_up_front(field, value):
    up_front = refused_now(with_value(field, value))
    later = refused_later(field, value)
    assert later.problems == up_front, f"{field}: up front {up_front}, when it resolves {later.problems}"
    assert str(later).startswith("invalid value from another resource:"), str(later)
    assert up_front[0].startswith("node_groups[0]."), up_front


def test_a_secret_from_another_resource_is_named_by_its_length_only():
    error = refused_later("sshHost", pulumi.Output.secret("10.0.0.2:22"))
    assert error.problems == [
        "node_groups[0].nodes[1].sshHost: got a value of 11 characters; expected a host name or an IP address, without a "
        "port (that is sshPort) or a user"
    ], error.problems


def test_an_output_that_resolves_to_nothing_is_refused():
    """A host key that an Output leaves out would be no pinned key at all: pulumi-command would accept any."""
    error = refused_later("hostKey", None)
    assert error.problems == ["node_groups[0].nodes[1].hostKey: got None; expected a string"], error.problems


def test_an_output_is_no_missing_value_for_the_checks_between_fields():
    """sshHost, sshUser and hostKey are required where preflight runs: an Output gives them."""
    raw = raw_group()
    given = node("a100-node-2", 2)

    def program() -> None:
        outputs = {key: pulumi.Output.from_input(given[key]) for key in ("sshHost", "sshUser", "hostKey")}
        raw["nodes"][1] = {"name": given["name"], **outputs}
        read(raw)

    run_inline(program)


NAMES = "it names resources, and names of resources must be known when the program runs"
# The other settings: the program needs them while it runs; the message says which may be Outputs.
NEEDED = "the program needs it while it runs, to know what to register; only a node's sshHost, sshPort, sshUser and hostKey"
NOT_FROM_A_RESOURCE = [
    ("a node's name", lambda raw, out: raw["nodes"][0].update(name=out("a100-node-1")), "node_groups[0].nodes[0].name", NAMES),
    ("a group's name", lambda raw, out: raw.update(name=out("a100")), "node_groups[0].name", NAMES),
    ("gpusPerNode", lambda raw, out: raw.update(gpusPerNode=out(4)), "node_groups[0].gpusPerNode", NEEDED),
    ("the node list", lambda raw, out: raw.update(nodes=out(raw["nodes"])), "node_groups[0].nodes", NEEDED),
    ("the bastion", lambda raw, out: raw["preflight"].update(proxy=out(PROXY)), "node_groups[0].preflight.proxy", NEEDED),
    # An item its section's parse reads (a label, a taint) is no setting of its own: it says what it takes.
    ("a label's value", lambda raw, out: raw.update(labels={"team": out("ml")}), "node_groups[0].labels.team", "a label value"),
]


@pytest.mark.parametrize(("change", "key", "says"), [r[1:] for r in NOT_FROM_A_RESOURCE], ids=[r[0] for r in NOT_FROM_A_RESOURCE])
def test_an_output_anywhere_else_is_refused_up_front_saying_why(change, key, says):
    problems: list[str] = []

    def program() -> None:
        raw = raw_group()
        change(raw, pulumi.Output.from_input)
        problems.extend(refused_now(raw))

    run_inline(program)
    mine = [p for p in problems if p.startswith(f"{key}: ")]
    assert mine, f"{key}: not refused: {problems}"
    assert mine[0].startswith(f"{key}: got another resource's output; expected "), mine
    assert says in mine[0], mine


def test_a_bastion_from_another_resource_with_preflight_off_is_warned_about_as_such():
    """The warning shows what was given; an Output's repr would say nothing."""
    warnings: list[str] = []

    def program() -> None:
        raw = raw_group()
        raw["preflight"] = {"enabled": False, "proxy": {**PROXY, "host": pulumi.Output.from_input("10.0.1.9")}}
        warnings.extend(GpuFleetArgs(node_groups=[raw]).validate().warnings)

    run_inline(program)
    shown = "node_groups[0].preflight.proxy: {'host': \"another resource's output\""
    assert any(w.startswith(shown) for w in warnings), warnings
