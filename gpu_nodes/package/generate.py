"""Writes gpu_nodes/config/inputs.py, the package's typed inputs, and the docs' config tables, from the field declarations.

The Python SDK infers a component's schema from the type annotations of its `args` and from the
docstring under each annotation (pulumi/provider/experimental/analyzer.py, `analyze_type` and
`get_docstring`). Both come from the same `setting(...)` declarations that drive the stack
config's reader, the docs' config tables and Pulumi.yaml, so the schema cannot say other than they
do. tests/config/test_inputs.py holds the file to what this writes.

    .venv/bin/python -m gpu_nodes.package.generate   # rewrites inputs.py and the docs' config tables
"""

from __future__ import annotations

import collections.abc
import json
import re
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, is_typeddict

import pulumi

from gpu_nodes.cli.fleet_file import FleetFileSpec
from gpu_nodes.cli.operator_export import OperatorSettings
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
from gpu_nodes.config.fields import Setting, is_section, readme_rows, settings
from gpu_nodes.config.metrics import MetricsSpec
from gpu_nodes.config.node_group import NodeGroupSpec, NodeSpec, PriorityClassSpec
from gpu_nodes.config.nvlink import NvlinkDomainSpec
from gpu_nodes.config.preflight import PreflightSpec, SshProxySpec
from gpu_nodes.config.problems import MISSING
from gpu_nodes.config.releases import declared_needs
from gpu_nodes.config.stack import OWN_SETTINGS, STACK_SETTINGS
from gpu_nodes.config.verification import PerformanceSpec, VerificationSpec

# In the config layer, beside the declarations: the Python API's `GpuFleetArgs` (gpu_nodes/resources/fleet.py) is
# typed by it as the package's components are.
INPUTS_FILE = Path(__file__).resolve().parents[1] / "config" / "inputs.py"


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
_SCALARS: dict[object, str] = {str: "str", int: "int", bool: "bool", float: "float"}


def type_name(spec: type) -> str:
    return next(t.name for t in INPUT_TYPES if t.spec is spec)


def _members(declared: object) -> list[object]:
    """What the config may write: a union's members without None and another resource's output."""
    members = list(get_args(declared)) if get_origin(declared) in (Union, types.UnionType) else [declared]
    return [m for m in members if m is not type(None) and get_origin(m) is not pulumi.Output]


def written_annotation(declared: object) -> str:
    """A written type as inputs.py writes it (`list[int]`, `dict[str, int]`, a section's or a shape's name); a value
    of one of several types as `Any` (`analyzer_annotation`)."""
    members = _members(declared)
    if len(members) != 1 or get_origin(members[0]) is Literal:
        return "Any"
    (member,) = members
    if member in _SCALARS:
        return _SCALARS[member]
    origin = get_origin(member)
    if origin in (tuple, list, collections.abc.Sequence):
        return f"list[{written_annotation(get_args(member)[0])}]"
    if origin in (dict, collections.abc.Mapping):
        return f"dict[str, {written_annotation(get_args(member)[1])}]"
    if isinstance(member, type) and is_section(member):
        return type_name(member)
    if is_typeddict(member):
        return str(member.__name__)  # type: ignore[attr-defined]
    raise ValueError(f"no input type for {declared!r}")


def annotation(s: Setting) -> str:
    """The value's type as a program passes it: an Input (not plain in the schema, so every SDK takes
    an Output there) for a secret, which arrives as a secret Output, and for a value that may come
    from another resource (`Setting.from_resource`); the rest plain, known when the component runs. A
    setting of fixed words takes its enum or its word (`<Enum>OrWord`), a value of several types its union
    (`<Key>Value`): both are aliases that mypy reads as written and the analyzer as it takes them (`_aliases`)."""
    enum = setting_enum(s)
    if enum is not None:
        text = or_word(enum.name)
    elif union_schema(s.written_type) is not None:
        text = union_alias(s)
    else:
        text = written_annotation(s.written_type)
    return f"pulumi.Input[{text}]" if s.secret or s.from_resource else text


def or_word(enum: str) -> str:
    """The alias of an enum that takes a member or its word."""
    return f"{enum}OrWord"


def union_alias(s: Setting) -> str:
    """The alias of a setting of several types, named after its key (`maxUnavailable`: `MaxUnavailableValue`)."""
    return f"{s.key[:1].upper()}{s.key[1:]}Value"


