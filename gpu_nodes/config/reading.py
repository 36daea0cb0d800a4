"""How a config object is read into its typed spec by its fields' declarations
(gpu_nodes/config/fields.py): first each field on its own, in declaration order (unknown keys, wrong
types, failed checks, the items of a list), then, once every field reads, the checks between fields
on the typed spec (`CrossChecked.cross_checks`), as a section of pydantic's models runs its model
validators after its field validators. Every problem in one shape, `<key>: got <value>; <what is
allowed>`; every field's own problems in one run.

A value another resource of the program gives (a `pulumi.Output`) is known only when the engine has
created that resource. Where its setting takes one (`Setting.from_resource`: a node's and a bastion's
address, port, user and host key), it is read when it resolves, by the same kind, check and parse,
and a mistake then fails what consumes it (that node's preflight) with the same words; anywhere else
it is refused now, as any other mistake.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import pulumi

from gpu_nodes.config.fields import STRING, Kind, Setting, settings
from gpu_nodes.config.problems import MISSING, Problem, Problems, Severity, Undisclosed, is_output
from gpu_nodes.pulumi_internals import with_secrecy


def unknown_key(unknown: object, allowed: Iterable[str], prefix: str = "") -> str:
    """What to say of a key no declaration has: the closest known one, or all of them.
    Keys that all start with `prefix` (`gpu-nodes:`) are compared without it."""
    known = [key.removeprefix(prefix) for key in allowed]
    close = difflib.get_close_matches(str(unknown).removeprefix(prefix), known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean {prefix}{close[0]}?"
    return f"unknown key; allowed keys: {', '.join(prefix + key for key in known)}"


class Fields:
    """One config object's fields: reports a non-object, unknown keys, wrong types, failed checks."""

    def __init__(
        self, problems: Problems, key: str, raw: object, allowed: tuple[str, ...], names: Mapping[str, str] | None = None
    ):
        self.problems = problems
        self.key = key
        self.raw: dict[object, object] = raw if isinstance(raw, dict) else {}
        # How messages name each field, where the caller says (the stack's settings: `Naming`).
        self.names = names or {}
        if not isinstance(raw, dict):
            problems.add(key, raw, "expected an object")
        for unknown in sorted(set(self.raw) - set(allowed), key=str):
            problems.add(self.at(unknown), self.raw[unknown], unknown_key(unknown, allowed))

    def at(self, name: object) -> str:
        """A field's key as messages name it: `nodeGroups[0].name`; a stack setting as its `Naming` says."""
        if name in self.names:
            return self.names[str(name)]
        return f"{self.key}.{name}" if self.key else str(name)

    def get(self, name: str, default: object, kind: Kind) -> object:
        """The value, or None (reported) when it is missing or of the wrong type.

        A null is "not set": the default, or missing where the key is required; never "off"
        (`taints:` with nothing after it keeps the default taint; `[]` says none)."""
        value = self.raw.get(name)
        if value is None and default is MISSING:
            self.problems.add(self.at(name), MISSING, f"expected {kind.text}")
            return None
        if value is None:
            return default  # as declared: a program's tuple, say, where config gives a list
        if not kind.accepts(value):
            self.problems.add(self.at(name), value, f"expected {kind.text}")
            return None
        return value

    def text(self, name: str, default: object, ok: Callable[[str], bool], allowed: str) -> str | None:
        """A string field: None (reported) when it is missing where required, of another type, or not `ok`."""
        value = self.check(name, self.get(name, default, STRING), ok, allowed)
        return value if isinstance(value, str) else None

    def check(self, name: str, value: object, ok: Callable[[Any], bool], allowed: str) -> object:
        if value is not None and not ok(value):
            self.problems.add(self.at(name), value, allowed)
            return None
        return value

    def read(self, s: Setting) -> object:
        """Read a declared field: its type (or its default), then its check."""
        value = self.get(s.key, s.default, s.kind)
        check = s.value_check
        return self.check(s.key, value, check.ok, check.allowed) if check is not None else value


Spec = TypeVar("Spec")


@runtime_checkable
class CrossChecked(Protocol):
    """A spec whose fields are weighed against each other once each reads on its own."""

    def cross_checks(self) -> Iterable[Problem]: ...


def read_section(
    problems: Problems, key: str, raw: object, spec: type[Spec], names: Mapping[str, str] | None = None
) -> Spec | None:
    """A config object read into `spec`: each declared field on its own (`read_fields`), then, when
    every field read, the spec's `cross_checks`. None (its problems added) when anything is wrong;
    unknown keys are reported but do not stop the checks."""
    before = len(problems)
    built = read_fields(problems, key, raw, spec, names)
    if built is None:
        return None
    cross_check(problems, key, built)
    return built if len(problems) == before else None


