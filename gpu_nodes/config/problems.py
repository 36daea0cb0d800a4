"""How a mistake in what a user asked for is said: `<key>: got <value>; <what is allowed>`, every
one of a run collected before any is shown (gpu_nodes/config/reading.py reads config by its
declarations into them; the fleet command's files use them too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpu_nodes.config.fields import MISSING, OUTPUT_WRITTEN, is_output
from gpu_nodes.errors import ConfigError

# The error that tells the program of problems (each `<key>: got <value>; <what is allowed>`).
Refusal = Callable[[list[str]], Exception]


@dataclass(frozen=True)
class Undisclosed:
    """A secret's value in a message: its length only."""

    length: int

    def __repr__(self) -> str:
        return f"a value of {self.length} character{'' if self.length == 1 else 's'}"


@dataclass(frozen=True)
class Problem:
    """A mistake between fields, found on a section's typed spec: the key (within the section,
    `devicePlugin.migStrategy`), the value and what is allowed. A `warning` is no mistake: the
    setting is valid but does nothing here, and the run goes on saying so."""

    key: str
    value: Any
    allowed: str
    warning: bool = False
    # A valid setting the run goes on with, but whose risk it names (a warning of its own shape).
    caution: bool = False


class Problems:
    """Collects problems so that one run reports every mistake, not just the first."""

    def __init__(self, refuse_later: Refusal | None = None) -> None:
        self.problems: list[str] = []
        # Settings that are valid but do nothing here: the run goes on, and says so.
        self.warnings: list[str] = []
        # The error for problems found later, when a value another resource gives resolves, in the
        # program's words (those found now are raised by whoever reads them).
        self.refuse_later: Refusal = refuse_later or (lambda problems: ConfigError(problems, "value from another resource"))

    def add(self, key: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{key}: got {_show(value)}; {allowed}")

    def warn(self, key: str, value: Any, why: str) -> None:
        self.warnings.append(f"{key}: {_show(value)} has no effect: {why}")

    def caution(self, key: str, value: Any, why: str) -> None:
        """A valid setting whose risk the run names, and goes on: `<key>: <value> <why>`."""
        self.warnings.append(f"{key}: {_show(value)} {why}")

    def __len__(self) -> int:
        return len(self.problems)


def _show(value: Any) -> str:
    if value is MISSING:
        return "nothing (the key is required)"
    if is_output(value):
        return OUTPUT_WRITTEN
    return repr(value)
