"""The package's typed outputs: the per-node report and how tenants reach each group's GPUs.

Written by hand from what the component reports (gpu_nodes/resources/node_group.py `node_report`,
gpu_nodes/preflight/command.py `parse_report` and the preflight script's report, gpu_nodes/proof/
quarantine.py `as_output`, gpu_nodes/resources/fleet.py `tenant_access`); tests/package/
test_outputs.py holds the two to each other, key for key. No `from __future__ import annotations`:
the SDK's analyzer reads these annotations as objects.

The reports are Outputs of maps (a group's nodes, the fleet's groups), which the component provider
hands to the engine as they are (component.py, `get_state`, maps only the properties that are a
type of their own, key by key): a key these types do not name still reaches a program, and these
types tell its SDK what it holds. No output is typed by an enum: the component provider would map
a string of one as an object (`map_complex_output`), so the words stay strings here, described.
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
    role: str
    (
        "What the Job proves: `verification` (a pod given GPUs sees them and runs CUDA), `access` (a pod given none sees "
        "none), `diagnostics` (NVIDIA's DCGM) or `performance` (NCCL's all-reduce)."
    )
    resource: str
    "The extended resource it requested (`nvidia.com/gpu`, or a MIG resource)."
    gpus: int
    "How many it requested."


class DriverAdvisoriesReport(TypedDict):
    "The driver's branch and NVIDIA's display-driver security bulletins it is open to."

    branch: NotRequired[str]
    "The driver's branch (`R580`)."
    branchPatched: NotRequired[bool]
    "Whether NVIDIA still patches that branch; none when not judged."
    openBulletins: list[str]
    "The bulletins the driver is open to."


class RuntimeReport(TypedDict):
    "The container runtime preflight checked, and how its nvidia runtime is set."

    name: NotRequired[str]
    "`containerd`, `docker`, `cri-o`, `k3s` or `rke2`; none when none could be chosen."
    nvidiaDefault: bool
    "Whether nvidia is the runtime's default."
    runtimeClassNeeded: bool
    "Whether a GPU pod must name a RuntimeClass of handler `nvidia`."
    source: NotRequired[str]
    "Where the configuration was read: `crictl-info`, `docker-info`, `config-dump`, `files` or `file-fallback`."
    certain: bool
    "Whether the runtime's running configuration was read, not only its files."


class KubeletReport(TypedDict):
    "The kubelet settings under which running pods can lose their GPUs."

    cgroupDriver: NotRequired[str]
    "The kubelet's cgroup driver."
    cpuManagerPolicy: NotRequired[str]
    "The kubelet's CPU manager policy."


class ToolkitReport(TypedDict):
    "The NVIDIA Container Toolkit on the machine."

    path: NotRequired[str]
    "The `nvidia-ctk` judged: beside the `nvidia-container-runtime` the runtime's nvidia entry runs (else on PATH)."
    runtimeBinary: NotRequired[str]
    "The `nvidia-container-runtime` the runtime's nvidia entry runs (else the one on PATH)."
    config: NotRequired[str]
    "The `config.toml` that toolkit reads: `/etc/nvidia-container-runtime`'s, or the GPU Operator's beside it."
    version: NotRequired[str]
    "The version `nvidia-ctk --version` reported."
    openAdvisories: list[str]
    "The toolkit advisories (CVE ids) it is open to."
    acceptedAdvisories: list[str]
    "Those of them the group accepts (`preflight.acceptToolkitAdvisories`)."
    mode: NotRequired[str]
    "The mode its runtime resolves to: `legacy`, `cdi`, `jit-cdi`, `csv` or `invalid`."
    cdiGeneration: str
    "Whether a CDI spec could be built there: `ok`, `failed` or `not tried`."


class PreflightReport(TypedDict):
    "What preflight found on the machine, or only `skipped` when the group runs none."

    skipped: NotRequired[bool]
    "`true` when the group runs no preflight; the report has nothing else then."
    passed: NotRequired[bool]
    "Whether every check passed."
    hostname: NotRequired[str]
    "The machine's host name."
    driverVersion: NotRequired[str]
    "The NVIDIA driver's version."
    driverAdvisories: NotRequired[DriverAdvisoriesReport]
    "The driver's branch and the bulletins it is open to."
    cudaVersion: NotRequired[str]
    "The CUDA version the driver supports (nvidia-smi's)."
    gpuCount: NotRequired[int]
    "How many GPUs nvidia-smi lists."
    gpuModels: NotRequired[list[str]]
    "Their models, each once."
    runtime: NotRequired[RuntimeReport]
    "The container runtime and its nvidia runtime."
    kubelet: NotRequired[KubeletReport]
    "The kubelet settings under which running pods can lose their GPUs."
    toolkit: NotRequired[ToolkitReport]
    "The NVIDIA Container Toolkit."
    migDevices: NotRequired[dict[str, dict[str, int]]]
    "With a MIG strategy: per GPU index, the MIG devices nvidia-smi lists, by profile."
    passedChecks: NotRequired[list[str]]
    "The checks that passed."
    warnedChecks: NotRequired[list[str]]
    "The checks that passed with a warning."
    failedChecks: NotRequired[list[str]]
    "The checks that failed."


class QuarantineReport(TypedDict):
    "Another system's quarantine of a node (NVSentinel's), which keeps the readiness gate down."

    by: str
    "Who holds the node: `NVSentinel`."
    state: str
    "The state of its quarantine (`quarantined`, then its drainer's and remediation's)."
    cordoned: bool
    "Whether it cordoned the node."
    taints: list[str]
    "The taints it put on the node that the node still carries, `key[=value]:Effect`."
    conditions: list[str]
    "The node conditions of its failed checks."


class DiagnosticsReport(TypedDict):
    "What NVIDIA's DCGM diagnostics found on a node."

    level: int
    "The level run (`dcgmi diag -r <level>`): 1, 2 or 3."
    dcgmVersion: NotRequired[str]
    "The DCGM release that ran them."
    tests: dict[str, str]
    "Each test DCGM ran, and its result: `Pass`, `Fail` or `Skip`."
    failures: list[str]
    "Each failure in DCGM's own words: the test, the GPU, the message and DCGM's error number."


class BusBandwidthReport(TypedDict):
    "What NCCL's all-reduce across the node's GPUs measured, and the floor it was held to."

    gbps: NotRequired[float]
    "The bus bandwidth (`busbw`, out of place, at the largest size), in GB/s."
    floorGbps: NotRequired[float]
    "The floor it was held to, in GB/s; none when none is known for the GPU model."
    floorSource: str
    "Where the floor comes from: the group's setting, or the figure and its source for the GPU model."
    messageBytes: int
    "The message size the bandwidth was measured at."


class MetricsReport(TypedDict):
    "What the node's dcgm-exporter reported."

    gpus: int
    "The GPUs it exported."
    fields: list[str]
    "The DCGM fields it exported."
    missing: list[str]
    "What the proof missed, one line each (a GPU without a field, a GPU not exported)."


class MeasuredReport(TypedDict):
    "What the proof items beyond the runbook measured when the node was last proven; none where the group runs none."

    diagnostics: NotRequired[DiagnosticsReport]
    "NVIDIA's DCGM diagnostics."
    busBandwidth: NotRequired[BusBandwidthReport]
    "NCCL's all-reduce bus bandwidth."
    metrics: NotRequired[MetricsReport]
    "The dcgm-exporter's metrics."


class NodeReport(TypedDict):
    "What was checked, applied and verified on one node: the runbook's checklist and the readiness gate."

    labels: dict[str, str]
    "The labels the stack put on the node, GPU facts from preflight included."
    taints: list[NodeTaint]
    "The stack's taints on the node."
    preflight: PreflightReport
    "What preflight found on the machine (driver, toolkit, runtime, GPUs, checks passed), or `{skipped: true}`."
    isolation: str
    "Whether a pod may see GPUs it was not given: `default` or `strict`."
    expectedGpus: NotRequired[int]
    "The `nvidia.com/gpu` the node must offer; none when MIG devices decide and none are declared."
    gpuResource: NotRequired[str]
    "What `expectedGpus` counts where it is not `nvidia.com/gpu`: shared GPUs renamed, `nvidia.com/gpu.shared`."
    expectedMigDevices: NotRequired[dict[str, int]]
    "Under mixed MIG with a declared layout, each MIG resource the node must offer."
    verification: list[VerificationJobReport]
    "The verification Jobs that ran on the node."
    checklist: dict[str, str]
    "Each item of the node's checklist (the runbook's, secure access, and those its group runs), and whether it passed."
    measured: NotRequired[MeasuredReport]
    "What DCGM's diagnostics, NCCL's all-reduce and the exporter measured when the node was last proven."
    gate: NotRequired[str]
    "The readiness gate: `lifted` once the node is proven."
    recovery: NotRequired[str]
    "What was done to bring a failing GPU back (a device plugin pod restarted), if anything."
    quarantine: NotRequired[QuarantineReport]
    "Another system's quarantine of the node (NVSentinel), which keeps the gate down."


class SharingReport(TypedDict):
    "How a group shares each GPU among pods."

    strategy: str
    "`timeSlicing` or `mps`."
    replicas: int
    "How many pods share one GPU."


class TenantAccess(TypedDict):
    "What a tenant's GPU pod must say to get its GPUs on a group."

    gpuAccess: str
    "How the pod gets its GPUs: `defaultRuntime`, `runtimeClass` or `cdi`."
    runtimeClassName: NotRequired[str]
    "The RuntimeClass the pod must name, with `gpuAccess: runtimeClass`."
    isolation: str
    "Whether a pod may see GPUs it was not given: `default` or `strict`."
    resource: NotRequired[str]
    "Where the group shares its GPUs: what a pod asks one replica for, `nvidia.com/gpu` or `nvidia.com/gpu.shared`."
    sharing: NotRequired[SharingReport]
    "Where the group shares its GPUs: how, `{strategy: timeSlicing or mps, replicas: N}`."
    allocator: NotRequired[str]
    "Who hands out the group's GPUs, where it is NVIDIA's DRA driver: `dra`."
    deviceClassName: NotRequired[str]
    "The DeviceClass a DRA group's claims name: `gpu.nvidia.com`."
    nodeSelector: NotRequired[dict[str, str]]
    "The node selector that lands a pod on the DRA group's nodes."
    tolerations: NotRequired[list[dict[str, str]]]
    "The tolerations of the DRA group's taints."
    # A Kubernetes object to copy as it is. Its type is the Kubernetes package's
    # (`kubernetes:resource.k8s.io/v1:ResourceClaimTemplate`), which this schema could name only by
    # depending on that package's schema, and so every SDK on the Kubernetes SDK, for one output:
    # it stays a map of JSON values, its description saying what it is.
    resourceClaimTemplate: NotRequired[dict[str, Any]]
    (
        "A ResourceClaimTemplate for one GPU of the DRA group, to copy into the tenant's namespace: a Kubernetes "
        "object (`apiVersion`, `kind`, `metadata`, `spec`) as its API takes it."
    )
    extendedResourceName: NotRequired[str]
    "Where the DRA group's DeviceClass serves plain requests: the resource a pod may ask for, `nvidia.com/gpu`."
