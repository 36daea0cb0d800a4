"""The NVIDIA device plugin DaemonSet (and its config file) for one node group.

It follows the upstream static manifest (deployments/static/nvidia-device-plugin.yml):
system-node-critical, no privilege escalation, every capability dropped, the kubelet
device-plugins hostPath, RollingUpdate; plus what the upstream Helm chart adds for the settings
we use (deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml and
_helpers.tpl): the `/var/run/cdi` mount, the driver root at `/driver-root` for CDI, and a
privileged container where PASS_DEVICE_SPECS is set. It selects only the group's nodes and
tolerates every taint the group sets.
"""

from __future__ import annotations

import json
from typing import Any

from gpu_nodes.config.checks import image_tag
from gpu_nodes.config.device_plugin import DevicePluginSpec
from gpu_nodes.config.node_group import NRI_TOOLKIT, NodeGroupSpec
from gpu_nodes.manifests.naming import content_hash, selector_labels, standard_labels
from gpu_nodes.vocabulary import (
    CONFIG_HASH_ANNOTATION,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    GATE,
    GPU_RESOURCE,
    GROUP_LABEL,
    MIG_DEVICES_ANNOTATION,
    MPS,
    PAUSED_FOR_MIG_CHANGE,
    Taint,
)

APP_NAME = "nvidia-device-plugin"
CONFIG_DIR = "/config"
CONFIG_KEY = "config.yaml"

# Under strict isolation the toolkit takes a container's GPUs from mounts under this directory,
# one per device, and ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers
# (nvidia-container-toolkit cmd/nvidia-container-runtime-hook/container_config.go, getDevices and
# deviceListAsVolumeMountsRoot; internal/modifier/cdi.go for CDI mode). The plugin's
# volume-mounts strategy mounts /dev/null there per GPU it hands out (k8s-device-plugin
# internal/plugin/server.go); the plugin itself gets every GPU, for NVML, the same way: /dev/null
# at <root>/all, which serves it unprivileged (a cdi group) as well as privileged (PASS_DEVICE_SPECS).
DEVICE_MOUNT_ROOT = "/var/run/nvidia-container-devices"
# Where the plugin reads the driver's files to write its CDI specs (k8s-device-plugin
# api/config/v1/consts.go, DefaultContainerDriverRoot; the chart mounts nvidiaDriverRoot there).
CONTAINER_DRIVER_ROOT = "/driver-root"
# The plugin's own default for NVIDIA_DRIVER_ROOT (cmd/nvidia-device-plugin flag nvidia-driver-root).
HOST_DRIVER_ROOT = "/"

# Upstream's own toleration, kept so that a node tainted the upstream way also gets a plugin.
_UPSTREAM_TOLERATION = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}


def daemonset_name(group: NodeGroupSpec) -> str:
    return f"{APP_NAME}-{group.name}"


def config_map_name(group: NodeGroupSpec) -> str:
    return f"{APP_NAME}-{group.name}-config"


def service_account_name(group: NodeGroupSpec) -> str:
    return daemonset_name(group)


