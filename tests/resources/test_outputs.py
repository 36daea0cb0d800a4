"""A fleet whose machines the same program creates: a node's address from another resource's output
reaches its preflight; a wrong one, known only when that resource is created, fails that node's
preflight with the reader's words and no other node's; what names resources stays a plain value.
Under Pulumi mocks; the real engine's side is tests/engine/test_outputs.py."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from gpu_nodes import ConfigError, GpuFleet, GpuFleetArgs
from tests.factories import SSH_KEY, group, node
from tests.pulumi_mocks import FLEET, Recorder, fresh_runtime

COMMAND = "command:remote:Command"
COPY = "command:remote:CopyToRemote"
MACHINE = "test:index:Machine"
# How long a test waits for what a machine's creation waits for (see Machines).
PATIENCE = 30.0


class Machine(pulumi.CustomResource):
    """A machine the program creates (a VM, a bare-metal server): its address is an output."""

    address: pulumi.Output[str]

    def __init__(self, name: str, address: str):
        super().__init__(MACHINE, name, {"address": address})


class Machines(Recorder):
    """Mocks in which a machine is created only once `ready` says so (a machine takes a while to
    boot): what registers meanwhile does not wait for its address."""

    def __init__(self, ready: Callable[[Recorder], bool] = lambda _: True):
        super().__init__()
        self.ready = ready

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == MACHINE:
            deadline = time.monotonic() + PATIENCE
            while not self.ready(self) and time.monotonic() < deadline:
                time.sleep(0.01)
        return super().new_resource(args)


def run(program: Callable[[], Any], recorder: Recorder) -> BaseException | None:
    """Run `program` under `recorder`'s mocks; what it raised, if anything."""
    fresh_runtime({}, [], recorder)

    @pulumi.runtime.test
    def evaluate() -> None:
        program()

    try:
        evaluate()
    except Exception as error:  # noqa: BLE001 -- the test reads it
        return error
    finally:
        quiet_failed_outputs()
    return None


def quiet_failed_outputs() -> None:
    """Let a resource that failed to register leave its outputs unread, as in a real run: the SDK
    resolves each with the error (pulumi/runtime/resource.py, `resolve_outputs_due_to_exception`),
    and asyncio logs each one no one awaited whenever it is collected, a traceback each, unless its
    logger is quiet, as Pulumi's language host keeps it for the whole run
    (pulumi-language-python-exec sets asyncio's logger to CRITICAL)."""
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def fleet(nodes: list[dict[str, Any]], name: str = "a100") -> GpuFleet:
    args = GpuFleetArgs(node_groups=[group(name, nodes=nodes)], ssh_private_key=pulumi.Output.secret(SSH_KEY))
    return GpuFleet(FLEET, args)


def registered(recorder: Recorder) -> list[str]:
    """The types registered, but the stack's own."""
    return [r.type for r in recorder.resources.values() if r.type != "pulumi:pulumi:Stack"]


def preflights(recorder: Recorder) -> dict[str, dict[str, Any]]:
    """Each preflight command and script copy registered, by name (`a100-a100-node-1-preflight`), with its connection."""
    return {r.name: r.inputs.get("connection", {}) for r in recorder.resources.values() if r.type in (COMMAND, COPY)}


def test_an_address_from_another_resource_reaches_the_nodes_preflight():
    recorder = Machines()
    reports: list[Any] = []

    def program() -> None:
        machine = Machine("gpu-a-02", "10.0.7.2")
        built = fleet([node("a100-node-1", 1), {**node("a100-node-2", 2), "sshHost": machine.address, "sshPort": 2222}])
        built.node_groups.apply(reports.append)

    assert run(program, recorder) is None
    found = preflights(recorder)
    for name in ("a100-a100-node-2-preflight", "a100-a100-node-2-preflight-script"):
        assert (found[name]["host"], found[name]["port"]) == ("10.0.7.2", 2222), f"{name}: {found[name]}"
    assert found["a100-a100-node-1-preflight"]["host"] == "10.0.0.1", found
    command = next(r for r in recorder.resources.values() if r.name == "a100-a100-node-2-preflight")
    machine = next(r for r in recorder.resources.values() if r.type == MACHINE)
    assert machine.urn in command.dependencies, f"{command.urn}: does not wait for the machine: {command.dependencies}"
    # The report is keyed by the nodes' names, which are plain.
    assert sorted(reports[0]["a100"]) == ["a100-node-1", "a100-node-2"], reports


