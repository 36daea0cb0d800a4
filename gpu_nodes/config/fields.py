"""How a config field is declared once: its annotation is its type, and the rest of what the reader, the
docs and the schema need to know is said beside it.

A section of the stack config (gpu_nodes/config/: one module per section) is a `@section` class; each of
its fields that comes from stack config carries one `setting(key, help, ...)`:

    replicas: int = setting("replicas", "how many pods share each GPU", check=between(1, 64, "expected 1 to 64"))

From the annotation (or, where a `parse` reads the config's value into something else, from `written`, the
type the config writes) come:
- the kind the reader holds a value to before anything else (`expected a whole number`);
- the docs tables' type column (`int 1-64`, `list of strings`, `` `none`/`single`/`mixed` ``), a check adding
  its range or naming what the value is (`absolute path`);
- for a setting of fixed words (a `Literal` of strings), the reader's check (`expected one of ...`) and the
  package's enum (gpu_nodes/config/inputs.py, written by gpu_nodes/package/generate.py);
- whether the value is itself a section (or a list of them) that the reader reads by its own declarations;
- the typed input a program passes (gpu_nodes/config/inputs.py): `pulumi.Input[...]` where the value may come
  from another resource, an enum where it takes fixed words, a section's own type.
The first release of NVIDIA's components that honours a setting, or one value of it, is declared with it too
(`needs`, gpu_nodes/config/releases.py), so that a release too old for a group's settings is refused before
anything is registered.

A section cannot be built with a value of another type: every field is held to its annotation when the
section is made (`@section`), by the reader and by anyone else, so what the reader hands out is what the
annotations say (mypy holds the code that uses it to them in turn).

Why a typed field of our own, not pydantic v2 or attrs: the reader's messages are the project's own,
`<key>: got <value>; <what is allowed>`, each with the closest known key and one run collecting every
mistake of every field before any check between fields; pydantic's are its own (`Input should be a valid
integer`, locations as tuples), and in its lax mode it turns `"4"` into 4 and `1.0` into 1, which config
must refuse, while its strict mode refuses YAML's own types by pydantic's rules and words. Every error type
would have to be rewritten into ours, and values another resource gives (`pulumi.Output`), read only when
they resolve, are no value pydantic can validate now. attrs gives typed classes and validators, not the
reading of nested objects, unknown keys or docs tables. Both would be one more dependency of every team
program that installs gpu-nodes. What is needed here is small: the standard library's dataclasses, the
typing module's introspection, and the functions below.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import re
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from functools import cache, cached_property
from typing import (
    Any,
    Literal,
    TypeVar,
    Union,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
    overload,
)

import pulumi

from gpu_nodes.config.problems import MISSING, OUTPUT_WRITTEN, Problems, is_output

T = TypeVar("T")
S = TypeVar("S")

# Reads a field's value, after its kind, default and check, into what the section holds (a list's items, a
# map's entries): (problems, key, value) -> value, adding to `problems` for each item that is wrong. The value
# is the config's, of the kind the setting's type says (a list, an object, a string), its items unchecked.
Parse = Callable[[Problems, str, Any], T]


@dataclass(frozen=True)
class Kind:
    """A YAML type, as the reader holds a value to it before its check, and how a message names it."""

    text: str
    accepts: Callable[[object], bool]


def _is_whole_number(value: object) -> bool:
    # bool is an int in Python; a YAML `true` is no port number.
    return isinstance(value, int) and not isinstance(value, bool)


STRING = Kind("a string", lambda value: isinstance(value, str))
INTEGER = Kind("a whole number", _is_whole_number)
NUMBER = Kind("a number", lambda value: isinstance(value, (int, float)) and not isinstance(value, bool))
BOOLEAN = Kind("true or false", lambda value: isinstance(value, bool))
OBJECT = Kind("an object", lambda value: isinstance(value, dict))
LIST = Kind("a list", lambda value: isinstance(value, list))
# Any value: its check or its parse says which (a count or a percentage, a level or `off`).
VALUE = Kind("a value", lambda value: True)


@dataclass(frozen=True)
class Check:
    """What a value must satisfy beyond its type, and how the message says what is allowed.

    `words`: what the docs table's type column adds after the type (`1-64`, `≥ 1`); `noun`: what the table
    calls the value in place of its type (`absolute path`)."""

    ok: Callable[[Any], bool]
    allowed: str
    words: str = ""
    noun: str = ""


def one_of(options: tuple[str, ...]) -> Check:
    return Check(lambda value: value in options, f"expected one of {', '.join(options)}")


def between(low: int, high: int, allowed: str, words: str | None = None) -> Check:
    return Check(lambda value: low <= value <= high, allowed, f"{low}-{high}" if words is None else words)


def at_least(low: int, allowed: str) -> Check:
    return Check(lambda value: value >= low, allowed, f"≥ {low}")


def matching(pattern: re.Pattern[str], allowed: str, noun: str = "") -> Check:
    return Check(lambda value: bool(pattern.fullmatch(value)), allowed, noun=noun)


class Component(Enum):
    """NVIDIA's parts a setting may need a release of, as messages name them. The device plugin's and the DRA
    driver's releases are known before anything registers (the image the group runs, the driver release the stack
    deploys); the NVIDIA driver's and the container toolkit's only on each machine, where preflight holds them
    (gpu_nodes/scripts/preflight/)."""

    DEVICE_PLUGIN = "device plugin"
    DRA_DRIVER = "DRA driver"
    DRIVER = "NVIDIA driver"
    TOOLKIT = "NVIDIA Container Toolkit"

    def release(self, version: str) -> str:
        """A release as its project names it: the device plugin and the DRA driver tag theirs `v0.20.1`."""
        return f"v{version}" if self in (Component.DEVICE_PLUGIN, Component.DRA_DRIVER) else version


@dataclass(frozen=True)
class Need:
    """The first release of `component` that honours a setting, or the values of it `when` picks (from the
    section that holds it): what we deploy for it, that an older release does not read, and where upstream
    says so. gpu_nodes/config/releases.py holds each group to the needs of what it sets."""

    component: Component
    since: str
    what: str
    source: str
    # Which of the section's values need it (None: any value set); it is given the section that holds the setting.
    when: Callable[[Any], bool] | None = None
    # The value a message names (None: the setting's own), from the same section.
    shown: Callable[[Any], object] | None = None


@dataclass(frozen=True)
class Setting:
    """One config field: everything the reader, the docs' tables and the package's schema need to know about
    it. `annotation` and `attr` are the field's own, bound when its section is declared (`@section`)."""

    key: str
    help: str  # the table's meaning column
    default: object = MISSING
    check: Check | None = None
    default_text: str | None = None  # the table's default column, when the default alone does not say it
    row: bool = True  # False: the table describes it in the row of the object that holds it
    # Stack keys only: declared in Pulumi.yaml's `config:` with this description (its type from the annotation).
    pulumi_description: str | None = None
    # A secret (a key, a login): never shown, only its length; taken from stack config as a Pulumi secret. The
    # reader only says whether it is given (its `parse`), the text goes to where it is used alone.
    secret: bool = False
    # Reads the value beyond its kind and check (see `Parse`); without it the value is held as given.
    parse: Parse[object] | None = None
    # The type the config writes, where `parse` reads it into the annotation's: a map into pairs, a list of
    # texts into taints, a secret's text into whether it is given.
    written: object = None
    # The value may come from another resource of the program (a `pulumi.Output`; in the component package, an
    # input unknown until the engine creates what it comes from): it is read when it resolves, by the same
    # kind, check and parse (gpu_nodes/config/reading.py), and it is an Input, never a plain value, in the
    # package's schema. Only for values nothing needs while the program runs: never a name, which names resources.
    from_resource: bool = False
    # The value names resources (`<group>-<node>-preflight`): an Output there is refused saying so.
    names_resources: bool = False
    # The releases of NVIDIA's parts that honour it (gpu_nodes/config/releases.py).
    needs: tuple[Need, ...] = ()
    annotation: object = None
    attr: str = ""

    @cached_property
    def written_type(self) -> object:
        """The type the config writes: `written` where a parse converts it, else the annotation."""
        return self.written if self.written is not None else self.annotation

    @cached_property
    def kind(self) -> Kind:
        return _kind(self.written_type)

    @cached_property
    def words(self) -> tuple[str, ...]:
        """The fixed words a setting of a `Literal` of strings takes; none for another."""
        return _string_words(self.written_type)

    @cached_property
    def value_check(self) -> Check | None:
        """The declared check; else, for a setting of fixed words, that the value is one of them."""
        if self.check is not None:
            return self.check
        return one_of(self.words) if self.words else None

    @cached_property
    def section(self) -> type | None:
        """The section the value is read into by its own declarations (each item's, for a list of them)."""
        return section_of(self.written_type)

    @property
    def is_list(self) -> bool:
        return self.kind is LIST

    @cached_property
    def type_text(self) -> str:
        """The table's type column (docs/configuration.md)."""
        check = self.check
        text = check.noun if check is not None and check.noun else type_words(self.written_type)
        if check is not None and check.words:
            text = f"{text} {check.words}"
        return f"secret {text}" if self.secret else text

    @property
    def pulumi_type(self) -> str | None:
        """Stack keys declared in Pulumi.yaml's `config:` (those with a `pulumi_description`): the type it says."""
        if self.pulumi_description is None:
            return None
        return {STRING: "string", INTEGER: "integer", BOOLEAN: "boolean", LIST: "array", OBJECT: "object"}[self.kind]

    @property
    def name(self) -> str:
        """The key without the stack config's namespace: the package's input (`sshPrivateKey`)."""
        return self.key.rpartition(":")[2]

    @property
    def argument(self) -> str:
        """A stack setting as `GpuFleetArgs` names it: its name in snake case (`ssh_private_key`), as Pulumi's
        Python SDKs name a schema property (the analyzer's camel_case undone)."""
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).lower()

    @property
    def meaning(self) -> str:
        """The help, and that the value may come from another resource where it may: the docs' tables and the
        package's schema say it alike."""
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
_SECTION = "__gpu_nodes_section__"
# What the docs and the schema add to the meaning of a field that may come from another resource.
FROM_RESOURCE = "from a program, may be another resource's output, checked when it resolves"


