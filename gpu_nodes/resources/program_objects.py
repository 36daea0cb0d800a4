"""Two fleets in one program may not claim the same cluster object.

A group's name names its Kubernetes objects (its node label value, PriorityClass, DaemonSet),
a node belongs to one group, and a namespace or the RuntimeClass has one creator. Two fleets of
one program that claim the same would both manage one object, and the claims (which compare
stacks) cannot tell them apart, so the second fleet is refused before it registers anything.
"""

from __future__ import annotations

from gpu_nodes.config.stack import EXISTING_NAMESPACES, StackSpec
from gpu_nodes.errors import ConfigError
from gpu_nodes.pulumi_internals import run_monitor

# Per program run: the run's resource monitor, and which fleet claimed each object.
_claimed: dict[int, tuple[object, dict[tuple[str, str], str]]] = {}


def program_objects(stack: StackSpec) -> list[tuple[str, str]]:
    """(kind, name) of each cluster object the fleet claims for itself, in a stable order."""
    objects = [("node group", group.name) for group in stack.node_groups]
    objects += [("node", node.name) for group in stack.node_groups for node in group.nodes]
    namespaces = {ns for group in stack.node_groups for ns in (group.device_plugin.namespace, group.verification.namespace)}
    objects += [("namespace", ns) for ns in sorted(namespaces - set(stack.existing_namespaces))]
    if stack.runtime_class is not None and stack.runtime_class.create:
        objects.append(("RuntimeClass", stack.runtime_class.name))
    return objects


def check_program_objects(fleet: str, stack: StackSpec) -> None:
    """Record the fleet's objects for this program run; raise ConfigError for one another fleet has."""
    monitor = run_monitor()
    run = _claimed.get(id(monitor))
    if run is None or run[0] is not monitor:
        run = (monitor, {})
        _claimed[id(monitor)] = run
    claimed = run[1]
    objects = program_objects(stack)
    problems = []
    for kind, name in objects:
        other = claimed.get((kind, name))
        if other is not None and other != fleet:
            way_out = {
                "namespace": f"give one fleet other namespaces, or list {name!r} in its existing_namespaces "
                f"({EXISTING_NAMESPACES.key}) and make it depend on fleet {other!r}",
                "RuntimeClass": f"set create_runtime_class=False on one of them and make it depend on fleet {other!r}",
            }.get(kind, "each belongs to one fleet")
            problems.append(f"fleet {fleet!r}: {kind} {name!r} belongs to fleet {other!r} already: {way_out}")
    if problems:
        raise ConfigError(problems)
    for kind, name in objects:
        claimed[(kind, name)] = fleet
