"""The fleet file: one fleet described once, read and checked before any stack runs.

    program: .                 # the Pulumi program's directory, relative to this file (default: its directory)
    owner: rack-a              # the stack that creates what the stacks share (default: the first)
    config:                    # stack settings every stack gets, as stack config spells them
      kubernetes:kubeconfig: ~/.kube/gpu-cluster
    secrets:                   # secret stack settings, and where to read each (a file or a variable)
      gpu-nodes:sshPrivateKey: {file: ~/.ssh/gpu-nodes}
    nodeGroups: [...]          # the groups, as gpu-nodes:nodeGroups spells them
    stacks:                    # stack name: its groups; default one stack per group, named after it
      rack-a: [a100]

docs/fleet.md, "The fleet command".
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_nodes.config.checks import is_shell_name
from gpu_nodes.config.fields import section, setting, settings
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.problems import Problem, Problems, Undisclosed
from gpu_nodes.config.reading import Fields, cross_check, read_fields, unknown_key
from gpu_nodes.config.stack import (
    IMAGE_PULL_SECRET,
    NODE_GROUPS,
    OWN_SETTINGS,
    SECRET_SHAPES,
    STACK_SETTINGS,
    Naming,
    StackSpec,
    read_stack,
)
from gpu_nodes.constants import NAMESPACE
from gpu_nodes.errors import ConfigError, FleetError, GpuNodesError

# Pulumi's own rule for a stack name (sdk/go/common/tokens/stack_name.go, ParseStackName):
# at most 100 characters of A-Z a-z 0-9 _ . -
STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
# A config key as stack config spells it: `<namespace>:<name>`.
CONFIG_KEY = re.compile(r"^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+$")
# What the command derives per stack: the fleet file does not set them per stack.
DERIVED = (NODE_GROUPS.key,)
DECLARED_KEYS = {s.key for s in OWN_SETTINGS}
SECRET_KEYS = {s.key for s in OWN_SETTINGS if s.secret}
# How the stack reader's messages name a setting as the fleet file writes it: its groups under `nodeGroups`, its
# secrets under `secrets`, the rest under `config` (`config.gpu-nodes:runtimeClass`).
FLEET_FILE_KEYS = Naming(
    lambda s: "nodeGroups" if s.key == NODE_GROUPS.key else f"{'secrets' if s.secret else 'config'}.{s.key}"
)
# Our own namespace's keys a fleet file may set under `config:` (the others are secrets or derived).
CONFIG_KEYS = [s.key for s in STACK_SETTINGS if s.key.startswith(f"{NAMESPACE}:") and s.key not in (*DERIVED, *SECRET_KEYS)]
_TYPED = {s.key: s for s in STACK_SETTINGS if not s.key.startswith(f"{NAMESPACE}:")}
_SHAPES = {s.key: problem for s, problem in SECRET_SHAPES}


@dataclass(frozen=True)
class SecretSource:
    """Where a secret setting's value is read at run time: never written in plain anywhere."""

    key: str
    file: str | None = None
    env: str | None = None

    @property
    def written(self) -> dict[str, str]:
        """As the fleet file writes it: `{file: PATH}` or `{env: NAME}`."""
        return {"file": self.file} if self.file is not None else {"env": self.env or ""}

    def read(self) -> str:
        """The value, checked for its shape (an SSH key, a registry login) by its length only."""
        if self.file is not None:
            path = Path(self.file).expanduser()
            try:
                value = path.read_text()
            except OSError as error:
                raise GpuNodesError(f"secrets.{self.key}: cannot read {path}: {error.strerror}") from None
            where = f"the file {path}"
        else:
            found = os.environ.get(self.env or "")
            if found is None:
                raise GpuNodesError(f"secrets.{self.key}: the environment variable {self.env} is not set")
            value, where = found, f"the environment variable {self.env}"
        shape = _SHAPES.get(self.key)
        wrong = shape(value) if shape is not None else ("expected a value" if not value.strip() else None)
        if wrong:
            raise GpuNodesError(f"secrets.{self.key}: {where} holds {Undisclosed(len(value))!r}; {wrong}")
        return value


def _read_config(problems: Problems, where: str, raw: dict[str, Any] | None) -> dict[str, Any]:
    config = {}
    for key, value in (raw or {}).items():
        at = f"{where}.{key}"
        if not isinstance(key, str) or not CONFIG_KEY.match(key):
            problems.add(at, value, "not a stack setting; expected <namespace>:<name>, such as kubernetes:kubeconfig")
        elif key in DERIVED:
            problems.add(at, value, "set by the command for each stack; list the groups under nodeGroups")
        elif key in SECRET_KEYS:
            # Its value is a secret all the same: named by its length only.
            shown = Undisclosed(len(value)) if isinstance(value, str) else value
            problems.add(at, shown, "a secret; name where to read it under secrets ({file: PATH} or {env: NAME})")
        elif key.startswith(f"{NAMESPACE}:") and key not in CONFIG_KEYS:
            problems.add(at, value, unknown_key(key, CONFIG_KEYS, prefix=f"{NAMESPACE}:"))
        elif key in _TYPED and value is not None and not _TYPED[key].kind.accepts(value):
            problems.add(at, value, f"expected {_TYPED[key].kind.text}")
        else:
            config[key] = value
    return config


