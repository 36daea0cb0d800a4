"""What NVIDIA's DRA driver publishes of a node's GPUs, and whether it is what preflight found.

Under `allocator: dra` a node offers its GPUs as devices in ResourceSlices, not as
`status.allocatable["nvidia.com/gpu"]`. The driver's kubelet plugin publishes them with
`spec.driver: gpu.nvidia.com`, `spec.nodeName` and a pool named after the node
(dra-driver-nvidia-gpu `cmd/gpu-kubelet-plugin/main.go`, `DriverName`). Each whole GPU is one device
named `gpu-<minor>` (`CanonicalName`) with the attributes `type: gpu`, `uuid`, `productName`, `brand`,
`architecture`, `cudaComputeCapability`, `driverVersion` and `cudaDriverVersion`, and PCIe/NUMA ones
under `resource.kubernetes.io/`; a MIG device has `type: mig`, its own `uuid` and the parent's
attributes (`cmd/gpu-kubelet-plugin/deviceinfo.go`, `GpuInfo.Attributes`, `MigDeviceInfo.GetDevice`).
Only `type: gpu` devices are GPUs here.

Kubernetes' rules for reading a pool (`staging/src/k8s.io/api/resource/v1/types.go`, `ResourceSlice`
and `ResourcePool`): a driver that changes a pool raises `pool.generation` in all its slices, and "a
consumer must only use ResourceSlices with the highest generation number and ignore all others";
`resourceSliceCount` is "the total number of ResourceSlices in the pool at this generation number",
so a consumer that sees fewer has an incomplete view and "should wait until the driver has
completed updating the pool". An attribute is a typed value with exactly one of `int`, `bool`,
`string`, `version` (or their lists) set; a name without a domain is in the driver's own domain, so
`uuid` and `gpu.nvidia.com/uuid` are one attribute (`QualifiedName`, `DeviceAttribute`).

A device may carry taints (`Device.taints`, types.go `DeviceTaint`: `key`, `value`, `effect`). The
scheduler allocates a device with a `NoSchedule` or `NoExecute` taint only to a claim that tolerates
it, and "consumers must treat unknown effects like None" (`DeviceTaintEffect`). NVIDIA's DRA driver
taints a GPU its health check found failed (`NVMLDeviceHealthCheck`; v0.5.0
`cmd/gpu-kubelet-plugin/device_health.go`, `healthEventToTaint`): `gpu.nvidia.com/xid=<xid>:NoSchedule`
for a fatal XID, `gpu.nvidia.com/gpu-lost:NoSchedule` for a GPU lost, and effect `None` for the XIDs
it ignores and for a GPU it cannot monitor. A GPU tainted `NoSchedule` or `NoExecute` is not offered:
it is judged as a GPU missing, named with its taint.

Pure functions over the ResourceSlice dicts the API server returns, any drivers and any nodes: the
readiness check, the drift check and the tests judge a node's slices the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_nodes.vocabulary import DRA_GPU_DRIVER, Taint

# The values of a device's `type` attribute (deviceinfo.go; api/nvidia.com/resource `GpuDeviceType`, `MigDeviceType`).
GPU_DEVICE_TYPE = "gpu"
MIG_DEVICE_TYPE = "mig"
# The attribute kinds a DeviceAttribute may hold, one at a time (types.go, DeviceAttribute).
_ATTRIBUTE_KINDS = ("string", "int", "bool", "version", "strings", "ints", "bools", "versions")
# The taint effects that keep a device from a claim that does not tolerate them (types.go,
# `DeviceTaintEffectNoSchedule`, `DeviceTaintEffectNoExecute`); `None` and unknown ones do not.
WITHHOLDING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class ExpectedGpus:
    """The GPUs a node must publish: by UUID and model from preflight's report, or, where preflight
    is off, only how many and (when the group names one) of which model."""

    count: int
    # (uuid, model) per GPU, as preflight's `nvidia-smi` listed them; empty without preflight.
    gpus: tuple[tuple[str, str], ...] = ()
    model: str | None = None

    @classmethod
    def from_report(cls, report: Mapping[str, Any]) -> ExpectedGpus:
        """From preflight's report, `gpus: [{index, name, uuid, memoryMiB}]`."""
        listed = sorted(report.get("gpus") or [], key=lambda g: int(g.get("index") or 0))
        gpus = tuple((str(g.get("uuid") or ""), str(g.get("name") or "")) for g in listed)
        return cls(count=len(gpus), gpus=gpus)

    @classmethod
    def counted(cls, count: int, model: str | None = None) -> ExpectedGpus:
        """Without preflight: the group's `gpusPerNode`, and its `gpuModel` when set."""
        return cls(count=count, model=model)


