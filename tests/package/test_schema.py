"""The package's schema, as the plugin serves it: every input from its declaration, with its type,
whether it is required, its description and its default; the settings that take fixed words as
enums of those words; the secrets secret; the outputs typed; the package described for a registry,
and its SDKs named its own."""

from __future__ import annotations

import collections.abc
import re
import tomllib
import types
from typing import Any, Union, get_args, get_origin, is_typeddict
from urllib.parse import urlsplit

import pulumi
import pytest

from gpu_nodes.config.checks import PULL_POLICIES, TAINT_EFFECTS
from gpu_nodes.config.device_plugin import MIG_STRATEGIES, TOLERATION_OPERATORS
from gpu_nodes.config.fields import Setting, settings
from gpu_nodes.config.node_group import ALLOCATORS, GPU_ACCESS, ISOLATION, NodeGroupSpec
from gpu_nodes.config.preflight import CONTAINER_RUNTIMES, DRIVER_ADVISORIES_REFUSE, DRIVER_ADVISORIES_WARN
from gpu_nodes.config.problems import MISSING
from gpu_nodes.config.stack import OWN_SETTINGS
from gpu_nodes.package.generate import INPUT_TYPES, SHAPES, description, enum_types, setting_enum, union_schema
from gpu_nodes.package.metadata import GO_IMPORT_BASE_PATH, NPM_PACKAGE, PYTHON_PACKAGE, REPOSITORY
from gpu_nodes.package.provider import PACKAGE, SCHEMA_INPUTS, VERSION, package_schema
from tests.factories import ROOT

FLEET_TYPE = "gpu-nodes:index:GpuFleet"
GROUP_TYPE = "gpu-nodes:index:GpuNodeGroup"
COMPONENTS = (FLEET_TYPE, GROUP_TYPE)
SCHEMA = package_schema()
SCALAR_TYPES: dict[object, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}
ARGUMENTS = {s.argument: s for s in OWN_SETTINGS}


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


def ref(type_name: str) -> str:
    return f"#/types/{PACKAGE}:index:{type_name}"


def shape_of(prop: dict[str, Any]) -> Any:
    """A property's type as the schema says it: a scalar's name, `[item]`, `{value}`, a type's
    reference or a union's alternatives, without descriptions and `plain`."""
    if "oneOf" in prop:
        return tuple(shape_of(p) for p in prop["oneOf"])
    if "$ref" in prop:
        return prop["$ref"]
    if prop.get("type") == "array":
        return [shape_of(prop["items"])]
    if "additionalProperties" in prop:
        return {"*": shape_of(prop["additionalProperties"])}
    return prop.get("type")


def expected_shape(s: Setting) -> Any:
    """What the declaration says the property's type is."""
    if s.section is not None:
        type_name = next(t.name for t in INPUT_TYPES if t.spec is s.section)
        return [ref(type_name)] if s.is_list else ref(type_name)
    if (enum := setting_enum(s)) is not None:
        return ref(enum.name)
    if (one_of := union_schema(s.written_type)) is not None:
        return tuple(shape_of(p) for p in one_of)
    return type_shape(s.written_type)


def type_shape(declared: Any) -> Any:
    """A written type as the schema should say it: without None, and another resource's output as the value."""
    if get_origin(declared) in (Union, types.UnionType):
        (declared,) = [m for m in get_args(declared) if m is not type(None) and get_origin(m) is not pulumi.Output]
    if declared in SCALAR_TYPES:
        return SCALAR_TYPES[declared]
    if get_origin(declared) in (tuple, list, collections.abc.Sequence):
        return [type_shape(get_args(declared)[0])]
    if get_origin(declared) in (dict, collections.abc.Mapping):
        return {"*": type_shape(get_args(declared)[1])}
    assert is_typeddict(declared), declared
    return ref(declared.__name__)


