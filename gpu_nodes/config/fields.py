"""How a config field is declared once: its key, type, default, check and help.

Each field of a section's spec dataclass (gpu_nodes/config/: one module per section of the stack
config) that comes from stack config carries one `setting(...)`: its key, its kind and check, how
its value is read when the kind alone does not say (`parse`), and a default that follows the
section's other fields (`complete`). gpu_nodes/config/reading.py reads a config object by those
declarations; the docs' config tables are tested against the same declarations
(tests/config/test_docs.py).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.output import Unknown

# Reads a field's value, after its kind, default and check, into what the spec holds (a list's
# items, a map's entries): (problems, key, value) -> value, adding to `problems` (a
# gpu_nodes/config/problems.py `Problems`, which imports this module) for each item that is wrong.
Parse = Callable[[Any, str, Any], Any]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


# A key that is not there; as a default: the key is required.
MISSING: Any = _Missing()


@dataclass(frozen=True)
class Kind:
    """A YAML type, and how a message names it."""

    type: type
    text: str

    def accepts(self, value: Any) -> bool:
        # bool is an int in Python; a YAML `true` is no port number.
        return isinstance(value, self.type) and not (self.type is int and isinstance(value, bool))


STRING = Kind(str, "a string")
INTEGER = Kind(int, "a whole number")
BOOLEAN = Kind(bool, "true or false")
OBJECT = Kind(dict, "an object")
LIST = Kind(list, "a list")
# Any scalar; its Check says which (a count or a percentage, say).
SCALAR = Kind(object, "a value")


@dataclass(frozen=True)
class Check:
    """What a value must satisfy beyond its type, and how the message says what is allowed."""

    ok: Callable[[Any], bool]
    allowed: str
    # The words the value must be one of, when that is the check (`one_of`): the package's schema
    # declares them as an enum (gpu_nodes/package/generate.py).
    options: tuple[str, ...] = ()


def one_of(options: tuple[str, ...]) -> Check:
    return Check(lambda value: value in options, f"expected one of {', '.join(options)}", options)


def between(low: int, high: int, allowed: str) -> Check:
    return Check(lambda value: low <= value <= high, allowed)


def matching(pattern: re.Pattern[str], allowed: str) -> Check:
    return Check(lambda value: bool(pattern.fullmatch(value)), allowed)


@dataclass(frozen=True)
class Setting:
    """One config field: everything the reader and the docs' tables need to know about it."""

    key: str
    kind: Kind
    type_text: str  # the table's type column (docs/configuration.md)
    help: str  # the table's meaning column
    default: Any = MISSING
    check: Check | None = None
    default_text: str | None = None  # the table's default column, when the default alone does not say it
    row: bool = True  # False: the table describes it in the row of the object that holds it
    section: type | None = None  # an object (or list of objects) read by that spec's own settings
    # Stack keys only: declared in Pulumi.yaml's `config:` with this type and description.
    pulumi_type: str | None = None
    pulumi_description: str = ""
    # Stack keys only: the GpuFleetArgs field a Python program gives it in (errors name it so).
    argument: str | None = None
    # A secret (a key, a login): never shown, only its length; taken from stack config as a Pulumi secret.
    secret: bool = False
    # The value's type as a Python annotation, where the kind alone does not say it: a list's items,
    # a map's values, a value of one of several types as a union (`int | str`), a type by its schema
    # name (a section's, or one of gpu_nodes/package/generate.py's SHAPES). The component package's
    # typed inputs are written from it (gpu_nodes/package/inputs.py).
    annotation: str | None = None
    # Reads the value beyond its kind and check (see `Parse`); without it the value is held as given.
    parse: Parse | None = None
    # The field's value once the section is read, from the spec as read: a default that follows
    # another field (a DRA group's gpuAccess is cdi). Applied before the section's cross-checks.
    complete: Callable[[Any], Any] | None = None
    # The value may come from another resource of the program (a `pulumi.Output`; in the component
    # package, an input unknown until the engine creates what it comes from): it is read when it
    # resolves, by the same kind, check and parse (gpu_nodes/config/reading.py), and it is an Input,
    # never a plain value, in the package's schema (gpu_nodes/package/generate.py). Only for values
    # nothing needs while the program runs: never a name, which names resources.
    from_resource: bool = False
    # The value names resources (`<group>-<node>-preflight`): an Output there is refused saying so.
    names_resources: bool = False

    @property
    def meaning(self) -> str:
        """The help, and that the value may come from another resource where it may: the docs'
        tables and the package's schema say it alike."""
        return f"{self.help}; {FROM_RESOURCE}" if self.from_resource else self.help

    def readme_default(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if self.default is MISSING:
            return "required"
        if self.default is None:
            return "none"
        # As YAML would write it: true, [1], 22, nvcr.io/...:v1 (strings unquoted).
        return f"`{self.default if isinstance(self.default, str) else json.dumps(self.default)}`"


_SETTING = "gpu_nodes_setting"
# What the docs and the schema add to the meaning of a field that may come from another resource.
FROM_RESOURCE = "from a program, may be another resource's output, checked when it resolves"


# Another resource's output in a message, where a value would be.
OUTPUT_WRITTEN = "another resource's output"


def is_output(value: Any) -> bool:
    """A value another resource gives: a `pulumi.Output`, or (in the component package) a value the
    engine does not know yet (pulumi/runtime/rpc.py, `deserialize_property`, keeps it as `Unknown`)."""
    return isinstance(value, (pulumi.Output, Unknown))


def setting(key: str, kind: Kind, type_text: str, help: str, **details: Any) -> Any:
    """Declare a spec dataclass field as config field `key` (see `Setting` for `details`)."""
    return dataclasses.field(metadata={_SETTING: Setting(key, kind, type_text, help, **details)})


def settings(spec: type) -> Iterator[tuple[str, Setting]]:
    """The config fields of a spec dataclass, as (attribute, setting), in declaration order."""
    for field in dataclasses.fields(spec):
        if _SETTING in field.metadata:
            yield field.name, field.metadata[_SETTING]


def as_written(value: Any) -> Any:
    """A value as the config writes it, for a message: a spec as its keys (those that hold something),
    another resource's output as such (its repr says nothing, and its value is not known yet)."""
    if is_output(value):
        return OUTPUT_WRITTEN
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        written = {s.key: as_written(getattr(value, attr)) for attr, s in settings(type(value))}
        return {key: item for key, item in written.items() if item is not None}
    return value


def readme_rows(spec: type, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, meaning) per documented field, nested objects as `key.field` / `key[].field`."""
    rows = []
    for _, s in settings(spec):
        if s.row:
            rows.append((f"{prefix}{s.key}", s.type_text, s.readme_default(), s.meaning))
        if s.section is not None:
            rows += readme_rows(s.section, f"{prefix}{s.key}{'[].' if s.kind is LIST else '.'}")
    return rows