@dataclass(frozen=True)
class PublishedDevice:
    """One device of a node's pool, as its ResourceSlice lists it."""

    name: str  # gpu-0, or a MIG device's canonical name
    slice: str  # the ResourceSlice it is in
    type: str | None
    uuid: str | None
    model: str | None  # productName
    # A MIG device's profile (`1g.10gb`) and its GPU's UUID (`parentUUID`: mig.go, CommonAttributesMig); None for a
    # whole GPU.
    profile: str | None = None
    parent: str | None = None
    # Those of its taints that keep it from claims (WITHHOLDING_EFFECTS), as `key[=value]:effect`.
    withholding: tuple[str, ...] = ()

    @property
    def offered(self) -> bool:
        """Whether a claim that tolerates nothing may get it."""
        return not self.withholding

    def describe(self) -> str:
        return f"{self.uuid or self.name} ({self.model or 'no productName'})"


@dataclass(frozen=True)
class Pool:
    """One pool of the driver on the node, at its newest generation."""

    name: str
    generation: int
    # resourceSliceCount at that generation; None where a slice left it out.
    slice_count: int | None
    slices: tuple[str, ...]  # the names of the slices seen at that generation

    @property
    def all_seen(self) -> bool:
        return self.slice_count is not None and len(self.slices) >= self.slice_count

    def incompleteness(self) -> str | None:
        """Why the pool cannot be read yet; None when every slice of it is seen."""
        if self.all_seen:
            return None
        expected = "an unknown number" if self.slice_count is None else str(self.slice_count)
        return f"pool {self.name} is incomplete at generation {self.generation}: {len(self.slices)} of {expected} ResourceSlices"


@dataclass(frozen=True)
class NodeSlices:
    """What a node's ResourceSlices publish: the driver's pools on the node and their devices."""

    node: str
    pools: tuple[Pool, ...]
    devices: tuple[PublishedDevice, ...]  # every device of the pools' newest generations, in slice order

    @property
    def gpus(self) -> tuple[PublishedDevice, ...]:
        """The whole GPUs (type gpu), not MIG devices."""
        return tuple(d for d in self.devices if d.type == GPU_DEVICE_TYPE)

    def split_gpus(self) -> tuple[PublishedDevice, ...]:
        """The whole GPUs, and the GPUs offered only split under the driver's dynamic MIG (an Ampere GPU in MIG mode:
        its MIG profiles are published and not the GPU itself, nvlib.go), each once, by its MIG devices' parentUUID."""
        whole = {d.uuid for d in self.gpus}
        parents: dict[str, PublishedDevice] = {}
        for d in self.devices:
            if d.type == MIG_DEVICE_TYPE and d.parent and d.parent not in whole and d.offered:
                parents.setdefault(d.parent, PublishedDevice(f"{d.parent} (split)", d.slice, GPU_DEVICE_TYPE, d.parent, d.model))
        return (*self.gpus, *parents.values())

    @property
    def all_seen(self) -> bool:
        return bool(self.pools) and all(pool.all_seen for pool in self.pools)

    def incompleteness(self) -> list[str]:
        return [why for pool in self.pools if (why := pool.incompleteness())]


