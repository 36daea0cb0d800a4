#!/usr/bin/env python3
"""Simulated NVIDIA device-plugin registration for the local kwok cluster.

On a real GPU node, the NVIDIA device plugin (a DaemonSet pod) registers `nvidia.com/gpu`
with kubelet, and kubelet then reports it in the node's status.capacity/allocatable. kwok
simulates nodes without a kubelet, so this loop plays that part:

  for each node annotated `gpu-nodes.dev/simulated-gpus: "<N>"`:
    a Running pod of a DaemonSet, labelled app.kubernetes.io/name=nvidia-device-plugin,
    sits on the node   -> capacity and allocatable include nvidia.com/gpu: N
    otherwise          -> nvidia.com/gpu is removed from both

A plugin pod that hands out GPUs as CDI devices (env DEVICE_LIST_STRATEGY naming a `cdi-*`
strategy) registers nothing unless it mounts a hostPath at `/driver-root`: the real plugin
writes its CDI spec from the driver files it sees there and exits when it cannot ("unable to
create cdi spec file", k8s-device-plugin cmd/nvidia-device-plugin/plugin-manager.go; the
root is api/config/v1/consts.go DefaultContainerDriverRoot).

A plugin that shares its GPUs (its config file, `CONFIG_FILE`, read from the ConfigMap it mounts,
has `sharing.timeSlicing` or `sharing.mps` with nvidia.com/gpu replicas R > 1) registers N x R, as
`nvidia.com/gpu.shared` where `renameByDefault` says so. Under MPS it registers nothing until its
MPS control daemon is ready: a Running DaemonSet pod on the node running `mps-control-daemon`, with
the plugin's `MPS_ROOT` mounted at `/mps` and the same `sharing.mps` in its own config (see
"sharing" below and tools/cluster/README.md, "Sharing a GPU").

`gpu-nodes.dev/simulated-unhealthy-gpus: "<K>"` marks K of those GPUs unhealthy, as the
device plugin does for a GPU with an XID error: capacity stays N, allocatable becomes N-K.
The annotation stands for a GPU that stays broken.

`gpu-nodes.dev/simulated-xid-gpus: "<K>"` plays an XID on a GPU that is fine again: like the
real plugin (v0.20.0 ListAndWatch: "there is no way to recover from the Unhealthy state"), the
plugin pod running when it happened keeps K GPUs unhealthy; the registrar pins the XID to that
pod (`gpu-nodes.dev/simulated-xid-pod: <uid>`), and once another plugin pod runs on the node it
re-advertises them all and removes both annotations.

It also plays the kubelet plugin of NVIDIA's DRA driver (driver `gpu.nvidia.com`):

  for each node annotated `gpu-nodes.dev/simulated-gpus: "<N>"`:
    a Running pod of a DaemonSet with a container that runs `gpu-kubelet-plugin` sits on the
    node   -> one ResourceSlice `<node>-gpu.nvidia.com-<5 chars>` lists its GPUs gpu-0..gpu-<N-1>
    the pod went, a slice of ours is left -> 30 s later (--dra-wipe-delay) every slice of the
    driver on the node is deleted, as kubelet does when a DRA plugin unregisters

`gpu-nodes.dev/simulated-dra-hidden-gpus: "<K>"` leaves the last K GPUs out of the slice (a GPU
the driver cannot publish); `gpu-nodes.dev/simulated-gpu-model: "NVIDIA H100 PCIe"` publishes that
model (the one tools/fakehost's `other-model` machine reports) in place of the A100;
`gpu-nodes.dev/simulated-dra-xid-gpus: "<K>"` taints the last K published GPUs as the driver's health
check does after a fatal XID (`gpu.nvidia.com/xid=79:NoSchedule`), only where the plugin pod runs
with that check on (`FEATURE_GATES` naming `NVMLDeviceHealthCheck=true`). The slice's shape, field
by field, and the upstream files it follows are in the DRA section below and in
tools/cluster/README.md ("DRA").

Stdlib only. Credentials come from a kubeconfig through `kubectl config view --raw --flatten`
(our kubectl is on PATH after `source tools/cluster/env.sh`). The node status is changed with a
JSON merge patch on the `status` subresource under its own field manager.

Usage: gpu-registrar.py [--kubeconfig PATH] [--interval 1.0] [--dra-wipe-delay 30] [--once] [-v]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
# What a shared GPU's replicas are registered as with renameByDefault (k8s-device-plugin
# api/config/v1/replicas.go: each resource's DefaultSharedRename, `<name>.shared`).
SHARED_GPU_RESOURCE = f"{GPU_RESOURCE}.shared"
# Every resource the registrar writes on a node: the one the plugin registers, and the other removed.
GPU_RESOURCES = (GPU_RESOURCE, SHARED_GPU_RESOURCE)
GPUS_ANNOTATION = "gpu-nodes.dev/simulated-gpus"
UNHEALTHY_ANNOTATION = "gpu-nodes.dev/simulated-unhealthy-gpus"
XID_ANNOTATION = "gpu-nodes.dev/simulated-xid-gpus"
XID_POD_ANNOTATION = "gpu-nodes.dev/simulated-xid-pod"
PLUGIN_LABEL = "app.kubernetes.io/name"
PLUGIN_LABEL_VALUE = "nvidia-device-plugin"
CONTAINER_DRIVER_ROOT = "/driver-root"
FIELD_MANAGER = "gpu-nodes-registrar"

log = logging.getLogger("gpu-registrar")

Obj = Mapping[str, Any]


# --------------------------------------------------------------------------- pure functions


def parse_count(value: Any) -> int | None:
    """A non-negative integer from an annotation value, or None when it is not one."""
    if value is None:
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n >= 0 else None


def simulated_gpus(node: Obj) -> int | None:
    """GPUs the node has (its annotation), or None when the node is not a simulated GPU node."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    return parse_count(annotations.get(GPUS_ANNOTATION))


