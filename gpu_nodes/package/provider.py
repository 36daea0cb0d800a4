"""The component provider the plugin (`package/` at the repository's root) serves.

It is the Python SDK's own `ComponentProvider` (pulumi/provider/experimental/component.py), which
infers the schema from the components' annotations and constructs them, with two additions the
annotations cannot carry:
- the schema marks the secret inputs `secret` (the SSH key, the registry login), as their
  declarations do (`Setting.secret`), so every SDK and the engine keep them secret;
- `construct` reads the inputs as stack config is read before anything is registered, and
  refuses a mistake as Pulumi's `InputPropertiesError`, one error per problem with its property
  path as the program wrote it (`nodeGroups[0].gpusPerNode`). The SDK's own server reports that
  error as such (pulumi/provider/server.py, `Construct`); raised from a component's `__init__`,
  it would reach the user wrapped, under a Python traceback.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails
from pulumi.provider import ConstructResult
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.server import main
from pulumi.resource import ResourceOptions

from gpu_nodes.config.stack import OWN_SETTINGS
from gpu_nodes.package.components import (
    GROUP_KEYS,
    GpuFleet,
    GpuNodeGroup,
    fleet_args,
    group_fleet_args,
    inputs_error,
    reading,
)
from gpu_nodes.package.generate import union_properties
from gpu_nodes.package.metadata import LANGUAGES, PACKAGE_METADATA
from gpu_nodes.resources import fleet, node_group

# The package's name: its types are `gpu-nodes:index:<name>`, and the fleet's own type is one of them.
PACKAGE = "gpu-nodes"
# pyproject.toml's version, as the installed package's metadata holds it (tools/setup.sh installs the
# checkout again when pyproject.toml changes).
VERSION = importlib.metadata.version("gpu-nodes")
# Each input of the fleet by its schema name (`sshPrivateKey`, its stack key without the namespace), as the
# argument of `GpuFleetArgs` it is.
SCHEMA_INPUTS = {s.name: s.argument for s in OWN_SETTINGS}
SECRET_INPUTS = sorted(s.name for s in OWN_SETTINGS if s.secret)
# A group on its own: its keys by their own name, and the fleet's others.
GROUP_SCHEMA_INPUTS = {**{key: key for key in GROUP_KEYS}, **{k: v for k, v in SCHEMA_INPUTS.items() if v != "node_groups"}}


@dataclass(frozen=True)
class InputsReader:
    """How a component's inputs are read as a fleet's arguments, and its problems named."""

    # Each input by its schema name, as the Python name the arguments builder takes.
    inputs: dict[str, str]
    arguments: Callable[[Mapping[str, Any]], fleet.GpuFleetArgs]


READERS = {
    fleet.TYPE: InputsReader(SCHEMA_INPUTS, fleet_args),
    node_group.TYPE: InputsReader(GROUP_SCHEMA_INPUTS, group_fleet_args),
}


class GpuNodesProvider(ComponentProvider):
    """The SDK's component provider for gpu-nodes' components, with secrets marked and inputs read first."""

    def __init__(self) -> None:
        super().__init__([GpuFleet, GpuNodeGroup], PACKAGE, version=VERSION)
        self.schema = json.dumps(finish_schema(json.loads(self.schema or "{}")))

    def construct(
        self, name: str, resource_type: str, inputs: Mapping[str, Any], options: ResourceOptions | None = None
    ) -> ConstructResult:
        if resource_type not in READERS:
            return super().construct(name, resource_type, inputs, options)
        # Read once: the component is built from the arguments read here.
        with reading(refuse_mistakes(resource_type, inputs)):
            return super().construct(name, resource_type, inputs, options)


def finish_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The inferred schema with each component's secret inputs marked secret, its description one
    paragraph (a docstring's line breaks and indentation are no part of it), and the Go SDK's
    input structs for the object types (`NodeGroupArgs`, ...): Go's generator writes them only for
    types used as non-plain inputs unless told to (pkg/codegen/go `generateExtraInputTypes`;
    pulumi/pulumi issue 9427), and every object input here is plain."""
    for component in (fleet.TYPE, node_group.TYPE):
        resource = schema["resources"][component]
        for name in SECRET_INPUTS:
            resource["inputProperties"][name]["secret"] = True
        resource["description"] = " ".join(resource["description"].split())
    schema["language"].setdefault("go", {})["generateExtraInputTypes"] = True
    describe_package(schema)
    say_unions(schema)
    name_enum_values_by_their_words(schema)
    return schema


