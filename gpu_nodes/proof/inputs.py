"""How a record travels as the inputs of one of our dynamic resources, and back, and what a change
of each input does to the resource.

Each field of such a record declares its input (`declared`): its key, how its value is written
and read back, and what a change of it does (`Change`, required: no input is added without saying).
A field may instead carry a record whose own fields declare theirs (`carried`: a node's target
among the inputs of the resources that gate and prove it). The providers (gpu_nodes/providers/)
read their records back with `from_props`, and their diffs take the keys that matter from `keys`.

It sits in the proof's layer because the node's target (`proof/target.py`) declares its inputs
with it; it is pure, so the providers unwrap what the engine wraps (a secret) before reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Self, TypeVar

R = TypeVar("R")
# How a record holds a value another resource computes: a `pulumi.Output` where the program builds it,
# nothing (`Never`) where a provider reads it back from its inputs, for the engine has resolved it by then.
Computed = TypeVar("Computed")

_INPUT = "gpu_nodes_input"
_CARRIED = "gpu_nodes_carried"


class Change(Enum):
    """What a change of an input does to the resource that holds it (its provider's `diff_own`)."""

    # Stored only: the resource's last work stands (gpu_nodes/providers/cluster_resource.py).
    STATE_ONLY = "state only"
    # The resource's work runs again: the readiness check proves the node again; the taints go on
    # again and the node's health is judged anew; the allocator check looks again.
    RERUN = "rerun"
    # Another resource: the old one is deleted, then the new one made.
    REPLACE = "replace"


def as_is(value: Any) -> Any:
    return value


def as_text(value: Any) -> str:
    return str(value or "")


def as_dict(value: Any) -> dict[str, Any]:
    return dict(value or {})


def as_dict_or_none(value: Any) -> dict[str, Any] | None:
    return dict(value) if value else None


def as_list(value: Any) -> list[Any]:
    return list(value or [])


def whole_number(value: Any) -> int | None:
    """A number as a whole number: the engine hands numbers over as floats; messages must say 4, not 4.0."""
    return int(value) if value is not None else None


@dataclass(frozen=True)
class Input:
    """How one field of a record travels as one input, and what a change of it does."""

    key: str
    change: Change
    write: Callable[[Any], Any] = as_is
    # From the input's value; None when the input is absent and not `required`.
    read: Callable[[Any], Any] = as_is
    required: bool = False
    # Left out when empty: a resource without it has no such input (tests/golden/*.json).
    only_when_set: bool = False


def declared(
    key: str,
    change: Change,
    write: Callable[[Any], Any] = as_is,
    read: Callable[[Any], Any] = as_is,
    required: bool = False,
    only_when_set: bool = False,
) -> dict[str, Input]:
    """A field's metadata: it travels as input `key`, and a change of it does `change`."""
    return {_INPUT: Input(key, change, write, read, required, only_when_set)}


def carried(record: type) -> dict[str, type]:
    """A field's metadata: it holds a `record` whose fields declare their inputs, among this record's own."""
    return {_CARRIED: record}


def declarations(record: type) -> Iterator[tuple[str, Input | type]]:
    """Each field of `record` by name, with its input or the record it carries; a field that declares
    neither is refused, naming it."""
    for f in fields(record):
        if _INPUT in f.metadata:
            yield f.name, f.metadata[_INPUT]
        elif _CARRIED in f.metadata:
            yield f.name, f.metadata[_CARRIED]
        else:
            raise TypeError(
                f"{record.__name__}.{f.name} declares no input: give it field(metadata=declared(key, change)) "
                "(gpu_nodes/proof/inputs.py)"
            )


def inputs(record: type) -> Iterator[Input]:
    """Every input of `record`, those of the records it carries in their place, in field order."""
    for _, how in declarations(record):
        if isinstance(how, Input):
            yield how
        else:
            yield from inputs(how)


def keys(record: type, change: Change | None = None) -> tuple[str, ...]:
    """The keys of `record`'s inputs, or of those whose change does `change`."""
    return tuple(i.key for i in inputs(record) if change in (None, i.change))


def _props_of(record: Any) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, how in declarations(type(record)):
        value = getattr(record, name)
        if not isinstance(how, Input):
            props |= _props_of(value)
        elif not how.only_when_set or value:
            props[how.key] = how.write(value)
    return props


def _read(record: type[R], props: Mapping[str, Any]) -> R:
    values = {
        name: how.read(props[how.key] if how.required else props.get(how.key)) if isinstance(how, Input) else _read(how, props)
        for name, how in declarations(record)
    }
    return record(**values)


class DeclaredInputs:
    """A frozen dataclass whose fields declare their inputs (`declared`, `carried`)."""

    def to_props(self) -> dict[str, Any]:
        """As a dynamic resource's inputs; `from_props` reads them back."""
        return _props_of(self)

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> Self:
        """The record `to_props` wrote, from the inputs as a provider reads them (secrets unwrapped)."""
        return _read(cls, props)
