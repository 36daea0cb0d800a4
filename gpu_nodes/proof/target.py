"""What a healthy node of a group looks like (`NodeTarget`), and how that target travels as the
inputs of the resources that gate and prove the node (taints, readiness)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class TargetInput:
    """How a field of `NodeTarget` is written among the inputs of the resources that gate and
    prove the node (taints, readiness), and read back from them."""

    key: str
    write: Callable[[Any], Any]
    # From the input's value; None when the input is absent and not `required`.
    read: Callable[[Any], Any]
    required: bool = False
    # Left out when empty: a group without it has no such input (tests/golden/*.json).
    only_when_set: bool = False


def _same(value: Any) -> Any:
    return value


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value or {})


def _taint_list(value: Any) -> list[dict[str, Any]]:
    return [dict(t) for t in value or []]


def _count(value: Any) -> int | None:
    # The engine hands numbers over as floats; messages must say 4, not 4.0.
    return int(value) if value is not None else None


def _counts(value: Any) -> dict[str, int] | None:
    return {k: int(v) for k, v in value.items()} if value else None


def _dra_gpus(value: Any) -> dict[str, Any] | None:
    if not value:
        return None
    return {**value, "count": int(value["count"])}


def _as_input(key: str, write: Callable[[Any], Any], read: Callable[[Any], Any], **how: bool) -> dict[str, TargetInput]:
    return {"input": TargetInput(key, write, read, **how)}


@dataclass(frozen=True)
class NodeTarget:
    """What a healthy node of the group looks like; each field declares its input too, and a
    change of any of them proves the node again (`TARGET_KEYS`)."""

    node: str = field(metadata=_as_input("node", _same, _same, required=True))
    labels: Mapping[str, str] = field(metadata=_as_input("labels", _mapping, _mapping))
    taints: Sequence[Mapping[str, str]] = field(metadata=_as_input("taints", _taint_list, _taint_list))
    plugin_namespace: str = field(metadata=_as_input("pluginNamespace", _same, _same, required=True))
    plugin_selector: Mapping[str, str] = field(metadata=_as_input("pluginSelector", _mapping, _mapping, required=True))
    # None under mixed MIG, and under single MIG without a declared layout.
    expected_gpus: int | None = field(metadata=_as_input("expectedGpus", _same, _count))
    # Under mixed MIG with a declared layout: each nvidia.com/mig-<profile> and its count.
    # With neither figure, any GPU resource will do.
    expected_mig_devices: Mapping[str, int] | None = field(
        default=None,
        metadata=_as_input("expectedMigDevices", lambda m: dict(sorted(m.items())), _counts, only_when_set=True),
    )
    # The declared MIG layout of each GPU (devicePlugin.migDevices), profile -> devices: a new one
    # proves the node again, even where it offers as many devices as the old one did.
    mig_devices: Mapping[str, int] | None = field(
        default=None,
        metadata=_as_input("migDevices", lambda m: dict(sorted(m.items())), _counts, only_when_set=True),
    )

    # Under allocator dra: what each node's ResourceSlices must list, `{"count": N}` and, with the
    # group's gpuModel, `"model"`. None for a device-plugin group (no such input: tests/golden/*.json).
    dra_gpus: Mapping[str, Any] | None = field(
        default=None,
        metadata=_as_input("draGpus", lambda m: dict(sorted(m.items())), _dra_gpus, only_when_set=True),
    )

    @property
    def uses_dra(self) -> bool:
        return self.dra_gpus is not None

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> NodeTarget:
        """Read back from `target_props`."""
        return cls(**{name: i.read(props[i.key] if i.required else props.get(i.key)) for name, i in TARGET_INPUTS})


# Each field of `NodeTarget` by name, and how it travels as an input.
TARGET_INPUTS: tuple[tuple[str, TargetInput], ...] = tuple((f.name, f.metadata["input"]) for f in fields(NodeTarget))
# The inputs that describe the node's target: a change of any proves the node again.
TARGET_KEYS = tuple(i.key for _, i in TARGET_INPUTS)


def target_props(target: NodeTarget) -> dict[str, Any]:
    """As inputs of a dynamic resource; `NodeTarget.from_props` reads them back."""
    props: dict[str, Any] = {}
    for name, i in TARGET_INPUTS:
        value = getattr(target, name)
        if value or not i.only_when_set:
            props[i.key] = i.write(value)
    return props
