"""`GpuFleetArgs` from a program of one's own: wrong types are one ConfigError naming the argument
(`node_groups[0].gpusPerNode`), in the program's words, never a TypeError or a string split into
characters."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from gpu_nodes import ConfigError, GpuFleetArgs
from gpu_nodes.config.stack import OWN_SETTINGS
from gpu_nodes.config.stack_config import StackConfig
from gpu_nodes.resources.fleet import TYPE
from tests.factories import SECRET_KEYS, SSH_KEY, group, node, stack_config
from tests.pulumi_mocks import run_program


def args(**given: Any) -> GpuFleetArgs:
    return GpuFleetArgs(**{"node_groups": [group()], "ssh_private_key": SSH_KEY, **given})


def problems(**given: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        args(**given).validate()
    assert str(caught.value).startswith("invalid GpuFleetArgs:"), str(caught.value)
    for problem in caught.value.problems:
        assert "gpu-nodes:" not in problem, problem
    return caught.value.problems


WRONG = [
    ("existing_namespaces a string", {"existing_namespaces": "ns"}, "existing_namespaces: got 'ns'; expected a list"),
    ("existing_namespaces a map", {"existing_namespaces": {"ns": 1}}, "existing_namespaces: got {'ns': 1}; expected a list"),
    ("hand_over a number", {"hand_over": 3.5}, "hand_over: got 3.5; expected a list"),
    ("hand_over a string", {"hand_over": "kube-system/nvdp"}, "hand_over: got 'kube-system/nvdp'; expected a list"),
    ("node_groups a string", {"node_groups": "a100"}, "node_groups: got 'a100'; expected a list"),
    ("a label key not a string", {"node_groups": [group(labels={1: "x"})]}, "node_groups[0].labels.1: got 1; expected a label"),
    ("a node with an int key", {"node_groups": [group(nodes=[{**node("n1"), 2: "x"}])]}, "node_groups[0].nodes[0].2: got 'x'"),
    ("gpusPerNode zero", {"node_groups": [group(gpusPerNode=0)]}, "node_groups[0].gpusPerNode: got 0; expected at least 1"),
    ("insecure a string", {"insecure_skip_host_key_check": "yes"}, "insecure_skip_host_key_check: got 'yes'"),
    ("a private key that is none", {"ssh_private_key": "hunter2"}, "ssh_private_key: got a value of 7 characters"),
    ("a pull secret that is none", {"image_pull_secret": "user:pass"}, "image_pull_secret: got a value of 9 characters"),
    ("a private key that is a number", {"ssh_private_key": 42}, "ssh_private_key: got a value of type int; expected the text"),
    ("a private key as bytes", {"ssh_private_key": SSH_KEY.encode()}, "ssh_private_key: got a value of type bytes"),
    ("a pull secret that is a map", {"image_pull_secret": {"auths": {}}}, "image_pull_secret: got a value of type dict"),
    ("a stack label too long", {"stack_label": "s" * 101}, f"stack_label: got {'s' * 101!r}; expected a label value"),
    ("a stack label with a bang", {"stack_label": "rack-a!"}, "stack_label: got 'rack-a!'; expected a label value"),
    ("an empty stack label", {"stack_label": ""}, "stack_label: got ''; expected a label value"),
]


@pytest.mark.parametrize(("given", "expected"), [r[1:] for r in WRONG], ids=[r[0] for r in WRONG])
def test_a_wrong_argument_is_named_by_its_path(given, expected):
    found = problems(**given)
    assert any(expected in p for p in found), found
    assert len(found) == 1, found


def test_the_host_key_hint_names_the_argument():
    (found,) = problems(node_groups=[group(nodes=[{"name": "n1", "sshHost": "10.0.0.1", "sshUser": "ops"}])])
    assert found.startswith("node_groups[0].nodes[0].hostKey:") and "insecure_skip_host_key_check" in found, found


@pytest.mark.parametrize("field", ["existing_namespaces", "hand_over", "insecure_skip_host_key_check", "runtime_class"])
def test_none_is_not_set(field):
    assert args(**{field: None}).validate().node_groups, field


def test_tuples_are_lists():
    spec = args(node_groups=(group(),), existing_namespaces=("gpu-verification",)).validate()
    assert spec.existing_namespaces == ("gpu-verification",), spec


def test_every_stack_setting_is_a_field_of_gpu_fleet_args():
    """A stack setting is declared once, on StackSpec; GpuFleetArgs is the one other place it is added."""
    fields = {f.name for f in dataclasses.fields(GpuFleetArgs)}
    missing = sorted(s.argument for s in OWN_SETTINGS if s.argument not in fields)
    assert not missing, f"stack settings without a GpuFleetArgs field: {missing}"


def test_a_stack_setting_from_stack_config_reaches_the_reader_as_declared():
    """from_stack_config takes every declared setting by its key, with no list of its own."""
    config = StackConfig(
        values={
            "gpu-nodes:nodeGroups": json.dumps([group()]),
            "gpu-nodes:sshPrivateKey": SSH_KEY,
            "gpu-nodes:runtimeClass": "nvidia-cdi",
            "gpu-nodes:handOver": json.dumps(["kube-system/nvdp"]),
        },
        secret_keys=frozenset({"gpu-nodes:sshPrivateKey"}),
    )
    stack = GpuFleetArgs.from_stack_config(config).validate()
    assert (stack.runtime_class_name, stack.hand_over, stack.has_ssh_private_key) == ("nvidia-cdi", ("kube-system/nvdp",), True)


def test_the_arguments_are_read_once(monkeypatch):
    """`validate` and the fleet share one reading: a program that validates first is not read twice."""
    from gpu_nodes.resources import fleet

    reads = []
    read_stack = fleet.read_stack
    monkeypatch.setattr(fleet, "read_stack", lambda *a, **k: reads.append(a) or read_stack(*a, **k))
    arguments = args()
    assert arguments.validate() is arguments.validate(), "the same stack, not a second reading"
    assert len(reads) == 1, reads


def test_warnings_name_the_settings_as_the_program_wrote_them():
    raw = group(preflight={"enabled": False, "maxSessions": 3})
    (warning,) = GpuFleetArgs(node_groups=[raw]).validate().warnings
    assert warning.startswith("node_groups[0].preflight.maxSessions: 3 has no effect"), warning


def test_the_program_validates_first_and_its_fleet_takes_that_reading(monkeypatch):
    """The repository's __main__.py calls `args.validate()` before it registers its provider, then builds the fleet
    from the same arguments: the stack config is read once in the run, not again by the fleet."""
    reads: list[GpuFleetArgs] = []
    read_once = GpuFleetArgs._read_once

    def counted(self: GpuFleetArgs) -> tuple:
        reads.append(self)
        return read_once(self)

    monkeypatch.setattr(GpuFleetArgs, "_read_once", counted)
    run = run_program(stack_config(group("a100", preflight={"enabled": False})), SECRET_KEYS)
    assert reads == [run.globals["args"]], f"read {len(reads)} times"
    assert run.of_type(TYPE), "no fleet was built"
