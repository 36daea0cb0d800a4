"""gpu-nodes from a Pulumi YAML program: `examples/yaml`, with the component package added from this
checkout, run by the real engine with Pulumi YAML's own language host on the local cluster.

The example is copied out of the checkout with its node and namespaces replaced by a fake machine of
its own (gpu-node-11) and namespaces no other stack uses, and a `gpu-nodes:GpuNodeGroup` on
gpu-node-12 added beside its fleet; the rest is the example as a user reads it, but that the fleet's
machine is given as a team that creates its machines in the same program gives it: its address and
host key are another resource's outputs (a ConfigMap's data, see `address_from_a_resource`). Up
proves both nodes as the seed's checklist does (kubectl: labels, taints, the plugin, the Jobs, the
gate lifted), the fleet's node's preflight having waited for that resource; preview and refresh are
then clean; a wrong value stops a run naming its property path with nothing registered; destroy
leaves nothing of the stack's on the cluster.

Runs after test_package.py (file order), on nodes of its own, beside the story's stack.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import GATE, ROOT, STATE, LocalEnv, taints_of

pytestmark = pytest.mark.cluster

NODE = "gpu-node-11"
# A group on its own (gpu-nodes:GpuNodeGroup), beside the example's fleet in the same program.
SOLO_NODE = "gpu-node-12"
STACK = "yaml"
GROUP = "a100"
NAMESPACES = {"devicePlugin": "yaml-device-plugin", "verification": "yaml-verification"}
SOLO_NAMESPACES = {"devicePlugin": "solo-device-plugin", "verification": "solo-verification"}
RUNTIME_CLASS = "nvidia-yaml"
SOLO_RUNTIME_CLASS = "nvidia-solo"
WORK = STATE / "e2e-yaml"
KUBECONFIG = STATE / "cluster/kubeconfig"
OUR_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
# The resource of the program that gives the fleet's machine (see address_from_a_resource).
MACHINE = "machine"
MACHINE_CONFIG_MAP = "gpu-nodes-yaml-machine"


def example(node: dict[str, Any], solo: dict[str, Any] | None = None, **group_changes: Any) -> dict[str, Any]:
    """examples/yaml's program for this cluster: the package from this checkout, our node, our
    namespaces; with `solo`, a GpuNodeGroup on that node beside the fleet."""
    program = yaml.safe_load((ROOT / "examples/yaml/Pulumi.yaml").read_text())
    program["packages"]["gpu-nodes"] = str(ROOT / "package")
    program["runtime"]["options"]["virtualenv"] = str(ROOT / ".venv")
    properties = program["resources"]["gpus"]["properties"]
    (group,) = properties["nodeGroups"]
    group["nodes"] = [node]
    group["devicePlugin"] = {"namespace": NAMESPACES["devicePlugin"]}
    group.setdefault("verification", {})["namespace"] = NAMESPACES["verification"]
    group["verification"]["timeoutSeconds"] = 120
    group["priorityClass"] = {"name": "gpu-yaml"}
    group.update(group_changes)
    properties["runtimeClass"] = RUNTIME_CLASS
    properties["createRuntimeClass"] = True
    if solo is not None:
        program["resources"]["solo"] = {
            "type": "gpu-nodes:GpuNodeGroup",
            "properties": {
                "name": "solo",
                "gpusPerNode": 4,
                "nodes": [solo],
                "devicePlugin": {"namespace": SOLO_NAMESPACES["devicePlugin"]},
                "verification": {"namespace": SOLO_NAMESPACES["verification"], "timeoutSeconds": 120},
                "priorityClass": {"name": "gpu-solo"},
                "runtimeClass": SOLO_RUNTIME_CLASS,
                "createRuntimeClass": True,
                "sshPrivateKey": "${sshPrivateKey}",
            },
            "options": {"providers": ["${cluster}"]},
        }
        program["outputs"]["solo"] = "${solo.nodes}"
    return program


def address_from_a_resource(program: dict[str, Any], machine: dict[str, Any]) -> dict[str, Any]:
    """The program with its fleet's machine given as a machine the same program creates would give it:
    its address and host key as another resource's outputs, here the data of a ConfigMap the program
    creates in the same `up` (a VM's resource would give its private IP so). The ConfigMap, because the
    kubernetes provider is the real one this engine has: the command provider is a stand-in that gives
    Pulumi YAML no schema and serves no `command:local:*` (tools/engine/README.md), and a
    StackReference would need a second stack and its own `up`. The values are the fake machine's."""
    program["resources"][MACHINE] = {
        "type": "kubernetes:core/v1:ConfigMap",
        "properties": {
            "metadata": {"name": MACHINE_CONFIG_MAP, "namespace": "default"},
            "data": {"sshHost": machine["sshHost"], "hostKey": machine["hostKey"]},
        },
        "options": {"provider": "${cluster}"},
    }
    (group,) = program["resources"]["gpus"]["properties"]["nodeGroups"]
    (node,) = group["nodes"]
    group["nodes"] = [{**node, "sshHost": f'${{{MACHINE}.data["sshHost"]}}', "hostKey": f'${{{MACHINE}.data["hostKey"]}}'}]
    return program


def write_program(where: Path, program: dict[str, Any]) -> Path:
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    (where / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    return where


def pulumi(local: LocalEnv, cwd: Path, *args: str, check: bool = True, stack: str = STACK, timeout: int = 1200):
    return local.run("pulumi", *args, "--stack", stack, "--non-interactive", check=check, timeout=timeout, cwd=cwd)


def init_stack(local: LocalEnv, program: Path, stack: str) -> None:
    pulumi(local, program, "stack", "init", stack=stack)
    pulumi(local, program, "config", "set", "--secret", "kubeconfig", str(KUBECONFIG), stack=stack)
    key = (STATE / "fakehosts/id_ed25519").read_text()
    local.run("pulumi", "config", "set", "--secret", "--stack", stack, "sshPrivateKey", stdin=key, cwd=program)


def fake_machine(name: str = NODE) -> dict[str, Any]:
    hosts = {h["name"]: h for h in json.loads((STATE / "fakehosts/hosts.json").read_text())}
    return {k: hosts[name][k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey")}


@pytest.fixture(scope="module")
def program(local: LocalEnv) -> Iterator[Path]:
    local.run("tools/cluster/up.sh", "--nodes", "12", timeout=600)
    local.run("tools/fakehost/up.sh", NODE, SOLO_NODE)
    shutil.rmtree(WORK, ignore_errors=True)
    machine = fake_machine()
    path = write_program(WORK / "program", address_from_a_resource(example(machine, solo=fake_machine(SOLO_NODE)), machine))
    init_stack(local, path, STACK)
    yield path
    pulumi(local, path, "destroy", "--yes", "--skip-preview", check=False)
    pulumi(local, path, "stack", "rm", "--yes", check=False)


@pytest.fixture(scope="module")
def deployed(program: Path, local: LocalEnv) -> Path:
    pulumi(local, program, "up", "--yes", "--skip-preview")
    return program


def test_the_yaml_program_proves_its_node_and_lifts_the_gate(deployed: Path, local: LocalEnv):
    report = json.loads(pulumi(local, deployed, "stack", "output", "nodeGroups", "--json").stdout)
    assert report[GROUP][NODE]["gate"] == "lifted", f"{NODE}: {report[GROUP][NODE]}"
    assert report[GROUP][NODE]["preflight"]["passed"] is True, f"{NODE}: {report[GROUP][NODE]['preflight']}"
    node = local.node(NODE)
    labels = node["metadata"]["labels"]
    assert labels.get("accelerator") == "nvidia" and labels.get("gpu-nodes.dev/node-group") == GROUP, f"{NODE}: {labels}"
    taints = taints_of(node)
    assert OUR_TAINT in taints and GATE not in taints, local.explain(f"{NODE}: taints {taints}")
    plugin = local.kubectl_json("get", "daemonsets", "-n", NAMESPACES["devicePlugin"])["items"]
    assert [d["status"].get("numberReady") for d in plugin] == [1], local.explain(f"device plugin: {plugin}")
    jobs = local.kubectl_json("get", "jobs", "-n", NAMESPACES["verification"])["items"]
    assert jobs and all(j["status"].get("succeeded") == 1 for j in jobs), local.explain(f"jobs: {[j['status'] for j in jobs]}")
    access = json.loads(pulumi(local, deployed, "stack", "output", "tenantAccess", "--json").stdout)
    # A remote component's outputs reach the program without their null values (seen on the real engine).
    assert access == {GROUP: {"gpuAccess": "defaultRuntime", "isolation": "default"}}, access


def test_the_fleets_machine_came_from_another_resource_and_its_preflight_waited_for_it(deployed: Path, local: LocalEnv):
    """The node proven above was reached at the address another resource gave (the test above)."""
    resources = json.loads(pulumi(local, deployed, "stack", "export").stdout)["deployment"]["resources"]
    given = [r for r in resources if r["type"] == "kubernetes:core/v1:ConfigMap" and r["urn"].endswith(f"::{MACHINE}")]
    assert len(given) == 1, f"the machine's resource: {[r['urn'] for r in resources]}"
    assert given[0]["outputs"]["data"]["sshHost"] == fake_machine()["sshHost"], given[0]["outputs"]["data"]
    preflight = [r for r in resources if r["type"] == "command:remote:Command" and r["urn"].endswith(f"-{NODE}-preflight")]
    assert len(preflight) == 1, f"{NODE}'s preflight: {[r['urn'] for r in resources if r['type'].startswith('command:')]}"
    assert given[0]["urn"] in preflight[0].get("dependencies", []), f"{NODE}'s preflight did not wait for {given[0]['urn']}"


def test_a_group_on_its_own_is_proven_beside_the_fleet(deployed: Path, local: LocalEnv):
    report = json.loads(pulumi(local, deployed, "stack", "output", "solo", "--json").stdout)
    assert report[SOLO_NODE]["gate"] == "lifted", f"{SOLO_NODE}: {report[SOLO_NODE]}"
    taints = taints_of(local.node(SOLO_NODE))
    assert OUR_TAINT in taints and GATE not in taints, local.explain(f"{SOLO_NODE}: taints {taints}")
    jobs = local.kubectl_json("get", "jobs", "-n", SOLO_NAMESPACES["verification"])["items"]
    assert jobs and all(j["status"].get("succeeded") == 1 for j in jobs), local.explain(f"jobs: {[j['status'] for j in jobs]}")


def test_the_deployed_yaml_stack_previews_and_refreshes_clean(deployed: Path, local: LocalEnv):
    pulumi(local, deployed, "preview", "--expect-no-changes")
    pulumi(local, deployed, "refresh", "--preview-only", "--expect-no-changes")


def test_the_ssh_key_stays_secret_in_the_state(deployed: Path, local: LocalEnv):
    state = pulumi(local, deployed, "stack", "export").stdout
    key = (STATE / "fakehosts/id_ed25519").read_text().strip().splitlines()[1]
    assert key not in state, "a line of the SSH key is in the state in plain text"


def test_a_wrong_value_stops_the_yaml_program_naming_its_property_path(program: Path, local: LocalEnv):
    wrong = write_program(WORK / "wrong", example(fake_machine(), gpusPerNode=0, isolation="tight"))
    init_stack(local, wrong, "yaml-wrong")
    try:
        result = pulumi(local, wrong, "preview", check=False, stack="yaml-wrong")
        output = result.stdout + result.stderr
        assert result.returncode != 0, f"a preview with gpusPerNode 0 passed:\n{output[-3000:]}"
        assert "nodeGroups[0].gpusPerNode" in output and "nodeGroups[0].isolation" in output, output[-3000:]
        assert "Traceback" not in output, f"a Python traceback for a user's mistake:\n{output[-3000:]}"
        up = pulumi(local, wrong, "up", "--yes", "--skip-preview", check=False, stack="yaml-wrong")
        assert up.returncode != 0, up.stdout[-3000:]
        state = json.loads(pulumi(local, wrong, "stack", "export", stack="yaml-wrong").stdout)
        kinds = {r["type"] for r in state["deployment"].get("resources", [])}
        assert not kinds & {"gpu-nodes:index:GpuFleet", "kubernetes:core/v1:Namespace"}, f"registered: {sorted(kinds)}"
    finally:
        pulumi(local, wrong, "destroy", "--yes", "--skip-preview", check=False, stack="yaml-wrong")
        pulumi(local, wrong, "stack", "rm", "--yes", check=False, stack="yaml-wrong")


def test_destroying_the_yaml_stack_leaves_nothing_of_it(deployed: Path, local: LocalEnv):
    pulumi(local, deployed, "destroy", "--yes", "--skip-preview")
    for namespace in (*NAMESPACES.values(), *SOLO_NAMESPACES.values()):
        assert local.kubectl("get", "namespace", namespace, check=False).returncode != 0, f"namespace {namespace} left"
    for runtime_class in (RUNTIME_CLASS, SOLO_RUNTIME_CLASS):
        assert local.kubectl("get", "runtimeclass", runtime_class, check=False).returncode != 0, f"{runtime_class} left"
    machine = local.kubectl("get", "configmap", "-n", "default", MACHINE_CONFIG_MAP, check=False)
    assert machine.returncode != 0, f"configmap {MACHINE_CONFIG_MAP} left"
    for name in (NODE, SOLO_NODE):
        node = local.node(name)
        assert OUR_TAINT not in taints_of(node) and GATE not in taints_of(node), f"{name}: {taints_of(node)}"
        assert "accelerator" not in node["metadata"]["labels"], f"{name}: {node['metadata']['labels']}"