def attribute(device: Mapping[str, Any], name: str, driver: str = DRA_GPU_DRIVER) -> Any:
    """A device attribute's value, by its short name: `uuid` also finds `gpu.nvidia.com/uuid`
    (a name without a domain is in the driver's). None when the device has no such attribute."""
    attributes = device.get("attributes") or {}
    value = attributes.get(name, attributes.get(f"{driver}/{name}"))
    if not isinstance(value, Mapping):
        return None
    return next((value[kind] for kind in _ATTRIBUTE_KINDS if kind in value), None)


def _generation(item: Mapping[str, Any]) -> int:
    try:
        return int(((item.get("spec") or {}).get("pool") or {}).get("generation") or 0)
    except (TypeError, ValueError):
        return 0


def slices_of_node(slices: Iterable[Mapping[str, Any]], node: str, driver: str = DRA_GPU_DRIVER) -> NodeSlices:
    """The driver's pools on `node` and their devices, each pool at its newest generation only."""
    mine = [s for s in slices if (s.get("spec") or {}).get("driver") == driver and (s.get("spec") or {}).get("nodeName") == node]
    by_pool: dict[str, list[Mapping[str, Any]]] = {}
    for item in mine:
        by_pool.setdefault(str(((item.get("spec") or {}).get("pool") or {}).get("name") or ""), []).append(item)
    pools: list[Pool] = []
    devices: list[PublishedDevice] = []
    for name in sorted(by_pool):
        newest = max(_generation(s) for s in by_pool[name])
        current = sorted((s for s in by_pool[name] if _generation(s) == newest), key=_slice_name)
        counts = {((s.get("spec") or {}).get("pool") or {}).get("resourceSliceCount") for s in current}
        count = max((int(c) for c in counts if c is not None), default=None)
        pools.append(Pool(name, newest, count, tuple(_slice_name(s) for s in current)))
        for item in current:
            for device in (item.get("spec") or {}).get("devices") or []:
                devices.append(_device(device, _slice_name(item), driver))
    return NodeSlices(node, tuple(pools), tuple(devices))


def _slice_name(item: Mapping[str, Any]) -> str:
    return str((item.get("metadata") or {}).get("name") or "")


def _device(device: Mapping[str, Any], slice_name: str, driver: str) -> PublishedDevice:
    def text(name: str) -> str | None:
        value = attribute(device, name, driver)
        return None if value is None else str(value)

    # A device taint has a key and an effect (the API requires both), written as a node's taint is.
    taints = [t for t in device.get("taints") or [] if isinstance(t, Mapping)]
    withholding = tuple(str(Taint.from_k8s(dict(t))) for t in taints if t.get("effect") in WITHHOLDING_EFFECTS)
    return PublishedDevice(
        str(device.get("name") or ""),
        slice_name,
        text("type"),
        text("uuid"),
        text("productName"),
        profile=text("profile"),
        parent=text("parentUUID"),
        withholding=withholding,
    )


@dataclass(frozen=True)
class SliceDifference:
    """How a node's published GPUs differ from the expected ones; empty when they agree."""

    missing: tuple[str, ...] = ()  # expected UUIDs no GPU device carries
    unexpected: tuple[PublishedDevice, ...] = ()  # GPU devices preflight did not find
    other_model: tuple[tuple[PublishedDevice, str], ...] = ()  # (device, the model preflight found)
    count: tuple[int, int] | None = None  # (published, expected), where only a count is known
    model: tuple[PublishedDevice, ...] = ()  # devices not of the group's model, where only a model is known
    # Expected GPUs (or, where only a count is known, any GPU) listed with a taint that keeps them from claims.
    tainted: tuple[PublishedDevice, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.missing or self.unexpected or self.other_model or self.count or self.model or self.tainted)


