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

With ComputeDomains (a container of the plugin's pod runs `compute-domain-kubelet-plugin`) a slice of driver
`compute-domain.nvidia.com` lists the node's channel-0 and daemon-0, and while the controller's pod runs each
ComputeDomain gets its channel's ResourceClaimTemplate; with `DynamicMIG=true` in the plugin's FEATURE_GATES each
GPU's MIG profiles are published as partitions consuming its counters. On a node annotated
`gpu-nodes.dev/simulated-toolkit: nri` a device plugin registers only when it asks the toolkit's NRI plugin for its
devices and names no RuntimeClass (tools/cluster/README.md, "ComputeDomains, dynamic MIG and NRI-mode nodes").

And it plays kubelet and the container runtime for the pods that prove a node (see "the pods that prove a
node" below and tools/cluster/README.md):

  a Running Job pod of gpu-nodes' diagnostics, performance or IMEX channel (labels part-of=gpu-nodes, component
    diagnostics|performance|imex, restartPolicy Never), which stages/pod-run-by-registrar.yaml keeps from kwok's
    pod-complete   -> its containers' programs run once against the fake machine's stand-ins
                      (tools/fakehost/programs), their output becomes the containers' logs (kwok Logs), and
                      the pod ends with their exit codes, as kubelet ends it
  a Running dcgm-exporter pod   -> its pod IP is bound on lo and serves the machine's /metrics, for the API
                      server's pod proxy; unbound when the pod goes

Stdlib only. Credentials come from a kubeconfig through `kubectl config view --raw --flatten`
(our kubectl is on PATH after `source tools/cluster/env.sh`). The node status is changed with a
JSON merge patch on the `status` subresource under its own field manager.

Usage: gpu-registrar.py [--kubeconfig PATH] [--interval 1.0] [--dra-wipe-delay 30] [--fakehosts DIR]
                        [--pod-logs DIR] [--workload-timeout 120] [--once] [-v]
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import datetime
import hashlib
import http.server
import importlib.util
import ipaddress
import json
import logging
import os
import pathlib
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Mapping
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


# --------------------------------------------------------------------------- NRI-mode nodes
#
# A node whose container toolkit injects through its NRI plugin (the GPU Operator's cdi.nriPluginEnabled;
# gpu-nodes' containerToolkit: nri) has no `nvidia` runtime handler and no RuntimeClass for it. The Operator's own
# pods there name no RuntimeClass and ask the toolkit's NRI plugin for the management CDI device by an annotation
# (NVIDIA/gpu-operator controllers/object_controls.go, setNRIPluginAnnotation: `nvidia.cdi.k8s.io/container.<name>:
# management.nvidia.com/gpu=all`; nvidia-container-toolkit cmd/nvidia-ctk-installer/container/runtime/nri/plugin.go
# reads the `nvidia.cdi.k8s.io` prefix). A device plugin pod there that names a RuntimeClass would not start (kubelet:
# no runtime handler), and one without the annotation gets no driver library and fails to load NVML: neither
# registers a GPU. The registrar knows such a node by its annotation `gpu-nodes.dev/simulated-toolkit: nri` (what
# tools/fakehost's --nri machine is; the e2e sets it).

TOOLKIT_ANNOTATION = "gpu-nodes.dev/simulated-toolkit"
NRI_TOOLKIT = "nri"
NRI_ANNOTATION_PREFIX = "nvidia.cdi.k8s.io/container."


def is_nri_node(node: Obj) -> bool:
    return (node.get("metadata", {}).get("annotations") or {}).get(TOOLKIT_ANNOTATION) == NRI_TOOLKIT


def injected_through_nri(pod: Obj) -> bool:
    """The pod names no RuntimeClass and asks the toolkit's NRI plugin for devices in a container of its own."""
    if pod.get("spec", {}).get("runtimeClassName"):
        return False
    annotations = pod.get("metadata", {}).get("annotations") or {}
    names = {c.get("name") for c in long_running_containers(pod.get("spec") or {})}
    return any(key.startswith(NRI_ANNOTATION_PREFIX) and key[len(NRI_ANNOTATION_PREFIX) :] in names for key in annotations)


def reconcile(
    nodes: Iterable[Obj], pods: Iterable[Obj], config_maps: ConfigMaps | None = None, running: Iterable[Obj] = ()
) -> dict[str, dict]:
    """Node name -> status patch, for every managed node whose GPUs are not what they should be.
    config_maps: the ConfigMaps the plugins' config files are read from, by (namespace, name);
    running: the cluster's Running pods, among which an MPS plugin's control daemon. On an NRI-mode node only a
    plugin pod that asks the toolkit's NRI plugin for its devices registers (`injected_through_nri`)."""
    pods = list(pods)
    plugins, sharing = serving_plugins(pods, config_maps or {}, list(running))
    by_uid = {p.get("metadata", {}).get("uid", ""): p for p in pods}
    patches = {}
    for node in nodes:
        name = node["metadata"]["name"]
        if is_nri_node(node) and name in plugins and not injected_through_nri(by_uid.get(plugins[name], {})):
            plugins.pop(name)
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


# The DRA driver's dynamic MIG and ComputeDomains (kubernetes-sigs/dra-driver-nvidia-gpu, main as of 2026-08-07):
#   the kubelet plugin's FEATURE_GATES naming DynamicMIG=true: each GPU's MIG profiles published as partitions that
#     consume the GPU's counters (cmd/gpu-kubelet-plugin/partitions.go; driver.go generateSplitResourceSlices: on
#     Kubernetes 1.35+ the counter sets in a slice of their own, the devices in others of the same pool); the whole GPU
#     too on Hopper and later, not on Ampere, whose MIG mode preflight found on (nvlib.go: "the full GPU is not
#     allocatable on Ampere when MIG cannot be toggled without a GPU reset"). Here one partition per profile and GPU (at
#     placement 0; the driver lists every placement), memory slices as the only counters.
#   a container of the plugin's pod running compute-domain-kubelet-plugin: a slice of driver compute-domain.nvidia.com
#     on the node with channel-0 and daemon-0 (cmd/compute-domain-kubelet-plugin/driver.go
#     computeDomainPublishedDevices: channel 0 only; deviceinfo.go: attributes type and id)
DYNAMIC_MIG_GATE = "DynamicMIG"
CD_DRIVER = "compute-domain.nvidia.com"
CD_PROGRAM = "compute-domain-kubelet-plugin"
# A100 and H100 80GB: NVIDIA's MIG user guide, "Supported MIG Profiles" (profile, GPU instance profile id, memory
# slices of 8); the A100 is Ampere, the H100 Hopper.
MIG_PROFILES = (("1g.10gb", 19, 1), ("1g.20gb", 15, 2), ("2g.20gb", 14, 2), ("3g.40gb", 9, 4), ("4g.40gb", 5, 4), ("7g.80gb", 0, 8))
MEMORY_SLICES = 8


def _feature_gates(container: Obj) -> dict[str, bool]:
    gates = dict(g.split("=", 1) for g in (_env(container, "FEATURE_GATES") or "").split(",") if "=" in g)
    return {k.strip(): v.strip() in ("1", "t", "T", "true", "TRUE", "True") for k, v in gates.items()}


@dataclass(frozen=True)
class DraParts:
    """What a node's Running DRA kubelet plugin pod runs besides the GPUs: dynamic MIG, ComputeDomains."""

    dynamic_mig: bool = False
    compute_domains: bool = False


def dra_parts(pods: Iterable[Obj]) -> dict[str, DraParts]:
    """Node name -> what its Running DRA plugin pod runs."""
    parts = {}
    for pod in pods:
        if not (is_dra_plugin_pod(pod) and is_running(pod) and pod.get("spec", {}).get("nodeName")):
            continue
        containers = long_running_containers(pod.get("spec") or {})
        mig = any(DRA_PROGRAM in (programs_of(c) or set()) and _feature_gates(c).get(DYNAMIC_MIG_GATE) for c in containers)
        domains = any(CD_PROGRAM in (programs_of(c) or set()) for c in containers)
        parts[pod["spec"]["nodeName"]] = DraParts(mig, domains)
    return parts


def counter_set(index: int) -> str:
    """GpuInfo.GetSharedCounterSetName: `gpu-<minor>-counter-set`."""
    return f"gpu-{index}-counter-set"


def _memory_slices(start: int, size: int) -> dict[str, dict[str, str]]:
    return {f"memory-slice-{i}": {"value": "1"} for i in range(start, start + size)}


def model_attributes(model: GpuModel, index: int) -> dict:
    """What a GPU and each MIG partition of it publish alike: the model, the driver, the PCI address."""
    return {
        "productName": {"string": model.product_name},
        "brand": {"string": model.brand},
        "architecture": {"string": model.architecture},
        "cudaComputeCapability": {"version": semver(model.compute_capability)},
        "driverVersion": {"version": semver(DRIVER_VERSION)},
        "cudaDriverVersion": {"version": semver(CUDA_DRIVER_VERSION)},
        "resource.kubernetes.io/pciBusID": {"string": pci_bus_id(index)},
    }


def mig_device(node_name: str, index: int, model: GpuModel, profile: str, profile_id: int, slices: int) -> dict:
    """One dynamic MIG partition of GPU `index` at placement 0 (MigSpec.PartGetDevice, CommonAttributesMig)."""
    attributes = {
        "type": {"string": "mig"},
        "parentUUID": {"string": gpu_uuid(node_name, index)},
        "profile": {"string": profile},
        **model_attributes(model, index),
    }
    memory = model.memory_mib * 1024 * 1024 * slices // MEMORY_SLICES
    return {
        "name": f"gpu-{index}-mig-{profile.replace('.', '')}-{profile_id}-0",
        "attributes": attributes,
        "capacity": {"memory": {"value": binary_si(memory)}},
        "consumesCounters": [{"counterSet": counter_set(index), "counters": _memory_slices(0, slices)}],
    }


def counters_slice(node: Obj) -> dict | None:
    """The pool's slice of counter sets under dynamic MIG, one set per GPU (driver.go generateSplitResourceSlices)."""
    count = published_gpus(node)
    if count is None or gpu_model(node) is None:
        return None
    name = node["metadata"]["name"]
    sets = [{"name": counter_set(i), "counters": _memory_slices(0, MEMORY_SLICES)} for i in range(count)]
    return _slice(node, DRA_DRIVER, "counters", {"sharedCounters": sets}, slice_count=2)


def compute_domain_slice(node: Obj) -> dict | None:
    """The node's slice of driver compute-domain.nvidia.com: channel 0 and daemon 0."""
    if simulated_gpus(node) is None:
        return None
    devices = [
        {"name": f"{kind}-0", "attributes": {"type": {"string": kind}, "id": {"int": 0}}} for kind in ("channel", "daemon")
    ]
    return _slice(node, CD_DRIVER, "", {"devices": devices})


def _slice(node: Obj, driver: str, part: str, body: dict, slice_count: int = 1) -> dict:
    meta = node["metadata"]
    name = meta["name"]
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "controller": True}
    if meta.get("uid"):
        owner["uid"] = meta["uid"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": slice_name(name, driver, part), "generateName": f"{name}-{driver}-", "ownerReferences": [owner]},
        "spec": {
            "driver": driver,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": slice_count},
            **body,
        },
    }