@pytest.mark.parametrize(("where", "name", "s"), declared_properties(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_input_property_has_the_type_its_declaration_says(where, name, s):
    prop = schema_object(where)[0][name]
    assert shape_of(prop) == expected_shape(s), f"{where}.{name}: {prop}"


def test_no_property_is_of_any_type_but_the_claim_template_a_tenant_copies():
    """Every value's shape is said, except a Kubernetes object the schema could name only by
    depending on the Kubernetes package (gpu_nodes/package/outputs.py, TenantAccess)."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("$ref") == "pulumi.json#/Any":
                found.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    walk(SCHEMA, "")
    assert found == [f"/types/{PACKAGE}:index:TenantAccess/properties/resourceClaimTemplate/additionalProperties"], found


@pytest.mark.parametrize(
    ("where", "name", "one_of"),
    [
        ("DevicePlugin", "maxUnavailable", ("integer", "string")),
        ("DevicePlugin", "enabledXids", (["integer"], "string")),
        ("Verification", "diagnostics", ("integer", "string")),
    ],
)
def test_a_value_of_one_of_two_types_says_both_and_is_plain(where, name, one_of):
    prop = SCHEMA["types"][f"{PACKAGE}:index:{where}"]["properties"][name]
    assert shape_of(prop) == one_of, f"{where}.{name}: {prop}"
    alternatives = [*prop["oneOf"], *(p["items"] for p in prop["oneOf"] if "items" in p)]
    assert prop.get("plain") and all(p.get("plain") for p in alternatives), f"{where}.{name}: an Output where a value belongs"


# Each setting of fixed words, with the tuple its reader checks it against.
ENUM_SETTINGS = [
    ("NodeGroup", "gpuAccess", GPU_ACCESS),
    ("NodeGroup", "isolation", ISOLATION),
    ("NodeGroup", "allocator", ALLOCATORS),
    ("DevicePlugin", "migStrategy", MIG_STRATEGIES),
    ("DevicePlugin", "imagePullPolicy", PULL_POLICIES),
    ("Verification", "imagePullPolicy", PULL_POLICIES),
    ("Preflight", "containerRuntime", CONTAINER_RUNTIMES),
    ("Preflight", "driverAdvisories", (DRIVER_ADVISORIES_WARN, DRIVER_ADVISORIES_REFUSE)),
    ("Preflight", "become", ("sudo",)),
    ("Toleration", "operator", TOLERATION_OPERATORS),
    ("Toleration", "effect", TAINT_EFFECTS),
]


def enum_words(prop: dict[str, Any]) -> tuple[Any, ...]:
    enum = SCHEMA["types"][prop["$ref"].removeprefix("#/types/")]
    assert enum["type"] == "string", enum
    return tuple(value["value"] for value in enum["enum"])


@pytest.mark.parametrize(("where", "name", "words"), ENUM_SETTINGS, ids=lambda v: v if isinstance(v, str) else "")
def test_a_setting_of_fixed_words_is_an_enum_of_the_words_its_reader_takes(where, name, words):
    prop = SCHEMA["types"][f"{PACKAGE}:index:{where}"]["properties"][name]
    assert enum_words(prop) == words, f"{where}.{name}"


def test_every_setting_of_fixed_words_is_an_enum():
    """A new setting of fixed words (a `Literal` of strings) is an enum without a row above."""
    for where, name, s in declared_properties():
        if s.words:
            assert enum_words(schema_object(where)[0][name]) == s.words, f"{where}.{name}"


def test_every_enum_is_one_a_property_uses():
    used = {p["$ref"] for t in SCHEMA["types"].values() for p in t.get("properties", {}).values() if "$ref" in p}
    used |= {p["$ref"] for r in SCHEMA["resources"].values() for p in r["inputProperties"].values() if "$ref" in p}
    assert {ref(e.name) for e in enum_types()} <= used, "an enum no property uses"


def test_an_enum_value_is_named_by_its_word_unless_no_identifier_can_be():
    """Each SDK then names it after its word (`GpuAccess.DefaultRuntime`), not after inputs.py's
    Python member (`DEFAULT_RUNTIME`); `cri-o` is `CriO`."""
    values = [v for t in SCHEMA["types"].values() for v in t.get("enum", [])]
    named = {v["value"]: v["name"] for v in values if "name" in v}
    assert named == {"cri-o": "CriO"}, named
    assert all(set(v) <= {"value", "name"} for v in values), values


def test_the_shapes_are_object_types():
    for shape in SHAPES:
        spec = SCHEMA["types"][f"{PACKAGE}:index:{shape.name}"]
        assert list(spec["properties"]) == [f.key for f in shape.fields] and not spec.get("required"), shape.name


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


def test_the_package_version_is_the_distributions():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert VERSION == pyproject["project"]["version"] == SCHEMA["version"], "package/provider.py VERSION"


def test_the_go_sdk_gets_input_structs_for_the_plain_object_types():
    """Without them the generated Go SDK does not compile (`undefined: NodeGroupArgs`)."""
    assert SCHEMA["language"]["go"].get("generateExtraInputTypes") is True, SCHEMA["language"]["go"]


def test_the_package_is_described_for_a_registry_as_pyproject_describes_the_distribution():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert SCHEMA["description"] == project["description"], "reinstall gpu-nodes: its metadata is not pyproject.toml's"
    assert SCHEMA["keywords"] == ["kind/component", "category/infrastructure", *project["keywords"]], SCHEMA["keywords"]
    assert {"kubernetes", "nvidia", "gpu"} <= set(SCHEMA["keywords"]), SCHEMA["keywords"]
    assert SCHEMA["license"] == project["license"] == "Apache-2.0", SCHEMA["license"]
    assert SCHEMA["homepage"] == SCHEMA["repository"] == REPOSITORY, (SCHEMA["homepage"], SCHEMA["repository"])
    assert SCHEMA["publisher"] and SCHEMA["displayName"] not in ("", PACKAGE), SCHEMA["displayName"]


def test_the_placeholder_repository_is_under_a_name_reserved_for_examples():
    """Until the project has a public repository (gpu_nodes/package/metadata.py, REPOSITORY)."""
    assert urlsplit(REPOSITORY).netloc == "example.com", REPOSITORY


def test_the_sdks_have_names_of_their_own():
    nodejs, go, python = (SCHEMA["language"][name] for name in ("nodejs", "go", "python"))
    assert nodejs["packageName"] == NPM_PACKAGE and not NPM_PACKAGE.startswith("@pulumi/"), nodejs
    assert re.fullmatch(r"(@[a-z0-9-]+/)?[a-z0-9-]+", NPM_PACKAGE), NPM_PACKAGE
    # Where Pulumi's Go generator would put a package of this repository (metadata.py), spelled out.
    repository = urlsplit(REPOSITORY)
    assert go["importBasePath"] == GO_IMPORT_BASE_PATH == f"{repository.netloc}{repository.path}/sdk/go/gpunodes", go
    assert python["packageName"] == PYTHON_PACKAGE and not PYTHON_PACKAGE.startswith("pulumi"), python
    assert all(options.get("respectSchemaVersion") for options in SCHEMA["language"].values()), SCHEMA["language"]
