"""How a config object is read by its fields' declarations (gpu_nodes/config/fields.py): unknown
keys, wrong types and failed checks reported in one shape, `<key>: got <value>; <what is allowed>`,
all of them in one run.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gpu_nodes.config.fields import MISSING, Kind, Setting, settings

# Fields.read without a default of its own: the declared one.
_DECLARED: Any = object()


@dataclass(frozen=True)
class Undisclosed:
    """A secret's value in a message: its length only."""

    length: int

    def __repr__(self) -> str:
        return f"a value of {self.length} character{'' if self.length == 1 else 's'}"


class Problems:
    """Collects problems so that one run reports every mistake, not just the first."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        # Settings that are valid but do nothing here: the run goes on, and says so.
        self.warnings: list[str] = []

    def add(self, key: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{key}: got {_show(value)}; {allowed}")

    def warn(self, key: str, value: Any, why: str) -> None:
        self.warnings.append(f"{key}: {_show(value)} has no effect: {why}")

    def __len__(self) -> int:
        return len(self.problems)


def unknown_key(unknown: Any, allowed: Iterable[str], prefix: str = "") -> str:
    """What to say of a key no declaration has: the closest known one, or all of them.
    Keys that all start with `prefix` (`gpu-nodes:`) are compared without it."""
    known = [key.removeprefix(prefix) for key in allowed]
    close = difflib.get_close_matches(str(unknown).removeprefix(prefix), known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean {prefix}{close[0]}?"
    return f"unknown key; allowed keys: {', '.join(prefix + key for key in known)}"


def _show(value: Any) -> str:
    if value is MISSING:
        return "nothing (the key is required)"
    return repr(value)


class Fields:
    """One config object's fields: reports a non-object, unknown keys, wrong types, failed checks."""

    def __init__(self, problems: Problems, key: str, raw: Any, allowed: tuple[str, ...]):
        self.problems = problems
        self.key = key
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if not isinstance(raw, dict):
            problems.add(key, raw, "expected an object")
        for unknown in sorted(set(self.raw) - set(allowed), key=str):
            problems.add(self.at(unknown), self.raw[unknown], unknown_key(unknown, allowed))

    def at(self, name: Any) -> str:
        """A field's key as messages name it: `nodeGroups[0].name`; a stack setting's own key at the top."""
        return f"{self.key}.{name}" if self.key else str(name)

    def get(self, name: str, default: Any, kind: Kind) -> Any:
        """The value, or None (reported) when it is missing or of the wrong type.

        A null is "not set": the default, or missing where the key is required; never "off"
        (`taints:` with nothing after it keeps the default taint; `[]` says none)."""
        value = self.raw.get(name)
        if value is None:
            value = default
        if value is MISSING:
            self.problems.add(self.at(name), MISSING, f"expected {kind.text}")
            return None
        if value is None:
            return None
        if not kind.accepts(value):
            self.problems.add(self.at(name), value, f"expected {kind.text}")
            return None
        return value

    def check(self, name: str, value: Any, ok: Callable[[Any], bool], allowed: str) -> Any:
        if value is not None and not ok(value):
            self.problems.add(self.at(name), value, allowed)
            return None
        return value

    def read(self, s: Setting, default: Any = _DECLARED) -> Any:
        """Read a declared field: its type, then its check; a `default` given here replaces the declared one."""
        value = self.get(s.key, s.default if default is _DECLARED else default, s.kind)
        return self.check(s.key, value, s.check.ok, s.check.allowed) if s.check is not None else value


Spec = TypeVar("Spec")


class Section(Generic[Spec]):
    """A config object read into the fields of a spec dataclass, by the fields' settings.

    Fields are read on first use (`section["attr"]`), so a hook may use another field: the
    nodes of a group need its preflight settings. `build` makes the spec when nothing was wrong.
    """

    def __init__(
        self,
        problems: Problems,
        key: str,
        raw: Any,
        spec: type[Spec],
        hooks: Mapping[str, Callable[[Section[Spec], Setting], Any]] | None = None,
    ):
        self._spec = spec
        self._settings = dict(settings(spec))
        self._hooks = hooks or {}
        self._values: dict[str, Any] = {}
        self.fields = Fields(problems, key, raw, tuple(s.key for s in self._settings.values()))
        self.problems = problems
        self.key = key
        self._before = len(problems)

    def __getitem__(self, attr: str) -> Any:
        if attr not in self._values:
            s = self._settings[attr]
            hook = self._hooks.get(attr)
            self._values[attr] = hook(self, s) if hook is not None else self.fields.read(s)
        return self._values[attr]

    def read_all(self) -> None:
        for attr in self._settings:
            self[attr]

    @property
    def clean(self) -> bool:
        """True when reading its fields found nothing wrong (unknown keys aside: they are reported)."""
        return len(self.problems) == self._before

    def build(self, **given: Any) -> Spec | None:
        """The spec from its declared fields, `given` added or replacing some; None after a problem."""
        self.read_all()
        return self._spec(**{**self._values, **given}) if self.clean else None