def describe_package(schema: dict[str, Any]) -> None:
    """The package's description, keywords, licence, publisher and home, and its SDKs' names, none
    of which the component provider writes (gpu_nodes/package/metadata.py)."""
    schema.update(PACKAGE_METADATA)
    for language, options in LANGUAGES.items():
        schema["language"].setdefault(language, {}).update(options)


def say_unions(schema: dict[str, Any]) -> None:
    """A property of one of several types (`maxUnavailable`: a count or a percentage) as the
    schema's `oneOf`: the analyzer refuses a union annotation, so inputs.py has it `Any`
    (gpu_nodes/package/generate.py, `analyzer_annotation`). The component provider hands such a
    value over as it came (component.py, map_input_properties: a `pulumi.json#/Any` reference has
    no type definition), whatever the schema says of it."""
    for type_name, properties in union_properties().items():
        declared = schema["types"][f"{PACKAGE}:index:{type_name}"]["properties"]
        for name, one_of in properties.items():
            prop = declared[name]
            prop.pop("$ref", None)
            # A plain property's alternatives are plain too, each of them and a list's items, as the
            # analyzer marks a plain list's items: else every SDK would take an Output there.
            prop["oneOf"] = [plain(alternative) for alternative in one_of] if prop.get("plain") else one_of


def plain(spec: dict[str, Any]) -> dict[str, Any]:
    """A type spec marked plain, with its items and values."""
    nested: dict[str, Any] = {key: plain(spec[key]) for key in ("items", "additionalProperties") if key in spec}
    return {**spec, **nested, "plain": True}


def name_enum_values_by_their_words(schema: dict[str, Any]) -> None:
    """An enum's values without the names of inputs.py's Python members (`DEFAULT_RUNTIME`), nor
    the empty descriptions the component provider writes beside them (schema.py, `EnumValue`): each
    SDK's generator then names a value after its word (`GpuAccess.DefaultRuntime` in TypeScript,
    `GpuAccessDefaultRuntime` in Go: pkg/codegen/nodejs and go, makeSafeEnumName), and Pulumi YAML
    lists the words a value may be (pulumi-yaml pkg/pulumiyaml/analyser.go, hasValidEnumValue)."""
    for spec in schema["types"].values():
        for value in spec.get("enum", []):
            value.pop("name", None)
            if value.get("description") is None:
                value.pop("description", None)
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", value["value"]):
                # A word no identifier can be (`cri-o`) named by its parts (`CriO`), not `Cri_o`.
                value["name"] = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", value["value"]))


def refuse_mistakes(component: str, inputs: Mapping[str, Any]) -> fleet.GpuFleetArgs:
    """The component's inputs read as the fleet's arguments; raise one InputPropertiesError naming every mistake
    in them, as the stack config's reader finds them, each by the property path the program wrote (a group on its
    own: its own keys)."""
    reader = READERS[component]
    unknown: list[InputPropertyErrorDetails] = [
        {"property_path": key, "reason": "unknown input"} for key in sorted(inputs) if key not in reader.inputs
    ]
    args = reader.arguments({reader.inputs[key]: value for key, value in inputs.items() if key in reader.inputs})
    problems = args.read()[1]
    if unknown or problems:
        # The engine shows each value as the program gave it (a secret hidden).
        error = inputs_error(component, problems)
        raise InputPropertiesError(error.message, unknown + list(error.errors or []))
    return args


def serve() -> None:
    """Serve the components to the engine: the plugin's `__main__.py`."""
    main(GpuNodesProvider(), sys.argv[1:])


def package_schema() -> dict[str, Any]:
    """The package's schema, as the plugin serves it (GetSchema)."""
    schema: dict[str, Any] = json.loads(GpuNodesProvider().schema or "{}")
    return schema