def service_account_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """The plugin pods' own ServiceAccount, without an API token (see api_access)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        # No version label: the account runs no image, so a new plugin image leaves it as it is.
        "metadata": {
            "name": service_account_name(group),
            "namespace": group.device_plugin.namespace,
            "labels": standard_labels(APP_NAME, group.name, "device-plugin"),
        },
        "automountServiceAccountToken": False,
    }


def api_access(group: NodeGroupSpec) -> dict[str, Any]:
    """The pod's account: its own, not the namespace's `default` (which other pods there may share
    and someone may grant rights to), and no token mounted. The plugin talks only to kubelet, over
    its socket; the chart makes a ServiceAccount with a ClusterRole on nodes only for what reads the
    API: its config-manager sidecar (which follows the node's nvidia.com/device-plugin.config label)
    and GFD (templates/service-account.yml and role.yml, `if or $options.hasConfigMap
    .Values.gfd.enabled`). We run neither: our config file is a ConfigMap mounted as a volume. The
    pod says so as well as its account: a pod's own field wins over its account's (Kubernetes,
    "Configure Service Accounts for Pods")."""
    return {"serviceAccountName": service_account_name(group), "automountServiceAccountToken": False}


def plugin_config(group: NodeGroupSpec) -> dict[str, Any] | None:
    """The plugin's config file (`version: v1`), only when MIG or sharing (time-slicing, MPS) asks for one."""
    spec = group.device_plugin
    if not spec.needs_config_file:
        return None
    config: dict[str, Any] = {
        "version": "v1",
        "flags": {"migStrategy": spec.mig_strategy, "failOnInitError": spec.fail_on_init_error},
    }
    if spec.sharing.shares:
        config["sharing"] = spec.sharing.plugin_config()
    return config


def plugin_revision(group: NodeGroupSpec) -> str:
    """Changes whenever what the plugin registers, or how it hands GPUs out, could change: its
    image, its config, the declared MIG layout or the group's isolation (a group without a layout,
    or with the default isolation, keeps the revision it had)."""
    strict = {"isolation": group.isolation} if group.isolation != "default" else {}
    # The IMEX channels it adds to each container it gives GPUs, where it adds any.
    imex = {"imex": list(group.device_plugin.imex.channel_ids)} if group.device_plugin.imex.channel_ids else {}
    return content_hash(
        {"image": group.device_plugin.image, "config": plugin_config(group), **_mig_layout(group), **strict, **imex}
    )


def _mig_layout(group: NodeGroupSpec) -> dict[str, str]:
    """The declared MIG layout, where there is one. The plugin finds the MIG devices once, when it
    starts (k8s-device-plugin internal/rm/nvml_manager.go, NewNVMLResourceManagers, builds the
    device map of internal/rm/device_map.go), which is why the GPU Operator's MIG manager stops it
    before it applies a layout and starts it after (NVIDIA/mig-parted
    deployments/gpu-operator/reconfigure-mig.sh): a new layout needs a new plugin."""
    layout = group.device_plugin.mig_layout
    return {"migDevices": layout} if layout else {}


def pod_annotations(group: NodeGroupSpec) -> dict[str, str]:
    """The plugin pods' annotations: a new config, or a new declared MIG layout, rolls them."""
    annotations = {CONFIG_HASH_ANNOTATION: content_hash(plugin_config(group))}
    if group.device_plugin.mig_layout:
        annotations[MIG_DEVICES_ANNOTATION] = group.device_plugin.mig_layout
    return annotations


def tolerations(taints: tuple[Taint, ...]) -> list[dict[str, str]]:
    """Tolerate each of the group's taints exactly, plus upstream's `nvidia.com/gpu` one."""
    result = []
    for taint in taints:
        if taint.value is None:
            result.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
        else:
            result.append({"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect})
    covered = any(t["key"] == GPU_RESOURCE and t["effect"] == "NoSchedule" and t["operator"] == "Exists" for t in result)
    return result if covered else [*result, dict(_UPSTREAM_TOLERATION)]


def config_map_manifest(group: NodeGroupSpec) -> dict[str, Any] | None:
    config = plugin_config(group)
    if config is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": config_map_name(group),
            "namespace": group.device_plugin.namespace,
            "labels": _labels(group),
        },
        # JSON is valid YAML; it keeps the file byte-for-byte stable between runs.
        "data": {CONFIG_KEY: json.dumps(config, indent=2, sort_keys=True) + "\n"},
    }


def daemonset_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    spec = group.device_plugin
    env = [{"name": "FAIL_ON_INIT_ERROR", "value": str(spec.fail_on_init_error).lower()}, *device_list_env(group)]
    mounts: list[dict[str, Any]] = [
        {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
        {"name": "cdi-root", "mountPath": "/var/run/cdi"},
    ]
    # Every hostPath with its type, the chart's where it has the volume (daemonset-device-plugin.yml:
    # the kubelet's directory `Directory`, which kubelet makes and which must be there; /var/run/cdi
    # `DirectoryOrCreate`; the driver root `Directory`).
    volumes: list[dict[str, Any]] = [
        {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}},
        {"name": "cdi-root", "hostPath": {"path": "/var/run/cdi", "type": "DirectoryOrCreate"}},
    ]
    driver_env, driver_mounts, driver_volumes = driver_root(group)
    env += driver_env
    mounts += driver_mounts
    volumes += driver_volumes
    mps_env, mps_mounts, mps_volumes = mps_plugin_parts(group)
    env += mps_env
    mounts += mps_mounts
    volumes += mps_volumes
    if spec.needs_config_file:
        env.append({"name": "CONFIG_FILE", "value": f"{CONFIG_DIR}/{CONFIG_KEY}"})
        mounts.append({"name": "config", "mountPath": CONFIG_DIR, "readOnly": True})
        volumes.append({"name": "config", "configMap": {"name": config_map_name(group)}})
    else:
        env.append({"name": "MIG_STRATEGY", "value": spec.mig_strategy})
    if spec.mig_strategy != "none":
        env.append({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"})
    if group.isolation == "strict":
        mounts.append({"name": "all-gpus", "mountPath": f"{DEVICE_MOUNT_ROOT}/all", "readOnly": True})
        volumes.append({"name": "all-gpus", "hostPath": {"path": "/dev/null", "type": "CharDevice"}})
    env += health_check_env(spec)
    env += plugin_settings_env(spec)
    container_resources = {"resources": spec.resources} if spec.resources else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": daemonset_name(group), "namespace": spec.namespace, "labels": _labels(group)},
        "spec": {
            "selector": {"matchLabels": selector_labels(APP_NAME, group.name)},
            "updateStrategy": update_strategy(spec),
            "template": {
                "metadata": {
                    "labels": _labels(group),
                    "annotations": {**pod_annotations(group), **nri_annotations(group, PLUGIN_CONTAINER)},
                },
                "spec": {
                    "nodeSelector": {GROUP_LABEL: group.name},
                    **mig_manager_pause(spec),
                    # The readiness gate too: the plugin must land for the node to pass.
                    "tolerations": [*tolerations((*group.taints, GATE)), *spec.tolerations],
                    "priorityClassName": "system-node-critical",
                    **api_access(group),
                    **image_pull_secrets(group),
                    **management_runtime_class(group),
                    "containers": [
                        {
                            "name": PLUGIN_CONTAINER,
                            "image": spec.image,
                            **image_pull_policy(spec.image_pull_policy),
                            "env": env,
                            "securityContext": security_context(group),
                            **container_resources,
                            "volumeMounts": mounts,
                        }
                    ],
                    "volumes": volumes,
                },
            },
        },
    }


def mig_manager_pause(spec: DevicePluginSpec) -> dict[str, Any]:
    """With `pauseForMigManager`: a node affinity that keeps the plugin off a node while NVIDIA's MIG manager
    reconfigures its GPUs, as the GPU Operator's own plugin is kept off by its nodeSelector
    `nvidia.com/gpu.deploy.device-plugin: "true"` (gpu-operator assets/state-device-plugin/0500_daemonset.yaml).
    The MIG manager sets that label to `paused-for-mig-change` on the node and back to `true` after, leaving a
    `false` alone (mig-parted pkg/mig/reconfigure/reconfigure.go): so NotIn, which a node without the label, or with
    `false` (how a node keeps the Operator's plugin off for ours), also matches. The DaemonSet controller deletes a
    daemon pod whose node no longer matches its required affinity and creates one when it matches again
    (kubernetes pkg/controller/daemon/daemon_controller.go, NodeShouldRunDaemonPod). Without the setting, nothing:
    the DaemonSet stays as deployed stacks have it."""
    if not spec.pause_for_mig_manager:
        return {}
    paused = {"key": DEVICE_PLUGIN_DEPLOY_LABEL, "operator": "NotIn", "values": [PAUSED_FOR_MIG_CHANGE]}
    terms = {"nodeSelectorTerms": [{"matchExpressions": [paused]}]}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}}