def read_fields(
    problems: Problems, key: str, raw: object, spec: type[Spec], names: Mapping[str, str] | None = None
) -> Spec | None:
    """Each declared field of `spec` on its own, in declaration order: its kind, default, check and
    `parse`, a section within it read by `read_section`. None (its problems added) when a field is wrong.
    `names`: how messages name the fields, where not by their key under `key` (the stack's settings)."""
    declared = dict(settings(spec))
    fields = Fields(problems, key, raw, tuple(s.key for s in declared.values()), names)
    before = len(problems)
    values = {attr: _read_field(fields, s) for attr, s in declared.items()}
    if len(problems) > before:
        return None
    # The section holds each value to its annotation as it is made (fields.py, `section`).
    return cast(Callable[..., Spec], spec)(**values)


def cross_check(problems: Problems, key: str, spec: object) -> None:
    """The spec's checks between its fields (`CrossChecked`), each problem under the section's `key`."""
    for problem in spec.cross_checks() if isinstance(spec, CrossChecked) else ():
        at = f"{key}.{problem.key}" if key else problem.key
        if problem.severity is Severity.RISK:
            problems.caution(at, problem.value, problem.allowed)
        elif problem.severity is Severity.NO_EFFECT:
            problems.warn(at, problem.value, problem.allowed)
        else:
            problems.add(at, problem.value, problem.allowed)


def _read_field(fields: Fields, s: Setting) -> object:
    """One field: its kind, default and check, then its `parse`, or its section(s) read in turn;
    another resource's output where the setting takes one, read when it resolves; a secret only for
    whether it is given (its text, or a secret Output, goes to where it is used alone)."""
    here = fields.at(s.key)
    if s.secret and s.parse is not None:
        return s.parse(fields.problems, here, fields.raw.get(s.key))
    if is_output(fields.raw.get(s.key)):
        return _read_later(fields, s, fields.raw[s.key])
    before = len(fields.problems)
    value = fields.read(s)
    if len(fields.problems) > before:
        return None
    if s.parse is not None:
        return s.parse(fields.problems, here, value)
    if s.section is None or value is None:
        return value
    if isinstance(value, list):
        # A list read at the top of a message's key (a group on its own: its keys named without `nodeGroups[0].`).
        return tuple(
            read_section(fields.problems, f"{here}[{index}]" if here else "", item, s.section) for index, item in enumerate(value)
        )
    return read_section(fields.problems, here, value, s.section)


def _read_later(fields: Fields, s: Setting, value: object) -> pulumi.Output[object] | None:
    """Another resource's output as the setting's value once it resolves, read then as now (its kind,
    check and parse); refused now where the program needs the value while it runs."""
    here = fields.at(s.key)
    if not s.from_resource:
        fields.problems.add(here, value, known_when_the_program_runs(s))
        return None
    refuse = fields.problems.refuse_later

    def read(resolved: object, secret: bool) -> object:
        # A secret is named by its length only, as the secret settings are.
        problems = _Undisclosing() if secret else Problems()
        if resolved is None:
            problems.add(here, None, f"expected {s.kind.text}")
        else:
            resolved = _read_field(Fields(problems, fields.key, {s.key: resolved}, (s.key,)), s)
        if problems.problems:
            # Raised here, it fails the registration of every resource this value is an input of
            # (pulumi/runtime/resource.py, `register_resource`: `prepare_resource` awaits the inputs, and
            # the failure resolves the resource's outputs with it), and so of what depends on those; the
            # program then ends with it (runtime/stack.py, `wait_for_rpcs`), and Pulumi's language host
            # shows a RunError (a ConfigError is one) as its message alone (pulumi-language-python-exec).
            # In the component package it is an InputPropertiesError, which the SDK's provider server
            # reports by property path (pulumi/provider/server.py, `Construct`).
            raise refuse(problems.problems)
        return resolved

    return with_secrecy(pulumi.Output.from_input(value)).apply(lambda pair: read(*pair))


class _Undisclosing(Problems):
    """Problems that name a text by its length only: a secret's."""

    def add(self, key: str, value: object, allowed: str) -> None:
        super().add(key, Undisclosed(len(value)) if isinstance(value, str) else value, allowed)


def known_when_the_program_runs(s: Setting) -> str:
    """What is allowed where another resource's output is given for a value the program needs while it runs."""
    if s.names_resources:
        return (
            f"expected {s.kind.text} given as it is: it names resources, and names of resources must be known when the "
            "program runs"
        )
    return (
        f"expected {s.kind.text} given as it is: the program needs it while it runs, to know what to register; only "
        "a node's sshHost, sshPort, sshUser and hostKey and preflight.proxy's host, port, user and hostKey may be "
        "another resource's output"
    )
