"""Writes `inputs.py`, the package's typed inputs, from the field declarations.

The Python SDK infers a component's schema from the type annotations of its `args` and from the
docstring under each annotation (pulumi/provider/experimental/analyzer.py, `analyze_type` and
`get_docstring`). Both come from the same `setting(...)` declarations that drive the stack
config's reader, the docs' config tables and Pulumi.yaml, so the schema cannot say other than they
do. tests/package/test_inputs.py holds the file to what this writes.

    .venv/bin/python -m gpu_nodes.package.generate   # rewrites gpu_nodes/package/inputs.py
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_nodes.config.checks import TAINT_EFFECTS
from gpu_nodes.config.device_plugin import (
    RESOURCE_PARTS,
    TOLERATION_KEYS,
    TOLERATION_OPERATORS,
    DevicePluginSpec,
    ImexSpec,
    SharingSpec,
)
from gpu_nodes.config.dra import DraSpec
from gpu_nodes.config.fields import BOOLEAN, INTEGER, LIST, MISSING, STRING, Setting, settings
from gpu_nodes.config.metrics import MetricsSpec
from gpu_nodes.config.node_group import NodeGroupSpec, NodeSpec, PriorityClassSpec
from gpu_nodes.config.nvlink import NvlinkDomainSpec
from gpu_nodes.config.preflight import PreflightSpec, SshProxySpec
from gpu_nodes.config.stack import ARGUMENTS
from gpu_nodes.config.verification import PerformanceSpec, VerificationSpec

INPUTS_FILE = Path(__file__).with_name("inputs.py")


@dataclass(frozen=True)
class InputType:
    """An object type of the schema (`gpu-nodes:index:<name>`), read by a config section's spec."""

    name: str
    spec: type
    description: str


# Each object a program passes, each after the types it holds: the analyzer reads the annotations
# as objects, so inputs.py has no `from __future__ import annotations` and no forward reference.
# The schema names them; SDKs add `Args`.
INPUT_TYPES = (
    InputType("Node", NodeSpec, "One machine, already joined to the cluster as a node."),
    InputType("Sharing", SharingSpec, "How the device plugin shares each GPU: time-slicing or MPS, and how many ways."),
    InputType("Imex", ImexSpec, "The IMEX channels the device plugin adds to each container it gives GPUs."),
    InputType("DevicePlugin", DevicePluginSpec, "The group's NVIDIA device plugin DaemonSet."),
    InputType("PriorityClass", PriorityClassSpec, "The PriorityClass of the group's GPU workloads."),
    InputType("Performance", PerformanceSpec, "Intra-node NCCL all-reduce on each node, held to a bus-bandwidth floor."),
    InputType("Verification", VerificationSpec, "The verification Jobs that prove the group's GPUs as a tenant's pod gets them."),
    InputType("SshProxy", SshProxySpec, "A bastion the machines are reached through."),
    InputType("Preflight", PreflightSpec, "The checks run on each machine over SSH before it is brought in."),
    InputType("Dra", DraSpec, "What a group whose GPUs NVIDIA's DRA driver allocates offers beyond ResourceClaims."),
    InputType("Metrics", MetricsSpec, "NVIDIA's dcgm-exporter on the group's nodes, scraped by each node's proof."),
    InputType("NvlinkDomain", NvlinkDomainSpec, "The NVLink domain (clique) the group's machines belong to, and its IMEX peers."),
    InputType("NodeGroup", NodeGroupSpec, "One group of like GPU machines: an entry of `nodeGroups`."),
)
# The components' own inputs: the fleet's are the stack's settings, as `GpuFleetArgs` names them;
# a group on its own takes its keys and the fleet's others beside them.
FLEET_INPUTS = "GpuFleetInputs"
GROUP_INPUTS = "GpuNodeGroupInputs"
_SCALARS = {STRING: "str", INTEGER: "int", BOOLEAN: "bool"}


def type_name(spec: type) -> str:
    return next(t.name for t in INPUT_TYPES if t.spec is spec)


def annotation(s: Setting) -> str:
    """The value's type as a program passes it: an Input (not plain in the schema, so every SDK takes
    an Output there) for a secret, which arrives as a secret Output, and for a value that may come
    from another resource (`Setting.from_resource`); the rest plain, known when the component runs."""
    if s.annotation is not None:
        text = analyzer_annotation(s.annotation)
    elif s.section is not None:
        text = f"list[{type_name(s.section)}]" if s.kind is LIST else type_name(s.section)
    elif (enum := setting_enum(s)) is not None:
        text = enum.name
    else:
        text = _SCALARS[s.kind]
    return f"pulumi.Input[{text}]" if s.secret or s.from_resource else text


