"""The fleet's arguments for Python programs, in the stack config's own words.

A program passes its node groups as these dicts, keyed as `gpu-nodes:nodeGroups` is (docs/configuration.md,
"Node group settings"), so that one reference serves both and one reader validates both: a
mistake fails before anything is registered, naming the key, the value and what is allowed.
The nested sections (`devicePlugin`, `verification`, `priorityClass`, `preflight`) are maps
keyed as in the tables of docs/configuration.md.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict


class NodeArgs(TypedDict, total=False):
    """One machine, already joined to the cluster."""

    name: Required[str]  # the Kubernetes node name
    sshHost: str
    sshPort: int
    sshUser: str
    hostKey: str


class NodeGroupArgs(TypedDict, total=False):
    """One group of like machines, as one entry of `gpu-nodes:nodeGroups`."""

    name: Required[str]
    nodes: Required[list[NodeArgs]]
    gpusPerNode: Required[int]
    labels: dict[str, str]
    taints: list[str]
    gpuAccess: str  # defaultRuntime, runtimeClass or cdi
    isolation: str  # default or strict
    gpuModel: str
    gpuFeatureLabels: bool
    devicePlugin: dict[str, Any]
    priorityClass: dict[str, Any]
    verification: dict[str, Any]
    preflight: dict[str, Any]