def typed_text(declared: object) -> str:
    """A written type as mypy should read it in a team's program: a union and a Literal as they are."""
    members = _members(declared)
    if len(members) > 1:
        return " | ".join(typed_text(member) for member in members)
    (member,) = members
    if get_origin(member) is Literal:
        return f"Literal[{', '.join(json.dumps(word) for word in get_args(member))}]"
    if member in _SCALARS:
        return _SCALARS[member]
    if get_origin(member) in (tuple, list, collections.abc.Sequence):
        return f"list[{typed_text(get_args(member)[0])}]"
    return written_annotation(member)


def _aliases() -> list[str]:
    """What mypy reads for each enum (a member, or its word as stack config writes it) and each value of several
    types (its union); what the analyzer reads for them (pulumi/provider/experimental/analyzer.py takes no union):
    the enum, whose members are its words, and `Any`, which the schema then says with `oneOf` (provider.py,
    `say_unions`)."""
    enums = [(or_word(enum.name), f"{enum.name} | {typed_text(Literal[enum.options])}", enum.name) for enum in enum_types()]
    unions = {
        union_alias(s): (typed_text(s.written_type), "Any")
        for t in INPUT_TYPES
        for _, s in settings(t.spec)
        if setting_enum(s) is None and union_schema(s.written_type) is not None
    }
    rows = [*enums, *((name, typed, runtime) for name, (typed, runtime) in unions.items())]
    lines = ["if TYPE_CHECKING:", *(f"    {name}: TypeAlias = {typed}" for name, typed, _ in rows), "else:"]
    lines += [f"    {name} = {runtime}" for name, _, runtime in rows]
    return lines + ["", ""]


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
    """The enum of a setting of fixed words (a `Literal` of strings), named after its key (`gpuAccess`: `GpuAccess`)."""
    if not s.words:
        return None
    words = ", ".join(f"`{word}`" for word in s.words)
    return EnumType(s.key[:1].upper() + s.key[1:], s.words, f"What `{s.key}` takes: {words}.")


def declared_settings() -> Iterator[Setting]:
    """Every setting the schema has: each input type's, and the fleet's own."""
    for input_type in INPUT_TYPES:
        yield from (s for _, s in settings(input_type.spec))
    yield from OWN_SETTINGS


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
    enums = {enum.name for enum in SHAPE_ENUMS}
    for field in shape.fields:
        typed = or_word(field.annotation) if field.annotation in enums else field.annotation
        lines += [f"    {field.key}: NotRequired[{typed}]", *_docstring_expression(field.description)]
    return lines + ["", ""]


# --- Unions: a value of one of several types (`int | str`) ---

_SCHEMA_SCALARS = {"str": "string", "int": "integer", "bool": "boolean"}


def union_schema(declared: object) -> list[dict[str, Any]] | None:
    """A value of one of several types (`int | str`, a list of ints or `all`, a level or `off`) as the schema's
    `oneOf`, a whole number before a string; None for a value of one type. The analyzer refuses a union (analyzer.py,
    analyze_property: "Union types are not supported"), so inputs.py has it `Any` and the schema says it so."""
    members = _members(declared)
    if len(members) == 1 and not (get_origin(members[0]) is Literal and not _string_literal(members[0])):
        return None
    found: list[dict[str, Any]] = []
    for member in members:
        for part in _literal_types(member) if get_origin(member) is Literal else [member]:
            if (schema := _schema_type(part)) not in found:
                found.append(schema)
    return found


def _string_literal(declared: object) -> bool:
    return all(isinstance(word, str) for word in get_args(declared))


def _literal_types(declared: object) -> list[object]:
    """The types of a Literal's words, a whole number before a string."""
    words = get_args(declared)
    return [t for t in (int, str) if any(type(word) is t for word in words)]


def _schema_type(declared: object) -> dict[str, Any]:
    if declared in _SCALARS:
        return {"type": _SCHEMA_SCALARS[_SCALARS[declared]]}
    if get_origin(declared) is Literal and _string_literal(declared):
        return {"type": "string"}
    if get_origin(declared) in (tuple, list, collections.abc.Sequence):
        return {"type": "array", "items": _schema_type(get_args(declared)[0])}
    raise ValueError(f"no schema type for {declared!r} in a union")


def union_properties() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per input type's name, each property whose declaration is a union, with its `oneOf`."""
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for input_type in INPUT_TYPES:
        for _, s in settings(input_type.spec):
            if (one_of := union_schema(s.written_type)) is not None:
                found.setdefault(input_type.name, {})[s.key] = one_of
    return found


