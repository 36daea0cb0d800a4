"""How a mistake in what a user asked for is said: `<key>: got <value>; <what is allowed>`, every
one of a run collected before any is shown (gpu_nodes/config/reading.py reads config by its
declarations into them; the fleet command's files use them too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

import pulumi
from pulumi.output import Unknown

from gpu_nodes.errors import ConfigError


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


# A key that is not there; as a setting's default (gpu_nodes/config/fields.py): the key is required.
MISSING: Final = _Missing()
# Another resource's output in a message, where a value would be.
OUTPUT_WRITTEN = "another resource's output"


def is_output(value: object) -> bool:
    """A value another resource gives: a `pulumi.Output`, or (in the component package) a value the
    engine does not know yet (pulumi/runtime/rpc.py, `deserialize_property`, keeps it as `Unknown`)."""
    return isinstance(value, (pulumi.Output, Unknown))


# The error that tells the program of problems (each `<key>: got <value>; <what is allowed>`).
Refusal = Callable[[list[str]], Exception]


@dataclass(frozen=True)
class Undisclosed:
    """A secret's value in a message: its length only."""

    length: int

    def __repr__(self) -> str:
        return f"a value of {self.length} character{'' if self.length == 1 else 's'}"


class Severity(Enum):
    """What a problem does to the run."""

    # The setting is refused: the run stops before anything is registered.
    MISTAKE = "mistake"
    # Valid, but it does nothing here: the run goes on and says so.
    NO_EFFECT = "no effect"
    # Valid and accepted, with a risk the run names (an advisory accepted, a release it cannot judge).
    RISK = "risk"


@dataclass(frozen=True)
class Problem:
    """A problem between fields, found on a section's typed spec: the key (within the section,
    `devicePlugin.migStrategy`), the value, what is allowed (or, for a warning, why), and what it
    does to the run."""

    key: str
    value: object
    allowed: str
    severity: Severity = Severity.MISTAKE


class Problems:
    """Collects problems so that one run reports every mistake, not just the first."""

    def __init__(self, refuse_later: Refusal | None = None) -> None:
        self.problems: list[str] = []
        # Settings that are valid but do nothing here: the run goes on, and says so.
        self.warnings: list[str] = []
        # The error for problems found later, when a value another resource gives resolves, in the
        # program's words (those found now are raised by whoever reads them).
        self.refuse_later: Refusal = refuse_later or (lambda problems: ConfigError(problems, "value from another resource"))

    def add(self, key: str, value: object, allowed: str) -> None:
        self.problems.append(f"{key}: got {_show(value)}; {allowed}")

    def warn(self, key: str, value: object, why: str) -> None:
        self.warnings.append(f"{key}: {_show(value)} has no effect: {why}")

    def caution(self, key: str, value: object, why: str) -> None:
        """A valid setting whose risk the run names, and goes on: `<key>: <value> <why>`."""
        self.warnings.append(f"{key}: {_show(value)} {why}")

    def __len__(self) -> int:
        return len(self.problems)


def _show(value: object) -> str:
    if value is MISSING:
        return "nothing (the key is required)"
    if is_output(value):
        return OUTPUT_WRITTEN
    return repr(value)
