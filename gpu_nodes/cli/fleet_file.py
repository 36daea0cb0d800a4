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

README, "The fleet command".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import ARGUMENTS, IMAGE_PULL_SECRET, NODE_GROUPS, StackSpec, read_stack
from gpu_nodes.errors import ConfigError, FleetError, GpuNodesError

KEYS = ("program", "owner", "config", "secrets", "nodeGroups", "stacks")
# Pulumi's own rule for a stack name (sdk/go/common/tokens/stack_name.go, ParseStackName):
# at most 100 characters of A-Z a-z 0-9 _ . -
STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
# A config key as stack config spells it: `<namespace>:<name>`.
CONFIG_KEY = re.compile(r"^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+$")
# What the command derives per stack: the fleet file does not set them per stack.
DERIVED = (NODE_GROUPS.key,)
SECRET_SOURCES = ("file", "env")
DECLARED_KEYS = {s.key for s in ARGUMENTS.values()}
SECRET_KEYS = {s.key for s in ARGUMENTS.values() if s.secret}


@dataclass(frozen=True)
class SecretSource:
    """Where a secret setting's value is read at run time: never written in plain anywhere."""

    key: str
    file: str | None = None
    env: str | None = None

    def read(self) -> str:
        if self.file is not None:
            path = Path(self.file).expanduser()
            try:
                return path.read_text()
            except OSError as error:
                raise GpuNodesError(f"secrets.{self.key}: cannot read {path}: {error.strerror}") from None
        value = os.environ.get(self.env or "")
        if value is None:
            raise GpuNodesError(f"secrets.{self.key}: the environment variable {self.env} is not set")
        return value


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


def load_fleet(path: Path) -> Fleet:
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as error:
        raise FleetError(path, [f"cannot read it: {error.strerror}"]) from None
    except yaml.YAMLError as error:
        raise FleetError(path, [f"not YAML: {error}"]) from None
    return read_fleet(path, raw)


def read_fleet(path: Path, raw: Any) -> Fleet:
    """The fleet, checked whole: every mistake in one error, before any stack runs."""
    problems: list[str] = []
    if not isinstance(raw, dict):
        raise FleetError(path, [f"got {raw!r}; expected a mapping with {', '.join(KEYS)}"])
    problems += [f"{key}: unknown key; allowed: {', '.join(KEYS)}" for key in raw if key not in KEYS]
    config = _read_config(problems, raw.get("config"))
    secrets = _read_secrets(problems, raw.get("secrets"), config)
    groups = raw.get("nodeGroups")
    stack: StackSpec | None = None
    try:
        # A secret's source stands in for its value: the reader only asks whether it is given.
        given = {**{key: value for key, value in config.items() if key in DECLARED_KEYS}, **{s.key: s for s in secrets}}
        stack = read_stack({**given, NODE_GROUPS.key: groups})
    except ConfigError as error:
        problems += error.problems
    names = [g.get("name") for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []
    stacks = _read_stacks(problems, raw.get("stacks"), [n for n in names if isinstance(n, str)])
    owner = raw.get("owner", next(iter(stacks), None))
    if stacks and owner not in stacks:
        problems.append(f"owner: got {owner!r}; expected one of the stacks: {', '.join(stacks)}")
    if len(stacks) > 1 and IMAGE_PULL_SECRET.key in {s.key for s in secrets}:
        # README, "Several stacks on one cluster": each stack would create the pull Secret
        # gpu-nodes-pull in the shared namespaces, and the second one's claim refuses it.
        problems.append(f"secrets.{IMAGE_PULL_SECRET.key}: a private registry across stacks is not supported yet")
    program = raw.get("program", ".")
    if not isinstance(program, str):
        problems.append(f"program: got {program!r}; expected the Pulumi program's directory")
        program = "."
    program_dir = (path.parent / Path(program).expanduser()).resolve()
    if not (program_dir / "Pulumi.yaml").is_file():
        problems.append(f"program: got {program!r}; {program_dir} has no Pulumi.yaml")
    if problems or stack is None or not isinstance(groups, list) or not isinstance(owner, str):
        raise FleetError(path, problems)
    return Fleet(
        path=path,
        program=program_dir,
        groups=tuple(groups),
        specs=stack.node_groups,
        stack=stack,
        stacks=stacks,
        owner=owner,
        config=config,
        secrets=secrets,
    )


def _read_config(problems: list[str], raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"config: got {raw!r}; expected a mapping of stack settings such as kubernetes:kubeconfig")
        return {}
    config = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not CONFIG_KEY.match(key):
            problems.append(f"config.{key}: not a stack setting; expected <namespace>:<name>, such as kubernetes:kubeconfig")
        elif key in DERIVED:
            problems.append(f"config.{key}: set by the command for each stack; list the groups under nodeGroups")
        elif key in SECRET_KEYS:
            problems.append(f"config.{key}: a secret; name where to read it under secrets ({{file: PATH}} or {{env: NAME}})")
        else:
            config[key] = value
    return config


def _read_secrets(problems: list[str], raw: Any, config: dict[str, Any]) -> tuple[SecretSource, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        problems.append(f"secrets: got {raw!r}; expected a mapping such as gpu-nodes:sshPrivateKey: {{file: PATH}}")
        return ()
    sources = []
    for key, where in sorted(raw.items()):
        expected = "expected {file: PATH} or {env: NAME}"
        if not isinstance(key, str) or not CONFIG_KEY.match(key):
            problems.append(f"secrets.{key}: not a stack setting; expected <namespace>:<name>")
        elif key in config:
            problems.append(f"secrets.{key}: also under config; give it once")
        elif not _one_source(where):
            problems.append(f"secrets.{key}: got {where!r}; {expected}")
        else:
            sources.append(SecretSource(key, **where))
    return tuple(sources)


def _one_source(where: Any) -> bool:
    return isinstance(where, dict) and len(where) == 1 and next(iter(where)) in SECRET_SOURCES and isinstance(
        next(iter(where.values())), str
    )


def _read_stacks(problems: list[str], raw: Any, groups: list[str]) -> dict[str, tuple[str, ...]]:
    """Stack name -> groups; by default one stack per group, named after the group."""
    stacks: dict[str, tuple[str, ...]]
    if raw is None:
        stacks = {name: (name,) for name in groups}
    elif not isinstance(raw, dict) or not raw:
        problems.append(f"stacks: got {raw!r}; expected a mapping of stack name to its groups, such as rack-a: [a100]")
        return {}
    else:
        stacks = {}
        for name, members in raw.items():
            if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
                problems.append(f"stacks.{name}: got {members!r}; expected a list of group names")
                continue
            stacks[str(name)] = tuple(members)
    for name in stacks:
        if not STACK_NAME.match(name):
            problems.append(
                f"stacks: got stack name {name!r}; Pulumi takes 1 to 100 letters, digits, hyphens, underscores or periods"
            )
    placed: dict[str, str] = {}
    for name, members in stacks.items():
        for group in members:
            if group not in groups:
                problems.append(f"stacks.{name}: group {group!r} is not under nodeGroups ({', '.join(groups)})")
            elif group in placed:
                problems.append(f"stacks.{name}: group {group!r} is already in stack {placed[group]!r}; a group has one stack")
            placed.setdefault(group, name)
    problems += [f"stacks: group {g!r} is in no stack; add it to one" for g in groups if raw is not None and g not in placed]
    return stacks
