"""The split of a fleet into stacks: what each stack owns, its derived config, and the order they run in.

Pure: a `Fleet` in, data out (docs/fleet.md, "Several stacks on one cluster" says why the owner
goes first and comes down last).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_nodes.cli.fleet_file import Fleet
from gpu_nodes.config.stack import CREATE_RUNTIME_CLASS, EXISTING_NAMESPACES, NODE_GROUPS
from gpu_nodes.errors import FleetError

# docs/operations.md, "Large fleets": past this many nodes a stack is slower per node than several small ones.
RECOMMENDED_STACK_NODES = 100
# The commands that change the cluster run the owner alone: first on up, last on destroy.
OWNER_FIRST = ("up",)
OWNER_LAST = ("destroy",)


@dataclass(frozen=True)
class StackPlan:
    name: str
    groups: tuple[str, ...]
    nodes: tuple[str, ...]
    owner: bool
    # The namespaces this stack creates, and those it only names (another stack's, or the cluster's).
    creates: tuple[str, ...]
    references: tuple[str, ...]
    config: dict[str, Any]


@dataclass(frozen=True)
class FleetPlan:
    stacks: tuple[StackPlan, ...]
    warnings: tuple[str, ...]

    @property
    def owner(self) -> StackPlan:
        return next(s for s in self.stacks if s.owner)

    def stack(self, name: str) -> StackPlan:
        return next(s for s in self.stacks if s.name == name)


def plan_fleet(fleet: Fleet) -> FleetPlan:
    """Each stack's groups, nodes, namespaces and config; a FleetError when stacks would collide."""
    specs = {spec.name: spec for spec in fleet.specs}
    raw = {group["name"]: group for group in fleet.groups}
    used = {
        stack: sorted({ns for g in groups for ns in (specs[g].device_plugin.namespace, specs[g].verification.namespace)})
        for stack, groups in fleet.stacks.items()
    }
    existing = set(fleet.stack.existing_namespaces)
    creators, problems = _namespace_creators(fleet, used, existing)
    if problems:
        raise FleetError(fleet.path, problems)
    runtime = fleet.stack.runtime_class
    shared_class = runtime is not None and runtime.create
    stacks = []
    for name, groups in fleet.stacks.items():
        owner = name == fleet.owner
        creates = tuple(ns for ns in used[name] if creators.get(ns) == name)
        references = tuple(ns for ns in used[name] if ns not in creates)
        config = {k: v for k, v in fleet.config.items() if k not in (EXISTING_NAMESPACES.key, CREATE_RUNTIME_CLASS.key)}
        config[NODE_GROUPS.key] = [raw[g] for g in groups]
        if references:
            config[EXISTING_NAMESPACES.key] = list(references)
        if shared_class and not owner:
            config[CREATE_RUNTIME_CLASS.key] = "false"
        elif CREATE_RUNTIME_CLASS.key in fleet.config:
            config[CREATE_RUNTIME_CLASS.key] = fleet.config[CREATE_RUNTIME_CLASS.key]
        nodes = tuple(node.name for g in groups for node in specs[g].nodes)
        stacks.append(StackPlan(name, tuple(groups), nodes, owner, creates, references, config))
    return FleetPlan(tuple(stacks), tuple(_size_warnings(fleet, stacks)))


def _namespace_creators(fleet: Fleet, used: dict[str, list[str]], existing: set[str]) -> tuple[dict[str, str], list[str]]:
    """Which stack creates each namespace: the owner whenever it uses it; else the one stack that does.

    A namespace that two stacks other than the owner use would need one of them to go first,
    and the other to keep it: only the owner is ordered so, and only it may own what stacks share.
    """
    creators: dict[str, str] = {}
    problems = []
    users: dict[str, list[str]] = {}
    for stack, namespaces in used.items():
        for ns in namespaces:
            users.setdefault(ns, []).append(stack)
    for ns, stacks in users.items():
        if ns in existing:
            continue
        if fleet.owner in stacks:
            creators[ns] = fleet.owner
        elif len(stacks) == 1:
            creators[ns] = stacks[0]
        else:
            groups = [f"{g} (stack {s})" for s in stacks for g in fleet.stacks[s] if ns in _group_namespaces(fleet, g)]
            problems.append(
                f"namespace {ns!r}: used by groups {', '.join(groups)}, and the owner {fleet.owner!r} does not use it: "
                f"stack {stacks[0]!r} would own it and the others depend on it. Only the owner may own what stacks share: "
                f"move one of these groups into {fleet.owner!r}, give them another namespace, or list {ns!r} under "
                f"config.{EXISTING_NAMESPACES.key} if it exists already"
            )
    return creators, problems


def _group_namespaces(fleet: Fleet, group: str) -> tuple[str, str]:
    spec = next(s for s in fleet.specs if s.name == group)
    return spec.device_plugin.namespace, spec.verification.namespace


def _size_warnings(fleet: Fleet, stacks: list[StackPlan]) -> list[str]:
    warnings = []
    for spec in fleet.specs:
        if len(spec.nodes) > RECOMMENDED_STACK_NODES:
            warnings.append(
                f"group {spec.name!r} has {len(spec.nodes)} nodes, more than the {RECOMMENDED_STACK_NODES} a stack "
                'should hold (docs/operations.md, "Large fleets"): split it into groups of about that size, one stack each'
            )
    for stack in stacks:
        if len(stack.groups) > 1 and len(stack.nodes) > RECOMMENDED_STACK_NODES:
            warnings.append(
                f"stack {stack.name!r} has {len(stack.nodes)} nodes in groups {', '.join(stack.groups)}, more than the "
                f"{RECOMMENDED_STACK_NODES} a stack should hold: give some of its groups stacks of their own"
            )
    return warnings


def phases(plan: FleetPlan, command: str) -> list[list[str]]:
    """The stacks in the order a command runs them: each phase after the one before, its stacks
    `--parallel` at a time. The owner alone first on up, alone last on destroy."""
    owner = plan.owner.name
    others = [s.name for s in plan.stacks if not s.owner]
    if command in OWNER_FIRST:
        return [p for p in ([owner], others) if p]
    if command in OWNER_LAST:
        return [p for p in (others, [owner]) if p]
    return [[owner, *others]]