def _read_secrets(problems: Problems, name: str, raw: dict[str, Any] | None) -> tuple[SecretSource, ...]:
    sources = []
    for key, where in sorted((raw or {}).items(), key=lambda item: str(item[0])):
        at = f"{name}.{key}"
        if not isinstance(key, str) or not CONFIG_KEY.match(key):
            problems.add(at, where, "not a stack setting; expected <namespace>:<name>")
        elif key.startswith(f"{NAMESPACE}:") and key not in SECRET_KEYS:
            not_secret = "not a secret: put it under config"
            problems.add(at, where, not_secret if key in CONFIG_KEYS else unknown_key(key, sorted(SECRET_KEYS), f"{NAMESPACE}:"))
        elif (source := _read_source(problems, at, key, where)) is not None:
            sources.append(source)
    return tuple(sources)


def _read_source(problems: Problems, at: str, key: str, where: Any) -> SecretSource | None:
    """`{file: PATH}` or `{env: NAME}`: its shape now; whether the file or variable exists, when it is read."""
    expected = "expected {file: PATH} or {env: NAME}"
    if not isinstance(where, dict):
        problems.add(at, where, expected)
        return None
    before = len(problems)
    fields = Fields(problems, at, where, ("file", "env"))
    file = fields.text("file", None, bool, "expected the path of the file that holds it")
    env = fields.text(
        "env", None, is_shell_name, "expected an environment variable's name: letters, digits and _, not a digit first"
    )
    if len(problems) == before and (file is None) == (env is None):
        problems.add(at, where, f"{expected}, one of them")
    return SecretSource(key, file=file, env=env) if len(problems) == before else None


def _read_stacks(problems: Problems, key: str, raw: dict[Any, Any] | None) -> dict[str, tuple[str, ...]] | None:
    """Stack name -> groups, as written; None when not given (one stack per group: `_stacks_or_one_per_group`)."""
    if raw is None:
        return None
    if not raw:
        problems.add(key, raw, "expected a mapping of stack name to its groups, such as rack-a: [a100]")
        return {}
    stacks: dict[str, tuple[str, ...]] = {}
    for name, members in raw.items():
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            problems.add(f"{key}.{name}", members, "expected a list of group names")
        elif not STACK_NAME.match(str(name)):
            problems.problems.append(
                f"{key}: got stack name {name!r}; Pulumi takes 1 to 100 letters, digits, hyphens, underscores or periods"
            )
        else:
            stacks[str(name)] = tuple(members)
    return stacks


def _group_names(node_groups: list[object]) -> list[str]:
    """The groups' names as written (the stack reader names a group without one)."""
    return [g["name"] for g in node_groups if isinstance(g, dict) and isinstance(g.get("name"), str)]




def _placement_problems(fleet: FleetFileSpec) -> Iterator[Problem]:
    """Each group in exactly one stack."""
    groups = _group_names(fleet.node_groups)
    placed: dict[str, str] = {}
    for name, members in fleet.stack_groups.items():
        for group in members:
            if group not in groups:
                yield Problem(f"stacks.{name}", group, f"expected a group under nodeGroups: {', '.join(groups)}")
            elif group in placed:
                yield Problem(
                    f"stacks.{name}", group, f"a group has one stack, and {group!r} is already in stack {placed[group]!r}"
                )
            placed.setdefault(group, name)
    for index, written in enumerate(fleet.node_groups):
        group_name = written.get("name") if isinstance(written, dict) else None
        if isinstance(group_name, str) and group_name not in placed:
            stacks = ", ".join(fleet.stack_groups)
            yield Problem(f"nodeGroups[{index}].name", group_name, f"in no stack; add it to one of {stacks}")


