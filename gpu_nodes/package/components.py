"""The components the package serves, typed for the schema: each one is the Python API's own,
given its inputs by another language's program.

The SDK's component provider calls `GpuFleet(name, args, opts)` with the inputs as a dict, keyed
as `GpuFleetInputs` names them (pulumi/provider/experimental/component.py, `map_inputs`), and
reads the outputs from the attributes its class annotations name (`get_state`).
"""

from collections.abc import Mapping
from typing import Any

import pulumi

from gpu_nodes.package.inputs import GpuFleetInputs
from gpu_nodes.package.outputs import NodeReport, TenantAccess
from gpu_nodes.resources import fleet


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


def fleet_args(inputs: Mapping[str, Any]) -> fleet.GpuFleetArgs:
    """The Python API's arguments from a program's inputs, keyed by `GpuFleetArgs` field."""
    return fleet.GpuFleetArgs(**{name: whole_numbers(value) for name, value in inputs.items()})


def whole_numbers(value: Any) -> Any:
    """The value with each whole float an int: numbers reach a provider as floats (a protobuf Value),
    and the reader takes a count only as a whole number. The SDK converts only the properties the
    schema says are integers, not the items of a list or a map."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [whole_numbers(item) for item in value]
    return value
