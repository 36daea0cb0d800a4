"""Which fields of Dynamic Resource Allocation the cluster's API server keeps, asked by a dry run, and
what the stack's DRA groups need of them.

Two fields gpu-nodes relies on sit behind Kubernetes feature gates, and an API server whose gate is
off drops them from what it stores, without an error: a ResourceSlice device's `taints`
(DRADeviceTaints; pkg/registry/resource/resourceslice/strategy.go, `dropDisabledDRADeviceTaintsFields`)
and a DeviceClass's `spec.extendedResourceName` (DRAExtendedResource; pkg/registry/resource/deviceclass/
strategy.go, `dropDisabledDRAExtendedResourceFields`). Both are alpha and off in 1.34 and 1.35
(pkg/features/kube_features.go at v1.35.4), beta and on from 1.36
(staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go). A client cannot read the gates,
and the server's version says only their defaults: an operator turns a beta gate off, or an alpha
one on. What a client can see is the field surviving a create. So this check creates one object of
each kind with `dryRun=All` (admitted, defaulted and validated as a real create, stored nowhere:
apimachinery's dry-run contract) and reads whether the field came back. The kubelet plugin's own
ResourceSlice controller sees the same thing after the fact (k8s.io/dynamic-resource-allocation
resourceslice/resourceslicecontroller.go, `DroppedFieldsError`: "some fields were dropped by the
apiserver, probably because these features are disabled: DRADeviceTaints"), and only logs it.

- `deviceTaints`: NVIDIA's DRA driver reports a GPU its health check found failed only as a device
  taint (v0.5.0 `cmd/gpu-kubelet-plugin/device_health.go`, `healthEventToTaint`): the DRA groups'
  kubelet plugins run the check (`NVMLDeviceHealthCheck`) where the server keeps taints, and not where
  it would drop them unseen (gpu_nodes/manifests/dra_driver.py, `feature_gates`).
- `partitionableDevices` (DRAPartitionableDevices; `dropDisabledDRAPartitionableDevicesFields` drops a device's
  `consumesCounters`; alpha and off in 1.33 to 1.35, on by default from 1.36): a group that proves MIG devices under
  the driver's DynamicMIG (`dra.migProfiles`) fails `pulumi up` where the server drops it, naming the gate.
- `extendedResourceName`: a group that asks for plain `nvidia.com/gpu` requests (`dra.extendedResourceName`)
  fails `pulumi up` where the server drops the field, naming the group: its DeviceClass would say what
  the cluster ignores, and every preview would offer to set it again.

It runs before the DRA driver's DaemonSets and DeviceClasses; a refresh asks again, so a cluster
that starts keeping taints (upgraded to 1.36, say) gets the health check on at the next `pulumi up`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.errors import ClusterFeatureError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.proof.inputs import Change, DeclaredInputs, as_list, declared, keys
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider, read_inputs
from gpu_nodes.vocabulary import PROBE_RESOURCE, PROBE_TAINT_KEY

RESOURCE_API_VERSION = "resource.k8s.io/v1"
# Names the dry runs' objects would get; nothing is stored under them.
PROBE_PREFIX = "gpu-nodes-probe-"
# A ResourceSlice of no real driver, on no node, with one tainted device (types.go: `ResourceSliceSpec`,
# `Device.taints`, `DeviceTaint`).
PROBE_SLICE: dict[str, Any] = {
    "apiVersion": RESOURCE_API_VERSION,
    "kind": "ResourceSlice",
    "metadata": {"generateName": PROBE_PREFIX},
    "spec": {
        "driver": "probe.gpu-nodes.dev",
        "allNodes": True,
        "pool": {"name": "probe", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "probe",
                "taints": [{"key": PROBE_TAINT_KEY, "effect": "NoSchedule"}],
                # DRAPartitionableDevices: what a device takes of a counter set (types.go `DeviceCounterConsumption`).
                # The set lives in another slice of the pool (the API refuses a slice with both counters and
                # devices: pkg/apis/resource/validation/validation.go, `validateResourceSliceSpec`); none is needed
                # for the API to keep the field.
                "consumesCounters": [{"counterSet": "probe", "counters": {"probe": {"value": "1"}}}],
            }
        ],
    },
}
# A DeviceClass mapping an extended resource name of our own domain, so that no scheduler could
# mistake it for a class of a real resource, were it stored (types.go: `DeviceClassSpec.extendedResourceName`).
PROBE_CLASS: dict[str, Any] = {
    "apiVersion": RESOURCE_API_VERSION,
    "kind": "DeviceClass",
    "metadata": {"generateName": PROBE_PREFIX},
    "spec": {"extendedResourceName": PROBE_RESOURCE},
}


@dataclass(frozen=True)
class Kept:
    """What the API server kept of the probes."""

    device_taints: bool
    extended_resource_name: bool
    partitionable_devices: bool = False

    def outputs(self) -> dict[str, bool]:
        return {
            "deviceTaints": self.device_taints,
            "extendedResourceName": self.extended_resource_name,
            "partitionableDevices": self.partitionable_devices,
        }


def kept_from(stored_slice: Mapping[str, Any] | None, stored_class: Mapping[str, Any] | None) -> Kept:
    """What the dry runs returned says of the two fields (None: the server serves no resource.k8s.io/v1)."""
    devices = ((stored_slice or {}).get("spec") or {}).get("devices") or [{}]
    return Kept(
        device_taints=bool(devices[0].get("taints")),
        extended_resource_name=bool(((stored_class or {}).get("spec") or {}).get("extendedResourceName")),
        partitionable_devices=bool(devices[0].get("consumesCounters")),
    )


def ask(api: Any) -> Kept:
    """Create the probes as a dry run and read what came back. A server without resource.k8s.io/v1
    (before 1.34) keeps neither; one that forbids the dry runs is named, for the answer is unknown."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    resource = client.ResourceV1Api(api)

    def dry_run(create: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
        # The raw answer: the client's models may know fewer fields than the server.
        response = create(body, dry_run="All", _preload_content=False)
        answer: dict[str, Any] = json.loads(response.data)
        return answer

    try:
        return kept_from(dry_run(resource.create_resource_slice, PROBE_SLICE), dry_run(resource.create_device_class, PROBE_CLASS))
    except ApiException as error:
        if error.status == 404:
            return Kept(device_taints=False, extended_resource_name=False)
        raise ClusterFeatureError(
            f"the API server refused a dry-run create of a ResourceSlice and a DeviceClass (HTTP {error.status} "
            f"{error.reason}), which tells whether it keeps device taints and a DeviceClass's extendedResourceName: "
            "the stack's credentials need create on resourceslices and deviceclasses (resource.k8s.io); a dry run "
            "stores nothing"
        ) from error


def extended_resource_problem(groups: Sequence[str], kept: Kept) -> str | None:
    """Why the groups that ask for plain nvidia.com/gpu requests cannot have them here; None when they can."""
    if not groups or kept.extended_resource_name:
        return None
    return (
        f"dra.extendedResourceName is true for group {', '.join(groups)}, and this cluster's API server drops a "
        "DeviceClass's spec.extendedResourceName (a dry-run create came back without it): Kubernetes' "
        "DRAExtendedResource is off (alpha and off in 1.34 and 1.35, beta and on from 1.36). Turn it on "
        "(--feature-gates=DRAExtendedResource=true on kube-apiserver, kube-scheduler and kube-controller-manager), "
        "or set dra.extendedResourceName false: tenants then take the GPUs through ResourceClaims"
    )


def partitionable_problem(groups: Sequence[str], kept: Kept) -> str | None:
    """Why the groups that prove MIG devices under the DRA driver's dynamic MIG cannot have them here; None when they
    can. DynamicMIG publishes each GPU's MIG profiles as partitions of it that consume the GPU's counters (KEP 4815;
    kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/partitions.go), which the API server keeps and the
    scheduler counts only under DRAPartitionableDevices (site/content/docs/guides/gpu-allocation/mig.md, "Enabling
    dynamic MIG": "On Kubernetes v1.34-v1.35, you must also enable the DRAPartitionableDevices feature gate on the
    kube-apiserver and kube-scheduler ... On Kubernetes v1.36 and later, DRAPartitionableDevices is enabled by
    default")."""
    if not groups or kept.partitionable_devices:
        return None
    return (
        f"dra.migProfiles is set for group {', '.join(groups)}, and this cluster's API server drops a ResourceSlice "
        "device's consumesCounters (a dry-run create came back without it): Kubernetes' DRAPartitionableDevices is off "
        "(alpha and off in 1.33 to 1.35, on by default from 1.36), and NVIDIA's DRA driver's DynamicMIG publishes MIG "
        "devices only through it. Turn it on (--feature-gates=DRAPartitionableDevices=true on kube-apiserver and "
        "kube-scheduler), or remove dra.migProfiles: the group's GPUs are then proven whole"
    )


@dataclass(frozen=True)
class DraFeaturesInputs(DeclaredInputs):
    """What the check is given: a change of it makes it ask again."""

    # The DRA groups that ask for plain nvidia.com/gpu requests (dra.extendedResourceName); a stack
    # without one has no such input.
    extended_resource_groups: Sequence[str] = field(
        default=(), metadata=declared("extendedResourceGroups", Change.RERUN, sorted, as_list, only_when_set=True)
    )
    # The DRA groups that prove MIG devices (dra.migProfiles); a stack without one has no such input.
    mig_groups: Sequence[str] = field(
        default=(), metadata=declared("migGroups", Change.RERUN, sorted, as_list, only_when_set=True)
    )


RERUN_KEYS = keys(DraFeaturesInputs, Change.RERUN)


class DraFeaturesProvider(ClusterResourceProvider):
    computed = ("deviceTaints", "extendedResourceName", "partitionableDevices")

    def _ask(self, props: dict[str, Any]) -> Kept:
        return ask(api_client_from_props(self.cluster_props(props)))

    def _check(self, props: dict[str, Any]) -> dict[str, Any]:
        kept, inputs = self._ask(props), read_inputs(DraFeaturesInputs, props)
        problems = [
            extended_resource_problem(inputs.extended_resource_groups, kept),
            partitionable_problem(inputs.mig_groups, kept),
        ]
        if any(problems):
            raise ClusterFeatureError("; ".join(p for p in problems if p))
        return {**props, **kept.outputs()}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_="dra-features", outs=self._check(props))

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=any(olds.get(k) != news.get(k) for k in RERUN_KEYS))

    def update_own(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._check(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # What the server keeps now: a change shows as drift, and the DaemonSets follow at the next `pulumi up`.
        return ReadResult(id_=id_, outs={**props, **self._ask(props).outputs()})


class DraFeatures(ClusterResource, module="gpu-nodes", name="DraFeatures"):
    """Asks the API server, once per stack with a DRA group, which DRA fields it keeps (module docstring)."""

    # As the outputs are named (a dynamic resource's outputs are its attributes, by name).
    deviceTaints: pulumi.Output[bool]
    extendedResourceName: pulumi.Output[bool]
    partitionableDevices: pulumi.Output[bool]

    def __init__(self, name: str, inputs: DraFeaturesInputs, cluster: ClusterAccess, opts: pulumi.ResourceOptions | None = None):
        props = {**inputs.to_props(), **dict.fromkeys(DraFeaturesProvider.computed)}
        super().__init__(DraFeaturesProvider(), name, props, cluster, opts)