def unhealthy_gpus(node: Obj) -> int:
    annotations = node.get("metadata", {}).get("annotations") or {}
    return parse_count(annotations.get(UNHEALTHY_ANNOTATION)) or 0


def is_device_plugin_pod(pod: Obj) -> bool:
    """A pod of a DaemonSet whose pods carry app.kubernetes.io/name=nvidia-device-plugin."""
    meta = pod.get("metadata", {})
    labels = meta.get("labels") or {}
    if labels.get(PLUGIN_LABEL) != PLUGIN_LABEL_VALUE:
        return False
    owners = meta.get("ownerReferences") or []
    return any(o.get("kind") == "DaemonSet" and o.get("controller", True) for o in owners)


def is_running(pod: Obj) -> bool:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False  # terminating: the plugin is going away
    return pod.get("status", {}).get("phase") == "Running"


def uses_cdi(container: Obj) -> bool:
    """The container's DEVICE_LIST_STRATEGY (one strategy or a comma-separated list) names a CDI one."""
    strategies = _env(container, "DEVICE_LIST_STRATEGY")
    return strategies is not None and any(s.strip().startswith("cdi-") for s in strategies.split(","))


def volume_at(pod: Obj, container: Obj, path: str) -> Obj:
    """The pod's volume the container mounts at `path` ({} when none: the API refuses two mounts at one path)."""
    volumes = {v.get("name"): v for v in pod.get("spec", {}).get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        if mount.get("mountPath", "").rstrip("/") == path:
            return volumes.get(mount.get("name")) or {}
    return {}


def mounts_driver_root(pod: Obj, container: Obj) -> bool:
    """The container mounts a hostPath volume at /driver-root."""
    return "hostPath" in volume_at(pod, container, CONTAINER_DRIVER_ROOT)


def writes_its_cdi_spec(pod: Obj) -> bool:
    """False for a plugin that would exit at start: it uses CDI and sees no driver root."""
    containers = pod.get("spec", {}).get("containers") or []
    return all(mounts_driver_root(pod, c) for c in containers if uses_cdi(c))


def nodes_with_running_plugin(pods: Iterable[Obj]) -> set[str]:
    """Names of the nodes on which a device-plugin pod is Running."""
    return set(running_plugin_pods(pods))


def running_plugin_pods(pods: Iterable[Obj]) -> dict[str, str]:
    """Node name -> uid of the device-plugin pod Running on it."""
    return {
        p["spec"]["nodeName"]: p["metadata"].get("uid", "")
        for p in pods
        if is_device_plugin_pod(p) and is_running(p) and writes_its_cdi_spec(p) and p.get("spec", {}).get("nodeName")
    }


def xid_state(node: Obj, plugin_uid: str | None) -> tuple[int, dict | None]:
    """GPUs an XID keeps unhealthy under the running plugin pod, and the annotation patch that
    pins the XID to that pod, or clears it once another pod runs (None: no patch)."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    count = parse_count(annotations.get(XID_ANNOTATION)) or 0
    if not count or plugin_uid is None:
        return 0, None  # no XID, or no plugin to hold it
    pinned = annotations.get(XID_POD_ANNOTATION)
    if pinned is None:
        return count, {"metadata": {"annotations": {XID_POD_ANNOTATION: plugin_uid}}}
    if pinned == plugin_uid:
        return count, None
    return 0, {"metadata": {"annotations": {XID_ANNOTATION: None, XID_POD_ANNOTATION: None}}}


@dataclass(frozen=True)
class Desired:
    """GPU quantities a node should report under `resource` (GPU_RESOURCE unless renamed); None means
    the key is absent. The other resource of GPU_RESOURCES is always absent."""

    capacity: int | None
    allocatable: int | None
    resource: str = GPU_RESOURCE


def desired_gpus(
    node: Obj, plugin_nodes: set[str] | Mapping[str, str], sharing: Mapping[str, Sharing] | None = None
) -> Desired | None:
    """What the node should report, or None when the node is not ours to manage. sharing: how each
    node's plugin shares its GPUs (none given: not at all); each GPU counts its replicas, an unhealthy
    one all of them (the plugin marks every replica of a failed GPU, internal/rm/health.go)."""
    total = simulated_gpus(node)
    if total is None:
        return None
    name = node["metadata"]["name"]
    if name not in plugin_nodes:
        return Desired(None, None)
    uid = plugin_nodes.get(name, "") if isinstance(plugin_nodes, Mapping) else ""
    xid, _ = xid_state(node, uid)
    shared = (sharing or {}).get(name, NOT_SHARED)
    healthy = max(total - unhealthy_gpus(node) - xid, 0)
    return Desired(total * shared.replicas, healthy * shared.replicas, shared.resource)


def _quantity(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        return None  # not an integer quantity: rewrite it


def current_gpus(node: Obj) -> Desired:
    status = node.get("status") or {}
    cap = (status.get("capacity") or {}).get(GPU_RESOURCE)
    alloc = (status.get("allocatable") or {}).get(GPU_RESOURCE)
    return Desired(_quantity(cap), _quantity(alloc))


def status_patch(node: Obj, desired: Desired | None) -> dict | None:
    """JSON merge patch for the node's status subresource, or None when nothing changes."""
    if desired is None:
        return None
    status = node.get("status") or {}
    patch: dict[str, dict[str, str | None]] = {}
    for field, wanted in (("capacity", desired.capacity), ("allocatable", desired.allocatable)):
        for resource in GPU_RESOURCES:
            want = wanted if resource == desired.resource else None
            have = (status.get(field) or {}).get(resource)
            if want is None:
                if have is not None:
                    patch.setdefault(field, {})[resource] = None  # merge patch: null removes the key
            elif have is None or _quantity(have) != want:
                patch.setdefault(field, {})[resource] = str(want)
    return {"status": patch} if patch else None


def reconcile(
    nodes: Iterable[Obj], pods: Iterable[Obj], config_maps: ConfigMaps | None = None, running: Iterable[Obj] = ()
) -> dict[str, dict]:
    """Node name -> status patch, for every managed node whose GPUs are not what they should be.
    config_maps: the ConfigMaps the plugins' config files are read from, by (namespace, name);
    running: the cluster's Running pods, among which an MPS plugin's control daemon."""
    plugins, sharing = serving_plugins(pods, config_maps or {}, list(running))
    patches = {}
    for node in nodes:
        patch = status_patch(node, desired_gpus(node, plugins, sharing))
        if patch is not None:
            patches[node["metadata"]["name"]] = patch
    return patches


# --------------------------------------------------------------------------- sharing: time-slicing and MPS
#
# What the device plugin (v0.20.0) registers when its config file shares GPUs, read from upstream:
#   api/config/v1/sharing.go      SharingStrategy: `mps` when sharing.mps has a resource with replicas > 1,
#                                 else `timeSlicing` likewise, else none (isReplicated)
#   api/config/v1/replicas.go     each resource's replicas (>= 2), renameByDefault -> `<name>.shared`
#   cmd/nvidia-device-plugin/main.go  validateFlags: "using MPS requires --mps-root to be specified"
#                                 (MPS_ROOT); disableResourceRenamingInConfig: a custom `rename` is ignored
#   internal/plugin/mps.go        waitForDaemon: under MPS the plugin serves only once its MPS control
#                                 daemon is ready (checkDaemonReady: the daemon's .ready file, ReadyFile
#                                 in cmd/mps-control-daemon/mps/ready.go, holding the daemon's own
#                                 sharing.mps, must equal the plugin's; and its control pipe answers)
#   cmd/mps-control-daemon/mps/root.go  ContainerRoot /mps: the host's MPS root, mounted there by both
# The config file is read as JSON, which is YAML too: the stack writes JSON (gpu_nodes/manifests/
# device_plugin.py); a YAML-only file someone else wrote is not read here (stdlib only), and such a
# plugin registers nothing, with a warning in the log.

MPS_PROGRAM = "mps-control-daemon"
MPS_CONTAINER_ROOT = "/mps"

# (namespace, name) -> ConfigMap.
ConfigMaps = Mapping[tuple[str, str], Obj]


@dataclass(frozen=True)
class Sharing:
    """How a plugin shares each GPU: its strategy, replicas and the resource it registers them as;
    `mps`, the config's sharing.mps section, which its MPS control daemon's must match."""

    strategy: str
    replicas: int
    resource: str = GPU_RESOURCE
    mps: Any = None


NOT_SHARED = Sharing("none", 1)


def _env(container: Obj, name: str) -> str | None:
    for env in container.get("env") or []:
        if env.get("name") == name:
            return str(env.get("value") or "")
    return None


def config_file(pod: Obj, container: Obj, config_maps: ConfigMaps) -> tuple[bool, dict | None]:
    """The container's config file (its CONFIG_FILE, from the ConfigMap volume mounted at its directory):
    (True, None) without one; (True, config) when read; (False, None) when it cannot be read here."""
    path = _env(container, "CONFIG_FILE")
    if not path:
        return True, None
    directory, _, name = path.rstrip("/").rpartition("/")
    source = volume_at(pod, container, directory).get("configMap")
    if source is None:
        return False, None
    key = next((i.get("key") for i in source.get("items") or [] if i.get("path") == name), name)
    data = (config_maps.get((pod.get("metadata", {}).get("namespace"), source.get("name"))) or {}).get("data") or {}
    try:
        config = json.loads(data[key])
    except (KeyError, ValueError):
        return False, None
    return (True, config) if isinstance(config, dict) else (False, None)


def sharing_of(config: dict | None) -> Sharing:
    """How the config file shares nvidia.com/gpu: MPS before time-slicing, as SharingStrategy decides."""
    sections = (config or {}).get("sharing") or {}
    for strategy in ("mps", "timeSlicing"):
        section = sections.get(strategy) or {}
        for resource in section.get("resources") or []:
            replicas = resource.get("replicas")
            if resource.get("name") == GPU_RESOURCE and isinstance(replicas, int) and replicas > 1:
                name = SHARED_GPU_RESOURCE if section.get("renameByDefault") else GPU_RESOURCE
                return Sharing(strategy, replicas, name, section if strategy == "mps" else None)
    return NOT_SHARED


def mps_root_of(pod: Obj, container: Obj) -> str | None:
    """The host directory the container mounts at /mps (a hostPath), if any."""
    host = volume_at(pod, container, MPS_CONTAINER_ROOT).get("hostPath") or {}
    return str(host["path"]).rstrip("/") if host.get("path") else None


def ready_mps_daemons(running: Iterable[Obj], config_maps: ConfigMaps) -> dict[tuple[str, str], Any]:
    """(node, host MPS root) -> the sharing.mps of each Running MPS control daemon (a DaemonSet's pod with
    a container that runs mps-control-daemon): what its .ready file would hold."""
    ready: dict[tuple[str, str], Any] = {}
    for pod in running:
        owners = pod.get("metadata", {}).get("ownerReferences") or []
        if not is_running(pod) or not any(o.get("kind") == "DaemonSet" for o in owners):
            continue
        for container in long_running_containers(pod.get("spec") or {}):
            root = mps_root_of(pod, container)
            if MPS_PROGRAM not in (programs_of(container) or set()) or root is None:
                continue
            readable, config = config_file(pod, container, config_maps)
            if readable:
                ready[(pod["spec"].get("nodeName", ""), root)] = sharing_of(config).mps
    return ready


def plugin_sharing(pod: Obj, config_maps: ConfigMaps, daemons: Mapping[tuple[str, str], Any]) -> Sharing | None:
    """How the plugin pod shares its node's GPUs; None when it serves none (its config unreadable, or
    under MPS no MPS_ROOT, or no ready daemon of the same MPS root and sharing.mps)."""
    containers = [c for c in long_running_containers(pod.get("spec") or {}) if _env(c, "CONFIG_FILE") is not None]
    if not containers:
        return NOT_SHARED
    container = containers[0]
    readable, config = config_file(pod, container, config_maps)
    if not readable:
        return None
    sharing = sharing_of(config)
    if sharing.strategy != "mps":
        return sharing
    daemon = (pod["spec"].get("nodeName", ""), (_env(container, "MPS_ROOT") or "").rstrip("/"))
    if not daemon[1] or daemon not in daemons or daemons[daemon] != sharing.mps:
        return None
    return sharing


def serving_plugins(
    pods: Iterable[Obj], config_maps: ConfigMaps, running: Iterable[Obj]
) -> tuple[dict[str, str], dict[str, Sharing]]:
    """Node -> uid of the plugin pod that registers its GPUs, and node -> how it shares them."""
    daemons = ready_mps_daemons(running, config_maps)
    plugins, sharing = {}, {}
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        if not (node_name and is_device_plugin_pod(pod) and is_running(pod) and writes_its_cdi_spec(pod)):
            continue
        shared = plugin_sharing(pod, config_maps, daemons)
        if shared is not None:
            plugins[node_name], sharing[node_name] = pod["metadata"].get("uid", ""), shared
    return plugins, sharing


def config_map_refs(pods: Iterable[Obj]) -> set[tuple[str, str]]:
    """Every ConfigMap a device plugin pod or an MPS control daemon's pod mounts as a volume, by
    (namespace, name): what the registrar reads."""
    refs = set()
    for pod in pods:
        runs = set().union(*((programs_of(c) or set()) for c in long_running_containers(pod.get("spec") or {})))
        if not is_device_plugin_pod(pod) and MPS_PROGRAM not in runs:
            continue
        for volume in pod.get("spec", {}).get("volumes") or []:
            if "configMap" in volume:
                refs.add((pod.get("metadata", {}).get("namespace", ""), volume["configMap"].get("name", "")))
    return refs


def xid_patches(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, dict]:
    """Node name -> metadata patch pinning or clearing a simulated XID."""
    plugins = running_plugin_pods(pods)
    patches = {}
    for node in nodes:
        name = node["metadata"]["name"]
        _, patch = xid_state(node, plugins.get(name))
        if patch is not None:
            patches[name] = patch
    return patches


# --------------------------------------------------------------------------- DRA: pure functions
#
# What the kubelet plugin of NVIDIA's DRA driver publishes, read from upstream (kubernetes-sigs/
# dra-driver-nvidia-gpu, the driver's home since it left NVIDIA/k8s-dra-driver-gpu) and from the
# Kubernetes v1.35.4 sources this cluster is built from:
#   cmd/gpu-kubelet-plugin/driver.go      publishResources: without the DynamicMIG gate, ONE slice
#                                         holding every allocatable device, pool named after the
#                                         node, through the kubeletplugin helper's PublishResources
#   cmd/gpu-kubelet-plugin/deviceinfo.go  GpuInfo.CanonicalName/GetDevice/Attributes: name gpu-<minor>,
#                                         the attributes below
#   cmd/gpu-kubelet-plugin/allocatable.go fullGpuCapacity: capacity `memory`, bytes, BinarySI
#   cmd/gpu-kubelet-plugin/nvlib.go       getGpuInfo: where each value comes from (NVML)
#   cmd/gpu-kubelet-plugin/device_state.go, main.go: GpuDeviceType "gpu", DriverName "gpu.nvidia.com"
#   k8s.io/dynamic-resource-allocation kubeletplugin/draplugin.go PublishResources: owner is the Node;
#     resourceslice/resourceslicecontroller.go: generateName "<node>-<driver>-", pool generation 1 on
#     creation and kept by an in-place update of a one-slice pool, resourceSliceCount 1
#   k8s.io/api resource/v1/types.go       field names (attribute values: string, version, int, bool)
#   kubernetes pkg/kubelet/cm/dra/manager.go defaultWipingDelay (30 s) and
#     plugin/dra_plugin_manager.go sync/wipeResourceSlices: once a driver has no connected plugin on
#     the node, kubelet deletes spec.nodeName=<node>,spec.driver=<driver> slices after that delay
#     unless a plugin comes back first
#   cmd/gpu-kubelet-plugin/device_health.go (v0.5.0: the hard-coded list of ignored XIDs, before PR 1441)
#                                         healthEventToTaint: a fatal XID taints the device
#                                         gpu.nvidia.com/xid=<xid>:NoSchedule (an ignored one: effect None);
#                                         driver.go deviceHealthEvents republishes the slice with it, only
#                                         under the NVMLDeviceHealthCheck gate (pkg/featuregates, chart
#                                         featureGates -> env FEATURE_GATES "Key=true,"); allocatable.go
#                                         AddOrUpdateTaint keeps it until the plugin restarts
#   k8s.io/api resource/v1 DeviceTaint: key, value, effect, and timeAdded, which the API server sets
#     when a taint has none (resourceslice strategy); an API server without DRADeviceTaints drops
#     the taints (pkg/registry/resource/resourceslice/strategy.go dropDisabledDRADeviceTaintsFields)
# Not published: resource.kubernetes.io/pcieRoot and the NUMA node attribute (upstream leaves each
# out when sysfs cannot resolve it, and a fake machine has no sysfs topology), addressingMode
# (only on coherent-memory platforms), MIG/VFIO devices (their feature gates are off by default).

DRA_DRIVER = "gpu.nvidia.com"
DRA_PROGRAM = "gpu-kubelet-plugin"
DRA_HIDDEN_ANNOTATION = "gpu-nodes.dev/simulated-dra-hidden-gpus"
GPU_MODEL_ANNOTATION = "gpu-nodes.dev/simulated-gpu-model"
DRA_XID_ANNOTATION = "gpu-nodes.dev/simulated-dra-xid-gpus"
# The driver's health check gate, as the chart passes it (FEATURE_GATES "NVMLDeviceHealthCheck=true,").
HEALTH_CHECK_GATE = "NVMLDeviceHealthCheck"
# XID 79, "GPU has fallen off the bus": fatal, not among the XIDs the driver ignores (13, 31, 43, 45,
# 68, 109), so NoSchedule; the XID and taint upstream's own e2e injects and expects
# (kubernetes-sigs/dra-driver-nvidia-gpu PR 1390: "a critical Xid (79) taints the device with
# gpu.nvidia.com/xid=79:NoSchedule").
SIMULATED_XID = 79
XID_TAINT = {"key": "gpu.nvidia.com/xid", "value": str(SIMULATED_XID), "effect": "NoSchedule"}
# kubelet's defaultWipingDelay (pkg/kubelet/cm/dra/manager.go).
DRA_WIPE_DELAY = 30.0
RESOURCE_API = "/apis/resource.k8s.io/v1"
# The rule of gpu_nodes/providers/gpu_allocators.py (programs_of, runs_dra_gpu_plugin,
# _long_running), repeated here because the registrar is stdlib-only and standalone.
_SHELLS = frozenset({"sh", "bash", "ash", "dash"})
_WORDS = re.compile(r"[^\s;&|()`'\"]+")
# Kubernetes' generateName suffix alphabet (k8s.io/apimachinery/pkg/util/rand).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class GpuModel:
    """What NVML reports for a GPU model, as the driver turns it into attributes (nvlib.go)."""

    product_name: str  # DeviceGetName
    memory_mib: int  # DeviceGetMemoryInfo total, as nvidia-smi's memory.total prints it
    compute_capability: str  # GetCudaComputeCapabilityAsString
    architecture: str  # go-nvlib GetArchitectureAsString
    brand: str = "Nvidia"  # go-nvlib GetBrandAsString of NVML_BRAND_NVIDIA (datacenter parts)


# The models tools/fakehost/fakehost.py machines report: MachineSpec's default and other_model().
GPU_MODELS = {
    m.product_name: m
    for m in (
        GpuModel("NVIDIA A100-SXM4-80GB", 81920, "8.0", "Ampere"),
        GpuModel("NVIDIA H100 PCIe", 81559, "9.0", "Hopper"),
    )
}
DEFAULT_GPU_MODEL = "NVIDIA A100-SXM4-80GB"
# fakehost MachineSpec.driver and cuda_version (what nvidia-smi's header says).
DRIVER_VERSION = "580.178.04"
CUDA_DRIVER_VERSION = "13.0"


def programs_of(container: Obj) -> set[str] | None:
    """The programs a container runs, by file name; None when it names none. A shell's `-c`
    script is read word by word (gpu_allocators.programs_of)."""
    if not container.get("command"):
        return None
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if argv[0].rsplit("/", 1)[-1] in _SHELLS and "-c" in argv[1:]:
        script = " ".join(argv[argv.index("-c") + 1 :])
        return {word.rsplit("/", 1)[-1] for word in _WORDS.findall(script)}
    return {argv[0].rsplit("/", 1)[-1]}


def long_running_containers(pod_spec: Obj) -> list[Obj]:
    """The pod's containers and its sidecars (init containers restarted `Always`)."""
    sidecars = [c for c in pod_spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [*(pod_spec.get("containers") or []), *sidecars]


def is_dra_plugin_pod(pod: Obj) -> bool:
    """A DaemonSet's pod with a container that runs the DRA driver's gpu-kubelet-plugin."""
    owners = pod.get("metadata", {}).get("ownerReferences") or []
    if not any(o.get("kind") == "DaemonSet" and o.get("controller", True) for o in owners):
        return False
    return any(DRA_PROGRAM in (programs_of(c) or set()) for c in long_running_containers(pod.get("spec") or {}))


def nodes_with_dra_plugin(pods: Iterable[Obj]) -> set[str]:
    return set(dra_plugins(pods))


def dra_plugins(pods: Iterable[Obj]) -> dict[str, bool]:
    """Node name -> whether the DRA plugin pod Running there runs the driver's health check."""
    return {
        p["spec"]["nodeName"]: health_checked(p)
        for p in pods
        if is_dra_plugin_pod(p) and is_running(p) and p.get("spec", {}).get("nodeName")
    }


def health_checked(pod: Obj) -> bool:
    """A container of the pod that runs gpu-kubelet-plugin has FEATURE_GATES turning the health check
    on: `Key=value,...`, the value as Go's strconv.ParseBool reads it (component-base featuregate Set)."""
    for container in long_running_containers(pod.get("spec") or {}):
        if DRA_PROGRAM not in (programs_of(container) or set()):
            continue
        gates = dict(g.split("=", 1) for g in (_env(container, "FEATURE_GATES") or "").split(",") if "=" in g)
        if gates.get(HEALTH_CHECK_GATE, "").strip() in ("1", "t", "T", "true", "TRUE", "True"):
            return True
    return False


def gpu_model(node: Obj) -> GpuModel | None:
    """The node's GPU model (annotation, else fakehost's default); None for a model we do not know."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    return GPU_MODELS.get(str(annotations.get(GPU_MODEL_ANNOTATION) or DEFAULT_GPU_MODEL).strip())


def published_gpus(node: Obj) -> int | None:
    """How many GPUs the driver publishes: the node's, less the hidden ones."""
    total = simulated_gpus(node)
    if total is None:
        return None
    annotations = node.get("metadata", {}).get("annotations") or {}
    return max(total - (parse_count(annotations.get(DRA_HIDDEN_ANNOTATION)) or 0), 0)


def semver(version: str) -> str:
    """Masterminds semver's String() of a NVML version, each part a number: "8.0" -> "8.0.0",
    "580.178.04" -> "580.178.4" (String() prints "%d.%d.%d"; the API server refuses a version attribute
    with a leading zero, as semver 2.0.0 does)."""
    parts = [str(int(part)) for part in version.split(".")]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def binary_si(n: int) -> str:
    """A byte count as Kubernetes writes a BinarySI quantity: the largest exact power of 1024."""
    for suffix, power in (("Ei", 6), ("Pi", 5), ("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        if n and n % 1024**power == 0:
            return f"{n // 1024**power}{suffix}"
    return str(n)


def gpu_uuid(node_name: str, index: int) -> str:
    """The UUID the node's fake machine prints (tools/fakehost/fakehost.py _gpu_lines; hostname = node name)."""
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node_name}.gpu{index}')}"


def pci_bus_id(index: int) -> str:
    """go-nvlib GetPCIBusID (lower case, 4-digit domain) of fakehost's `GPU 00000000:<index+7>:00.0`."""
    return f"0000:{index + 7:02x}:00.0"


def gpu_device(node_name: str, index: int, model: GpuModel) -> dict:
    """One full GPU as GpuInfo.GetDevice publishes it; its minor number is its index (/dev/nvidia<i>)."""
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu_uuid(node_name, index)},
            "productName": {"string": model.product_name},
            "brand": {"string": model.brand},
            "architecture": {"string": model.architecture},
            "cudaComputeCapability": {"version": semver(model.compute_capability)},
            "driverVersion": {"version": semver(DRIVER_VERSION)},
            "cudaDriverVersion": {"version": semver(CUDA_DRIVER_VERSION)},
            "resource.kubernetes.io/pciBusID": {"string": pci_bus_id(index)},
        },
        "capacity": {"memory": {"value": binary_si(model.memory_mib * 1024 * 1024)}},
    }


