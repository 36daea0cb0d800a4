"""The package's schema, as the plugin serves it: every input from its declaration, with its type,
whether it is required, its description and its default; the secrets secret; the outputs typed."""

from __future__ import annotations

import tomllib

import pytest

from gpu_nodes.config.fields import BOOLEAN, INTEGER, LIST, MISSING, STRING, Setting, settings
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import ARGUMENTS
from gpu_nodes.package.generate import INPUT_TYPES, description
from gpu_nodes.package.outputs import NodeReport, TenantAccess
from gpu_nodes.package.provider import PACKAGE, SCHEMA_INPUTS, VERSION, package_schema
from gpu_nodes.resources.fleet import tenant_access
from tests.factories import ROOT, group
from tests.pulumi_mocks import run_inline
from tests.specs import group_spec

FLEET_TYPE = "gpu-nodes:index:GpuFleet"
GROUP_TYPE = "gpu-nodes:index:GpuNodeGroup"
COMPONENTS = (FLEET_TYPE, GROUP_TYPE)
SCHEMA = package_schema()
SCALAR_TYPES = {STRING: "string", INTEGER: "integer", BOOLEAN: "boolean"}


def declared_properties() -> list[tuple[str, str, Setting]]:
    """(where, property name, setting) for every input property the declarations make."""
    rows = [(FLEET_TYPE, name, ARGUMENTS[argument]) for name, argument in SCHEMA_INPUTS.items()]
    rows += [(GROUP_TYPE, s.key, s) for _, s in settings(NodeGroupSpec)]
    rows += [(GROUP_TYPE, name, ARGUMENTS[argument]) for name, argument in SCHEMA_INPUTS.items() if argument != "node_groups"]
    for t in INPUT_TYPES:
        rows += [(f"{PACKAGE}:index:{t.name}", s.key, s) for _, s in settings(t.spec)]
    return rows


def schema_object(where: str) -> tuple[dict, list[str]]:
    """An object's properties and required names: the fleet's inputs, or a type's properties."""
    if where in COMPONENTS:
        resource = SCHEMA["resources"][where]
        return resource["inputProperties"], resource.get("requiredInputs", [])
    return SCHEMA["types"][where]["properties"], SCHEMA["types"][where].get("required", [])


