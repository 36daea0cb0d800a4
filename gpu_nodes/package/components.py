"""The components the package serves, typed for the schema: each one is the Python API's own,
given its inputs by another language's program.

The SDK's component provider calls `GpuFleet(name, args, opts)` with the inputs as a dict, keyed
as `GpuFleetInputs` names them (pulumi/provider/experimental/component.py, `map_inputs`), and
reads the outputs from the attributes its class annotations name (`get_state`).
"""

import functools
from collections.abc import Mapping
from enum import Enum
from typing import Any, cast

import pulumi
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails

from gpu_nodes.config.fields import settings
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.constants import NAMESPACE
from gpu_nodes.package.inputs import GpuFleetInputs, GpuNodeGroupInputs
from gpu_nodes.package.outputs import NodeReport, TenantAccess
from gpu_nodes.resources import fleet, node_group
from gpu_nodes.resources.program_objects import check_program_objects

# A group's own keys (`gpusPerNode`, ...), as GpuNodeGroupInputs has them beside the fleet's.
GROUP_KEYS = tuple(s.key for _, s in settings(NodeGroupSpec))
# Where the reader of a group on its own, the fleet of that one group, puts the group's keys.
ONE_GROUP = "nodeGroups[0]"


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
        super().__init__(name, fleet_args(args), opts)

    def in_program_words(self, text: str, args: fleet.GpuFleetArgs) -> str:
        return in_schema_words(text)


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
        arguments = group_fleet_args(args)
        stack = arguments.validate()
        (spec,) = stack.node_groups
        for warning in stack.warnings:
            pulumi.log.warn(in_schema_words(warning, ONE_GROUP))
        check_program_objects(name, stack)
        # Registered as the Python API's group is, then the fleet's shared objects as its own children.
        pulumi.ComponentResource.__init__(self, node_group.TYPE, name, None, opts)
        shared = fleet.declare_shared(self, name, stack, arguments, opts)
        parts = fleet.group_args(spec, shared, arguments)
        self.declare_parts(name, parts, node_group.preflight_key(name, parts))
        self.tenant_access = cast(TenantAccess, fleet.tenant_access(spec))
        self.register_outputs({"tenantAccess": self.tenant_access})


def in_schema_words(text: str, within: str = "") -> str:
    """A reader's line that starts with a stack key (`gpu-nodes:nodeGroups[0].gpusPerNode: ...`) as
    a program in another language wrote it (`nodeGroups[0].gpusPerNode: ...`); with `within`, the
    path inside that property (`gpusPerNode: ...`)."""
    text = text.removeprefix(f"{NAMESPACE}:")
    if within and text.startswith((f"{within}.", f"{within}[", f"{within}:")):
        text = text.removeprefix(within).removeprefix(".")
    return text


def group_fleet_args(inputs: Mapping[str, Any]) -> fleet.GpuFleetArgs:
    """A group's inputs as the fleet of that one group: its own keys the group, the others the fleet's."""
    group = {key: value for key, value in inputs.items() if key in GROUP_KEYS}
    rest = {name: value for name, value in inputs.items() if name not in GROUP_KEYS}
    return fleet_args({**rest, "node_groups": [group]}, node_group.TYPE)


def fleet_args(inputs: Mapping[str, Any], component: str = fleet.TYPE) -> fleet.GpuFleetArgs:
    """The Python API's arguments from a program's inputs, keyed by `GpuFleetArgs` field; a mistake in
    a value another resource gives, found when it resolves, is refused as `component`'s inputs are."""
    arguments = {name: as_written(value) for name, value in inputs.items()}
    return fleet.GpuFleetArgs(**arguments, refusal=functools.partial(inputs_error, component))


def inputs_error(component: str, problems: list[str]) -> InputPropertiesError:
    """A reader's problems as Pulumi's InputPropertiesError: one error per problem with its property
    path as the program wrote it (a group on its own: within its own inputs). The SDK's provider server
    reports it as such, also when an apply raises it (pulumi/provider/server.py, `Construct`); the engine
    lists each property's problem under the message (`- property <path> with value <value> has a
    problem: <reason>`), so the message itself names only what has no property path."""
    within = ONE_GROUP if component == node_group.TYPE else ""
    details = [problem_details(problem, within) for problem in problems]
    unplaced = [f"\n  - {d['reason']}" for d in details if not d["property_path"]]
    return InputPropertiesError(f"invalid inputs of {component}{''.join(unplaced)}", details)


def problem_details(problem: str, within: str = "") -> InputPropertyErrorDetails:
    """A reader's problem (`gpu-nodes:nodeGroups[0].gpusPerNode: got 0; ...`) as the property path a
    program wrote (`nodeGroups[0].gpusPerNode`; with `within` the path inside it, `gpusPerNode`) and the reason."""
    path, found, reason = in_schema_words(problem, within).partition(": ")
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
