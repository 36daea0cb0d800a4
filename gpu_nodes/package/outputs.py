"""The package's typed outputs: the per-node report and how tenants reach each group's GPUs.

Written by hand from what the component reports (gpu_nodes/resources/node_group.py `node_report`,
gpu_nodes/resources/fleet.py `tenant_access`); tests/package/test_schema.py holds the two to each
other, key for key. No `from __future__ import annotations`: the SDK's analyzer reads these
annotations as objects.
"""

from typing import Any, NotRequired, TypedDict


class NodeTaint(TypedDict):
    "A taint the stack keeps on a node."

    key: str
    "The taint's key."
    value: NotRequired[str]
    "Its value, if any."
    effect: str
    "`NoSchedule`, `PreferNoSchedule` or `NoExecute`."


class VerificationJobReport(TypedDict):
    "One verification Job a node ran."

    job: str
    "The Job's name."
    resource: str
    "The extended resource it requested (`nvidia.com/gpu`, or a MIG resource)."
    gpus: int
    "How many it requested."


class NodeReport(TypedDict):
    "What was checked, applied and verified on one node: the runbook's checklist and the readiness gate."

    labels: dict[str, str]
    "The labels the stack put on the node, GPU facts from preflight included."
    taints: list[NodeTaint]
    "The stack's taints on the node."
    preflight: dict[str, Any]
    "What preflight found on the machine (driver, toolkit, runtime, GPUs, checks passed), or `{skipped: true}`."
    isolation: str
    "Whether a pod may see GPUs it was not given: `default` or `strict`."
    expectedGpus: NotRequired[int]
    "The `nvidia.com/gpu` the node must offer; none when MIG devices decide and none are declared."
    expectedMigDevices: NotRequired[dict[str, int]]
    "Under mixed MIG with a declared layout, each MIG resource the node must offer."
    verification: list[VerificationJobReport]
    "The verification Jobs that ran on the node."
    checklist: dict[str, str]
    "Each item of the runbook's checklist, and whether the node passed it."
    gate: NotRequired[str]
    "The readiness gate: `lifted` once the node is proven."
    recovery: NotRequired[Any]
    "What was done to bring a failing GPU back (a device plugin pod restarted), if anything."
    quarantine: NotRequired[Any]
    "Another system's quarantine of the node (NVSentinel), which keeps the gate down."


class TenantAccess(TypedDict):
    "What a tenant's GPU pod must say to get its GPUs on a group."

    gpuAccess: str
    "How the pod gets its GPUs: `defaultRuntime`, `runtimeClass` or `cdi`."
    runtimeClassName: NotRequired[str]
    "The RuntimeClass the pod must name, with `gpuAccess: runtimeClass`."
    isolation: str
    "Whether a pod may see GPUs it was not given: `default` or `strict`."
    allocator: NotRequired[str]
    "Who hands out the group's GPUs, where it is NVIDIA's DRA driver: `dra`."
    deviceClassName: NotRequired[str]
    "The DeviceClass a DRA group's claims name: `gpu.nvidia.com`."
    nodeSelector: NotRequired[dict[str, str]]
    "The node selector that lands a pod on the DRA group's nodes."
    tolerations: NotRequired[list[dict[str, str]]]
    "The tolerations of the DRA group's taints."
    resourceClaimTemplate: NotRequired[dict[str, Any]]
    "A ResourceClaimTemplate for one GPU of the DRA group, to copy into the tenant's namespace."
    extendedResourceName: NotRequired[str]
    "Where the DRA group's DeviceClass serves plain requests: the resource a pod may ask for, `nvidia.com/gpu`."