def extra_slices(node: Obj, parts: DraParts) -> list[dict]:
    """The node's slices beside its GPU slice, while its plugin runs: dynamic MIG's counters, ComputeDomains' devices."""
    wanted = [counters_slice(node) if parts.dynamic_mig else None, compute_domain_slice(node) if parts.compute_domains else None]
    return [s for s in wanted if s is not None]


def extra_slice_actions(nodes: Iterable[Obj], pods: Iterable[Obj], slices: Iterable[Obj]) -> list[SliceAction]:
    """Create or update each node's extra slices while its plugin runs; delete one of ours it no longer publishes (a
    plugin restarted without the gate or container). A plugin gone leaves them to the wipe of its node's slices."""
    parts = dra_parts(pods)
    current = {s["metadata"]["name"]: s for s in slices}
    actions = []
    for node in nodes:
        name = node["metadata"]["name"]
        if name not in parts or simulated_gpus(node) is None:
            continue
        wanted = {s["metadata"]["name"]: s for s in extra_slices(node, parts[name])}
        for slice_name_, want in wanted.items():
            have = current.get(slice_name_)
            if have is None:
                actions.append(SliceAction("create", name, want))
            elif slice_differs(have, want):
                body = json.loads(json.dumps(want))
                body["metadata"]["resourceVersion"] = have["metadata"].get("resourceVersion")
                actions.append(SliceAction("update", name, body))
        for part, driver in (("counters", DRA_DRIVER), ("", CD_DRIVER)):
            ours = slice_name(name, driver, part)
            if ours not in wanted and ours in current:
                actions.append(SliceAction("delete", name, current[ours]))
    return actions


# The ComputeDomain controller (cmd/compute-domain-controller), played once its Deployment's pod runs: for each
# ComputeDomain, the ResourceClaimTemplate of its workloads' channel in its namespace, named as its spec.channel says
# (resourceclaimtemplate.go WorkloadResourceClaimTemplateManager.Create, from
# templates/compute-domain-workload-claim-template.tmpl.yaml: labels computeDomain=<its uid> and computeDomainTarget
# Workload, one request `channel` of the default channel's DeviceClass, the opaque ComputeDomainChannelConfig with
# its domainID and allocationMode); deleted when the ComputeDomain goes. Not played: the finalizers the controller
# puts on both (nothing here would remove them), the IMEX daemons' DaemonSet and its claims, the domain's status.
CD_API_VERSION = "resource.nvidia.com/v1beta1"
CD_LABEL = "resource.nvidia.com/computeDomain"
CD_TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"
CD_CONTROLLER_PROGRAM = "compute-domain-controller"
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"


def controller_runs(running: Iterable[Obj]) -> bool:
    """A Running pod with a container that runs the ComputeDomain controller."""
    return any(
        CD_CONTROLLER_PROGRAM in (programs_of(c) or set())
        for p in running
        if is_running(p)
        for c in long_running_containers(p.get("spec") or {})
    )


def channel_template(domain: Obj) -> dict:
    """The workload ResourceClaimTemplate the controller makes for a ComputeDomain."""
    meta, spec = domain["metadata"], domain.get("spec") or {}
    channel = spec.get("channel") or {}
    config = {
        "apiVersion": CD_API_VERSION,
        "kind": "ComputeDomainChannelConfig",
        "domainID": meta["uid"],
        "allocationMode": channel.get("allocationMode") or "Single",
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "namespace": meta["namespace"],
            "name": (channel.get("resourceClaimTemplate") or {}).get("name", ""),
            "labels": {CD_LABEL: meta["uid"], CD_TARGET_LABEL: "Workload"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS}}],
                    "config": [{"requests": ["channel"], "opaque": {"driver": CD_DRIVER, "parameters": config}}],
                }
            }
        },
    }


def controller_actions(domains: Iterable[Obj], templates: Iterable[Obj], running: Iterable[Obj]) -> tuple[list[dict], list[Obj]]:
    """The channel templates to create (none while no controller runs) and those of ComputeDomains gone to delete."""
    domains = [d for d in domains if not d["metadata"].get("deletionTimestamp")]
    have = {(t["metadata"].get("labels") or {}).get(CD_LABEL) for t in templates}
    uids = {d["metadata"].get("uid") for d in domains}
    if not controller_runs(running):
        return [], []
    create = [channel_template(d) for d in domains if d["metadata"].get("uid") not in have]
    delete = [t for t in templates if (t["metadata"].get("labels") or {}).get(CD_LABEL) not in uids]
    return [t for t in create if t["metadata"]["name"]], delete


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
    """The UUID the node's fake machine prints (tools/fakehost/fakehost.py query_gpu_lines; hostname = node name)."""
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
            **model_attributes(model, index),
        },
        "capacity": {"memory": {"value": binary_si(model.memory_mib * 1024 * 1024)}},
    }