def slice_name(node_name: str) -> str:
    """`<node>-gpu.nvidia.com-<5 chars>`: the helper's generateName, with a suffix that is a hash
    of the node name rather than random, so every pass finds the same slice."""
    digest = hashlib.sha256(node_name.encode()).digest()
    return f"{node_name}-{DRA_DRIVER}-" + "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])


def tainted_gpus(node: Obj, health_check: bool) -> int:
    """How many of the published GPUs (the last ones) the driver's health check has tainted."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    return (parse_count(annotations.get(DRA_XID_ANNOTATION)) or 0) if health_check else 0


def desired_slice(node: Obj, health_check: bool = False) -> dict | None:
    """The node's ResourceSlice while the plugin runs there (`health_check`: with the driver's health
    check on); None when the node is not a simulated GPU node or names a model we do not know."""
    count, model = published_gpus(node), gpu_model(node)
    if count is None or model is None:
        return None
    meta = node["metadata"]
    name = meta["name"]
    devices = [gpu_device(name, i, model) for i in range(count)]
    for device in devices[max(count - tainted_gpus(node, health_check), 0) :]:
        device["taints"] = [dict(XID_TAINT)]
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "controller": True}
    if meta.get("uid"):
        owner["uid"] = meta["uid"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": slice_name(name), "generateName": f"{name}-{DRA_DRIVER}-", "ownerReferences": [owner]},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _owners(obj: Obj) -> list[dict]:
    keys = ("apiVersion", "kind", "name", "uid", "controller")
    return [{k: o.get(k) for k in keys} for o in obj.get("metadata", {}).get("ownerReferences") or []]


def without_taint_times(spec: Obj, drop_taints: bool = False) -> dict:
    """A slice spec with its devices' taints as the driver writes them: the API server adds each
    taint's timeAdded; `drop_taints`: none at all, as an API server without DRADeviceTaints stores it."""
    devices = []
    for device in spec.get("devices") or []:
        device = dict(device)
        taints = [{k: v for k, v in t.items() if k != "timeAdded"} for t in device.pop("taints", None) or []]
        if taints and not drop_taints:
            device["taints"] = taints
        devices.append(device)
    return {**spec, "devices": devices}


