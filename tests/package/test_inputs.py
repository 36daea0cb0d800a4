"""gpu_nodes/package/inputs.py: written from the field declarations, one typed input per setting."""

from __future__ import annotations

import pytest

from gpu_nodes.config.fields import MISSING, settings
from gpu_nodes.config.stack import ARGUMENTS
from gpu_nodes.package import inputs
from gpu_nodes.package.generate import (
    FLEET_INPUTS,
    GROUP_INPUTS,
    INPUT_TYPES,
    INPUTS_FILE,
    SHAPE_KEYS,
    SHAPES,
    annotation,
    enum_types,
    inputs_source,
)


def test_inputs_py_is_what_the_declarations_write():
    assert INPUTS_FILE.read_text() == inputs_source(), (
        f"{INPUTS_FILE} is stale: run .venv/bin/python -m gpu_nodes.package.generate and commit it"
    )


@pytest.mark.parametrize("input_type", INPUT_TYPES, ids=lambda t: t.name)
def test_each_input_type_has_its_sections_keys_in_order(input_type):
    typed = getattr(inputs, input_type.name)
    declared = [s.key for _, s in settings(input_type.spec)]
    assert list(typed.__annotations__) == declared, f"{input_type.name}: keys differ from {input_type.spec.__name__}"


@pytest.mark.parametrize("input_type", INPUT_TYPES, ids=lambda t: t.name)
def test_a_key_without_a_default_is_required_and_every_other_optional(input_type):
    typed = getattr(inputs, input_type.name)
    required = {s.key for _, s in settings(input_type.spec) if s.default is MISSING}
    assert set(typed.__required_keys__) == required, f"{input_type.name}: required keys"


def test_the_fleets_inputs_are_the_python_apis_arguments():
    typed = getattr(inputs, FLEET_INPUTS)
    assert list(typed.__annotations__) == list(ARGUMENTS), f"{FLEET_INPUTS}: not GpuFleetArgs' stack arguments"
    assert set(typed.__required_keys__) == {"node_groups"}, f"{FLEET_INPUTS}: required keys"


def test_a_groups_inputs_are_its_keys_and_the_fleets_others():
    from gpu_nodes.config.node_group import NodeGroupSpec

    typed = getattr(inputs, GROUP_INPUTS)
    expected = [s.key for _, s in settings(NodeGroupSpec)] + [name for name in ARGUMENTS if name != "node_groups"]
    assert list(typed.__annotations__) == expected, f"{GROUP_INPUTS}: keys"
    required = {s.key for _, s in settings(NodeGroupSpec) if s.default is MISSING}
    assert set(typed.__required_keys__) == required, f"{GROUP_INPUTS}: required keys"


@pytest.mark.parametrize(
    ("setting_key", "expected"),
    [
        ("gpu-nodes:nodeGroups", "list[NodeGroup]"),
        ("gpu-nodes:sshPrivateKey", "pulumi.Input[str]"),
        ("gpu-nodes:handOver", "list[str]"),
        ("gpu-nodes:runtimeClass", "str"),
    ],
)
def test_a_stack_settings_annotation(setting_key, expected):
    (s,) = [s for s in ARGUMENTS.values() if s.key == setting_key]
    assert annotation(s) == expected, setting_key


def test_a_section_is_typed_by_its_schema_name():
    from gpu_nodes.config.node_group import NodeGroupSpec

    declared = dict(settings(NodeGroupSpec))
    assert annotation(declared["nodes"]) == "list[Node]", "nodeGroups[].nodes"
    assert annotation(declared["device_plugin"]) == "DevicePlugin", "nodeGroups[].devicePlugin"


@pytest.mark.parametrize(
    ("section", "key", "expected"),
    [
        ("node_group", "gpuAccess", "GpuAccess"),
        ("device_plugin", "migStrategy", "MigStrategy"),
        ("device_plugin", "tolerations", "list[Toleration]"),
        ("device_plugin", "resources", "ResourceRequirements"),
        # The analyzer refuses a union: the schema says it (gpu_nodes/package/provider.py, say_unions).
        ("device_plugin", "maxUnavailable", "Any"),
        ("device_plugin", "enabledXids", "Any"),
        ("preflight", "containerRuntime", "ContainerRuntime"),
    ],
)
def test_a_settings_annotation_names_its_enum_or_shape(section, key, expected):
    from gpu_nodes.config.device_plugin import DevicePluginSpec
    from gpu_nodes.config.node_group import NodeGroupSpec
    from gpu_nodes.config.preflight import PreflightSpec

    spec = {"node_group": NodeGroupSpec, "device_plugin": DevicePluginSpec, "preflight": PreflightSpec}[section]
    (s,) = [s for _, s in settings(spec) if s.key == key]
    assert annotation(s) == expected, key


@pytest.mark.parametrize("enum", enum_types(), ids=lambda e: e.name)
def test_each_enum_of_inputs_py_takes_the_words_of_its_declaration(enum):
    typed = getattr(inputs, enum.name)
    assert tuple(member.value for member in typed) == enum.options, enum.name
    # A program's word is a member, equal to the word: a StrEnum, as the provider hands it over.
    assert all(isinstance(member, str) and member == member.value for member in typed), enum.name


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_shape_has_the_keys_its_reader_takes(shape):
    typed = getattr(inputs, shape.name)
    assert tuple(typed.__annotations__) == SHAPE_KEYS[shape.name], shape.name
    assert not typed.__required_keys__, f"{shape.name}: Kubernetes requires none of its keys"
