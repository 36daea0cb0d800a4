"""The fleet's arguments for Python programs, in the stack config's own words.

A program passes its node groups as these dicts, keyed as `gpu-nodes:nodeGroups` is (docs/configuration.md,
"Node group settings"), so that one reference serves both and one reader validates both: a
mistake fails before anything is registered, naming the key, the value and what is allowed.
The nested sections (`devicePlugin`, `verification`, `priorityClass`, `preflight`, `dra`) are maps
keyed as in the tables of docs/configuration.md.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

import pulumi


class NodeArgs(TypedDict, total=False):
    """One machine, already joined to the cluster. Its connection may come from another resource of
    the program (a machine it creates): each is read when it resolves. Its name may not: it names
    resources, which need their names when the program runs."""

    name: Required[str]  # the Kubernetes node name
    sshHost: pulumi.Input[str]
    sshPort: pulumi.Input[int]
    sshUser: pulumi.Input[str]
    hostKey: pulumi.Input[str]


class SshProxyArgs(TypedDict, total=False):
    """A bastion, as `preflight.proxy`; its connection, as a node's, may come from another resource."""

    host: Required[pulumi.Input[str]]
    port: pulumi.Input[int]
    user: Required[pulumi.Input[str]]
    hostKey: pulumi.Input[str]


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
    preflight: dict[str, Any]  # its `proxy` as SshProxyArgs
    allocator: str  # devicePlugin or dra
    dra: dict[str, Any]
