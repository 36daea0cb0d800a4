"""The components the package serves, typed for the schema: each one is the Python API's own,
given its inputs by another language's program.

The SDK's component provider calls `GpuFleet(name, args, opts)` with the inputs as a dict, keyed
as `GpuFleetInputs` names them (pulumi/provider/experimental/component.py, `map_inputs`), and
reads the outputs from the attributes its class annotations name (`get_state`).
"""

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any, cast

import pulumi
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails

from gpu_nodes.config.fields import settings
from gpu_nodes.config.inputs import GpuFleetInputs, GpuNodeGroupInputs
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import ONE_GROUP, PACKAGE_INPUTS, Naming
from gpu_nodes.package.outputs import NodeReport, TenantAccess
from gpu_nodes.resources import fleet, node_group
from gpu_nodes.resources.program_objects import check_program_objects

# A group's own keys (`gpusPerNode`, ...), as GpuNodeGroupInputs has them beside the fleet's.
GROUP_KEYS = tuple(s.key for _, s in settings(NodeGroupSpec))
# The arguments the provider read from a component's inputs before it constructs it (`reading`): the component
# is built from them, so that its inputs are read once.
_READ: ContextVar[fleet.GpuFleetArgs | None] = ContextVar("gpu_nodes_read_arguments", default=None)


@contextmanager
def reading(arguments: fleet.GpuFleetArgs) -> Iterator[None]:
    """While the provider constructs a component: the arguments it read, for the component to take."""
    token = _READ.set(arguments)
    try:
        yield
    finally:
        _READ.reset(token)


def _read_arguments() -> fleet.GpuFleetArgs | None:
    return _READ.get()


class GpuFleet(fleet.GpuFleet):
    """The GPU node groups of one cluster: each node labelled, tainted and checked over SSH, the NVIDIA
    device plugin, PriorityClasses, and verification Jobs that prove every node's GPUs as a tenant's
    pod gets them; a node is let in only once it is proven. Pass the Kubernetes provider in the
    resource options."""

    node_groups: pulumi.Output[dict[str, dict[str, NodeReport]]]
    "Per group, per node: what was checked, applied and verified, and the readiness gate."
    tenant_access: dict[str, TenantAccess]  # type: ignore[assignment]
    "Per group: what a tenant's GPU pod must say to get its GPUs."

    def __init__(self, name: str, args: GpuFleetInputs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, _read_arguments() or fleet_args(args), opts)


class GpuNodeGroup(node_group.GpuNodeGroup):
    """One group of like GPU machines on its own: its nodes labelled, tainted and checked over SSH, its
    NVIDIA device plugin, PriorityClasses and verification Jobs, and what a fleet's groups share
    (the namespaces, the RuntimeClass, the check for other device plugins), as a GpuFleet of this one
    group builds them. Pass the Kubernetes provider in the resource options."""

    nodes: pulumi.Output[dict[str, NodeReport]]
    "Per node: what was checked, applied and verified, and the readiness gate."
    tenant_access: TenantAccess
    "What a tenant's GPU pod must say to get its GPUs on this group."

    def __init__(self, name: str, args: GpuNodeGroupInputs, opts: pulumi.ResourceOptions | None = None):
        arguments = _read_arguments() or group_fleet_args(args)
        stack = arguments.validate()
        (spec,) = stack.node_groups
        for warning in stack.warnings:
            pulumi.log.warn(warning)
        check_program_objects(name, stack)
        # Registered as the Python API's group is, then the fleet's shared objects as its own children.
        pulumi.ComponentResource.__init__(self, node_group.TYPE, name, None, opts)
        shared = fleet.declare_shared(self, name, stack, arguments, opts)
        parts = fleet.group_args(spec, shared, arguments)
        self.declare_parts(name, parts, node_group.preflight_key(name, parts))
        self.tenant_access = cast(TenantAccess, fleet.tenant_access(spec))
        self.register_outputs({"tenantAccess": self.tenant_access})


def group_fleet_args(inputs: Mapping[str, Any]) -> fleet.GpuFleetArgs:
    """A group's inputs as the fleet of that one group: its own keys the group, the others the fleet's."""
    group = {key: value for key, value in inputs.items() if key in GROUP_KEYS}
    rest = {name: value for name, value in inputs.items() if name not in GROUP_KEYS}
    return fleet_args({**rest, "node_groups": [group]}, node_group.TYPE, ONE_GROUP)


def fleet_args(inputs: Mapping[str, Any], component: str = fleet.TYPE, naming: Naming = PACKAGE_INPUTS) -> fleet.GpuFleetArgs:
    """The Python API's arguments from a program's inputs, keyed by `GpuFleetArgs` field, its messages naming the
    inputs as the program wrote them; a mistake in a value another resource gives, found when it resolves, is
    refused as `component`'s inputs are."""
    arguments = {name: as_written(value) for name, value in inputs.items()}
    return fleet.GpuFleetArgs(**arguments, refusal=functools.partial(inputs_error, component), naming=naming)


def inputs_error(component: str, problems: list[str]) -> InputPropertiesError:
    """A reader's problems as Pulumi's InputPropertiesError: one error per problem with its property
    path as the program wrote it (a group on its own: within its own inputs). The SDK's provider server
    reports it as such, also when an apply raises it (pulumi/provider/server.py, `Construct`); the engine
    lists each property's problem under the message (`- property <path> with value <value> has a
    problem: <reason>`), so the message itself names only what has no property path."""
    details = [problem_details(problem) for problem in problems]
    unplaced = [f"\n  - {d['reason']}" for d in details if not d["property_path"]]
    return InputPropertiesError(f"invalid inputs of {component}{''.join(unplaced)}", details)


def problem_details(problem: str) -> InputPropertyErrorDetails:
    """A reader's problem, named as the program wrote its inputs (`nodeGroups[0].gpusPerNode: got 0; ...`; a group
    on its own: `gpusPerNode: ...`), as the property path and the reason."""
    path, found, reason = problem.partition(": ")
    if not found or not path or " " in path:
        return {"property_path": "", "reason": problem}
    return {"property_path": path, "reason": reason}


def as_written(value: Any) -> Any:
    """The value as a program wrote it, which the reader reads as it reads stack config (another
    resource's output as it resolves):
    - each whole float an int: numbers reach a provider as floats (a protobuf Value), and the reader
      takes a count only as a whole number. The SDK converts only the properties the schema says are
      integers, not the items of a list or a map, nor another resource's output (a port);
    - each enum member its word: the SDK hands a property of an enum type over as a member of
      inputs.py's enum (component.py, map_input_properties), which the fleet would otherwise carry
      into its messages and manifests."""
    if isinstance(value, pulumi.Output):
        return value.apply(as_written)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: as_written(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_written(item) for item in value]
    return value