def taints_dropped(sent: Obj, stored_slice: Obj) -> bool:
    """The API server stored fewer device taints than were written: its DRADeviceTaints is off."""
    def count(spec: Obj) -> int:
        return sum(len(d.get("taints") or []) for d in spec.get("devices") or [])

    return count(stored_slice.get("spec") or {}) < count(sent.get("spec") or {})


def slice_differs(current: Obj, desired: Obj, drop_taints: bool = False) -> bool:
    """The stored slice is not what the plugin would publish (spec or owner), taints compared without
    the time the API server added (`drop_taints`: not at all, where the server drops them)."""
    have = without_taint_times(current.get("spec") or {}, drop_taints)
    want = without_taint_times(desired["spec"], drop_taints)
    # The pool generation is the API's to keep: an in-place update leaves it as it is.
    have_pool, want_pool = dict(have.pop("pool", {}) or {}), dict(want.pop("pool"))
    have_pool.pop("generation", None)
    want_pool.pop("generation", None)
    return have != want or have_pool != want_pool or _owners(current) != _owners(desired)


@dataclass(frozen=True)
class SliceAction:
    """create / update (body is the slice to write) or wipe (every slice of the driver on the node)."""

    kind: str
    node: str
    body: dict | None = None


def dra_actions(
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    slices: Iterable[Obj],
    now: float,
    gone_since: Mapping[str, float],
    wipe_delay: float = DRA_WIPE_DELAY,
    taints_dropped_on: Iterable[str] = (),
) -> tuple[list[SliceAction], dict[str, float]]:
    """What to write to the API, and the nodes whose plugin went (since when) with a wipe pending.

    A node with a running plugin gets its slice (created, or updated when it differs; nothing when it
    is equal). A node whose plugin went but whose slice of ours is still there waits wipe_delay
    seconds from the first pass that saw it so, then has its driver's slices wiped; a plugin back in
    time cancels that. Slices we did not make, on nodes where no plugin of ours ran, are left alone.
    On the nodes in `taints_dropped_on` the API server dropped the taints last written: they are not
    compared, or every pass would write them again (as the driver's own slice controller stops)."""
    plugins = dra_plugins(pods)
    dropped = set(taints_dropped_on)
    current = {s["metadata"]["name"]: s for s in slices if (s.get("spec") or {}).get("driver") == DRA_DRIVER}
    actions: list[SliceAction] = []
    pending: dict[str, float] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        want = desired_slice(node, plugins.get(name, False))
        if want is None:
            continue
        have = current.get(want["metadata"]["name"])
        if have is not None and (have.get("spec") or {}).get("nodeName") != name:
            have = None
        if name in plugins:
            if have is None:
                actions.append(SliceAction("create", name, want))
            elif slice_differs(have, want, drop_taints=name in dropped):
                body = json.loads(json.dumps(want))
                body["metadata"]["resourceVersion"] = have["metadata"].get("resourceVersion")
                body["spec"]["pool"]["generation"] = (have.get("spec") or {}).get("pool", {}).get("generation", 1)
                actions.append(SliceAction("update", name, body))
        elif have is not None:
            since = gone_since.get(name, now)
            pending[name] = since
            if now - since >= wipe_delay:
                actions.append(SliceAction("wipe", name))
    return actions, pending


