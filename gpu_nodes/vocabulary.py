"""The marks gpu-nodes writes on the cluster and reads back: label, taint and annotation keys,
the selectors built from them, and the resource names the NVIDIA device plugin advertises.

A key here is how a deployed stack, an operator's `kubectl` and NVIDIA's own tools find our
objects: changing a value relabels every deployed node and object (the golden state test,
tests/resources/test_golden_state.py, fails). The bottom of the package: it imports nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal


@dataclass(frozen=True)
class Taint:
    """A taint, and its identity wherever taints are compared: an empty value is no value."""

    key: str
    value: str | None
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value is not None else f"{self.key}:{self.effect}"

    @classmethod
    def from_k8s(cls, taint: dict[str, str]) -> Taint:
        """A taint as the API returns it; an empty value is no value, as kubectl shows it."""
        return cls(key=taint["key"], value=taint.get("value") or None, effect=taint["effect"])

    @property
    def slot(self) -> tuple[str, str]:
        """What the API server keeps unique on a node: one taint per key and effect."""
        return self.key, self.effect

    def to_k8s(self) -> dict[str, str]:
        taint = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            taint["value"] = self.value
        return taint


# --- ours: none of these keys is the user's to set ------------------------------------------

# The prefix of our own label, taint and annotation keys.
OWN_KEY_DOMAIN = "gpu-nodes.dev"

# Our own label on every node of a group; the group's DaemonSet and Jobs select on it.
GROUP_LABEL = f"{OWN_KEY_DOMAIN}/node-group"
# Which stack created an object: `<project>.<stack>`, on each object a claim covers.
STACK_LABEL = f"{OWN_KEY_DOMAIN}/stack"
# The readiness gate: keeps GPU work off a node until its verification passed; only our device
# plugin and verification pods tolerate it (gpu_nodes/proof/checklist.py).
GATE = Taint(key=f"{OWN_KEY_DOMAIN}/unverified", value="true", effect="NoSchedule")
# What preflight found on the machine's GPUs, as JSON on the node (gpu_nodes/preflight/facts.py).
FACTS_ANNOTATION = f"{OWN_KEY_DOMAIN}/gpu-facts"
# Device plugin pod template annotation: a new plugin config rolls the pods, as a new image does.
CONFIG_HASH_ANNOTATION = f"{OWN_KEY_DOMAIN}/config-hash"
# Device plugin pod template annotation, only under a declared MIG layout: the layout each GPU
# has (`1g.10gb=7`). The plugin reads the MIG devices when it starts, so a new layout rolls the pods.
MIG_DEVICES_ANNOTATION = f"{OWN_KEY_DOMAIN}/mig-devices"
# Verification pod template annotations. A Job's template is immutable, so a new value replaces
# the Job and it runs again: a new plugin image or config; a new round, when a node gated again
# after it degraded (gpu_nodes/providers/taints.py); a new check script.
PLUGIN_REVISION_ANNOTATION = f"{OWN_KEY_DOMAIN}/device-plugin-revision"
ROUND_ANNOTATION = f"{OWN_KEY_DOMAIN}/verification-round"
CHECK_HASH_ANNOTATION = f"{OWN_KEY_DOMAIN}/check-hash"
# On the workspace pods of the Pulumi Operator Stacks the fleet command exports;
# their NetworkPolicy selects the pods by it.
WORKSPACE_LABEL = f"{OWN_KEY_DOMAIN}/fleet-workspace"
# The device taint key, and the extended resource name, of the objects a dry-run create asks the API
# server whether it keeps DRA's gated fields with (gpu_nodes/providers/dra_features.py); stored nowhere.
PROBE_TAINT_KEY = f"{OWN_KEY_DOMAIN}/probe"
PROBE_RESOURCE = f"{OWN_KEY_DOMAIN}/probe"

# --- Kubernetes' recommended labels (app.kubernetes.io/*), on every object of ours -----------

NAME_LABEL = "app.kubernetes.io/name"
INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"
VERSION_LABEL = "app.kubernetes.io/version"
PART_OF_LABEL = "app.kubernetes.io/part-of"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
PART_OF = "gpu-nodes"
MANAGED_BY = "pulumi"
# Both the device-plugin pods and the verification Jobs (and their pods) carry it.
OWN_SELECTOR = f"{PART_OF_LABEL}={PART_OF}"


def group_selector(group: str) -> str:
    """Our pods and Jobs of one node group: the device-plugin pods (the DaemonSet's pod template)
    and the verification Jobs and their pods all carry `instance=<group>` beside `part-of`
    (gpu_nodes/manifests/naming.py `standard_labels`), so a provider process watches its groups'
    objects and no other stack's (docs/operations.md, "Large fleets")."""
    return f"{OWN_SELECTOR},{INSTANCE_LABEL}={group}"


# The containers of our verification pods whose outcome the proof reads: DCGM's and NCCL's, whose logs hold
# their reports, and the second container of a pod given GPUs, which must see none (gpu_nodes/manifests/verification.py).
DCGM_CONTAINER = "dcgm"
NCCL_CONTAINER = "nccl"
# Well-known keys of Kubernetes' (k8s.io/api/core/v1 well_known_labels.go, well_known_taints): what the DRA driver's
# ComputeDomain controller tolerates and spreads by (gpu_nodes/manifests/compute_domains.py, as its chart writes them).
HOSTNAME_LABEL = "kubernetes.io/hostname"
CONTROL_PLANE_KEY = "node-role.kubernetes.io/control-plane"
MASTER_KEY = "node-role.kubernetes.io/master"
# The container of a node's IMEX Job that lists the IMEX channels it was given (gpu_nodes/manifests/verification.py).
IMEX_CONTAINER = "imex"
ISOLATION_CONTAINER = "isolation"


# --- Kubernetes' own ---------------------------------------------------------------------------

# The label the Job controller puts on a Job's pods.
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# Pod Security Admission's namespace labels: `<prefix><mode>` and `<prefix><mode>-version`.
POD_SECURITY_PREFIX = "pod-security.kubernetes.io/"
PSA_ENFORCE = f"{POD_SECURITY_PREFIX}enforce"

# --- NVIDIA's ----------------------------------------------------------------------------------

# Every resource the NVIDIA device plugin advertises (whole GPUs, MIG devices) is named under it.
GPU_RESOURCE_PREFIX = "nvidia.com/"
# The resource the device plugin registers for whole GPUs (and, with migStrategy single, MIG
# devices); NVIDIA's chart tolerates a taint of the same key.
GPU_RESOURCE = f"{GPU_RESOURCE_PREFIX}gpu"
# The driver name under which NVIDIA's DRA driver publishes GPUs as ResourceSlices, and the
# DeviceClass its chart makes for them (dra-driver-nvidia-gpu `cmd/gpu-kubelet-plugin/main.go`
# `DriverName`, `deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml`).
DRA_GPU_DRIVER = "gpu.nvidia.com"
# What the plugin advertises a shared GPU's replicas as with `renameByDefault` (time-slicing or MPS):
# the resource's name and ".shared" (k8s-device-plugin `api/config/v1/replicas.go`, UnmarshalJSON sets
# each resource's Rename to `ResourceName.DefaultSharedRename()`).
SHARED_GPU_RESOURCE = f"{GPU_RESOURCE}.shared"
# The plugin's MIG strategies (k8s-device-plugin `api/config/v1/flags.go`, MigStrategyNone/Single/Mixed).
MigStrategy = Literal["none", "single", "mixed"]
# How the plugin shares a GPU, as its config file names each way (k8s-device-plugin v0.20.0
# `api/config/v1/sharing.go`: `sharing.timeSlicing`, `sharing.mps`; the two exclude each other, README
# "Shared Access to GPUs"), and as GPU Feature Discovery names them in `nvidia.com/gpu.sharing-strategy`
# (`SharingStrategyTimeSlicing` "time-slicing", `SharingStrategyMPS` "mps": gpu_nodes/preflight/facts.py).
SharingStrategy = Literal["timeSlicing", "mps"]
TIME_SLICING: Final = "timeSlicing"
MPS: Final = "mps"


@dataclass(frozen=True)
class GpuSharing:
    """How a group's device plugin shares each GPU, as its config says it (`devicePlugin.sharing`, or the older
    `timeSlicingReplicas`): the strategy, how many replicas each GPU is (1: not shared), whether the replicas are
    renamed `nvidia.com/gpu.shared`, and the setting the config gives the replicas in, which messages name."""

    strategy: SharingStrategy
    replicas: int
    renamed: bool = False
    # Under devicePlugin: `sharing`, or the older `timeSlicingReplicas`.
    setting: Literal["sharing", "timeSlicingReplicas"] = "sharing"

    @property
    def shares(self) -> bool:
        """Whether the plugin advertises replicas at all (MPS always does)."""
        return self.replicas > 1

    @property
    def replicas_key(self) -> str:
        """Where, under devicePlugin, the group's config gives its replicas."""
        return "sharing.replicas" if self.setting == "sharing" else "timeSlicingReplicas"


def mig_resource(profile: str) -> str:
    """The resource the plugin registers for a MIG profile under migStrategy mixed: "mig-" and the
    profile, the '+' of its attribute (`1g.10gb+me`, `+me.all`, `+gfx`) turned into '.', since a resource name
    cannot hold '+' (k8s-device-plugin v0.20.0 `internal/rm/rm.go` AddDefaultResourcesToConfig;
    `api/config/v1/resources.go` NewResourceName checks the name as a DNS subdomain)."""
    return f"{GPU_RESOURCE.split('/')[0]}/mig-{profile.replace('+', '.')}"


# NVIDIA's own node label that a GPU is there: GPU Feature Discovery, NFD rules, the device
# plugin chart's affinity and the GPU Operator key on it.
GPU_PRESENT_LABEL = f"{GPU_RESOURCE_PREFIX}gpu.present"

# GPU Feature Discovery's labels, which preflight's facts write in GFD's keys and formats
# (k8s-device-plugin `internal/lm/nvml.go` and `resource.go`).
GFD_LABEL_PREFIX = "nvidia.com/"
GFD_PRODUCT_LABEL = "nvidia.com/gpu.product"
GFD_MEMORY_LABEL = "nvidia.com/gpu.memory"
GFD_COUNT_LABEL = "nvidia.com/gpu.count"
GFD_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
GFD_SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"
GFD_MACHINE_LABEL = "nvidia.com/gpu.machine"
GFD_MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"
GFD_CLIQUE_LABEL = "nvidia.com/gpu.clique"
GFD_FAMILY_LABEL = "nvidia.com/gpu.family"
GFD_COMPUTE_MAJOR_LABEL = "nvidia.com/gpu.compute.major"
GFD_COMPUTE_MINOR_LABEL = "nvidia.com/gpu.compute.minor"
# What NVIDIA's MIG manager writes on a node while it repartitions the node's GPUs, read back: the device
# plugin's deploy label (the GPU Operator labels every GPU node with it `true`, controllers/state_manager.go
# gpuStateLabels, and its own plugin's DaemonSet selects it, assets/state-device-plugin/0500_daemonset.yaml),
# PAUSED_FOR_MIG_CHANGE while it works and `true` again after, a `false` left alone (mig-parted
# pkg/mig/reconfigure/reconfigure.go, maybeSetPaused and maybeSetTrue); the MIG config a user asks it to apply
# (cmd/nvidia-mig-manager, MigConfigLabel) and the state of that change (`pending`, `rebooting`, then `success`
# or `failed`: migConfigStateLabel).
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
PAUSED_FOR_MIG_CHANGE = "paused-for-mig-change"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"

# "true" where the plugin's config shares GPUs through MPS and no GPU is in MIG mode (`internal/lm/nvml.go`,
# newSharingLabeler); the chart's MPS control daemon selects its nodes by it (`daemonset-mps-control-daemon.yml`).
# Preflight's facts write it only on an MPS group's nodes (gpu_nodes/preflight/facts.py).
GFD_MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"
# Every label key preflight's facts may write: stack config may not set them as well.
FEATURE_LABEL_KEYS = (
    "nvidia.com/cuda.driver-version.full",
    "nvidia.com/cuda.driver-version.major",
    "nvidia.com/cuda.driver-version.minor",
    "nvidia.com/cuda.driver-version.revision",
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
    "nvidia.com/cuda.runtime-version.full",
    "nvidia.com/cuda.runtime-version.major",
    "nvidia.com/cuda.runtime-version.minor",
    "nvidia.com/cuda.runtime.major",
    "nvidia.com/cuda.runtime.minor",
    GFD_COUNT_LABEL,
    GFD_MEMORY_LABEL,
    GFD_PRODUCT_LABEL,
    GFD_REPLICAS_LABEL,
    GFD_SHARING_LABEL,
    GFD_MACHINE_LABEL,
    GFD_MIG_CAPABLE_LABEL,
    GFD_CLIQUE_LABEL,
    GFD_FAMILY_LABEL,
    GFD_COMPUTE_MAJOR_LABEL,
    GFD_COMPUTE_MINOR_LABEL,
)