@section
class FleetFileSpec:
    """The fleet file's keys, declared as stack config's are (docs/fleet.md, "The fleet command")."""

    program: str = setting(
        "program",
        "the Pulumi program's directory, relative to the fleet file",
        default=".",
        default_text="the fleet file's directory",
    )
    # As written; None: the first stack (`owning_stack`).
    owner: str | None = setting(
        "owner",
        "the stack that creates what the stacks share",
        default=None,
        default_text="the first stack",
    )
    config: dict[str, object] = setting(
        "config",
        "stack settings every stack gets, as stack config spells them (`kubernetes:kubeconfig: PATH`); "
        "not `gpu-nodes:nodeGroups`, and no secret",
        default=None,
        default_text="none",
        written=Mapping[str, object],
        parse=_read_config,
    )
    secrets: tuple[SecretSource, ...] = setting(
        "secrets",
        "secret stack settings, and where to read each: `{file: PATH}` or `{env: NAME}`",
        default=None,
        default_text="none",
        written=Mapping[str, object],
        parse=_read_secrets,
    )
    # As written: the stack reader reads them (`read_fleet`).
    node_groups: list[object] = setting("nodeGroups", "the groups, as `gpu-nodes:nodeGroups` spells them")
    # As written; None: one stack per group (`stack_groups`).
    stacks: dict[str, tuple[str, ...]] | None = setting(
        "stacks",
        "stack name: its groups' names",
        default=None,
        default_text="one stack per group, named after it",
        written=Mapping[str, object],
        parse=_read_stacks,
    )

    def cross_checks(self) -> Iterator[Problem]:
        for source in self.secrets:
            if source.key in self.config:
                yield Problem(f"secrets.{source.key}", source.written, "also under config; give it once")
        yield from _placement_problems(self)
        if self.owner is not None and self.owner not in self.stack_groups:
            yield Problem("owner", self.owner, f"expected one of the stacks: {', '.join(self.stack_groups)}")
        if len(self.stack_groups) > 1 and IMAGE_PULL_SECRET.key in {s.key for s in self.secrets}:
            # docs/fleet.md, "Several stacks on one cluster": each stack would create the pull Secret
            # gpu-nodes-pull in the shared namespaces, and the second one's claim refuses it.
            yield Problem(
                f"secrets.{IMAGE_PULL_SECRET.key}",
                next(s.written for s in self.secrets if s.key == IMAGE_PULL_SECRET.key),
                "a private registry across stacks is not supported yet",
            )

    @property
    def stack_groups(self) -> dict[str, tuple[str, ...]]:
        """Stack name -> its groups' names: as written, else one stack per group, named after it."""
        return self.stacks if self.stacks is not None else {name: (name,) for name in _group_names(self.node_groups)}

    @property
    def owning_stack(self) -> str | None:
        """The stack that creates what the stacks share: as written, else the first."""
        return self.owner if self.owner is not None else next(iter(self.stack_groups), None)


@dataclass(frozen=True)
class Fleet:
    path: Path
    program: Path
    # The groups as written (plain data, passed on to the stacks) and as read.
    groups: tuple[dict[str, Any], ...]
    specs: tuple[NodeGroupSpec, ...]
    stack: StackSpec
    # Stack name -> its groups' names, in the file's order.
    stacks: dict[str, tuple[str, ...]]
    owner: str
    config: dict[str, Any] = field(default_factory=dict)
    secrets: tuple[SecretSource, ...] = ()


def load_yaml(path: Path, what: str = "fleet file") -> Any:
    """A file a user writes, as data; a FleetError naming the file when it cannot be read or is no YAML."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as error:
        raise FleetError(path, [f"cannot read it: {error.strerror}"], what) from None
    except yaml.YAMLError as error:
        raise FleetError(path, [f"not YAML: {error}"], what) from None


def refuse_unless_mapping(path: Path | str, raw: Any, spec: type, what: str = "fleet file") -> None:
    """A file whose top is no mapping: refused at once, naming the keys it may have."""
    if not isinstance(raw, dict):
        keys = ", ".join(s.key for _, s in settings(spec))
        raise FleetError(path, [f"got {raw!r}; expected a mapping with {keys}"], what)


def load_fleet(path: Path) -> Fleet:
    return read_fleet(path, load_yaml(path))


def read_fleet(path: Path, raw: Any) -> Fleet:
    """The fleet, checked whole: the fleet file's own keys first, then its groups as stack config."""
    refuse_unless_mapping(path, raw, FleetFileSpec)
    problems = Problems()
    spec = read_fields(problems, "", raw, FleetFileSpec)
    if spec is None:
        raise FleetError(path, problems.problems)
    cross_check(problems, "", spec)
    stack: StackSpec | None = None
    try:
        # A secret's source stands in for its value: the reader only asks whether it is given.
        given = {**{key: value for key, value in spec.config.items() if key in DECLARED_KEYS}, **{s.key: s for s in spec.secrets}}
        stack = read_stack({**given, NODE_GROUPS.key: spec.node_groups}, naming=FLEET_FILE_KEYS)
    except ConfigError as error:
        problems.problems += error.problems
    program_dir = (path.parent / Path(spec.program).expanduser()).resolve()
    if not (program_dir / "Pulumi.yaml").is_file():
        problems.add("program", spec.program, f"{program_dir} has no Pulumi.yaml")
    owner = spec.owning_stack
    if problems or stack is None or owner is None:
        raise FleetError(path, problems.problems)
    return Fleet(
        path=path,
        program=program_dir,
        groups=tuple(group for group in spec.node_groups if isinstance(group, dict)),
        specs=stack.node_groups,
        stack=stack,
        stacks=spec.stack_groups,
        owner=owner,
        config=spec.config,
        secrets=spec.secrets,
    )


