"""Machines made by the same program, on the real engine: a node's address from another resource's
output reaches the SSH connection its preflight runs over, and a wrong one, known only once that
resource gives it, stops the run in the reader's words, without a Python traceback. Real engine,
command provider and sshd on loopback; no cluster: the fleet's Kubernetes side is not here
(tests/resources/test_outputs.py has it under mocks, tests/e2e/test_program_languages.py on the
local cluster).

- From a Python program: the run stops as when a resource fails (the engine starts nothing new;
  pkg/resource/deploy/step_executor.go, `cancelDueToError`), and what was under way completes: the
  first machine's command, which did not wait for the second machine.
- From a Pulumi YAML program, through a component package: the component's construction is refused,
  the wrong value named by its property path as a wrong value known up front is; fixed where it comes
  from, the next run reaches both machines.

Both build their nodes' connections as the fleet does: the reading of `GpuFleetArgs` (the package's
`fleet_args`) and `gpu_nodes.preflight.command.connection`, one `remote.Command` per node running
`hostname` on the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.engine.project import ROOT, Project, explain, new_project, new_yaml_project
from tests.sshd import MachineSpec, SshServer, require_sshd, running_sshd

pytestmark = pytest.mark.engine

HOSTNAME = "machine-from-a-resource"
# What the second machine's resource gives: an address with a port, a mistake sshHost refuses.
WRONG = "gpu-a-02:22"
REASON = f"got '{WRONG}'; expected a host name or an IP address, without a port (that is sshPort) or a user"

# The Python program: two machines a dynamic provider "creates"; the wrong one takes a few seconds
# to boot, so the first machine's command is under way (or done) when its address resolves.
PROGRAM = """
import time

import pulumi
from pulumi.dynamic import CreateResult, Resource, ResourceProvider
from pulumi_command import remote

from gpu_nodes import GpuFleetArgs
from gpu_nodes.preflight.command import connection


class MachineProvider(ResourceProvider):
    def create(self, props):
        time.sleep(props["bootSeconds"])
        return CreateResult(id_=props["address"], outs=props)


class Machine(Resource):
    address: pulumi.Output[str]

    def __init__(self, name, address, boot_seconds):
        super().__init__(MachineProvider(), name, {{"address": address, "bootSeconds": boot_seconds}})


key = pulumi.Config().require_secret("privateKey")
machines = [Machine("gpu-a-01", "{host}", 0), Machine("gpu-a-02", "{wrong}", 4)]
nodes = [
    {{"name": f"node-{{i}}", "sshHost": m.address, "sshPort": {port}, "sshUser": "{user}", "hostKey": "{host_key}"}}
    for i, m in enumerate(machines)
]
args = GpuFleetArgs(node_groups=[{{"name": "a100", "gpusPerNode": 1, "nodes": nodes}}], ssh_private_key=key)
(group,) = args.validate().node_groups
for node in group.nodes:
    command = remote.Command(f"{{node.name}}-preflight", connection=connection(node, group.preflight, key), create="hostname")
    pulumi.export(node.name, command.stdout)
"""

# The component package: a component whose inputs are GpuFleet's own (the same schema types), read
# as the package reads them, each node's command under it; its output is every node's, as the fleet's is.
PLUGIN = """
from typing import Optional

import pulumi
from pulumi.provider.experimental import component_provider_host
from pulumi_command import remote

from gpu_nodes.package.components import fleet_args
from gpu_nodes.config.inputs import GpuFleetInputs
from gpu_nodes.preflight.command import connection


class Preflights(pulumi.ComponentResource):
    hostnames: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: GpuFleetInputs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("probe:index:Preflights", name, {}, opts)
        stack = fleet_args(args, "probe:index:Preflights").validate()
        commands = {
            node.name: remote.Command(
                f"{name}-{node.name}-preflight",
                connection=connection(node, group.preflight, args["ssh_private_key"]),
                create="hostname",
                opts=pulumi.ResourceOptions(parent=self),
            )
            for group in stack.node_groups
            for node in group.nodes
        }
        self.hostnames = pulumi.Output.from_input({n: c.stdout for n, c in commands.items()})
        self.register_outputs({"hostnames": self.hostnames})


if __name__ == "__main__":
    component_provider_host([Preflights], "probe")
