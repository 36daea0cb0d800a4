"""Who hands out GPUs on a node, read from what the cluster's objects run.

**The device plugin image runs four programs.** Since v0.15 the `k8s-device-plugin` image holds
`/usr/bin/nvidia-device-plugin`, `gpu-feature-discovery`, `mps-control-daemon` and
`config-manager`, with `ENTRYPOINT ["nvidia-device-plugin"]` (k8s-device-plugin
`deployments/container/Dockerfile`). What a container runs is its `command` (a container without
one runs the entrypoint): the chart's plugin runs `["nvidia-device-plugin"]`, its GFD
`["gpu-feature-discovery"]`, its MPS daemon `[mps-control-daemon]`, their sidecars
`["config-manager"]` (`deployments/helm/nvidia-device-plugin/templates/daemonset-*.yml`); the
static GFD manifest runs `/usr/bin/gpu-feature-discovery`
(`deployments/static/gpu-feature-discovery-daemonset.yaml`); the GPU Operator runs the plugin
through a shell (`["/bin/sh", "-c"]`, `/bin/entrypoint.sh`; gpu-operator
`assets/state-device-plugin/0500_daemonset.yaml`). Only the plugin serves kubelet's socket, so a
container of that image is a device plugin unless all it runs is one of the other three: an
unknown script counts as a plugin, the side that stops a run rather than lets two plugins fight.

**NVIDIA's DRA driver** allocates GPUs through its kubelet plugin's `gpus` container, which runs
`gpu-kubelet-plugin` under `bash -c` and publishes the node's GPUs as ResourceSlices with
`spec.driver: gpu.nvidia.com` and `spec.nodeName` (k8s-dra-driver-gpu
`deployments/helm/nvidia-dra-driver-gpu/templates/kubeletplugin.yaml`,
`cmd/gpu-kubelet-plugin/main.go` `DriverName`). Its `compute-domains` container
(`compute-domain-kubelet-plugin`, driver `compute-domain.nvidia.com`) hands out IMEX channels,
not GPUs, and is left alone. The driver's home is now kubernetes-sigs/dra-driver-nvidia-gpu: chart
`dra-driver-nvidia-gpu` (v0.4.1), image `registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu`,
DaemonSet `<name>-kubelet-plugin` with the same two containers and programs, the same driver name
(`deployments/helm/dra-driver-nvidia-gpu/templates/kubeletplugin.yaml`, `values.yaml`,
`cmd/gpu-kubelet-plugin/main.go`). It tolerates `nvidia.com/gpu:NoSchedule` by default and its GPU
part needs `gpuResourcesEnabledOverride=true` (`templates/validation.yaml`). Which chart a DaemonSet
comes from is its `app.kubernetes.io/name` label (both charts' `templateLabels`, the chart's name).

**The GPU Operator's GPUCluster** (v26.x, `nvidia.com/v1alpha1`, cluster-scoped, a singleton whose
name the CRD pins to `gpu-cluster`: gpu-operator `deployments/gpu-operator/crds/nvidia.com_gpuclusters.yaml`)
deploys the DRA driver instead of the device plugin (`api/nvidia/v1alpha1/gpucluster_types.go`: "the gpus
capability is always deployed; there is no enabled toggle"). Its kubelet plugin DaemonSet
`nvidia-dra-driver-kubelet-plugin` runs `gpu-kubelet-plugin` in a `gpus` container under `bash -c`
(`manifests/state-dra-driver/0500_daemonset.yaml`) and selects nodes by
`nvidia.com/gpu.deploy.dra-driver: "true"`, which the operator's node labelling writes on nodes in DRA mode
and never overwrites when set (`controllers/nodelabeling_controller.go`, `updateGPUClusterStateLabels`):
`nvidia.com/gpu.deploy.dra-driver=false` keeps it off a node.

**Other device plugins that register `nvidia.com/gpu`** (a cloud's own plugin, a static pod, a
service on the machine) are seen where kubelet reports them: a node of the stack whose
`status.allocatable` has `nvidia.com/gpu` above 0 while no pod of a device plugin DaemonSet (ours
or one found above) is on it. When a plugin's connection ends kubelet marks all its devices
unhealthy, so allocatable drops to 0 at its next node status (k8s
`pkg/kubelet/cm/devicemanager/manager.go`, `runEndpoint` and `markResourceUnhealthy`); and a
restarting pod of ours is still a pod of ours: our own plugin does not trip it. Looking for DaemonSets that mount
`/var/lib/kubelet/device-plugins` would not do: the SR-IOV and RDMA device plugins and KubeVirt's
handler mount it too, on the same GPU machines, and register other resources.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any

from gpu_nodes.vocabulary import DRA_GPU_DRIVER, GPU_RESOURCE, NAME_LABEL, PART_OF, PART_OF_LABEL

PLUGIN_IMAGE = "k8s-device-plugin"
# The other programs of the plugin image: none serves kubelet's device plugin socket.
NEIGHBOUR_PROGRAMS = frozenset({"gpu-feature-discovery", "mps-control-daemon", "config-manager"})
DRA_GPU_PROGRAM = "gpu-kubelet-plugin"
DEVICE_PLUGIN = "device-plugin"
DRA = "dra"
OPERATOR = "operator"
GPU_CLUSTER = "gpu-cluster"
# The DRA kubelet plugin a GPUCluster deploys and controls.
OPERATOR_DRA = "operator-dra"
# The DRA driver's charts, by name, and where each is developed.
DRA_CHARTS = {
    "nvidia-dra-driver-gpu": "NVIDIA/k8s-dra-driver-gpu",
    "dra-driver-nvidia-gpu": "kubernetes-sigs/dra-driver-nvidia-gpu",
}
_SHELLS = frozenset({"sh", "bash", "ash", "dash"})
_WORDS = re.compile(r"[^\s;&|()`'\"]+")


@dataclass(frozen=True)
class OtherAllocator:
    """A DaemonSet of someone else that hands out GPUs; `ref` is how handOver names it."""

    ref: str
    what: str
    kind: str  # DEVICE_PLUGIN, DRA, OPERATOR (a ClusterPolicy), GPU_CLUSTER or OPERATOR_DRA
    uid: str | None = None
    namespace: str | None = None
    selector: Mapping[str, str] | None = None


def programs_of(container: Mapping[str, Any]) -> set[str] | None:
    """The programs a container runs, by file name; None when it names none (the image's entrypoint runs).
    A shell's `-c` script is read word by word."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not container.get("command"):
        return None
    if argv[0].rsplit("/", 1)[-1] in _SHELLS and "-c" in argv[1:]:
        script = " ".join(argv[argv.index("-c") + 1 :])
        return {word.rsplit("/", 1)[-1] for word in _WORDS.findall(script)}
    return {argv[0].rsplit("/", 1)[-1]}


def runs_device_plugin(container: Mapping[str, Any]) -> bool:
    if PLUGIN_IMAGE not in str(container.get("image", "")):
        return False
    programs = programs_of(container)
    return programs is None or "nvidia-device-plugin" in programs or not programs & NEIGHBOUR_PROGRAMS


def runs_dra_gpu_plugin(container: Mapping[str, Any]) -> bool:
    return DRA_GPU_PROGRAM in (programs_of(container) or set())


def _long_running(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The containers that keep running: the pod's own and sidecars (init containers restarted `Always`)."""
    sidecars = [c for c in pod_spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return [*(pod_spec.get("containers") or []), *sidecars]


def is_ours(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(PART_OF_LABEL) == PART_OF


def allocator_daemonsets(daemonsets: Iterable[Mapping[str, Any]]) -> list[OtherAllocator]:
    """DaemonSets not ours that run the NVIDIA device plugin or NVIDIA's DRA GPU plugin, by ref."""
    found = []
    for ds in daemonsets:
        if is_ours(ds):
            continue
        metadata = ds.get("metadata") or {}
        spec = ds.get("spec") or {}
        containers = _long_running((spec.get("template") or {}).get("spec") or {})
        ref = f"{metadata.get('namespace')}/{metadata.get('name')}"
        plugins = [c for c in containers if runs_device_plugin(c)]
        dra = [c for c in containers if runs_dra_gpu_plugin(c)]
        if plugins:
            kind, what = DEVICE_PLUGIN, f"DaemonSet {ref} (image {plugins[0].get('image')})"
        elif dra:
            container = dra[0]
            cluster = _controlling_gpu_cluster(metadata)
            kind = OPERATOR_DRA if cluster else DRA
            what = (
                f"DaemonSet {ref} (NVIDIA's DRA driver, {_dra_source(metadata, cluster)}: container {container.get('name')} "
                f"runs {DRA_GPU_PROGRAM}, image {container.get('image')})"
            )
        else:
            continue
        selector = dict((spec.get("selector") or {}).get("matchLabels") or {})
        found.append(OtherAllocator(ref, what, kind, metadata.get("uid"), metadata.get("namespace"), selector))
    return sorted(found, key=lambda a: a.ref)


def _controlling_gpu_cluster(metadata: Mapping[str, Any]) -> str | None:
    """The GPUCluster that controls the DaemonSet, by name, if one does."""
    for owner in metadata.get("ownerReferences") or []:
        if owner.get("kind") == "GPUCluster" and owner.get("controller"):
            return str(owner.get("name"))
    return None


def _dra_source(metadata: Mapping[str, Any], cluster: str | None) -> str:
    """Who put NVIDIA's DRA driver there: a GPUCluster, or a chart of it (named, with its home)."""
    if cluster:
        return f"deployed by the GPU Operator's GPUCluster {cluster}"
    chart = ((metadata.get("labels") or {}).get(NAME_LABEL)) or ""
    return f"chart {chart} of {DRA_CHARTS[chart]}" if chart in DRA_CHARTS else "installed by hand or another chart"


def operator_policies(policies: Iterable[Mapping[str, Any]]) -> list[OtherAllocator]:
    """GPU Operator ClusterPolicies that deploy the operator's own device plugin."""
    found = []
    for policy in policies:
        plugin = (policy.get("spec") or {}).get("devicePlugin") or {}
        if plugin.get("enabled", True) is not False:
            name = (policy.get("metadata") or {}).get("name")
            what = f"the GPU Operator's ClusterPolicy {name} (devicePlugin enabled)"
            found.append(OtherAllocator(f"ClusterPolicy/{name}", what, OPERATOR))
    return found


def operator_clusters(clusters: Iterable[Mapping[str, Any]]) -> list[OtherAllocator]:
    """GPU Operator GPUClusters: each deploys the DRA driver's GPU part (see the module docstring)."""
    found = []
    for cluster in clusters:
        name = (cluster.get("metadata") or {}).get("name")
        what = f"the GPU Operator's GPUCluster {name} (its DRA driver hands out GPUs, driver {DRA_GPU_DRIVER})"
        found.append(OtherAllocator(f"GPUCluster/{name}", what, GPU_CLUSTER))
    return found


def dra_slices_on(slices: Iterable[Mapping[str, Any]], nodes: Set[str]) -> list[tuple[str, str]]:
    """(node, slice name) for each ResourceSlice of NVIDIA's DRA GPU driver on one of `nodes`."""
    found = []
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") == DRA_GPU_DRIVER and spec.get("nodeName") in nodes:
            found.append((str(spec["nodeName"]), str((item.get("metadata") or {}).get("name"))))
    return sorted(found)


def nodes_with_unexplained_gpus(
    nodes: Iterable[Mapping[str, Any]], ours: Set[str], with_plugin_pod: Set[str]
) -> list[tuple[str, str]]:
    """(node, allocatable) for each node of `ours` that advertises nvidia.com/gpu with no device
    plugin pod on it (see the module docstring)."""
    found = []
    for item in nodes:
        name = (item.get("metadata") or {}).get("name")
        allocatable = str(((item.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, "0"))
        if name in ours and name not in with_plugin_pod and allocatable not in ("0", ""):
            found.append((str(name), allocatable))
    return sorted(found)