@pytest.mark.parametrize(("where", "name", "s"), declared_properties(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_declared_setting_is_an_input_property_with_its_description_and_default(where, name, s):
    properties, _ = schema_object(where)
    assert name in properties, f"{where}: no input property {name}"
    assert properties[name].get("description") == description(s), f"{where}.{name}: description"


@pytest.mark.parametrize(("where", "name", "s"), declared_properties(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_input_property_has_the_type_its_kind_says(where, name, s):
    prop = schema_object(where)[0][name]
    if s.section is not None and s.kind is not LIST:
        type_name = next(t.name for t in INPUT_TYPES if t.spec is s.section)
        assert prop.get("$ref", "").endswith(f":index:{type_name}"), f"{where}.{name}: {prop}"
    elif s.kind is LIST:
        assert prop.get("type") == "array", f"{where}.{name}: {prop}"
    elif s.kind in SCALAR_TYPES:
        assert prop.get("type") == SCALAR_TYPES[s.kind], f"{where}.{name}: {prop}"


@pytest.mark.parametrize(("where", "name", "s"), declared_properties(), ids=lambda v: v if isinstance(v, str) else "")
def test_an_input_is_required_exactly_when_its_setting_has_no_default(where, name, s):
    _, required = schema_object(where)
    assert (name in required) == (s.default is MISSING), f"{where}.{name}: required is {name in required}"


def test_every_input_property_is_declared():
    declared = {(where, name) for where, name, _ in declared_properties()}
    found = {(c, name) for c in COMPONENTS for name in SCHEMA["resources"][c]["inputProperties"]}
    found |= {(f"{PACKAGE}:index:{t.name}", name) for t in INPUT_TYPES for name in schema_object(f"{PACKAGE}:index:{t.name}")[0]}
    assert found == declared, f"undeclared: {sorted(found - declared)}; missing: {sorted(declared - found)}"


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_ssh_key_and_the_registry_login_are_secret_inputs_and_nothing_else_is(component):
    properties = SCHEMA["resources"][component]["inputProperties"]
    secret = sorted(name for name, prop in properties.items() if prop.get("secret"))
    assert secret == ["imagePullSecret", "sshPrivateKey"], f"{component}: secret inputs {secret}"
    for name in secret:
        assert not properties[name].get("plain"), f"{component}.{name}: a plain input cannot carry a secret"


@pytest.mark.parametrize(("where", "name", "s"), declared_properties(), ids=lambda v: v if isinstance(v, str) else "")
def test_an_input_is_plain_unless_it_is_a_secret_or_may_come_from_another_resource(where, name, s):
    """Plain: every SDK takes the value itself, known when the component runs; not plain: an Output too."""
    plain = bool(schema_object(where)[0][name].get("plain"))
    assert plain == (not s.secret and not s.from_resource), f"{where}.{name}: plain is {plain}"


@pytest.mark.parametrize(
    ("where", "may_be_outputs", "plain"),
    [
        ("Node", ["sshHost", "sshPort", "sshUser", "hostKey"], ["name"]),
        ("SshProxy", ["host", "port", "user", "hostKey"], []),
        ("NodeGroup", [], ["name", "nodes", "gpusPerNode", "preflight"]),
    ],
)
def test_a_machines_connection_may_be_an_output_and_what_names_resources_may_not(where, may_be_outputs, plain):
    properties = SCHEMA["types"][f"{PACKAGE}:index:{where}"]["properties"]
    assert [name for name in may_be_outputs if properties[name].get("plain")] == [], f"{where}: {properties}"
    assert [name for name in plain if not properties[name].get("plain")] == [], f"{where}: {properties}"


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_component_is_a_component_with_one_paragraph_of_description(component):
    resource = SCHEMA["resources"][component]
    assert resource["isComponent"] is True, component
    assert "\n" not in resource["description"], f"{component}: {resource['description']!r}"


def test_the_outputs_are_typed():
    outputs = SCHEMA["resources"][FLEET_TYPE]["properties"]
    report = outputs["nodeGroups"]["additionalProperties"]["additionalProperties"]
    assert report["$ref"] == f"#/types/{PACKAGE}:index:NodeReport", f"{FLEET_TYPE}.nodeGroups: {report}"
    access = outputs["tenantAccess"]["additionalProperties"]
    assert access["$ref"] == f"#/types/{PACKAGE}:index:TenantAccess", f"{FLEET_TYPE}.tenantAccess: {access}"


def test_a_groups_outputs_are_typed():
    outputs = SCHEMA["resources"][GROUP_TYPE]["properties"]
    report = outputs["nodes"]["additionalProperties"]
    assert report["$ref"] == f"#/types/{PACKAGE}:index:NodeReport", f"{GROUP_TYPE}.nodes: {report}"
    assert outputs["tenantAccess"]["$ref"] == f"#/types/{PACKAGE}:index:TenantAccess", f"{GROUP_TYPE}.tenantAccess"


def test_the_node_report_type_names_every_key_the_report_has():
    from gpu_nodes import GpuFleet, GpuFleetArgs

    reports: list = []

    def program() -> None:
        built = GpuFleet("gpus", GpuFleetArgs(node_groups=[group("a100", preflight={"enabled": False})]))
        built.node_groups.apply(reports.append)

    run_inline(program)
    (by_group,) = reports
    keys = {key for nodes in by_group.values() for report in nodes.values() for key in report}
    assert keys and keys <= set(NodeReport.__annotations__), f"NodeReport lacks {sorted(keys - set(NodeReport.__annotations__))}"


def test_the_tenant_access_type_names_every_key_tenant_access_has():
    plain = group_spec("b200", allocator="dra", dra={"extendedResourceName": True})
    groups = (group_spec("a100"), group_spec("h100", allocator="dra"), plain)
    keys = {key for spec in groups for key in tenant_access(spec)}
    assert keys == set(TenantAccess.__annotations__), f"TenantAccess: {sorted(keys)}"


def test_the_package_version_is_the_distributions():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert VERSION == pyproject["project"]["version"] == SCHEMA["version"], "package/provider.py VERSION"


def test_the_go_sdk_gets_input_structs_for_the_plain_object_types():
    """Without them the generated Go SDK does not compile (`undefined: NodeGroupArgs`)."""
    assert SCHEMA["language"]["go"].get("generateExtraInputTypes") is True, SCHEMA["language"]["go"]