"""


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Iterator[SshServer]:
    require_sshd()
    with running_sshd(tmp_path_factory.mktemp("machine"), MachineSpec(hostname=HOSTNAME)) as server:
        yield server


def with_this_checkout(project: Project) -> Project:
    """The program (and the plugin it runs) import gpu_nodes from this checkout."""
    project.env["PYTHONPATH"] = str(ROOT)
    return project


def commands(project: Project) -> dict[str, dict[str, Any]]:
    """The commands in the state, by name."""
    return {r["urn"].rsplit("::", 1)[1]: r for r in project.resources() if r["type"] == "command:remote:Command"}


def test_a_wrong_address_from_a_resource_of_a_python_program_stops_the_run_in_the_readers_words(tmp_path, machine):
    program = PROGRAM.format(host=machine.host, wrong=WRONG, port=machine.port, user=machine.user, host_key=machine.host_key)
    project = with_this_checkout(new_project(tmp_path, program))
    project.set_secret("privateKey", machine.client_key)
    result = project.up(check=False)
    shown = result.stdout + result.stderr
    assert result.returncode != 0, explain("the run passed with a wrong address", result)
    said = "error: invalid value from another resource:" in result.stdout
    assert said and f"- node_groups[0].nodes[1].sshHost: {REASON}" in result.stdout, explain("not in the reader's words", result)
    assert "Traceback" not in shown and "Program failed" not in shown, explain("a traceback for a user's mistake", result)
    found = commands(project)
    assert "node-1-preflight" not in found, "node-1's command is in the state with a wrong address"
    assert found.get("node-0-preflight", {}).get("outputs", {}).get("stdout") == HOSTNAME, explain(
        f"node-0's command did not complete: {sorted(found)}", result
    )


def test_an_address_from_a_resource_of_a_yaml_program_reaches_its_connection_and_a_wrong_one_is_refused(tmp_path, machine):
    """Through the component package: a wrong value fails the component's construction, named by its
    property path as a wrong value known up front is; fixed where it comes from, the next run checks both."""
    machines = new_yaml_project(tmp_path, machines_program(machine.host, WRONG))
    machines.up()
    project = with_this_checkout(Project(tmp_path / "program", dict(machines.env)))
    write_yaml_program(project, machine)
    result = project.up(check=False)
    shown = result.stdout + result.stderr
    assert result.returncode != 0, explain("the run passed with a wrong address", result)
    expected = f'- property nodeGroups[0].nodes[1].sshHost with value "{WRONG}" has a problem: {REASON}'
    assert expected in result.stdout, explain("the property's problem is not shown", result)
    assert "Traceback" not in shown and "Unexpected" not in shown, explain("a traceback for a user's mistake", result)
    assert "probes-node-1-preflight" not in commands(project), "node-1's command is in the state with a wrong address"

    (machines.dir / "Pulumi.yaml").write_text(machines_program(machine.host, machine.host))
    machines.up()
    project.up()
    assert project.outputs()["hostnames"] == {"node-0": HOSTNAME, "node-1": HOSTNAME}, project.outputs()
    # Each command waits for what gives its address, as a machine's must wait for the machine.
    (reference,) = [r["urn"] for r in project.resources() if r["type"] == "pulumi:pulumi:StackReference"]
    for name, command in commands(project).items():
        assert reference in command.get("dependencies", []), f"{name}: does not depend on {reference}: {command}"


def machines_program(first: str, second: str) -> str:
    """The stack whose outputs are the machines' addresses: a StackReference's outputs are Outputs."""
    return f"name: probe\nruntime: yaml\noutputs:\n  first: '{first}'\n  second: '{second}'\n"


def write_yaml_program(project: Project, machine: SshServer) -> None:
    """The YAML program and its plugin, beside the machines' project and in its backend (where the
    StackReference finds it), its stack initialised."""
    plugin = project.dir.parent / "plugin"
    plugin.mkdir()
    (plugin / "PulumiPlugin.yaml").write_text(f"runtime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n")
    (plugin / "__main__.py").write_text(PLUGIN)
    project.dir.mkdir()
    (project.dir / "Pulumi.yaml").write_text(yaml.safe_dump(yaml_program(plugin, machine), sort_keys=False))
    project.pulumi("stack", "init")
    project.set_secret("privateKey", machine.client_key)


def yaml_program(plugin: Path, machine: SshServer) -> dict[str, Any]:
    def node(name: str, output: str) -> dict[str, Any]:
        address = '${machines.outputs["' + output + '"]}'
        return {"name": name, "sshHost": address, "sshPort": machine.port, "sshUser": machine.user, "hostKey": machine.host_key}

    nodes = [node("node-0", "first"), node("node-1", "second")]

    return {
        "name": "probe-user",
        "runtime": "yaml",
        "packages": {"probe": str(plugin)},
        "config": {"privateKey": {"type": "string", "secret": True}},
        "resources": {
            "machines": {"type": "pulumi:pulumi:StackReference", "properties": {"name": "organization/probe/test"}},
            "probes": {
                "type": "probe:Preflights",
                "properties": {
                    "nodeGroups": [{"name": "a100", "gpusPerNode": 1, "nodes": nodes}],
                    "sshPrivateKey": "${privateKey}",
                },
            },
        },
        "outputs": {"hostnames": "${probes.hostnames}"},
    }