@overload
def setting(
    key: str,
    help: str,
    *,
    default: T,
    check: Check | None = None,
    default_text: str | None = None,
    row: bool = True,
    pulumi_description: str | None = None,
    secret: bool = False,
    written: object = None,
    from_resource: bool = False,
    names_resources: bool = False,
    needs: tuple[Need, ...] = (),
) -> T: ...


@overload
def setting(
    key: str,
    help: str,
    *,
    parse: Parse[T],
    default: object = MISSING,
    check: Check | None = None,
    default_text: str | None = None,
    row: bool = True,
    pulumi_description: str | None = None,
    secret: bool = False,
    written: object = None,
    from_resource: bool = False,
    names_resources: bool = False,
    needs: tuple[Need, ...] = (),
) -> T: ...


@overload
def setting(
    key: str,
    help: str,
    *,
    check: Check | None = None,
    default_text: str | None = None,
    row: bool = True,
    from_resource: bool = False,
    names_resources: bool = False,
    needs: tuple[Need, ...] = (),
) -> Any: ...


def setting(key: str, help: str, **details: Any) -> Any:
    """Declare a field of a `@section` class as config field `key` (see `Setting` for `details`). Typed as
    the default it is given, or what its `parse` returns; a required field (no default), or a section read
    from its own defaults when it is left out, is typed by its annotation alone, as `dataclasses.field` is."""
    return dataclasses.field(metadata={_SETTING: Setting(key, help, **details)})