def difference(node_slices: NodeSlices, expected: ExpectedGpus, split: bool = False) -> SliceDifference:
    """Compare the GPU devices a node's slices publish with the expected GPUs: by UUID and model where
    preflight listed them, else by count and (if given) model. A GPU tainted `NoSchedule` or
    `NoExecute` is not offered: it is named as tainted, and does not count. With `split` (dynamic MIG) a GPU offered
    only as its MIG devices counts (`NodeSlices.split_gpus`)."""
    gpus = node_slices.split_gpus() if split else node_slices.gpus
    if expected.gpus:
        wanted = dict(expected.gpus)
        published = {d.uuid: d for d in gpus if d.uuid}
        return SliceDifference(
            missing=tuple(uuid for uuid, _ in expected.gpus if uuid not in published),
            unexpected=tuple(d for d in gpus if not d.uuid or d.uuid not in wanted),
            other_model=tuple((d, wanted[d.uuid]) for d in gpus if d.uuid in wanted and d.model != wanted[d.uuid]),
            tainted=tuple(d for d in gpus if d.uuid in wanted and not d.offered),
        )
    count = (len(gpus), expected.count) if len(gpus) != expected.count else None
    model = tuple(d for d in gpus if expected.model is not None and d.model != expected.model)
    return SliceDifference(count=count, model=model, tainted=tuple(d for d in gpus if not d.offered))


def slice_problem(
    node: str, slices: Iterable[Mapping[str, Any]], expected: ExpectedGpus, driver: str = DRA_GPU_DRIVER, split: bool = False
) -> str | None:
    """Why the node's ResourceSlices do not list exactly the expected GPUs; None when they do.

    Names the node and each thing wrong: no slice at all, an incomplete pool (whose devices are
    not judged: the driver is still writing them), the UUIDs missing, the GPUs listed with a taint
    that keeps them from claims (and the taint), the devices preflight did not find, and those of
    another model."""
    published = slices_of_node(slices, node, driver)
    if not published.pools:
        return f"node {node}: no ResourceSlice of driver {driver} lists it (NVIDIA's DRA kubelet plugin has published no GPU)"
    if not published.all_seen:
        return f"node {node}: {'; '.join(published.incompleteness())}"
    diff = difference(published, expected, split)
    if not diff:
        return None
    found: list[str] = []
    if diff.missing:
        found.append(f"missing from its ResourceSlices: {', '.join(diff.missing)}")
    if diff.tainted:
        found.append(f"not offered, tainted in its ResourceSlice: {', '.join(_tainted(d) for d in diff.tainted)}")
    if diff.unexpected:
        found.append(f"not found by preflight: {', '.join(_named(d) for d in diff.unexpected)}")
    for device, model in diff.other_model:
        found.append(f"{device.uuid} is published as {device.model or 'no productName'}, preflight found {model}")
    if diff.count:
        found.append(f"{diff.count[0]} GPU device(s) published, expected {diff.count[1]}")
    if diff.model:
        found.append(f"not of the group's model {expected.model}: {', '.join(_named(d) for d in diff.model)}")
    return f"node {node}: {'; '.join(found)}"


def _named(device: PublishedDevice) -> str:
    return f"{device.name} {device.describe()}"


def _tainted(device: PublishedDevice) -> str:
    return f"{device.uuid or device.name} ({device.name}) {', '.join(device.withholding)}"


def slice_findings(
    node: str, slices: Iterable[Mapping[str, Any]], expected: ExpectedGpus, driver: str = DRA_GPU_DRIVER
) -> list[str]:
    """What a look at the node's ResourceSlices found that differs from what was proven, one line
    per device (for drift: "device GPU-... of node X is gone from its ResourceSlice"); none when
    they still list exactly the expected GPUs."""
    published = slices_of_node(slices, node, driver)
    if not published.pools:
        return [f"node {node} has no ResourceSlice of driver {driver}: all its GPUs are gone"]
    if not published.all_seen:
        return [f"the ResourceSlices of node {node} cannot be read: {why}" for why in published.incompleteness()]
    diff = difference(published, expected)
    lines = [f"device {uuid} of node {node} is gone from its ResourceSlice" for uuid in diff.missing]
    lines += [
        f"device {d.uuid or d.name} ({d.name}) of node {node} is tainted {', '.join(d.withholding)} in its ResourceSlice: "
        "not offered"
        for d in diff.tainted
    ]
    lines += [f"device {_named(d)} of node {node} is new in its ResourceSlice {d.slice}" for d in diff.unexpected]
    lines += [
        f"device {d.uuid} of node {node} is published as {d.model or 'no productName'}, was {model}"
        for d, model in diff.other_model
    ]
    if diff.count:
        lines.append(f"node {node} publishes {diff.count[0]} GPU device(s), was {diff.count[1]}")
    lines += [f"device {_named(d)} of node {node} is not of the group's model {expected.model}" for d in diff.model]
    return lines