def inputs_source() -> str:
    """The text of inputs.py."""
    lines = [
        '"""The typed inputs a program passes, written by gpu_nodes/package/generate.py from the field declarations: do',
        "not edit.",
        "",
        "They type `GpuFleetArgs`' groups in a Python program (gpu_nodes/resources/fleet.py) and the component package's",
        "inputs, from which the SDK infers the schema every language's SDK is generated from (gpu_nodes/package/",
        "components.py). Keys are the stack config's own (camelCase, as the schema and every SDK spell them), in",
        "Python as in any language, so that docs/configuration.md's tables are the reference of each; the fleet's own",
        "arguments (`GpuFleetInputs`) are `GpuFleetArgs`' (snake case, as Pulumi's Python SDKs name a property).",
        '"""',
        "",
        "from enum import StrEnum",
        "from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypeAlias, TypedDict",
        "",
        "import pulumi",
        "",
        "",
    ]
    enums = enum_types()
    for enum in enums:
        lines += _enum_class(enum)
    lines += _aliases()
    for shape in SHAPES:
        lines += _shape_class(shape)
    for input_type in INPUT_TYPES:
        lines += _class(input_type.name, input_type.description, [(s.key, s) for _, s in settings(input_type.spec)])
    fleet = [(s.argument, s) for s in OWN_SETTINGS]
    lines += _class(FLEET_INPUTS, "What a GPU fleet asks for: the stack config's `gpu-nodes:*` settings.", fleet)
    group = [(s.key, s) for _, s in settings(NodeGroupSpec)] + [(name, s) for name, s in fleet if name != "node_groups"]
    lines += _class(GROUP_INPUTS, "What one GPU node group asks for on its own: its keys, and the fleet's beside them.", group)
    names = [*(e.name for e in enums), *(t.name for t in SHAPES), *(t.name for t in INPUT_TYPES), FLEET_INPUTS, GROUP_INPUTS]
    lines += ["__all__ = [", *(f'    "{name}",' for name in names), "]", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# --- The docs' config tables, from the same declarations (tests/config/test_docs.py holds each to them) ---

_REPOSITORY = Path(__file__).resolve().parents[2]
Row = tuple[str, str, str, str]


def release_rows() -> list[Row]:
    """The table of the releases the settings need (docs/machines.md): each rule as declared with its setting."""
    needs = declared_needs(NodeGroupSpec)
    return [(key, f"{need.component.value} {need.component.release(need.since)}", need.what, need.source) for key, need in needs]


def stack_rows() -> list[Row]:
    """The stack settings' table: every stack setting, the Kubernetes provider's two beside ours."""
    return [(s.key, s.type_text, s.readme_default(), s.meaning) for s in STACK_SETTINGS]


@dataclass(frozen=True)
class Table:
    """A table of settings in a page of docs/, found by its header line."""

    page: str
    header: str
    rows: Callable[[], list[Row]]


TABLES = (
    Table("docs/configuration.md", "| key | type | default | meaning |", stack_rows),
    Table("docs/configuration.md", "| field | type | default | meaning |", lambda: readme_rows(NodeGroupSpec)),
    Table("docs/fleet.md", "| fleet file key | type | default | meaning |", lambda: readme_rows(FleetFileSpec)),
    Table("docs/fleet.md", "| operator setting | type | default | meaning |", lambda: readme_rows(OperatorSettings)),
    Table("docs/machines.md", "| setting | needs | what is deployed for it | where upstream says so |", release_rows),
)


def _row_line(row: Row) -> str:
    key, *cells = row
    if any("|" in cell for cell in row):
        raise ValueError(f"a table cell holds '|': {row}")
    return "| " + " | ".join([f"`{key}`", *cells]) + " |"


def page_with_table(text: str, table: Table) -> str:
    """`text` with the rows under `table.header` written from the declarations."""
    lines = text.splitlines()
    start = lines.index(table.header) + 2  # the header, then its |---| line
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines[start:end] = [_row_line(row) for row in table.rows()]
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def write_tables(root: Path = _REPOSITORY) -> list[Path]:
    """Write every table into its page; the pages written."""
    written = []
    for table in TABLES:
        page = root / table.page
        page.write_text(page_with_table(page.read_text(), table))
        written.append(page)
    return sorted(set(written))


if __name__ == "__main__":
    INPUTS_FILE.write_text(inputs_source())
    print(f"wrote {INPUTS_FILE}")
    for page in write_tables():
        print(f"wrote the settings' tables in {page.relative_to(_REPOSITORY)}")