def description(s: Setting) -> str:
    """The table's meaning (a section's own, its type's), then its default: one text for the schema,
    the docs' tables and a reader of inputs.py."""
    text = s.meaning or next((t.description for t in INPUT_TYPES if t.spec is s.section), "")
    text = text[:1].upper() + text[1:]
    if s.default is MISSING:
        return text.rstrip(".") + "."
    default = s.readme_default()
    ending = f"{default[:1].upper()}{default[1:]}" if default.startswith("required") else f"Default: {default}"
    return f"{text.rstrip('.')}. {ending}."


def _docstring_expression(text: str) -> list[str]:
    """A docstring as one string expression, a long one joined inside parentheses, lines under 130."""
    if len(text) <= 110:
        return [f"    {_quoted(text)}"]
    parts = textwrap.wrap(text, 100, break_on_hyphens=False, drop_whitespace=False)
    return ["    (", *(f"        {_quoted(part)}" for part in parts), "    )"]


def _quoted(text: str) -> str:
    # A JSON string is a Python string literal too, in double quotes as ruff writes them.
    return json.dumps(text, ensure_ascii=False)


def _class(name: str, doc: str, fields: list[tuple[str, Setting]]) -> list[str]:
    lines = [f"class {name}(TypedDict):", f"    {_quoted(doc)}", ""]
    for attr, s in fields:
        typed = annotation(s) if s.default is MISSING else f"NotRequired[{annotation(s)}]"
        lines += [f"    {attr}: {typed}", *_docstring_expression(description(s))]
    return lines + ["", ""]


# --- Enums: the settings that take fixed words (`one_of(...)`), from the tuples the reader checks ---


@dataclass(frozen=True)
class EnumType:
    """A string enum of the schema (`gpu-nodes:index:<name>`). The analyzer makes one of a Python
    `Enum` annotation, its values the members' (pulumi/provider/experimental/analyzer.py,
    analyze_property, `is_enum`); the component provider hands the component a member
    (component.py, map_input_properties: `enum_type(input_val)`), which a `StrEnum`'s is a `str`
    equal to the word, and gpu_nodes/package/components.py reads it back as the word itself."""

    name: str
    options: tuple[str, ...]
    description: str


# Enums of the keys of SHAPES below, from the reader's own tuples.
SHAPE_ENUMS = (
    EnumType("TolerationOperator", TOLERATION_OPERATORS, "How a toleration matches a taint: by its value, or any value."),
    EnumType("TaintEffect", TAINT_EFFECTS, "What a taint does to the pods that do not tolerate it."),
)


def setting_enum(s: Setting) -> EnumType | None:
    """The enum of a setting whose check is `one_of(...)`, named after its key (`gpuAccess`: `GpuAccess`)."""
    if s.check is None or not s.check.options:
        return None
    words = ", ".join(f"`{word}`" for word in s.check.options)
    return EnumType(s.key[:1].upper() + s.key[1:], s.check.options, f"What `{s.key}` takes: {words}.")


def declared_settings() -> Iterator[Setting]:
    """Every setting the schema has: each input type's, and the fleet's own."""
    for input_type in INPUT_TYPES:
        yield from (s for _, s in settings(input_type.spec))
    yield from ARGUMENTS.values()


def enum_types() -> tuple[EnumType, ...]:
    """Every enum of the schema, each once: two settings of one key (`imagePullPolicy`) share theirs."""
    found: dict[str, EnumType] = {}
    for enum in [*(setting_enum(s) for s in declared_settings()), *SHAPE_ENUMS]:
        if enum is not None and found.setdefault(enum.name, enum).options != enum.options:
            raise ValueError(f"two enums named {enum.name}: {found[enum.name].options} and {enum.options}")
    return tuple(found.values())


def _member_name(word: str) -> str:
    """A word as a Python enum member (`defaultRuntime`: `DEFAULT_RUNTIME`, `cri-o`: `CRI_O`). The
    schema drops these names (gpu_nodes/package/provider.py), so that each SDK names a member after
    its word as its own generator does."""
    return re.sub(r"[^0-9A-Za-z]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", word)).upper()


def _enum_class(enum: EnumType) -> list[str]:
    lines = [f"class {enum.name}(StrEnum):", f"    {_quoted(enum.description)}", ""]
    lines += [f"    {_member_name(word)} = {_quoted(word)}" for word in enum.options]
    return lines + ["", ""]


# --- Shapes: object types that are no config section, a value's fixed keys as Kubernetes takes it ---


@dataclass(frozen=True)
class ShapeField:
    key: str
    annotation: str
    description: str


@dataclass(frozen=True)
class Shape:
    """An object type of the schema whose keys the reader checks by hand (gpu_nodes/config/
    device_plugin.py, `read_tolerations`, `read_resources`); a declaration names it by its annotation
    (`list[Toleration]`). Every key is optional, as in Kubernetes."""

    name: str
    description: str
    fields: tuple[ShapeField, ...]