def expected_gpus(dra_gpus: Mapping[str, Any], devices: Sequence[Mapping[str, Any]] | None) -> ExpectedGpus:
    """What a node's slices must list: the GPUs its preflight reported (`devices`, `{uuid, model}`),
    else the group's count and model (a node target's `dra_gpus`)."""
    if devices:
        gpus = tuple((str(d.get("uuid") or ""), str(d.get("model") or "")) for d in devices)
        return ExpectedGpus(count=len(gpus), gpus=gpus, model=dra_gpus.get("model"))
    return ExpectedGpus.counted(int(dra_gpus["count"]), dra_gpus.get("model"))


def dra_gpu_problem(
    node: str,
    dra_gpus: Mapping[str, Any],
    slices: Iterable[Mapping[str, Any]],
    devices: Sequence[Mapping[str, Any]] | None = None,
) -> str | None:
    """The checklist's `gpusRegistered` for a DRA node: why its ResourceSlices do not list exactly
    its GPUs, each named (`slice_problem`), and, under dynamic MIG, a MIG device of each profile the group proves
    (`mig_problem`); None when they do."""
    slices, profiles = list(slices), dra_gpus.get("migProfiles") or ()
    problem = slice_problem(node, slices, expected_gpus(dra_gpus, devices), split=bool(profiles))
    if problem is not None:
        return problem
    return mig_profiles_problem(node, slices, profiles)


def mig_profiles_problem(node: str, slices: Iterable[Mapping[str, Any]], profiles: Sequence[str]) -> str | None:
    """Why the node's slices offer no MIG device of one of `profiles`; None when each has one. Under the driver's
    DynamicMIG every GPU of a MIG-capable model lists each profile it can be cut into, as a device of type `mig` that
    consumes the GPU's counters (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/partitions.go,
    `MigSpec.PartGetDevice`; driver.go, `generateSplitResourceSlices`); an A100 whose MIG mode is off lists none
    (site/content/docs/guides/gpu-allocation/mig.md, "Limitations and considerations")."""
    if not profiles:
        return None
    published = slices_of_node(slices, node)
    offered = {d.profile for d in published.devices if d.type == MIG_DEVICE_TYPE and d.offered}
    missing = [p for p in profiles if p not in offered]
    if not missing:
        return None
    listed = sorted({d.profile for d in published.devices if d.type == MIG_DEVICE_TYPE and d.profile}) or ["none"]
    return (
        f"node {node}: no MIG device of profile {', '.join(missing)} (dra.migProfiles) offered in its ResourceSlices "
        f"(profiles listed: {', '.join(listed)}): the driver's DynamicMIG publishes none there (its gate off in the "
        "kubelet plugin, or the GPUs' MIG mode off)"
    )


def dra_gpu_drift(
    node: str,
    dra_gpus: Mapping[str, Any],
    slices: Iterable[Mapping[str, Any]],
    devices: Sequence[Mapping[str, Any]] | None = None,
) -> list[str]:
    """What a refresh finds of a proven DRA node's GPUs, a line per device (`slice_findings`): none while its
    slices still list exactly its GPUs."""
    return slice_findings(node, slices, expected_gpus(dra_gpus, devices))