# --------------------------------------------------------------------------- API access


class Client:
    """The few API calls the loop needs, authenticated as the kubeconfig's user."""

    def __init__(self, kubeconfig: str | None, context: str | None = None):
        cmd = ["kubectl", "config", "view", "--raw", "--flatten", "--minify", "-o", "json"]
        if kubeconfig:
            cmd += ["--kubeconfig", kubeconfig]
        if context:
            cmd += ["--context", context]
        cfg = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        self.server = cluster["server"].rstrip("/")
        self._tmp = tempfile.TemporaryDirectory(prefix="gpu-registrar-")
        ctx = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            ctx.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        if user.get("client-certificate-data"):
            cert = self._write("client.crt", user["client-certificate-data"])
            key = self._write("client.key", user["client-key-data"])
            ctx.load_cert_chain(cert, key)
        self.headers = {"Accept": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self.ssl = ctx

    def _write(self, name: str, b64: str) -> str:
        path = os.path.join(self._tmp.name, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(b64))
        return path

    def _request(self, method: str, path: str, body: dict | None = None, ctype: str | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method, headers=dict(self.headers))
        if ctype:
            req.add_header("Content-Type", ctype)
        with urllib.request.urlopen(req, context=self.ssl, timeout=10) as resp:
            return json.loads(resp.read())

    def list_nodes(self) -> list[dict]:
        return self._request("GET", "/api/v1/nodes")["items"]

    def list_plugin_pods(self) -> list[dict]:
        q = urllib.parse.urlencode({"labelSelector": f"{PLUGIN_LABEL}={PLUGIN_LABEL_VALUE}"})
        return self._request("GET", f"/api/v1/pods?{q}")["items"]

    def patch_node(self, name: str, patch: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        return self._request("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}?{q}", patch, "application/merge-patch+json")

    def patch_node_status(self, name: str, patch: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        path = f"/api/v1/nodes/{urllib.parse.quote(name)}/status?{q}"
        return self._request("PATCH", path, patch, "application/merge-patch+json")

    def list_running_pods(self) -> list[dict]:
        q = urllib.parse.urlencode({"fieldSelector": "status.phase=Running"})
        return self._request("GET", f"/api/v1/pods?{q}")["items"]

    def get_config_map(self, namespace: str, name: str) -> dict | None:
        """The ConfigMap, or None where there is none (a pod that mounts it does not start either)."""
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/configmaps/{urllib.parse.quote(name)}"
        try:
            return self._request("GET", path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def list_slices(self) -> list[dict]:
        q = urllib.parse.urlencode({"fieldSelector": f"spec.driver={DRA_DRIVER}"})
        return self._request("GET", f"{RESOURCE_API}/resourceslices?{q}")["items"]

    def create_slice(self, body: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        return self._request("POST", f"{RESOURCE_API}/resourceslices?{q}", body, "application/json")

    def replace_slice(self, body: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        path = f"{RESOURCE_API}/resourceslices/{urllib.parse.quote(body['metadata']['name'])}?{q}"
        return self._request("PUT", path, body, "application/json")

    def wipe_slices(self, node: str) -> dict:
        """kubelet's call: DeleteCollection of the driver's slices on the node."""
        q = urllib.parse.urlencode({"fieldSelector": f"spec.nodeName={node},spec.driver={DRA_DRIVER}"})
        return self._request("DELETE", f"{RESOURCE_API}/resourceslices?{q}")


# --------------------------------------------------------------------------- loop


# Plugin pods already logged as exiting for want of a driver root: once each.
_NO_CDI_SPEC: set[str] = set()
# Nodes whose DRA plugin went, and since when (time.monotonic()): their slices' pending wipe.
_DRA_GONE_SINCE: dict[str, float] = {}
# Nodes already warned about for a GPU model we do not know; whether the resource API is served.
_UNKNOWN_MODEL: set[str] = set()
_NO_RESOURCE_API: list[bool] = []
# Nodes whose last slice written lost its device taints at the API server (DRADeviceTaints off).
_TAINTS_DROPPED: set[str] = set()


def run_dra(client: Client, nodes: list[dict], wipe_delay: float, running: list[dict] | None = None) -> list[SliceAction]:
    """One pass of the simulated DRA kubelet plugins (and of kubelet's wiping of their slices)."""
    global _DRA_GONE_SINCE
    try:
        slices = client.list_slices()
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
        if not _NO_RESOURCE_API:
            _NO_RESOURCE_API.append(True)
            log.warning("the API serves no %s: no ResourceSlices are published", RESOURCE_API)
        return []
    for node in nodes:
        name = node["metadata"]["name"]
        if simulated_gpus(node) is not None and gpu_model(node) is None and name not in _UNKNOWN_MODEL:
            _UNKNOWN_MODEL.add(name)
            log.warning("node %s: unknown %s, no ResourceSlice (known: %s)", name, GPU_MODEL_ANNOTATION, ", ".join(GPU_MODELS))
    running = client.list_running_pods() if running is None else running
    actions, pending = dra_actions(nodes, running, slices, time.monotonic(), _DRA_GONE_SINCE, wipe_delay, _TAINTS_DROPPED)
    for node in sorted(set(pending) - set(_DRA_GONE_SINCE)):
        log.info("node %s: DRA plugin gone, its ResourceSlices go in %.0fs unless it comes back", node, wipe_delay)
    _DRA_GONE_SINCE = pending
    for action in actions:
        if action.kind == "create":
            note_dropped_taints(action, client.create_slice(action.body))
        elif action.kind == "update":
            note_dropped_taints(action, client.replace_slice(action.body))
        else:
            client.wipe_slices(action.node)
        if action.body:
            devices = len(action.body["spec"]["devices"])
            log.info("node %s: %s ResourceSlice %s (%d devices)", action.node, action.kind, action.body["metadata"]["name"], devices)
        else:
            log.info("node %s: wiped the ResourceSlices of driver %s (its plugin went)", action.node, DRA_DRIVER)
    return actions


def note_dropped_taints(action: SliceAction, stored_slice: dict) -> None:
    """Remember (and say once) a node whose device taints the API server did not keep."""
    if taints_dropped(action.body or {}, stored_slice):
        if action.node not in _TAINTS_DROPPED:
            log.warning("node %s: the API server dropped the device taints of its ResourceSlice (DRADeviceTaints is off)", action.node)
        _TAINTS_DROPPED.add(action.node)
    else:
        _TAINTS_DROPPED.discard(action.node)


def run_once(client: Client, wipe_delay: float = DRA_WIPE_DELAY) -> dict[str, dict]:
    nodes, pods = client.list_nodes(), client.list_plugin_pods()
    for pod in pods:
        uid = pod.get("metadata", {}).get("uid", "")
        if is_device_plugin_pod(pod) and not writes_its_cdi_spec(pod) and uid not in _NO_CDI_SPEC:
            _NO_CDI_SPEC.add(uid)
            log.warning("pod %s: unable to create cdi spec file: no hostPath at %s", pod["metadata"].get("name"), CONTAINER_DRIVER_ROOT)
    for name, patch in sorted(xid_patches(nodes, pods).items()):
        client.patch_node(name, patch)
        log.info("node %s: %s", name, json.dumps(patch["metadata"], sort_keys=True))
    running = client.list_running_pods()
    config_maps = {ref: cm for ref in config_map_refs([*pods, *running]) if (cm := client.get_config_map(*ref)) is not None}
    _log_unserved(pods, config_maps, running)
    patches = reconcile(nodes, pods, config_maps, running)
    for name, patch in sorted(patches.items()):
        client.patch_node_status(name, patch)
        log.info("node %s: %s", name, json.dumps(patch["status"], sort_keys=True))
    run_dra(client, nodes, wipe_delay, running)
    return patches


# Plugin pods already logged as registering nothing for a reason of their config: once each.
_UNSERVED: set[str] = set()


def _log_unserved(pods: list[dict], config_maps: ConfigMaps, running: list[dict]) -> None:
    """Says once per plugin pod why a Running one registers nothing: its config file unreadable here, or
    under MPS no ready MPS control daemon (the real plugin logs "Waiting for MPS daemon to be ready")."""
    daemons = ready_mps_daemons(running, config_maps)
    for pod in pods:
        uid = pod.get("metadata", {}).get("uid", "")
        if not is_device_plugin_pod(pod) or not is_running(pod) or uid in _UNSERVED:
            continue
        if plugin_sharing(pod, config_maps, daemons) is None:
            _UNSERVED.add(uid)
            log.warning(
                "pod %s: registers nothing: its config file is not readable JSON here, or under MPS no MPS control "
                "daemon with its MPS_ROOT and sharing.mps runs on its node (yet)",
                pod["metadata"].get("name"),
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ap.add_argument("--context")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between passes (default 1)")
    ap.add_argument(
        "--dra-wipe-delay",
        type=float,
        default=DRA_WIPE_DELAY,
        help="seconds from a DRA plugin going to its slices being deleted (kubelet: 30)",
    )
    ap.add_argument("--once", action="store_true", help="one pass, then exit (for tests)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    client = Client(args.kubeconfig, args.context)
    if args.once:
        run_once(client, args.dra_wipe_delay)
        return 0

    stop = False

    def _stop(signum, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("watching %s every %.1fs", client.server, args.interval)
    failing = False
    while not stop:
        try:
            run_once(client, args.dra_wipe_delay)
            if failing:
                log.info("API reachable again")
            failing = False
        except (urllib.error.URLError, OSError, ValueError) as e:
            if not failing:  # log the first failure of a streak, not one a second
                log.warning("pass failed: %s", e)
            failing = True
        time.sleep(args.interval)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
