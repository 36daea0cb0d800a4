"""gpu_nodes/config/inputs.py: written from the field declarations, one typed input per setting; and what they do
for a team's program: mypy refuses a misspelled key or a wrong type in it, and passes it once fixed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mypy import api as mypy_api

from gpu_nodes.config import inputs
from gpu_nodes.config.fields import settings
from gpu_nodes.config.problems import MISSING
from gpu_nodes.config.stack import OWN_SETTINGS
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
    assert list(typed.__annotations__) == [s.argument for s in OWN_SETTINGS], f"{FLEET_INPUTS}: not GpuFleetArgs' arguments"
    assert set(typed.__required_keys__) == {"node_groups"}, f"{FLEET_INPUTS}: required keys"


def test_a_groups_inputs_are_its_keys_and_the_fleets_others():
    from gpu_nodes.config.node_group import NodeGroupSpec

    typed = getattr(inputs, GROUP_INPUTS)
    expected = [s.key for _, s in settings(NodeGroupSpec)] + [s.argument for s in OWN_SETTINGS if s.argument != "node_groups"]
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
    (s,) = [s for s in OWN_SETTINGS if s.key == setting_key]
    assert annotation(s) == expected, setting_key


def test_a_section_is_typed_by_its_schema_name():
    from gpu_nodes.config.node_group import NodeGroupSpec

    declared = dict(settings(NodeGroupSpec))
    assert annotation(declared["nodes"]) == "list[Node]", "nodeGroups[].nodes"
    assert annotation(declared["device_plugin"]) == "DevicePlugin", "nodeGroups[].devicePlugin"


@pytest.mark.parametrize(
    ("section", "key", "expected"),
    [
        ("node_group", "gpuAccess", "GpuAccessOrWord"),
        ("device_plugin", "migStrategy", "MigStrategyOrWord"),
        ("device_plugin", "tolerations", "list[Toleration]"),
        ("device_plugin", "resources", "ResourceRequirements"),
        # The analyzer refuses a union: the schema says it (gpu_nodes/package/provider.py, say_unions).
        ("device_plugin", "maxUnavailable", "MaxUnavailableValue"),
        ("device_plugin", "enabledXids", "EnabledXidsValue"),
        ("preflight", "containerRuntime", "ContainerRuntimeOrWord"),
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


@pytest.mark.parametrize(("alias", "analyzed"), [("GpuAccessOrWord", "GpuAccess"), ("MaxUnavailableValue", "Any")])
def test_the_analyzer_reads_an_enum_or_any_where_mypy_reads_a_union(alias, analyzed):
    """pulumi/provider/experimental/analyzer.py refuses a union: at run time each alias is what it takes."""
    from typing import Any

    assert getattr(inputs, alias) is (Any if analyzed == "Any" else getattr(inputs, analyzed)), alias


# --- A team's program under mypy, as its CI would check it: the package found as installed (its py.typed) ---

ROOT = Path(__file__).resolve().parents[2]
# mypy reads the package from this checkout (an editable install is a path hook, which mypy does not follow), and
# leaves the Kubernetes SDKs unread: their size is no part of what is checked here.
MYPY_CONFIG = f"""
[mypy]
python_version = 3.11
mypy_path = {ROOT}
follow_imports = silent
[mypy-pulumi_kubernetes.*,kubernetes.*]
follow_imports = skip
"""

A_TEAMS_PROGRAM = """
import pulumi

from gpu_nodes import GpuFleet, GpuFleetArgs

GpuFleet(
    "gpus",
    GpuFleetArgs(
        node_groups=[
            {{
                "name": "a100",
                {gpus},
                "nodes": [{{"name": "gpu-01", "sshHost": "10.0.0.1", "sshUser": "root"}}],
                "devicePlugin": {{{sharing}: {{"strategy": "timeSlicing", "replicas": 4}}}},
                "verification": {{"timeoutSeconds": {timeout}}},
                "gpuAccess": {access},
            }}
        ],
        ssh_private_key=pulumi.Config().require_secret("sshPrivateKey"),
    ),
)
"""


def mypy_errors(program: str, tmp_path: Path) -> list[str]:
    """mypy's errors on `program`, each `line: message  [code]` (its `file:` dropped)."""
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    (tmp_path / "program.py").write_text(textwrap.dedent(program))
    out, err, _ = mypy_api.run(
        ["--config-file", str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "program.py")]
    )
    assert not err, err
    return [line.split(":", 1)[1].strip() for line in out.splitlines() if ": error:" in line]


def test_mypy_refuses_a_misspelled_key_and_a_wrong_type_in_a_teams_program(tmp_path):
    program = A_TEAMS_PROGRAM.format(gpus='"gpuPerNode": 8', sharing='"sharng"', timeout='"600"', access='"cdl"')
    errors = mypy_errors(program, tmp_path)
    expected = [
        'Missing key "gpusPerNode" for TypedDict "NodeGroup"',
        'Extra key "gpuPerNode" for TypedDict "NodeGroup"',
        'Extra key "sharng" for TypedDict "DevicePlugin"',
        'TypedDict item "timeoutSeconds" has type "int"',
        'TypedDict item "gpuAccess" has type',
    ]
    for fragment in expected:
        assert any(fragment in error for error in errors), (fragment, errors)
    assert len(errors) == len(expected), errors


def test_mypy_passes_the_same_program_once_fixed(tmp_path):
    program = A_TEAMS_PROGRAM.format(gpus='"gpusPerNode": 8', sharing='"sharing"', timeout="600", access='"cdi"')
    assert mypy_errors(program, tmp_path) == []


def test_mypy_takes_an_enums_member_where_its_word_goes(tmp_path):
    program = A_TEAMS_PROGRAM.format(
        gpus='"gpusPerNode": 8', sharing='"sharing"', timeout="600", access="GpuAccess.CDI"
    ).replace("import pulumi\n", "import pulumi\n\nfrom gpu_nodes.config.inputs import GpuAccess\n", 1)
    assert mypy_errors(program, tmp_path) == []
