"""The golden state: for representative stacks, the URNs, inputs and options the program registers
are recorded in tests/golden/ and must not change, except by a commit that updates them and says
why (docs/testing.md, "The golden state"). A changed URN is a replacement (or a delete and a create) on every
deployed stack; a changed input is an update, or a replacement where the provider says so."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.providers.taints import NodeTaintsProvider
from tests.cli.fleets import fleet
from tests.cli.fleets import group as fleet_group
from tests.factories import (
    REGISTRY_LOGIN,
    SECRET_KEYS,
    SSH_KEY,
    group,
    local_stack,
    shipped_stack,
    stack_config,
    two_groups,
)
from tests.golden_state import (
    GOLDEN_DIR,
    SECRET,
    differences,
    failure_message,
    golden_path,
    golden_text,
    pickled_class,
    snapshot,
    updating,
)
from tests.pulumi_mocks import ROOT, ProgramRun, run_example, run_program

# The split `gpu-nodes fleet` makes of one fleet file: the owner, and a stack that references
# its namespaces and RuntimeClass (docs/fleet.md, "The fleet command", "Several stacks on one cluster").
FLEET = plan_fleet(
    fleet(
        fleet_group("a100-rack-1", "gpu-a-01", "gpu-a-02"),
        fleet_group("a100-rack-2", "gpu-b-01", verification={"namespace": "gpu-verification-rack-2"}),
        config={"kubernetes:kubeconfig": "/home/ops/.kube/gpu-cluster", "gpu-nodes:runtimeClass": "nvidia"},
    )
)


def fleet_stack(name: str) -> ProgramRun:
    plan = FLEET.stack(name)
    return run_program({**plan.config, "gpu-nodes:sshPrivateKey": SSH_KEY}, SECRET_KEYS, stack=name)


def mig() -> dict:
    mixed = {"migStrategy": "mixed", "migDevices": {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}}
    return stack_config(
        group(
            "a100-mig",
            gpuModel="NVIDIA A100-SXM4-80GB",
            devicePlugin=mixed,
            verification={"gpusPerPod": [], "migResources": {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-3g.40gb": 1}},
        ),
        group("h100-mig", nodes=1, devicePlugin={"migStrategy": "single", "migDevices": {"1g.10gb": 7}}),
    )


def dra_and_sharing() -> dict:
    """The kinds of group the golden stacks had none of: NVIDIA's DRA driver (health checks, its
    DeviceClasses, plain nvidia.com/gpu requests) and a GPU shared through MPS."""
    return stack_config(
        group("h100-dra", allocator="dra", dra={"extendedResourceName": True}),
        group("l4-mps", devicePlugin={"sharing": {"strategy": "mps", "replicas": 4, "renameByDefault": True}}),
    )


def several_groups() -> dict:
    return two_groups(
        group(
            "l4",
            nodes=[{"name": "l4-node-1"}],
            gpuAccess="cdi",
            preflight={"enabled": False},
            verification={"namespace": "gpu-verification-l4", "perNode": False},
        ),
    )


def ssh_lanes() -> dict:
    """Five machines checked two at a time: each machine after the first two is copied to and
    checked once the one two places before it is checked (preflight.command.waits_for)."""
    return stack_config(group("a100", nodes=5, preflight={"maxSessions": 2}))


def pull_secret() -> dict:
    return {**two_groups(), "gpu-nodes:imagePullSecret": REGISTRY_LOGIN}


# name -> (what it stands for, its run). The stack names are those the stacks are deployed as.
CONFIGS: dict[str, tuple[str, Callable[[], ProgramRun]]] = {
    "local": (
        "the stack `make local-up` deploys (tools/local/stack_config.py): one group of three fake machines, preflight on",
        lambda: run_program(local_stack(), SECRET_KEYS, stack="local"),
    ),
    "prod": (
        "Pulumi.prod.yaml: two H100 groups, one with MIG single, checked through a bastion with sudo",
        lambda: run_program(shipped_stack("prod"), SECRET_KEYS, stack="prod"),
    ),
    "staging": (
        "Pulumi.staging.yaml: T4 machines on Docker, time-sliced, no RuntimeClass",
        lambda: run_program(shipped_stack("staging"), SECRET_KEYS, stack="staging"),
    ),
    "mig": (
        "MIG: a mixed group with a declared layout and MIG verification Jobs, and a single group",
        lambda: run_program(mig(), SECRET_KEYS, stack="mig"),
    ),
    "several-groups": (
        "three groups: defaults, time-sliced with an extra taint, CDI with preflight off and its own namespace",
        lambda: run_program(several_groups(), SECRET_KEYS, stack="several-groups"),
    ),
    "dra-and-sharing": (
        "a DRA group whose DeviceClass serves plain nvidia.com/gpu requests, and a group sharing its GPUs through MPS",
        lambda: run_program(dra_and_sharing(), SECRET_KEYS, stack="dra-and-sharing"),
    ),
    "ssh-lanes": (
        "preflight.maxSessions 2 over five machines: two SSH lanes, each machine after the one two places before it",
        lambda: run_program(ssh_lanes(), SECRET_KEYS, stack="ssh-lanes"),
    ),
    "pull-secret": (
        "the two groups with gpu-nodes:imagePullSecret: a pull Secret in each namespace, named by the pods",
        lambda: run_program(pull_secret(), [*SECRET_KEYS, "gpu-nodes:imagePullSecret"], stack="pull-secret"),
    ),
    "fleet-owner": (
        "the owning stack `gpu-nodes fleet` derives from a fleet of two groups: it creates the shared objects",
        lambda: fleet_stack("a100-rack-1"),
    ),
    "fleet-member": (
        "the other stack of that fleet: existingNamespaces and createRuntimeClass false, as the command writes them",
        lambda: fleet_stack("a100-rack-2"),
    ),
    "example-rack-a": (
        "examples/own-program (the Python API, GpuFleetArgs, no legacy names), the rack that owns the shared objects",
        lambda: run_example("rack-a"),
    ),
    "example-rack-b": (
        "examples/own-program, the rack that only names them (existing_namespaces, create_runtime_class=False)",
        lambda: run_example("rack-b"),
    ),
}


@pytest.mark.parametrize("config", list(CONFIGS))
def test_the_registered_state_matches_its_golden_file(config, monkeypatch):
    about, run = CONFIGS[config]
    # Pulumi runs a program in its directory: the preflight scripts' path in the state is relative to it.
    monkeypatch.chdir(ROOT)
    now = snapshot(run())
    path = golden_path(config)
    if updating():
        path.write_text(golden_text(config, about, now))
        return
    assert path.exists(), f"no golden file {path.relative_to(ROOT)} for {config!r}: run with GPU_NODES_UPDATE_GOLDEN=1"
    golden = json.loads(path.read_text())
    lines = differences(golden["resources"], now)
    assert not lines, failure_message(config, lines)
    assert golden["about"] == about, f"{config}: the golden file describes another config: {golden['about']!r}"


def test_every_golden_file_has_its_config():
    stale = sorted(p.name for p in GOLDEN_DIR.glob("*.json") if p.stem not in CONFIGS)
    assert not stale, f"golden files of no config in {CONFIGS.keys()}: {stale}; remove them in a commit that says why"


State = dict[str, dict[str, Any]]
CHANGES: dict[str, tuple[State, State, list[str]]] = {
    "an input": (
        {"urn:a": {"inputs": {"metadata": {"labels": {"app.kubernetes.io/name": "x"}}}}},
        {"urn:a": {"inputs": {"metadata": {"labels": {"app.kubernetes.io/name": "y"}}}}},
        ["~ urn:a:", '    inputs.metadata.labels["app.kubernetes.io/name"]: "x" -> "y"'],
    ),
    "a renamed child": (
        {"urn:a": {}, "urn:b": {"options": {"dependencies": ["urn:a"]}}},
        {"urn:a2": {}, "urn:b": {"options": {"dependencies": ["urn:a2"]}}},
        [
            "- urn:a: in the golden file, no longer registered",
            "+ urn:a2: registered now, not in the golden file",
            "~ urn:b:",
            '    options.dependencies[0]: "urn:a" -> "urn:a2"',
        ],
    ),
    "a dependency more": (
        {"urn:b": {"options": {"dependencies": ["urn:a"]}}},
        {"urn:b": {"options": {"dependencies": ["urn:a", "urn:c"]}}},
        ["~ urn:b:", '    options.dependencies: with "urn:c"'],
    ),
    "an option gone": (
        {"urn:b": {"options": {"deleteBeforeReplace": True}}},
        {"urn:b": {"options": {}}},
        ["~ urn:b:", "    options.deleteBeforeReplace: true -> (absent)"],
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_is_named_by_its_urn_and_key(change):
    golden, now, expected = CHANGES[change]
    assert differences(golden, now) == expected
    assert differences(golden, golden) == []


# What the configs above set as secrets (or read as one: the kubeconfig, a path or a file's content).
SECRET_VALUES = {
    "SSH private key": SSH_KEY.splitlines()[1],
    "the example's kubeconfig": "kind: Config",
    "the local kubeconfig": local_stack()["kubernetes:kubeconfig"],
    "the fleet's kubeconfig": FLEET.owner.config["kubernetes:kubeconfig"],
    "the registry login's auth": "dXNlcjpwYXNz",
}


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_golden_file_holds_no_secret(config):
    text = golden_path(config).read_text()
    found = [name for name, value in SECRET_VALUES.items() if json.dumps(value)[1:-1] in text]
    assert not found, f"{golden_path(config).relative_to(ROOT)} holds a secret value: {found}"
    assert SECRET in text, f"{config}: no input marked {SECRET}: the kubeconfig or SSH key is no longer a secret?"


PICKLES = {
    # As the SDK pickles it for `__provider` (pulumi/dynamic/dynamic.py, serialize_provider).
    "today's": (lambda: serialize_provider(NodeTaintsProvider()), "gpu_nodes.providers.taints.NodeTaintsProvider"),
    # As a stack deployed before the package holds it: protocol 0, the class by its old import path.
    "an old state's": (
        lambda: base64.b64encode(b"ccomponents.taints\nNodeTaintsProvider\n)\x81.").decode(),
        "components.taints.NodeTaintsProvider",
    ),
}


@pytest.mark.parametrize("pickle", list(PICKLES))
def test_a_pickled_provider_is_named_by_its_class(pickle):
    make, expected = PICKLES[pickle]
    encoded = make()
    assert pickled_class(encoded) == expected, f"{pickle} pickle: {base64.b64decode(encoded)!r}"