def update_strategy(spec: DevicePluginSpec) -> dict[str, Any]:
    """RollingUpdate, at `maxUnavailable` nodes at a time when set (else Kubernetes' 1)."""
    if spec.max_unavailable is None:
        return {"type": "RollingUpdate"}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": spec.max_unavailable}}


def rollout_steps(group: NodeGroupSpec) -> int:
    """How many rounds a rollout of the group's plugin takes: its nodes, `maxUnavailable` at a time."""
    nodes = len(group.nodes)
    step = group.device_plugin.max_unavailable or 1
    at_once = -(-nodes * int(step[:-1]) // 100) if isinstance(step, str) else int(step)
    return -(-nodes // max(at_once, 1))


def rollout_timeout(group: NodeGroupSpec) -> str:
    """How long the engine waits for the DaemonSet's rollout: the provider's own 10 minutes, or
    two minutes a round for a group that rolls more rounds than that covers."""
    return f"{max(10, 2 * rollout_steps(group))}m"


def image_pull_policy(policy: str | None) -> dict[str, str]:
    """A container's `imagePullPolicy`, or nothing for Kubernetes' default."""
    return {"imagePullPolicy": policy} if policy else {}


def image_pull_secrets(group: NodeGroupSpec) -> dict[str, list[dict[str, str]]]:
    """A pod's `imagePullSecrets`: the stack's pull secret, when there is one."""
    return {"imagePullSecrets": [{"name": group.image_pull_secret}]} if group.image_pull_secret else {}


def health_check_env(spec: DevicePluginSpec) -> list[dict[str, str]]:
    """The plugin's DP_DISABLE_HEALTHCHECKS (`all`, or XIDs to ignore beside its own list) and
    DP_ENABLE_HEALTHCHECKS (XIDs checked although ignored, or `all`), as k8s-device-plugin
    internal/rm/health.go reads them; nothing when the defaults stand."""
    if not spec.health_checks:
        return [{"name": "DP_DISABLE_HEALTHCHECKS", "value": "all"}]
    env = []
    if spec.ignored_xids:
        env.append({"name": "DP_DISABLE_HEALTHCHECKS", "value": _xid_list(spec.ignored_xids)})
    if spec.enabled_xids:
        enabled = spec.enabled_xids
        env.append({"name": "DP_ENABLE_HEALTHCHECKS", "value": enabled if isinstance(enabled, str) else _xid_list(enabled)})
    return env


def _xid_list(xids: tuple[int, ...]) -> str:
    return ",".join(str(x) for x in xids)


def runtime_class_field(name: str | None) -> dict[str, str]:
    """`runtimeClassName: name`, or nothing for the node's default runtime."""
    return {"runtimeClassName": name} if name else {}


# How a pod of NVIDIA's own (the plugin, its MPS control daemon, dcgm-exporter) gets every GPU of a node whose toolkit
# injects through NRI (containerToolkit: nri): no nvidia runtime is there to give it them, so, as the GPU Operator does
# for its operands in that mode, an annotation names the toolkit's management CDI device for the container, which the
# toolkit's NRI plugin injects (gpu-operator controllers/object_controls.go, setNRIPluginAnnotation:
# `nvidia.cdi.k8s.io/container.<name>: management.nvidia.com/gpu=all`; nvidia-container-toolkit
# cmd/nvidia-ctk-installer/container/runtime/nri/plugin.go reads `nvidia.cdi.k8s.io`, and the installer writes that
# device's spec in CDI mode, cmd/nvidia-ctk-installer/toolkit/toolkit.go generateCDISpec). The toolkit's plugin
# injects management devices only into pods of its own namespace and of those its installer lists
# (NRI_MANAGEMENT_CDI_DEVICE_NAMESPACES, toolkit v1.20.0; v1.19 injected nothing outside its own namespace): see
# docs/machines.md, "NRI-mode nodes".
NRI_ANNOTATION_DOMAIN = "nvidia.cdi.k8s.io"
MANAGEMENT_CDI_DEVICE = "management.nvidia.com/gpu=all"
PLUGIN_CONTAINER = "nvidia-device-plugin-ctr"


def nri_annotations(group: NodeGroupSpec, container: str) -> dict[str, str]:
    """The annotation that asks the toolkit's NRI plugin for every GPU in `container`, on an NRI group's pods only."""
    if group.container_toolkit != NRI_TOOLKIT:
        return {}
    return {f"{NRI_ANNOTATION_DOMAIN}/container.{container}": MANAGEMENT_CDI_DEVICE}


def management_runtime_class(group: NodeGroupSpec) -> dict[str, str]:
    """The RuntimeClass a pod of NVIDIA's own names: the stack's, but none on an NRI group's nodes, which have no
    nvidia runtime for it to name (the GPU Operator renders none in that mode: controllers/object_controls.go,
    setRuntimeClassName, and state_manager.go leaves out its pre-requisites state)."""
    return {} if group.container_toolkit == NRI_TOOLKIT else runtime_class_field(group.runtime_class)


def plugin_settings_env(spec: DevicePluginSpec) -> list[dict[str, str]]:
    """The plugin's own settings (how it names GPUs, its 2026 settings) and IMEX channels, each only where the group
    sets it, so that a group without them keeps the plugin's defaults, as environment variables of k8s-device-plugin
    v0.20.0 cmd/nvidia-device-plugin/main.go (urfave/cli splits a list variable at commas)."""
    env = []
    if spec.device_id_strategy is not None:
        env.append({"name": "DEVICE_ID_STRATEGY", "value": spec.device_id_strategy})
    if spec.allocation_policy:
        env.append({"name": "SHARED_DEVICES_ALLOCATION_POLICY", "value": spec.allocation_policy})
    if spec.cdi_feature_flags:
        env.append({"name": "CDI_FEATURE_FLAGS", "value": ",".join(spec.cdi_feature_flags)})
    if spec.cdi_disable_hooks:
        env.append({"name": "CDI_DISABLE_HOOKS", "value": ",".join(spec.cdi_disable_hooks)})
    if spec.device_discovery_strategy:
        env.append({"name": "DEVICE_DISCOVERY_STRATEGY", "value": spec.device_discovery_strategy})
    if spec.imex.channel_ids:
        env.append({"name": "IMEX_CHANNEL_IDS", "value": ",".join(str(c) for c in spec.imex.channel_ids)})
        env.append({"name": "IMEX_REQUIRED", "value": str(spec.imex.required).lower()})
    return env


def device_list_env(group: NodeGroupSpec) -> list[dict[str, str]]:
    """How the plugin hands a pod its GPUs, so that the pod keeps them.

    - cdi: as CDI device names passed through the CRI (`DEVICE_LIST_STRATEGY=cdi-cri`); the
      plugin writes the specs under /var/run/cdi, and they list the device nodes.
    - strict isolation: as volume mounts (`DEVICE_LIST_STRATEGY=volume-mounts`, one /dev/null
      mount per GPU under DEVICE_MOUNT_ROOT), the one list the hardened toolkit reads from an
      unprivileged container (`accept-nvidia-visible-devices-as-volume-mounts = true`); plus
      `PASS_DEVICE_SPECS=true`, for the reason below.
    - otherwise: the upstream default (`envvar`, read by the nvidia runtime) plus
      `PASS_DEVICE_SPECS=true` (the chart's `compatWithCPUManager`), so that kubelet also puts
      the device nodes into the pod's spec. Without them, a `systemctl daemon-reload` under
      the systemd cgroup driver, or the CPU manager's static policy, resets the device cgroup
      and running pods lose their GPUs ("Failed to initialize NVML: Unknown Error",
      nvidia-container-toolkit issue 48). The fake and the real machines alike use systemd.
    """
    if group.gpu_access == "cdi":
        return [{"name": "DEVICE_LIST_STRATEGY", "value": "cdi-cri"}]
    if group.isolation == "strict":
        return [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}, {"name": "PASS_DEVICE_SPECS", "value": "true"}]
    return [{"name": "PASS_DEVICE_SPECS", "value": "true"}]


def passes_device_specs(group: NodeGroupSpec) -> bool:
    """Every group but cdi hands kubelet the device nodes (device_list_env)."""
    return group.gpu_access != "cdi"


def driver_root(group: NodeGroupSpec) -> tuple[list[dict[str, str]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The driver root's env, mount and volume, as the chart writes them for `nvidiaDriverRoot`.

    Under cdi the plugin builds its CDI handler on the driver files it sees at /driver-root and
    exits when it cannot write the spec ("unable to create cdi spec file",
    cmd/nvidia-device-plugin/plugin-manager.go; internal/cdi/cdi.go), so the host's root is mounted
    there read-only (hostPath type Directory, as the chart does) with NVIDIA_DRIVER_ROOT, which the
    spec's paths are rewritten to, and NVIDIA_CDI_HOOK_PATH, the program the spec's hooks run on
    the host (preflight checks each machine has it). Without cdi only the CDI handler would read
    the mount, so there is none: it would roll every plugin pod of those groups for nothing.
    NVIDIA_DRIVER_ROOT is then set only when it is not the plugin's default `/`: PASS_DEVICE_SPECS
    joins it to each device node's host path (internal/plugin/server.go, apiDeviceSpecs).
    """
    root = group.device_plugin.driver_root
    if group.gpu_access != "cdi":
        return ([{"name": "NVIDIA_DRIVER_ROOT", "value": root}] if root != HOST_DRIVER_ROOT else []), [], []
    env = [
        {"name": "NVIDIA_DRIVER_ROOT", "value": root},
        {"name": "NVIDIA_CDI_HOOK_PATH", "value": group.device_plugin.cdi_hook_path},
    ]
    mount = {"name": "driver-root", "mountPath": CONTAINER_DRIVER_ROOT, "readOnly": True, **_driver_root_propagation(root)}
    volume = {"name": "driver-root", "hostPath": {"path": root, "type": "Directory"}}
    return env, [mount], [volume]


def _driver_root_propagation(root: str) -> dict[str, str]:
    """`mountPropagation: HostToContainer` for a driver container's root, as the GPU Operator mounts
    it (gpu-operator assets/state-device-plugin/0500_daemonset.yaml, driver-install-dir at
    /driver-root). The driver container mounts its root filesystem at that path on the host; when it
    restarts, a new mount replaces the old, and a mount without propagation keeps showing the plugin
    the old one, empty, until the plugin's pod is replaced. HostToContainer (rslave) passes the new
    one in; unlike Bidirectional it needs no privileged container (kubernetes
    pkg/apis/core/validation/validation.go, validateMountPropagation). The host's own `/` is not
    replaced that way: its mount stays as the chart writes it, and those pods keep their template."""
    return {"mountPropagation": "HostToContainer"} if root != HOST_DRIVER_ROOT else {}


def security_context(group: NodeGroupSpec) -> dict[str, Any]:
    """The chart's (templates/_helpers.tpl, nvidia-device-plugin.securityContext), in its order.

    Where PASS_DEVICE_SPECS is set (every group but cdi), `privileged: true`, as the chart does for
    compatWithCPUManager: the plugin passes /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools
    and /dev/nvidia-modeset to kubelet only when it finds them in its own container
    (internal/plugin/server.go, apiDeviceSpecs, os.Stat); privileged, it sees the host's /dev, so
    a pod's spec lists every device node the host has and keeps them after a cgroup reset.
    Otherwise no privilege escalation and every capability dropped, SYS_ADMIN added under MIG.
    """
    if passes_device_specs(group):
        return {"privileged": True}
    return _unprivileged_context(group.device_plugin.mig_strategy)


def _unprivileged_context(mig_strategy: str) -> dict[str, Any]:
    """Upstream's: no privilege escalation, every capability dropped; with MIG, SYS_ADMIN.

    With a MIG strategy the upstream chart (templates/_helpers.tpl, requiresCapSysAdmin) sets
    NVIDIA_MIG_MONITOR_DEVICES=all and adds SYS_ADMIN: NVML lists MIG devices only through the
    driver's `mig/monitor` capability, which the container toolkit injects for that variable
    and which only a process with CAP_SYS_ADMIN may use (MIG user guide, "Device Nodes and
    Capabilities"). Without both, the plugin sees no MIG device and registers none. Unlike the
    chart, which replaces the whole context, ALL is still dropped first, so SYS_ADMIN is the only
    capability. `allowPrivilegeEscalation: false` goes: Kubernetes documents it as always true
    for a container with CAP_SYS_ADMIN, so saying false would be untrue.
    """
    if mig_strategy == "none":
        return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}


def _labels(group: NodeGroupSpec) -> dict[str, str]:
    return standard_labels(APP_NAME, group.name, "device-plugin", image_tag(group.device_plugin.image))


# --- MPS ----------------------------------------------------------------------------------------
#
# Under `sharing.strategy: mps` the plugin and its MPS control daemon (gpu_nodes/manifests/
# mps_control_daemon.py) meet in one host directory, as the chart lays it out (k8s-device-plugin v0.20.0
# `deployments/helm/nvidia-device-plugin/templates/daemonset-device-plugin.yml` and
# `daemonset-mps-control-daemon.yml`, `values.yaml` `mps.root`): the host's MPS root mounted at `/mps`
# (`cmd/mps-control-daemon/mps/root.go`, ContainerRoot), where the daemon makes each resource's pipe and
# log directories and its `.ready` file, and `<root>/shm`, a tmpfs the daemon's init container mounts
# (`mps-control-daemon mount-shm`), as the containers' `/dev/shm`. The plugin waits for the daemon's
# `.ready` file and an answer on its control pipe before it serves (`internal/plugin/mps.go`,
# waitForDaemon), then gives each container it allocates `CUDA_MPS_PIPE_DIRECTORY` and mounts of the
# resource's pipe directory and the shm (updateReponse): what makes a CUDA program in the pod an MPS client.
MPS_HOST_ROOT = "/run/nvidia/mps"
MPS_CONTAINER_ROOT = "/mps"
MPS_SHM = "/dev/shm"


def mps_volumes() -> list[dict[str, Any]]:
    """The chart's two hostPath volumes: the MPS root (made when missing) and its shm directory."""
    return [
        {"name": "mps-root", "hostPath": {"path": MPS_HOST_ROOT, "type": "DirectoryOrCreate"}},
        {"name": "mps-shm", "hostPath": {"path": f"{MPS_HOST_ROOT}/shm"}},
    ]


def mps_mounts() -> list[dict[str, Any]]:
    """Where a container of the plugin or its daemon mounts the two: the shm at /dev/shm, the root at /mps."""
    return [{"name": "mps-shm", "mountPath": MPS_SHM}, {"name": "mps-root", "mountPath": MPS_CONTAINER_ROOT}]


def mps_plugin_parts(group: NodeGroupSpec) -> tuple[list[dict[str, str]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The plugin container's MPS env, mounts and volumes, as the chart writes them: `MPS_ROOT` (the
    plugin's --mps-root, which it joins to each resource's pipe directory in the mounts it hands pods), the
    MPS root at `/mps` and the shm at `/dev/shm` ("needed to allow for MPS daemon health-checking").
    Nothing without MPS: the chart mounts them everywhere, but here a time-sliced or unshared group keeps
    the pods it had."""
    if group.device_plugin.sharing.strategy != MPS:
        return [], [], []
    env = [{"name": "MPS_ROOT", "value": MPS_HOST_ROOT}]
    return env, mps_mounts(), mps_volumes()