def slice_name(node_name: str, driver: str = DRA_DRIVER, part: str = "") -> str:
    """`<node>-gpu.nvidia.com-<5 chars>`: the helper's generateName, with a suffix that is a hash
    of the node name rather than random, so every pass finds the same slice (of another driver, or another part of
    the pool: its name hashed in too)."""
    key = node_name if (driver, part) == (DRA_DRIVER, "") else f"{node_name}/{driver}/{part}"
    digest = hashlib.sha256(key.encode()).digest()
    return f"{node_name}-{driver}-" + "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])


def tainted_gpus(node: Obj, health_check: bool) -> int:
    """How many of the published GPUs (the last ones) the driver's health check has tainted."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    return (parse_count(annotations.get(DRA_XID_ANNOTATION)) or 0) if health_check else 0


def desired_slice(node: Obj, health_check: bool = False, dynamic_mig: bool = False) -> dict | None:
    """The node's ResourceSlice while the plugin runs there (`health_check`: with the driver's health
    check on; `dynamic_mig`: with each GPU's MIG partitions, the counters in a second slice of the pool,
    `counters_slice`); None when the node is not a simulated GPU node or names a model we do not know."""
    count, model = published_gpus(node), gpu_model(node)
    if count is None or model is None:
        return None
    meta = node["metadata"]
    name = meta["name"]
    devices = [gpu_device(name, i, model) for i in range(count)]
    for device in devices[max(count - tainted_gpus(node, health_check), 0) :]:
        device["taints"] = [dict(XID_TAINT)]
    if dynamic_mig:
        whole = model.architecture != "Ampere"
        split = []
        for i, device in enumerate(devices):
            device["consumesCounters"] = [{"counterSet": counter_set(i), "counters": _memory_slices(0, MEMORY_SLICES)}]
            split += [device] if whole else []
            split += [mig_device(name, i, model, *profile) for profile in MIG_PROFILES]
        devices = split
    return _slice(node, DRA_DRIVER, "", {"devices": devices}, slice_count=2 if dynamic_mig else 1)


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
    pods = list(pods)
    plugins, parts = dra_plugins(pods), dra_parts(pods)
    dropped = set(taints_dropped_on)
    current = {s["metadata"]["name"]: s for s in slices if (s.get("spec") or {}).get("driver") == DRA_DRIVER}
    actions: list[SliceAction] = []
    pending: dict[str, float] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        want = desired_slice(node, plugins.get(name, False), parts.get(name, DraParts()).dynamic_mig)
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


# --------------------------------------------------------------------------- the pods that prove a node
#
# kubelet and the container runtime, played for the pods of gpu-nodes' proof. kwok has neither: its stages move a
# pod's status, and its pod-complete stage ends every Job pod with exit 0. Our stage (stages/pod-run-by-registrar.yaml)
# holds the Job pods below Running instead, and the registrar runs them:
#
#   a Running Job pod labelled app.kubernetes.io/part-of=gpu-nodes, app.kubernetes.io/component diagnostics or
#   performance, restartPolicy Never: each container whose command names a program of the fake machine
#   (tools/fakehost/programs: dcgmi, mpirun, all_reduce_perf[_mpi]) runs once, by that file name, with those programs
#   first on PATH, a clean environment (the container's own env, what kubelet and the device plugin add), as the
#   container's user, under a timeout; its output becomes the container's log and the pod ends as kubelet ends it.
#   A container whose command names no such program (a plain image's shell, say) ends with exit 0, as kwok's
#   pod-complete would end it: it is not run on this machine, whose files are not the image's.
#
#   a Running pod labelled app.kubernetes.io/name=dcgm-exporter: its pod IP (from the node's podCIDR, a range never
#   routed: 198.18.0.0/15) is bound on lo and its listen port serves the machine's /metrics and /health from a
#   thread, so the API server's pod proxy reaches it; unbound when the pod goes.
#
# What each part follows:
#   kubelet (Kubernetes v1.35.4): pkg/kubelet/kubelet_pods.go getPhase (restartPolicy Never: Succeeded when every
#     container exited 0, else Failed); pkg/kubelet/status/generate.go (Ready and ContainersReady False with reason
#     PodCompleted or PodFailed once the phase is terminal); pkg/kubelet/kuberuntime/kuberuntime_container.go
#     convertToKubeContainerStatus (terminationMessagePolicy FallbackToLogsOnError: a failed container's message is
#     the last 80 lines, at most 2048 bytes, of its log, pkg/kubelet/container/runtime.go); the device plugin's
#     Allocate answer as kubelet hands it to the runtime: NVIDIA_VISIBLE_DEVICES with the GPUs' UUIDs
#     (k8s-device-plugin's default envvar strategy, device ids by uuid)
#   containerd (internal/cri/server/helpers.go): reason Completed for exit 0, Error otherwise; the log as CRI lines
#     `<RFC 3339 time> <stream> F <line>` (k8s.io/cri-client pkg/logs, which kwok reads them with)
#   kwok v0.8.0: a `Logs` object per pod (pkg/apis/v1alpha1/logs_types.go: spec.logs[].containers, logsFile) makes
#     kwok-controller's kubelet API serve the file to `kubectl logs` (pkg/kwok/server/debugging_logs.go); it is owned
#     by the pod, so the garbage collector removes it with the pod
#   kube-apiserver v1.35.4 pkg/registry/core/pod/strategy.go ResourceLocation: the pod proxy connects to the pod IP
#     and refuses one that is not global unicast (127/8 among them), hence a routable-looking range of our own
#   dcgm-exporter (NVIDIA/dcgm-exporter pkg/cmd/app.go): it listens on --address/-a or DCGM_EXPORTER_LISTEN
#     (default :9400); internal/pkg/hostname/hostname.go: its hostname label is NODE_NAME, else the host name

PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF = "gpu-nodes"
COMPONENT_LABEL = "app.kubernetes.io/component"
WORKLOAD_COMPONENTS = ("diagnostics", "performance", "imex")
EXPORTER_NAME = "dcgm-exporter"  # app.kubernetes.io/name of the exporter's pods
# kwok's chaos stage ends a pod so labelled (up.sh applies it): such a pod is left to it.
CHAOS_LABEL = "pod-container-running-failed.stage.kwok.x-k8s.io"
# How long a pod's end waits for the API to serve its containers' logs (kwok picks up a new Logs within a second).
LOGS_SERVED_SECONDS = 15.0
# RFC 2544's benchmarking range: global unicast, as the pod proxy wants, yet never a real network. up.sh gives each
# node a /25 of it as podCIDR, and kwok hands out pod IPs from there.
SIMULATED_POD_NETWORK = ipaddress.ip_network("198.18.0.0/15")
EXPORTER_LISTEN = ":9400"
KWOK_API_VERSION = "kwok.x-k8s.io/v1alpha1"
# kubelet's caps on a termination message read from the log.
TERMINATION_LOG_LINES = 80
TERMINATION_LOG_BYTES = 2048
REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tools" / "fakehost" / "programs"
STANDINS = REPO / "tools" / "fakehost" / "standins.py"
FAKEHOSTS = REPO / ".state" / "fakehosts"
POD_LOGS = REPO / ".state" / "cluster" / "pod-logs"
# The fake machine's PATH after the programs (what an image's PATH holds: only the stand-ins answer here).
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The pod fields kubelet resolves for env valueFrom.fieldRef that a verification pod may use.
FIELD_REFS = {
    "spec.nodeName": lambda p: p.get("spec", {}).get("nodeName", ""),
    "spec.serviceAccountName": lambda p: p.get("spec", {}).get("serviceAccountName", ""),
    "metadata.name": lambda p: p.get("metadata", {}).get("name", ""),
    "metadata.namespace": lambda p: p.get("metadata", {}).get("namespace", ""),
    "metadata.uid": lambda p: p.get("metadata", {}).get("uid", ""),
    "status.podIP": lambda p: p.get("status", {}).get("podIP", ""),
    "status.hostIP": lambda p: p.get("status", {}).get("hostIP", ""),
}


def _labels(pod: Obj) -> Mapping[str, str]:
    return pod.get("metadata", {}).get("labels") or {}


def _uid(pod: Obj) -> str:
    return str(pod.get("metadata", {}).get("uid", ""))


def is_workload_pod(pod: Obj) -> bool:
    """A pod of gpu-nodes' diagnostics or performance Jobs that this registrar runs (restartPolicy Never: kubelet
    would restart an OnFailure container in place, which is not played; kwok completes those)."""
    labels = _labels(pod)
    if labels.get(PART_OF_LABEL) != PART_OF or labels.get(COMPONENT_LABEL) not in WORKLOAD_COMPONENTS:
        return False
    if CHAOS_LABEL in labels:
        return False
    owners = pod.get("metadata", {}).get("ownerReferences") or []
    return any(o.get("kind") == "Job" for o in owners) and pod.get("spec", {}).get("restartPolicy") == "Never"


def workloads_to_start(pods: Iterable[Obj], seen: Iterable[str]) -> list[Obj]:
    """The Running workload pods on a node that were not started yet."""
    known = set(seen)
    return [
        p for p in pods if is_workload_pod(p) and is_running(p) and p.get("spec", {}).get("nodeName") and _uid(p) not in known
    ]


def container_argv(container: Obj) -> list[str] | None:
    """command + args; None without a command (the image's entrypoint, which is not known here)."""
    if not container.get("command"):
        return None
    return [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]


def standin_program(argv: list[str] | None, programs: Iterable[str]) -> str | None:
    """The fake machine's program the command names (by file name: an image's /usr/local/mpi/bin/mpirun is
    `mpirun`), or None."""
    if not argv:
        return None
    name = argv[0].rsplit("/", 1)[-1]
    return name if name in set(programs) else None


def _limit(container: Obj, resource: str) -> int:
    resources = container.get("resources") or {}
    values = [parse_count((resources.get(k) or {}).get(resource)) for k in ("limits", "requests")]
    return max((v for v in values if v is not None), default=0)


def claimed_gpus(pod: Obj, container: Obj, claims: Mapping[str, Obj]) -> list[int] | None:
    """The GPUs (indices) NVIDIA's DRA driver allocated to the container's claims (device gpu-<index>), or None
    when the container names no claim. claims: the pod's ResourceClaims by name."""
    names = [c.get("name") for c in (container.get("resources") or {}).get("claims") or []]
    if not names:
        return None
    generated = {s.get("name"): s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []}
    direct = {c.get("name"): c.get("resourceClaimName") for c in pod.get("spec", {}).get("resourceClaims") or []}
    indices = []
    for name in names:
        claim = claims.get(generated.get(name) or direct.get(name) or "") or {}
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
        for result in results:
            device = str(result.get("device", ""))
            if result.get("driver") == DRA_DRIVER and device.startswith("gpu-") and device[4:].isdigit():
                indices.append(int(device[4:]))
    return sorted(set(indices))


def claim_names(pod: Obj) -> list[str]:
    """The ResourceClaims the pod's claims resolved to (status.resourceClaimStatuses, or a claim named directly)."""
    names = [s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []]
    names += [c.get("resourceClaimName") for c in pod.get("spec", {}).get("resourceClaims") or []]
    return sorted({n for n in names if n})


def gpus_of_containers(pod: Obj, node_gpus: int, claims: Mapping[str, Obj] | None = None) -> dict[str, list[int]]:
    """Container name -> the indices of the machine's GPUs it was given. A device-plugin request of nvidia.com/gpu
    (or its replicas under sharing: each replica sits on one GPU, and a request spreads over as many GPUs as it can)
    takes GPUs in order, the containers of a pod never sharing one; a DRA claim takes the devices it was allocated."""
    given: dict[str, list[int]] = {}
    next_free = 0
    for container in pod.get("spec", {}).get("containers") or []:
        claimed = claimed_gpus(pod, container, claims or {})
        if claimed is not None:
            given[container.get("name", "")] = claimed
            continue
        count = max(_limit(container, GPU_RESOURCE), _limit(container, SHARED_GPU_RESOURCE))
        count = min(count, max(node_gpus - next_free, 0))
        given[container.get("name", "")] = list(range(next_free, next_free + count))
        next_free += count
    return given


# IMEX channels in a container (the `imex` component's Jobs, tools/fakehost/standins.py `ls`):
#   the device plugin's: with IMEX_CHANNEL_IDS set on the plugin, a container given GPUs gets the channels too
#     (k8s-device-plugin v0.20.0 internal/plugin/server.go updateResponseForImexChannelsEnvVar: NVIDIA_IMEX_CHANNELS,
#     or the channel's CDI device), each only where the host has it (internal/imex/imex.go GetChannels: a channel that
#     does not exist is ignored, or fails the plugin's start under IMEX_REQUIRED): the stand-in looks on the machine
#   a ComputeDomain's: the channel devices (driver compute-domain.nvidia.com, `channel-<id>`) its claims were
#     allocated, which the driver's kubelet plugin makes in the container (GPU_NODES_IMEX_CHANNELS)
IMEX_CHANNELS_ENV = "NVIDIA_IMEX_CHANNELS"
GIVEN_CHANNELS_ENV = "GPU_NODES_IMEX_CHANNELS"


def plugin_imex_channels(pods: Iterable[Obj]) -> dict[str, str]:
    """Node -> the IMEX_CHANNEL_IDS of the device plugin pod Running there, where it sets some."""
    found = {}
    for pod in pods:
        if not (is_device_plugin_pod(pod) and is_running(pod) and pod.get("spec", {}).get("nodeName")):
            continue
        for container in long_running_containers(pod.get("spec") or {}):
            ids = (_env(container, "IMEX_CHANNEL_IDS") or "").strip()
            if ids:
                found[pod["spec"]["nodeName"]] = ids
    return found


def claimed_channels(pod: Obj, container: Obj, claims: Mapping[str, Obj]) -> list[int]:
    """The ComputeDomain channels the container's claims were allocated (device channel-<id>)."""
    names = [c.get("name") for c in (container.get("resources") or {}).get("claims") or []]
    generated = {s.get("name"): s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []}
    direct = {c.get("name"): c.get("resourceClaimName") for c in pod.get("spec", {}).get("resourceClaims") or []}
    ids = []
    for name in names:
        claim = claims.get(generated.get(name) or direct.get(name) or "") or {}
        for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            device = str(result.get("device", ""))
            if result.get("driver") == CD_DRIVER and device.startswith("channel-") and device[8:].isdigit():
                ids.append(int(device[8:]))
    return sorted(set(ids))


def container_environment(pod: Obj, container: Obj, gpu_uuids: list[str], programs: pathlib.Path) -> dict[str, str]:
    """What the container's process sees: PATH with the fake machine's programs first, HOME, HOSTNAME (the pod's
    name, as kubelet sets it), the container's env (values, and the pod fields kubelet resolves), and the device
    plugin's NVIDIA_VISIBLE_DEVICES when it was given GPUs."""
    env = {"PATH": f"{programs}:{BASE_PATH}", "HOME": "/", "HOSTNAME": str(pod.get("metadata", {}).get("name", ""))}
    for item in container.get("env") or []:
        name = item.get("name")
        if not name:
            continue
        if "value" in item:
            env[name] = str(item.get("value") or "")
            continue
        ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if ref in FIELD_REFS:
            env[name] = FIELD_REFS[ref](pod)
    if env["PATH"] != f"{programs}:{BASE_PATH}":
        env["PATH"] = f"{programs}:{env['PATH']}"  # the image's PATH, the stand-ins still first
    if gpu_uuids:
        env["NVIDIA_VISIBLE_DEVICES"] = ",".join(gpu_uuids)
    return env


def run_as(pod: Obj, container: Obj) -> tuple[int | None, int | None]:
    """The user and group the container runs as (its securityContext before the pod's); None where unset."""
    pod_ctx = pod.get("spec", {}).get("securityContext") or {}
    ctx = container.get("securityContext") or {}
    user = ctx.get("runAsUser", pod_ctx.get("runAsUser"))
    group = ctx.get("runAsGroup", pod_ctx.get("runAsGroup"))
    return (int(user) if user is not None else None), (int(group) if group is not None else None)


def rfc3339nano(when: float) -> str:
    """Go's time.RFC3339Nano in UTC: up to nine fraction digits, trailing zeros dropped."""
    stamp = datetime.datetime.fromtimestamp(when, datetime.UTC)
    fraction = f"{stamp.microsecond:06d}000".rstrip("0")
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def rfc3339(when: float) -> str:
    """metav1.Time as the API writes it: seconds."""
    return datetime.datetime.fromtimestamp(when, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cri_log(output: str, when: float) -> str:
    """The output as containerd's CRI log: one full line per line, `<time> stdout F <line>`."""
    lines = output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    stamp = rfc3339nano(when)
    return "".join(f"{stamp} stdout F {line}\n" for line in lines)


def termination_message(container: Obj, exit_code: int, output: str) -> str:
    """kubelet's message for a terminated container: none is written to the termination message path here, so it is
    the log's tail under FallbackToLogsOnError when the container failed, else empty."""
    if exit_code == 0 or container.get("terminationMessagePolicy") != "FallbackToLogsOnError":
        return ""
    tail = "".join(line + "\n" for line in output.rstrip("\n").split("\n")[-TERMINATION_LOG_LINES:])
    return tail.encode()[-TERMINATION_LOG_BYTES:].decode(errors="replace")


@dataclass(frozen=True)
class ContainerRun:
    """How one container of a workload pod ended."""

    name: str
    image: str
    exit_code: int
    started: float
    finished: float
    message: str = ""
    log_file: str = ""
    start_error: bool = False  # the program could not be started (containerd: exit 128, reason StartError)

    @property
    def reason(self) -> str:
        if self.start_error:
            return "StartError"
        return "Completed" if self.exit_code == 0 else "Error"


def completion_patch(runs: list[ContainerRun], now: float) -> dict:
    """The pod's status once every container ended (a strategic merge patch: conditions merge by type)."""
    failed = any(r.exit_code != 0 for r in runs)
    phase, reason = ("Failed", "PodFailed") if failed else ("Succeeded", "PodCompleted")
    conditions = [
        {"type": kind, "status": "False", "reason": reason, "lastTransitionTime": rfc3339(now)}
        for kind in ("Ready", "ContainersReady")
    ]
    statuses = []
    for run in runs:
        terminated: dict[str, Any] = {
            "exitCode": run.exit_code,
            "reason": run.reason,
            "startedAt": rfc3339(run.started),
            "finishedAt": rfc3339(run.finished),
        }
        if run.message:
            terminated["message"] = run.message
        status = {"name": run.name, "image": run.image, "ready": False, "restartCount": 0, "started": False}
        statuses.append(status | {"state": {"terminated": terminated}})
    return {"status": {"phase": phase, "conditions": conditions, "containerStatuses": statuses}}


def logs_object(pod: Obj, runs: list[ContainerRun]) -> dict:
    """kwok's Logs for the pod: each container's log file, owned by the pod."""
    meta = pod.get("metadata", {})
    owner = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"), "uid": meta.get("uid")}
    return {
        "apiVersion": KWOK_API_VERSION,
        "kind": "Logs",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"), "ownerReferences": [owner]},
        "spec": {"logs": [{"containers": [r.name], "logsFile": r.log_file} for r in runs if r.log_file]},
    }


def _served(text: str | None, written: bool) -> bool:
    """Whether the API serves a container's log: some text where its log file has some."""
    return text is not None and (bool(text) or not written)


def pod_log_dir(root: pathlib.Path, pod: Obj) -> pathlib.Path:
    """kubelet's layout: <root>/<namespace>_<name>_<uid>/<container>/0.log."""
    meta = pod.get("metadata", {})
    return root / f"{meta.get('namespace')}_{meta.get('name')}_{meta.get('uid')}"


@dataclass(frozen=True)
class ExporterEndpoint:
    """Where a dcgm-exporter pod listens, and what its page is of."""

    uid: str
    pod: str
    node: str
    ip: str
    port: int
    hostname: str
    gpus: int
    model: str


def listen_port(container: Obj) -> int | None:
    """The port of dcgm-exporter's --address/-a (or DCGM_EXPORTER_LISTEN, default :9400)."""
    address = _env(container, "DCGM_EXPORTER_LISTEN") or EXPORTER_LISTEN
    args = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    for i, arg in enumerate(args):
        if arg in ("-a", "--address", "-address") and i + 1 < len(args):
            address = args[i + 1]
        elif arg.startswith(("--address=", "-a=")):
            address = arg.split("=", 1)[1]
    port = address.rsplit(":", 1)[-1]
    return int(port) if port.isdigit() else None


def exporter_endpoints(pods: Iterable[Obj], nodes: Mapping[str, Obj]) -> tuple[dict[str, ExporterEndpoint], list[Obj]]:
    """The Running dcgm-exporter pods to serve, by uid, and those that cannot be (a pod IP outside the simulated
    network: hostNetwork, or a node without our podCIDR)."""
    serve, refused = {}, []
    for pod in pods:
        spec = pod.get("spec") or {}
        node = nodes.get(spec.get("nodeName", ""))
        if _labels(pod).get(PLUGIN_LABEL) != EXPORTER_NAME or not is_running(pod) or node is None:
            continue
        ip = pod.get("status", {}).get("podIP", "")
        try:
            routable = ipaddress.ip_address(ip) in SIMULATED_POD_NETWORK
        except ValueError:
            routable = False
        containers = spec.get("containers") or []
        port = listen_port(containers[0]) if containers else None
        if not routable or port is None or spec.get("hostNetwork"):
            refused.append(pod)
            continue
        node_name = spec["nodeName"]
        env_node = _resolved_env(pod, containers[0], "NODE_NAME")
        serve[_uid(pod)] = ExporterEndpoint(
            uid=_uid(pod),
            pod=f"{pod['metadata'].get('namespace')}/{pod['metadata'].get('name')}",
            node=node_name,
            ip=ip,
            port=port,
            hostname=env_node or str(pod["metadata"].get("name", "")),
            gpus=simulated_gpus(node) or 0,
            model=str((node.get("metadata", {}).get("annotations") or {}).get(GPU_MODEL_ANNOTATION) or ""),
        )
    return serve, refused


def _resolved_env(pod: Obj, container: Obj, name: str) -> str:
    for item in container.get("env") or []:
        if item.get("name") == name:
            if "value" in item:
                return str(item.get("value") or "")
            ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
            return FIELD_REFS[ref](pod) if ref in FIELD_REFS else ""
    return ""


def exporter_changes(
    serving: Mapping[str, ExporterEndpoint], wanted: Mapping[str, ExporterEndpoint]
) -> tuple[list[str], list[ExporterEndpoint]]:
    """The servers to stop (pod gone or changed) and the endpoints to serve (new or changed)."""
    stop = sorted(uid for uid, endpoint in serving.items() if wanted.get(uid) != endpoint)
    start = [endpoint for uid, endpoint in sorted(wanted.items()) if serving.get(uid) != endpoint]
    return stop, start


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

    def list_slices(self, driver: str = DRA_DRIVER) -> list[dict]:
        q = urllib.parse.urlencode({"fieldSelector": f"spec.driver={driver}"})
        return self._request("GET", f"{RESOURCE_API}/resourceslices?{q}")["items"]

    def delete_slice(self, name: str) -> dict:
        return self._request("DELETE", f"{RESOURCE_API}/resourceslices/{urllib.parse.quote(name)}")

    def create_slice(self, body: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        return self._request("POST", f"{RESOURCE_API}/resourceslices?{q}", body, "application/json")

    def replace_slice(self, body: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        path = f"{RESOURCE_API}/resourceslices/{urllib.parse.quote(body['metadata']['name'])}?{q}"
        return self._request("PUT", path, body, "application/json")

    def serves(self, group_version: str, resource: str) -> bool:
        """The API serves the resource (discovery of its group version)."""
        try:
            found = self._request("GET", f"/apis/{group_version}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise
        return any(r.get("name") == resource for r in found.get("resources") or [])

    def list_pods(self, label_selector: str) -> list[dict]:
        q = urllib.parse.urlencode({"labelSelector": label_selector})
        return self._request("GET", f"/api/v1/pods?{q}")["items"]

    def patch_pod_status(self, namespace: str, name: str, patch: dict) -> dict:
        """A strategic merge patch of the pod's status, as kubelet's status manager writes it."""
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(name)}/status?{q}"
        return self._request("PATCH", path, patch, "application/strategic-merge-patch+json")

    def get_resource_claim(self, namespace: str, name: str) -> dict | None:
        path = f"{RESOURCE_API}/namespaces/{urllib.parse.quote(namespace)}/resourceclaims/{urllib.parse.quote(name)}"
        try:
            return self._request("GET", path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def put_logs(self, body: dict) -> dict:
        """Creates the pod's kwok Logs, or replaces one left by an earlier pod of that name."""
        meta = body["metadata"]
        base = f"/apis/{KWOK_API_VERSION}/namespaces/{urllib.parse.quote(meta['namespace'])}/logs"
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        try:
            return self._request("POST", f"{base}?{q}", body, "application/json")
        except urllib.error.HTTPError as e:
            if e.code != 409:
                raise
        path = f"{base}/{urllib.parse.quote(meta['name'])}"
        current = self._request("GET", path)
        body = {**body, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
        return self._request("PUT", f"{path}?{q}", body, "application/json")

    def read_log(self, namespace: str, pod: str, container: str) -> str | None:
        """The container's log as `kubectl logs` reads it (through kwok's kubelet server), or None while it cannot."""
        q = urllib.parse.urlencode({"container": container})
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(pod)}/log?{q}"
        req = urllib.request.Request(self.server + path, headers={k: v for k, v in self.headers.items() if k != "Accept"})
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=10) as resp:
                return resp.read().decode(errors="replace")
        except (urllib.error.URLError, OSError):
            return None

    def wipe_slices(self, node: str, driver: str = DRA_DRIVER) -> dict:
        """kubelet's call: DeleteCollection of the driver's slices on the node."""
        q = urllib.parse.urlencode({"fieldSelector": f"spec.nodeName={node},spec.driver={driver}"})
        return self._request("DELETE", f"{RESOURCE_API}/resourceslices?{q}")

    # The DRA driver's ComputeDomains, played (`compute_domain_controller`).
    def list_compute_domains(self) -> list[dict] | None:
        """Every ComputeDomain; None where the API serves none (its CRD not there)."""
        try:
            return self._request("GET", f"/apis/{CD_API_VERSION}/computedomains")["items"]
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def list_channel_templates(self) -> list[dict]:
        q = urllib.parse.urlencode({"labelSelector": CD_LABEL})
        return self._request("GET", f"{RESOURCE_API}/resourceclaimtemplates?{q}")["items"]

    def create_claim_template(self, body: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        namespace = urllib.parse.quote(body["metadata"]["namespace"])
        return self._request("POST", f"{RESOURCE_API}/namespaces/{namespace}/resourceclaimtemplates?{q}", body, "application/json")

    def delete_claim_template(self, namespace: str, name: str) -> dict:
        path = f"{RESOURCE_API}/namespaces/{urllib.parse.quote(namespace)}/resourceclaimtemplates/{urllib.parse.quote(name)}"
        return self._request("DELETE", path)


# --------------------------------------------------------------------------- running the proof's pods


class WorkloadRunner:
    """Runs each workload pod's containers once (a few pods at a time, off the loop), then writes its Logs and its
    final status. A pod whose API writes failed is written again on a later pass, without running it again."""

    def __init__(self, client: Client, programs: pathlib.Path, fakehosts: pathlib.Path, logs: pathlib.Path, timeout: float):
        self.client, self.programs, self.fakehosts, self.logs, self.timeout = client, programs, fakehosts, logs, timeout
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="workload")
        self.active: dict[str, concurrent.futures.Future[bool]] = {}
        self.runs: dict[str, list[ContainerRun]] = {}  # uid -> how its containers ended, until written
        self.done: dict[str, float] = {}  # uid -> when its status was written
        self.no_logs_api = False
        self.passes = 0
        self.reachable: dict[tuple[int, int], bool] = {}  # (uid, gid) -> whether the programs run as them

    def sync(self, running: list[dict], nodes: Mapping[str, Obj]) -> None:
        for uid, future in list(self.active.items()):
            if future.done():
                del self.active[uid]
                if future.exception() is None and future.result():
                    self.done[uid] = time.monotonic()
        channels = plugin_imex_channels(running)
        for pod in workloads_to_start(running, [*self.active, *self.done]):
            node = nodes.get(pod["spec"]["nodeName"])
            if node is not None:
                self.active[_uid(pod)] = self.pool.submit(self._play, pod, node, channels.get(pod["spec"]["nodeName"], ""))
        # Forget pods written a while ago that no longer run (their status reached the API).
        running_uids = {_uid(p) for p in running}
        self.done = {u: t for u, t in self.done.items() if u in running_uids or time.monotonic() - t < 600}
        self.passes += 1
        if self.passes % 60 == 1:
            self._remove_logs_of_gone_pods()

    def wait(self) -> None:
        """Waits for the runs under way (--once, shutdown)."""
        concurrent.futures.wait(list(self.active.values()))
        self.pool.shutdown(wait=True)

    def _play(self, pod: dict, node: Obj, plugin_channels: str = "") -> bool:
        name = f"{pod['metadata'].get('namespace')}/{pod['metadata'].get('name')}"
        try:
            runs = self.runs.get(_uid(pod))
            if runs is None:
                runs = self._run_containers(pod, node, plugin_channels)
                self.runs[_uid(pod)] = runs
                for run in runs:
                    log.info("pod %s on %s: container %s exited %d", name, pod["spec"]["nodeName"], run.name, run.exit_code)
            self._write_logs(pod, runs)
            self._await_logs_served(pod, runs)
            patch = completion_patch(runs, time.time())
            self.client.patch_pod_status(pod["metadata"]["namespace"], pod["metadata"]["name"], patch)
            log.info("pod %s: %s", name, patch["status"]["phase"])
            self.runs.pop(_uid(pod), None)
            return True
        except urllib.error.HTTPError as e:
            if e.code == 404:  # the pod went meanwhile
                self.runs.pop(_uid(pod), None)
                return True
            log.warning("pod %s: writing its end failed (%s), again next pass", name, e)
            return False
        except Exception:
            log.exception("pod %s: not run", name)
            return True  # not again: the same error would come back every second

    def _write_logs(self, pod: dict, runs: list[ContainerRun]) -> None:
        if self.no_logs_api:
            return
        try:
            self.client.put_logs(logs_object(pod, runs))
        except urllib.error.HTTPError as e:
            if e.code != 404 or self.client.serves(KWOK_API_VERSION, "logs"):
                raise
            self.no_logs_api = True
            log.warning("the API serves no kwok Logs: kubectl logs shows nothing (a cluster from before up.sh enabled them)")

    def _await_logs_served(self, pod: dict, runs: list[ContainerRun]) -> None:
        """Until the API serves each container's log: kubelet's log of a container is whole once the container has
        ended, before its status says so, but kwok reads a Logs object only once its watch delivers it. A status
        written first let the proof read an empty log of a finished pod (and judge a report missing)."""
        if self.no_logs_api:
            return
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        deadline = time.monotonic() + LOGS_SERVED_SECONDS
        for run in runs:
            written = bool(run.log_file) and pathlib.Path(run.log_file).stat().st_size > 0
            while not _served(self.client.read_log(namespace, name, run.name), written):
                if time.monotonic() > deadline:
                    log.warning("pod %s/%s: the API does not serve container %s's log yet", namespace, name, run.name)
                    return
                time.sleep(0.2)

    def _claims(self, pod: dict) -> dict[str, Obj]:
        namespace = pod["metadata"].get("namespace", "")
        return {n: c for n in claim_names(pod) if (c := self.client.get_resource_claim(namespace, n)) is not None}

    def _run_containers(self, pod: dict, node: Obj, plugin_channels: str = "") -> list[ContainerRun]:
        programs = {p.name for p in self.programs.iterdir()} if self.programs.is_dir() else set()
        node_name = node["metadata"]["name"]
        claims = self._claims(pod) if claim_names(pod) else {}
        given = gpus_of_containers(pod, simulated_gpus(node) or 0, claims)
        log_dir = pod_log_dir(self.logs, pod)
        runs = []
        for container in pod["spec"].get("containers") or []:
            cname = container.get("name", "")
            argv = container_argv(container)
            program = standin_program(argv, programs)
            started = time.time()
            output, exit_code, start_error = "", 0, None  # no program of the machine's: it ends as kwok's pod-complete ends it
            if program is not None and argv is not None:
                uuids = [gpu_uuid(node_name, i) for i in given.get(cname, [])]
                env = container_environment(pod, container, uuids, self.programs)
                env |= self._machine_env(node, container)
                if uuids and plugin_channels:
                    env[IMEX_CHANNELS_ENV] = plugin_channels
                if channels := claimed_channels(pod, container, claims):
                    env[GIVEN_CHANNELS_ENV] = ",".join(map(str, channels))
                output, exit_code, start_error = self._execute(
                    [str(self.programs / program), *argv[1:]], env, *run_as(pod, container)
                )
            log_file = log_dir / cname / "0.log"
            log_file.parent.mkdir(parents=True, exist_ok=True)
            log_file.write_text(cri_log(output, time.time()))
            message = start_error or termination_message(container, exit_code, output)
            image = str(container.get("image", ""))
            end = time.time()
            runs.append(ContainerRun(cname, image, exit_code, started, end, message, str(log_file), start_error is not None))
        return runs

    def _machine_env(self, node: Obj, container: Obj) -> dict[str, str]:
        """What tools/fakehost/standins.py reads the machine by (its environment contract)."""
        annotations = node.get("metadata", {}).get("annotations") or {}
        return {
            "GPU_NODES_NODE": node["metadata"]["name"],
            "GPU_NODES_FAKEHOSTS": str(self.fakehosts),
            "GPU_NODES_SIMULATED_GPUS": str(simulated_gpus(node) or 0),
            "GPU_NODES_GPU_MODEL": str(annotations.get(GPU_MODEL_ANNOTATION) or ""),
            "GPU_NODES_IMAGE": str(container.get("image", "")),
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def _execute(self, argv: list[str], env: dict[str, str], user: int | None, group: int | None) -> tuple[str, int, str | None]:
        """The program's combined output, its exit status (a signal's as 128 + its number, as runc reports it), and why
        it could not start, if it could not (the container's user may not reach it, say): then containerd's
        errorStartExitCode 128, with the error as the message (internal/cri/server/helpers.go)."""
        as_user: dict[str, Any] = {}
        if os.geteuid() == 0 and user is not None and self._reachable_as(user, group if group is not None else 0):
            as_user = {"user": user, "group": group if group is not None else 0, "extra_groups": []}
        try:
            proc = subprocess.Popen(
                argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, **as_user,
            )  # fmt: skip
        except OSError as e:
            return "", 128, f"failed to start {argv[0]} as user {user}: {e}"
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its whole session: mpirun's program too
            out, _ = proc.communicate()
            out += f"(killed by the local cluster's gpu-registrar after {self.timeout:.0f}s)\n".encode()
        code = proc.returncode
        return out.decode(errors="replace"), (128 - code if code < 0 else code), None

    def _reachable_as(self, user: int, group: int) -> bool:
        """Whether the fake machine's programs run as this user: a checkout in a home directory closed to others (a
        CI's clean clone under /root, say) is not, and there they run as the registrar's own user, said once. The
        container's user changes nothing in what the stand-ins answer."""
        key = (user, group)
        if key not in self.reachable:
            probe = [str(self.programs / "dcgmi"), "--version"]
            try:
                done = subprocess.run(probe, capture_output=True, text=True, timeout=60, user=user, group=group, extra_groups=[])
                self.reachable[key] = "stand-in" in done.stderr  # its own answer: "only `diag` is simulated"
            except (OSError, subprocess.TimeoutExpired):
                self.reachable[key] = False
            if not self.reachable[key]:
                what = "the fake machine's programs (%s) cannot run as uid %d: they run as the registrar's user"
                log.warning(what, self.programs, user)
        return self.reachable[key]

    def _remove_logs_of_gone_pods(self) -> None:
        if not self.logs.is_dir():
            return
        try:
            live = {_uid(p) for p in self.client.list_pods(f"{PART_OF_LABEL}={PART_OF}")}
        except (urllib.error.URLError, OSError, ValueError):
            return
        for entry in self.logs.iterdir():
            uid = entry.name.rsplit("_", 1)[-1]
            if uid not in live and uid not in self.active and uid not in self.runs:
                shutil.rmtree(entry, ignore_errors=True)


def load_standins(path: pathlib.Path = STANDINS) -> Any:
    """tools/fakehost/standins.py, loaded by path (tools/ is not a package): the exporter's page comes from there."""
    if "standins" in sys.modules:
        return sys.modules["standins"]
    spec = importlib.util.spec_from_file_location("standins", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["standins"] = module
    spec.loader.exec_module(module)
    return module


class ExporterPages:
    """The /metrics page of a node's exporter, made again only when the machine may have changed (its fake machine's
    sshd or mode file)."""

    def __init__(self, fakehosts: pathlib.Path):
        self.fakehosts = fakehosts
        self.cache: dict[tuple, str] = {}
        self.lock = threading.Lock()

    def _read(self, path: pathlib.Path) -> str:
        try:
            return path.read_text()
        except OSError:
            return ""

    def page(self, endpoint: ExporterEndpoint) -> str:
        state = self.fakehosts / endpoint.node
        key = (endpoint, self._read(state / "pid"), self._read(state / "mode"))
        with self.lock:
            if key in self.cache:
                return self.cache[key]
        standins = load_standins()
        env = {
            standins.ENV_NODE: endpoint.node,
            standins.ENV_FAKEHOSTS: str(self.fakehosts),
            standins.ENV_GPUS: str(endpoint.gpus),
            standins.ENV_MODEL: endpoint.model,
        }
        page = standins.exporter_page(standins.machine_from_env(env), endpoint.hostname)
        with self.lock:
            self.cache = {k: v for k, v in self.cache.items() if k[0].uid != endpoint.uid}
            self.cache[key] = page
        return page


class _ExporterServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    endpoint: ExporterEndpoint
    pages: ExporterPages


class _ExporterHandler(http.server.BaseHTTPRequestHandler):
    """dcgm-exporter's routes (internal/pkg/server/server.go): /metrics, /health ("OK")."""

    server: _ExporterServer

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._reply(200, "OK", "text/plain; charset=utf-8")
        elif path == "/metrics":
            try:
                page = self.server.pages.page(self.server.endpoint)
            except Exception as e:  # the machine does not answer (its driver, say): what a broken exporter gives
                self._reply(500, f"An internal server error occurred: {e}\n", "text/plain; charset=utf-8")
                return
            self._reply(200, page, "text/plain; version=0.0.4; charset=utf-8")
        else:
            self._reply(404, "404 page not found\n", "text/plain; charset=utf-8")

    def _reply(self, code: int, body: str, ctype: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's signature)
        log.debug("exporter %s: %s", self.server.endpoint.pod, format % args)


def ip_on_lo(ip: str, present: bool) -> None:
    """Binds (or unbinds) ip/32 on lo; one that is already so is left alone."""
    verb = "add" if present else "del"
    done = subprocess.run(["ip", "addr", verb, f"{ip}/32", "dev", "lo"], capture_output=True, text=True, check=False)
    quiet = ("File exists", "Cannot assign requested address")
    if done.returncode != 0 and not any(q in done.stderr for q in quiet):
        raise OSError(f"ip addr {verb} {ip}/32 dev lo: {done.stderr.strip()}")


class ExporterServers:
    """An HTTP server per dcgm-exporter pod, on its pod IP (bound on lo) and listen port."""

    def __init__(self, pages: ExporterPages, bind: Callable[[str, bool], None] = ip_on_lo):
        self.pages, self.bind = pages, bind
        self.serving: dict[str, tuple[ExporterEndpoint, _ExporterServer]] = {}
        self.refused: set[str] = set()
        self.failed: set[str] = set()

    def sync(self, running: list[dict], nodes: Mapping[str, Obj]) -> None:
        wanted, refused = exporter_endpoints(running, nodes)
        for pod in refused:
            if _uid(pod) not in self.refused:
                self.refused.add(_uid(pod))
                log.warning(
                    "exporter pod %s/%s: pod IP %r is not in %s (hostNetwork, or a node without the podCIDR up.sh gives): "
                    "its metrics are not served",
                    pod["metadata"].get("namespace"), pod["metadata"].get("name"), pod.get("status", {}).get("podIP"),
                    SIMULATED_POD_NETWORK,
                )  # fmt: skip
        stop, start = exporter_changes({u: e for u, (e, _) in self.serving.items()}, wanted)
        for uid in stop:
            self._stop(uid)
        for endpoint in start:
            try:
                self.bind(endpoint.ip, True)
                server = _ExporterServer((endpoint.ip, endpoint.port), _ExporterHandler)
            except OSError as e:
                if endpoint.uid not in self.failed:  # tried again every pass, said once
                    self.failed.add(endpoint.uid)
                    log.warning("exporter pod %s: cannot serve %s:%d: %s", endpoint.pod, endpoint.ip, endpoint.port, e)
                continue
            self.failed.discard(endpoint.uid)
            server.endpoint, server.pages = endpoint, self.pages
            threading.Thread(target=server.serve_forever, name=f"exporter-{endpoint.ip}", daemon=True).start()
            self.serving[endpoint.uid] = (endpoint, server)
            where = f"http://{endpoint.ip}:{endpoint.port}/metrics"
            log.info("exporter pod %s on %s: serving %s", endpoint.pod, endpoint.node, where)

    def _stop(self, uid: str) -> None:
        endpoint, server = self.serving.pop(uid)
        server.shutdown()
        server.server_close()
        if not any(e.ip == endpoint.ip for e, _ in self.serving.values()):
            try:
                self.bind(endpoint.ip, False)
            except OSError as e:
                log.warning("exporter pod %s: %s", endpoint.pod, e)
        log.info("exporter pod %s: stopped serving %s:%d", endpoint.pod, endpoint.ip, endpoint.port)

    def stop_all(self) -> None:
        for uid in list(self.serving):
            self._stop(uid)


@dataclass
class ProofPods:
    """The parts that play the pods of the proof: the workload runner and the exporters' servers."""

    runner: WorkloadRunner
    exporters: ExporterServers

    def sync(self, running: list[dict], nodes: list[dict]) -> None:
        by_name = {n["metadata"]["name"]: n for n in nodes}
        self.runner.sync(running, by_name)
        self.exporters.sync(running, by_name)

    def close(self, wait: bool = True) -> None:
        """Stops serving (and unbinds the exporters' IPs); `wait`: for the containers under way too."""
        self.exporters.stop_all()
        if wait:
            self.runner.wait()
        else:
            self.runner.pool.shutdown(wait=False, cancel_futures=True)


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
    actions += extra_slice_actions(nodes, running, [*slices, *client.list_slices(CD_DRIVER)])
    run_compute_domain_controller(client, running)
    for node in sorted(set(pending) - set(_DRA_GONE_SINCE)):
        log.info("node %s: DRA plugin gone, its ResourceSlices go in %.0fs unless it comes back", node, wipe_delay)
    _DRA_GONE_SINCE = pending
    for action in actions:
        if action.kind == "create":
            note_dropped_taints(action, client.create_slice(action.body))
        elif action.kind == "update":
            note_dropped_taints(action, client.replace_slice(action.body))
        elif action.kind == "delete":
            client.delete_slice(action.body["metadata"]["name"])
        else:
            client.wipe_slices(action.node)
            client.wipe_slices(action.node, CD_DRIVER)
        if action.body:
            devices = len(action.body["spec"].get("devices") or [])
            log.info("node %s: %s ResourceSlice %s (%d devices)", action.node, action.kind, action.body["metadata"]["name"], devices)
        else:
            log.info("node %s: wiped the ResourceSlices of driver %s (its plugin went)", action.node, DRA_DRIVER)
    return actions


def run_compute_domain_controller(client: Client, running: list[dict]) -> None:
    """One pass of the played ComputeDomain controller (`controller_actions`)."""
    domains = client.list_compute_domains()
    if domains is None:
        return
    creates, deletes = controller_actions(domains, client.list_channel_templates(), running)
    for body in creates:
        client.create_claim_template(body)
        log.info("ComputeDomain %s/%s: created its channel's ResourceClaimTemplate", body["metadata"]["namespace"], body["metadata"]["name"])
    for template in deletes:
        meta = template["metadata"]
        client.delete_claim_template(meta["namespace"], meta["name"])
        log.info("ResourceClaimTemplate %s/%s: its ComputeDomain is gone, deleted", meta["namespace"], meta["name"])


def note_dropped_taints(action: SliceAction, stored_slice: dict) -> None:
    """Remember (and say once) a node whose device taints the API server did not keep."""
    if taints_dropped(action.body or {}, stored_slice):
        if action.node not in _TAINTS_DROPPED:
            log.warning("node %s: the API server dropped the device taints of its ResourceSlice (DRADeviceTaints is off)", action.node)
        _TAINTS_DROPPED.add(action.node)
    else:
        _TAINTS_DROPPED.discard(action.node)


def run_once(client: Client, wipe_delay: float = DRA_WIPE_DELAY, proof: ProofPods | None = None) -> dict[str, dict]:
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
    if proof is not None:
        proof.sync(running, nodes)
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
    ap.add_argument("--fakehosts", type=pathlib.Path, default=FAKEHOSTS, help=f"the fake machines' state (default {FAKEHOSTS})")
    ap.add_argument("--pod-logs", type=pathlib.Path, default=POD_LOGS, help=f"where containers' logs go (default {POD_LOGS})")
    ap.add_argument("--workload-timeout", type=float, default=120.0, help="seconds a container's program may run (default 120)")
    ap.add_argument("--once", action="store_true", help="one pass, then exit (for tests)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    client = Client(args.kubeconfig, args.context)
    runner = WorkloadRunner(client, PROGRAMS, args.fakehosts, args.pod_logs, args.workload_timeout)
    proof = ProofPods(runner, ExporterServers(ExporterPages(args.fakehosts)))
    if args.once:
        try:
            run_once(client, args.dra_wipe_delay, proof)
        finally:
            proof.close()
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
            run_once(client, args.dra_wipe_delay, proof)
            if failing:
                log.info("API reachable again")
            failing = False
        except (urllib.error.URLError, OSError, ValueError) as e:
            if not failing:  # log the first failure of a streak, not one a second
                log.warning("pass failed: %s", e)
            failing = True
        time.sleep(args.interval)
    proof.close(wait=False)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