def test_a_wrong_address_known_only_when_its_machine_is_created_fails_that_nodes_preflight_only():
    # The machine boots only once the other nodes' preflight commands are registered: they do not wait for it.
    others = {"a100-a100-node-1-preflight", "a100-a100-node-3-preflight"}
    recorder = Machines(ready=lambda r: others <= set(preflights(r)))

    def program() -> None:
        machine = Machine("gpu-a-02", "gpu-a-02:22")
        fleet([node("a100-node-1", 1), {**node("a100-node-2", 2), "sshHost": machine.address}, node("a100-node-3", 3)])

    error = run(program, recorder)
    assert isinstance(error, ConfigError), f"expected a ConfigError, got {error!r}"
    assert error.problems == [
        "node_groups[0].nodes[1].sshHost: got 'gpu-a-02:22'; expected a host name or an IP address, without a port (that "
        "is sshPort) or a user"
    ], error.problems
    assert "Traceback" not in str(error), str(error)
    found = preflights(recorder)
    assert not [name for name in found if "node-2" in name], f"node-2's preflight registered with a wrong address: {found}"
    assert others <= set(found), f"the other nodes' preflights: {sorted(found)}"


def test_a_wrong_address_known_up_front_is_refused_before_anything_is_registered():
    recorder = Machines()
    error = run(lambda: fleet([node("a100-node-1", 1), {**node("a100-node-2", 2), "sshHost": "gpu-a-02:22"}]), recorder)
    assert isinstance(error, ConfigError) and "node_groups[0].nodes[1].sshHost: got 'gpu-a-02:22'" in str(error), error
    assert not registered(recorder), f"registered: {registered(recorder)}"


@pytest.mark.parametrize(
    ("nodes", "name", "key"),
    [
        (lambda machine: [{**node("a100-node-1", 1), "name": machine.id}], "a100", "node_groups[0].nodes[0].name"),
        (lambda machine: [node("a100-node-1", 1)], lambda machine: machine.id, "node_groups[0].name"),
    ],
    ids=["a node's name", "a group's name"],
)
def test_a_name_from_another_resource_is_refused_saying_why_before_the_fleet_registers(nodes, name, key):
    recorder = Machines()

    def program() -> None:
        machine = Machine("gpu-a-01", "10.0.7.1")
        fleet(nodes(machine), name(machine) if callable(name) else name)

    error = run(program, recorder)
    assert isinstance(error, ConfigError), f"expected a ConfigError, got {error!r}"
    expected = (
        f"{key}: got another resource's output; expected a string given as it is: it names resources, and names of "
        "resources must be known when the program runs"
    )
    assert expected in error.problems, error.problems
    assert registered(recorder) == [MACHINE], f"the fleet registered: {registered(recorder)}"


def test_an_address_not_known_yet_builds_the_fleet():
    """As in a preview of a program whose machine is not created yet: its preflight is registered, its address unknown."""
    recorder = Machines()

    def program() -> None:
        unknown: pulumi.Output[str] = pulumi.Output(set(), _resolved(None), _resolved(False))
        fleet([node("a100-node-1", 1), {**node("a100-node-2", 2), "sshHost": unknown}])

    assert run(program, recorder) is None
    assert {"a100-a100-node-1-preflight", "a100-a100-node-2-preflight"} <= set(preflights(recorder))


def _resolved(value: Any) -> asyncio.Future[Any]:
    done: asyncio.Future[Any] = asyncio.get_event_loop().create_future()
    done.set_result(value)
    return done