@dataclass_transform(frozen_default=True)
def section(cls: type[S]) -> type[S]:
    """A section of the config: a frozen dataclass whose fields are held to their annotations when it is made,
    and whose `setting(...)` fields are its settings (`settings`)."""

    def __post_init__(self: object) -> None:
        check_types(self)

    cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
    built = dataclass(frozen=True)(cls)
    setattr(built, _SECTION, True)
    return built


def is_section(value: object) -> bool:
    return isinstance(value, type) and bool(getattr(value, _SECTION, False))


_FIELD_TYPES: dict[type, dict[str, object]] = {}


def field_types(cls: type) -> dict[str, object]:
    """Each field's annotation, resolved (the modules write them as text: `from __future__ import annotations`)."""
    if cls not in _FIELD_TYPES:
        hints = get_type_hints(cls)
        _FIELD_TYPES[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return _FIELD_TYPES[cls]


def check_types(record: object) -> None:
    """Raise TypeError naming the first field of `record` whose value is not of its annotated type."""
    for name, declared in field_types(type(record)).items():
        value = getattr(record, name)
        if not conforms(value, declared):
            raise TypeError(f"{type(record).__name__}.{name}: got {value!r}, not of the declared type {_type_name(declared)}")


def _type_name(declared: object) -> str:
    return getattr(declared, "__name__", None) or str(declared).replace("typing.", "")


@cache
def _settings(spec: type) -> tuple[tuple[str, Setting], ...]:
    hints = field_types(spec)
    return tuple(
        (f.name, _bound(f.metadata[_SETTING], hints[f.name], f.name)) for f in dataclasses.fields(spec) if _SETTING in f.metadata
    )


def _bound(declared: Setting, annotation: object, attr: str) -> Setting:
    """A setting with its field's annotation; a section declared without a default is read from its own defaults
    (an empty object) when it is left out."""
    bound = replace(declared, annotation=annotation, attr=attr)
    if bound.default is MISSING and bound.section is not None and not bound.is_list:
        return replace(bound, default={})
    return bound


def settings(spec: type) -> Iterator[tuple[str, Setting]]:
    """The config fields of a section, as (attribute, setting), in declaration order."""
    return iter(_settings(spec))


# ------------------------------------------------------------------ what an annotation says


def _members(declared: object) -> list[object]:
    """A union's members, without None and another resource's output (a `from_resource` value's): what the
    config itself may write there."""
    origin = get_origin(declared)
    members = list(get_args(declared)) if origin in (Union, types.UnionType) else [declared]
    return [m for m in members if m is not type(None) and get_origin(m) is not pulumi.Output]


def _is_sequence(declared: object) -> bool:
    return get_origin(declared) in (tuple, list, collections.abc.Sequence)


def _is_mapping(declared: object) -> bool:
    return get_origin(declared) in (dict, collections.abc.Mapping)


def _item(declared: object) -> object:
    return get_args(declared)[0]


def section_of(declared: object) -> type | None:
    """The section a value of this type is read into (a list of sections: each item's); None for another."""
    members = _members(declared)
    if len(members) != 1:
        return None
    (member,) = members
    if _is_sequence(member):
        member = _item(member)
    return member if isinstance(member, type) and is_section(member) else None


def _kind(declared: object) -> Kind:
    members = _members(declared)
    if len(members) != 1:
        return VALUE
    (member,) = members
    if get_origin(member) is Literal:
        return STRING if _string_words(member) else VALUE
    scalars: dict[object, Kind] = {str: STRING, int: INTEGER, float: NUMBER, bool: BOOLEAN}
    if member in scalars:
        return scalars[member]
    if _is_sequence(member):
        return LIST
    if _is_mapping(member) or is_section(member) or is_typeddict(member):
        return OBJECT
    return VALUE


def _string_words(declared: object) -> tuple[str, ...]:
    members = _members(declared)
    if len(members) != 1 or get_origin(members[0]) is not Literal:
        return ()
    words = get_args(members[0])
    return tuple(str(word) for word in words) if all(isinstance(word, str) for word in words) else ()


def _as_yaml(word: object) -> str:
    return word if isinstance(word, str) else json.dumps(word)


def type_words(declared: object) -> str:
    """A type as the docs tables name it: `string`, `int`, `list of strings`, `map`, `` `a`/`b` ``, and
    `X, or Y` for a value of one of several."""
    members = _members(declared)
    if len(members) > 1:
        return ", or ".join(type_words(member) for member in members)
    (member,) = members
    if get_origin(member) is Literal:
        return "/".join(f"`{_as_yaml(word)}`" for word in get_args(member))
    scalars: dict[object, str] = {str: "string", int: "int", float: "number", bool: "bool"}
    if member in scalars:
        return scalars[member]
    if _is_sequence(member):
        item = _item(member)
        return f"list of {scalars[item]}s" if item in scalars else "list"
    if _is_mapping(member):
        return "map"
    return "object"


def conforms(value: object, declared: object) -> bool:
    """Whether `value` is of the annotated type, as far as a run can tell (a TypedDict as a dict)."""
    if declared is Any or declared is object:
        return True
    if declared is None or declared is type(None):
        return value is None
    origin = get_origin(declared)
    args = get_args(declared)
    if origin in (Union, types.UnionType):
        return any(conforms(value, member) for member in args)
    if origin is Literal:
        return any(value == word and type(value) is type(word) for word in args)
    if origin is pulumi.Output:
        return is_output(value)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(item, args[0]) for item in value)
        return len(value) == len(args) and all(conforms(item, arg) for item, arg in zip(value, args, strict=True))
    if origin in (list, collections.abc.Sequence):
        return isinstance(value, (list, tuple)) and all(conforms(item, args[0]) for item in value)
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, Mapping) and all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    if is_typeddict(declared):
        return isinstance(value, dict)
    if declared is bool:
        return isinstance(value, bool)
    if declared is int:
        return _is_whole_number(value)
    if declared is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(declared, type):
        return isinstance(value, declared)
    return True


# ------------------------------------------------------------------ a section as messages and tables show it


def as_written(value: object) -> object:
    """A value as the config writes it, for a message: a section as its keys (those that hold something),
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
            rows += readme_rows(s.section, f"{prefix}{s.key}{'[].' if s.is_list else '.'}")
    return rows