SHAPES = (
    Shape(
        "Toleration",
        "A toleration of the device plugin's pods, as a pod spec takes it (Kubernetes' core/v1 Toleration).",
        (
            ShapeField("key", "str", "The taint key it tolerates; without one, operator `Exists` tolerates every taint."),
            ShapeField(
                "operator", "TolerationOperator", "`Equal`: the taint's value is `value`; `Exists`: any value. Default: `Equal`."
            ),
            ShapeField("value", "str", "The taint value it tolerates, with operator `Equal`."),
            ShapeField("effect", "TaintEffect", "The taint effect it tolerates. Default: every effect."),
            ShapeField(
                "tolerationSeconds",
                "int",
                "With effect `NoExecute`: how long a pod stays once the taint is put on. Default: for ever.",
            ),
        ),
    ),
    Shape(
        "ResourceRequirements",
        "A container's resources, as a pod spec takes them: `cpu`, `memory`, `ephemeral-storage`.",
        (
            ShapeField("requests", "dict[str, str]", "What the container is given, each a quantity: `{cpu: 50m, memory: 64Mi}`."),
            ShapeField("limits", "dict[str, str]", "What it may use at most, each a quantity at least its request."),
        ),
    ),
)
# The keys the reader takes, to hold SHAPES to (tests/package/test_inputs.py).
SHAPE_KEYS = {"Toleration": TOLERATION_KEYS, "ResourceRequirements": RESOURCE_PARTS}


def _shape_class(shape: Shape) -> list[str]:
    lines = [f"class {shape.name}(TypedDict):", f"    {_quoted(shape.description)}", ""]
    for field in shape.fields:
        lines += [f"    {field.key}: NotRequired[{field.annotation}]", *_docstring_expression(field.description)]
    return lines + ["", ""]


# --- Unions: a value of one of several types (`int | str`) ---

_SCHEMA_SCALARS = {"str": "string", "int": "integer", "bool": "boolean"}


def analyzer_annotation(text: str) -> str:
    """A declaration's annotation as inputs.py writes it: a union as `Any`, since the analyzer refuses
    one (analyzer.py, analyze_property: "Union types are not supported"); the schema then says it
    with `oneOf` (union_properties)."""
    return "Any" if "|" in text else text


def union_schema(text: str) -> list[dict[str, Any]] | None:
    """A union annotation (`int | str`, `list[int] | str`) as the schema's `oneOf`; None for another."""
    if "|" not in text:
        return None
    return [_schema_type(part.strip()) for part in text.split("|")]


def _schema_type(text: str) -> dict[str, Any]:
    if text in _SCHEMA_SCALARS:
        return {"type": _SCHEMA_SCALARS[text]}
    if text.startswith("list[") and text.endswith("]"):
        return {"type": "array", "items": _schema_type(text[len("list[") : -1])}
    raise ValueError(f"no schema type for {text!r} in a union")


def union_properties() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per input type's name, each property whose declaration is a union, with its `oneOf`."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for input_type in INPUT_TYPES:
        for _, s in settings(input_type.spec):
            if s.annotation is not None and (one_of := union_schema(s.annotation)) is not None:
                found.setdefault(input_type.name, {})[s.key] = one_of
    return found


def inputs_source() -> str:
    """The text of inputs.py."""
    lines = [
        '"""The package\'s typed inputs, written by gpu_nodes/package/generate.py from the field declarations: do not edit.',
        "",
        "Keys are the stack config's own (camelCase, as the schema and every SDK spell them); the component",
        "maps them onto `GpuFleetArgs` (gpu_nodes/package/components.py).",
        '"""',
        "",
        "from enum import StrEnum",
        "from typing import Any, NotRequired, TypedDict",
        "",
        "import pulumi",
        "",
        "",
    ]
    enums = enum_types()
    for enum in enums:
        lines += _enum_class(enum)
    for shape in SHAPES:
        lines += _shape_class(shape)
    for input_type in INPUT_TYPES:
        lines += _class(input_type.name, input_type.description, [(s.key, s) for _, s in settings(input_type.spec)])
    fleet = list(ARGUMENTS.items())
    lines += _class(FLEET_INPUTS, "What a GPU fleet asks for: the stack config's `gpu-nodes:*` settings.", fleet)
    group = [(s.key, s) for _, s in settings(NodeGroupSpec)] + [(name, s) for name, s in fleet if name != "node_groups"]
    lines += _class(GROUP_INPUTS, "What one GPU node group asks for on its own: its keys, and the fleet's beside them.", group)
    names = [*(e.name for e in enums), *(t.name for t in SHAPES), *(t.name for t in INPUT_TYPES), FLEET_INPUTS, GROUP_INPUTS]
    lines += ["__all__ = [", *(f'    "{name}",' for name in names), "]", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    INPUTS_FILE.write_text(inputs_source())
    print(f"wrote {INPUTS_FILE}")
