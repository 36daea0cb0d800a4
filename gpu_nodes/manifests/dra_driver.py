"""NVIDIA's DRA driver for a group whose GPUs it allocates (`allocator: dra`): its kubelet plugin on
exactly the group's nodes, the plugin's account and rights, and the three DeviceClasses.

Rendered as kubernetes-sigs/dra-driver-nvidia-gpu's Helm chart renders them
(`deployments/helm/dra-driver-nvidia-gpu/`: `values.yaml`, `templates/kubeletplugin.yaml`,
`templates/rbac-kubeletplugin.yaml`, the DeviceClass templates, `templates/_helpers.tpl`) with GPU
allocation on, its health check on where the cluster keeps device taints, and ComputeDomains as the
group says: `resources.gpus.enabled=true`
with `gpuResourcesEnabledOverride=true`, which `templates/validation.yaml` demands because the
driver's GPU part and the device plugin must not share a node, and
`resources.computeDomains.enabled` from `dra.computeDomains`: off, the DaemonSet runs only the `gpus`
container (`gpu-kubelet-plugin`); on, the `compute-domains` container before it, and the stack's
ComputeDomain objects come from compute_domains.py. What we do as the device plugin's DaemonSet does (device_plugin.py), so that
both allocators behave alike: the group's nodes by the group label instead of the chart's NFD
affinity, the group's taints, the readiness gate and upstream's `nvidia.com/gpu` tolerated, our
`app.kubernetes.io/*` labels, the stack's pull secret, `system-node-critical` (also the chart's).
One DaemonSet, ServiceAccount, ClusterRole and ClusterRoleBinding per group, named after it, so
that two DRA groups of a stack do not collide; the DeviceClasses are cluster-wide and shared by
every DRA group (`device_classes`, created once).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from gpu_nodes.advisories import DRA_DRIVER_RELEASE
from gpu_nodes.config.checks import image_tag
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests import compute_domains
from gpu_nodes.manifests.device_plugin import image_pull_secrets, tolerations
from gpu_nodes.manifests.naming import claimed_labels, content_hash, dns_label, selector_labels, standard_labels
from gpu_nodes.proof.dra import GPU_DEVICE_TYPE, MIG_DEVICE_TYPE
from gpu_nodes.vocabulary import DRA_GPU_DRIVER, GATE, GPU_RESOURCE, GROUP_LABEL

APP_NAME = "dra-driver-nvidia-gpu"
COMPONENT = "kubelet-plugin"
RESOURCE_API_VERSION = "resource.k8s.io/v1"


@dataclass(frozen=True)
class DriverRelease:
    """One release of the driver: its chart, its image and where both were read."""

    chart: str
    version: str  # the chart's `version` and `appVersion` (the project releases them together)
    repository: str  # values.yaml `image.repository`
    pull_policy: str  # values.yaml `image.pullPolicy`
    source: str

    @property
    def image(self) -> str:
        """The chart's `fullimage`: `<repository>:v<appVersion>` (templates/_helpers.tpl)."""
        return f"{self.repository}:v{self.version}"


# The newest release: v0.5.0 (August 2026; kubernetes-sigs/dra-driver-nvidia-gpu issue 1365, PR 1367
# "Bump versions for the release of v0.5.0"), its image and chart promoted to the Kubernetes project's
# registry by kubernetes/k8s.io PR 9845 (image digest sha256:e1f104e64383ee693e982a5e6b7cf0b750023aaa5cc9b7dcc37c8e0549232933).
# Before it: 0.4.1 (June 2026), 0.4.0 (May 2026), the first releases under this name.
RELEASE = DriverRelease(
    chart="dra-driver-nvidia-gpu",
    version=DRA_DRIVER_RELEASE,
    repository="registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu",
    pull_policy="IfNotPresent",
    source="kubernetes-sigs/dra-driver-nvidia-gpu v0.5.0, deployments/helm/dra-driver-nvidia-gpu",
)

# values.yaml `kubeletPlugin`: where kubelet finds plugins to register and the plugins' sockets.
KUBELET_REGISTRAR_DIRECTORY = "/var/lib/kubelet/plugins_registry"
KUBELET_PLUGINS_DIRECTORY = "/var/lib/kubelet/plugins"
CDI_ROOT = "/var/run/cdi"
# Where the plugin reads the host's driver (the chart mounts `nvidiaDriverRoot` there).
CONTAINER_DRIVER_ROOT = "/driver-root"
# values.yaml `kubeletPlugin.containers.gpus.healthcheckPort`: the gRPC health service its probes call.
HEALTHCHECK_PORT = 51516
# values.yaml `logVerbosity`, `kubeletPlugin.metrics`.
LOG_VERBOSITY = "4"
METRICS_ENDPOINT = ":8080"
METRICS_PATH = "/metrics"

# The DeviceClasses the chart renders with `resources.gpus.enabled`: by name, and the CEL selector each
# renders (the driver, and the device's `type` attribute, deviceinfo.go). Of the chart's templates the
# index this was read from holds only deviceclass-gpu.yaml (jgehrcke/k8s-dra-driver-gpu commit d7b7d1ec,
# `deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml`: under `resources.gpus.enabled`,
# and `extendedResourceName: nvidia.com/gpu` where the resource API is v1). The other two are read from
# what renders the same classes: the GPU Operator's copies of the chart's objects
# (NVIDIA/gpu-operator commit 31dfd0eb, `manifests/state-dra-driver/0400_deviceclass-gpu.yaml`,
# `0410_deviceclass-mig.yaml`, `0430_deviceclass-vfio-gpu.yaml`: the same three selectors, none
# conditional), and the driver's docs, whose chart reference says `resources.gpus.enabled` enables
# "the GPU kubelet plugin and associated DeviceClass objects (gpu.nvidia.com, mig.nvidia.com,
# vfio.gpu.nvidia.com)". The VFIO class selects devices of `type: vfio`, which the driver publishes only
# under its PassthroughSupport gate (kubernetes-sigs/dra-driver-nvidia-gpu PR 668; pkg/featuregates,
# alpha, off): rendered, as the chart renders it, it selects nothing here.
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
VFIO_DEVICE_CLASS = "vfio.gpu.nvidia.com"
VFIO_DEVICE_TYPE = "vfio"
_TYPE_SELECTOR = "device.driver == '{driver}' && device.attributes['{driver}'].type == '{type}'"
# The chart's feature gate for the GPU health check (values.yaml `featureGates`, pkg/featuregates
# `NVMLDeviceHealthCheck`: alpha, off by default in the driver since v0.3).
HEALTH_CHECK_GATE = "NVMLDeviceHealthCheck"


def daemonset_name(group: NodeGroupSpec) -> str:
    """The chart's `<name>-kubelet-plugin`, one per group."""
    return dns_label(APP_NAME, COMPONENT, group.name)


def service_account_name(group: NodeGroupSpec) -> str:
    return daemonset_name(group)


def cluster_role_name(group: NodeGroupSpec) -> str:
    """The chart's `<name>-clusterrole-kubeletplugin`, one per group: a ClusterRole is cluster-wide."""
    return dns_label(APP_NAME, COMPONENT, group.name)


def namespace(group: NodeGroupSpec) -> str:
    """The group's allocator's namespace: the device plugin's, which already enforces Pod Security
    `privileged` for its hostPath mounts (the kubelet plugin mounts the kubelet's directories and
    runs privileged, values.yaml `kubeletPlugin.containers.gpus.securityContext`)."""
    return group.device_plugin.namespace


def plugin_revision(group: NodeGroupSpec, release: DriverRelease = RELEASE) -> str:
    """Changes whenever what the kubelet plugin publishes could change: its image, the driver root, its ComputeDomains
    or its dynamic MIG (each only where the group turns it on)."""
    more: dict[str, Any] = {"computeDomains": True} if group.dra.compute_domains else {}
    more |= {"migProfiles": list(group.dra.mig_profiles)} if group.dra.mig_profiles else {}
    return content_hash({"image": release.image, "driverRoot": group.device_plugin.driver_root, **more})


def service_account_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """The kubelet plugin's ServiceAccount (the chart's `<fullname>-service-account-kubeletplugin`).
    Its token is mounted: the plugin writes ResourceSlices and reads claims through the API."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": service_account_name(group), "namespace": namespace(group), "labels": _unversioned(group)},
    }


def cluster_role_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """templates/rbac-kubeletplugin.yaml's ClusterRole, rule for rule. The ComputeDomain rule stays:
    the chart renders it whichever parts are on. Its namespaced Role and RoleBinding (get
    `computedomaincliques`, and Deployments under the MPSSupport gate) serve ComputeDomains and MPS,
    both off here, and are not rendered."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": cluster_role_name(group), "labels": _unversioned(group)},
        "rules": [
            {"apiGroups": ["resource.nvidia.com"], "resources": ["computedomains"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceslices"],
                "verbs": ["get", "list", "watch", "create", "update", "delete"],
            },
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        ],
    }


def cluster_role_binding_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """templates/rbac-kubeletplugin.yaml's ClusterRoleBinding: the group's account to its ClusterRole."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": cluster_role_name(group), "labels": _unversioned(group)},
        "subjects": [{"kind": "ServiceAccount", "name": service_account_name(group), "namespace": namespace(group)}],
        "roleRef": {"kind": "ClusterRole", "name": cluster_role_name(group), "apiGroup": "rbac.authorization.k8s.io"},
    }


# The driver's dynamic MIG (pkg/featuregates `DynamicMIG`, alpha, off by default): it excludes NVMLDeviceHealthCheck
# (site/content/docs/reference/feature-gates.md, "Constraints": the driver refuses to start with both).
DYNAMIC_MIG_GATE = "DynamicMIG"


def feature_gates(health_check: bool, dynamic_mig: bool = False) -> str:
    """The `gpus` container's FEATURE_GATES as the chart writes values.yaml `featureGates:
    {NVMLDeviceHealthCheck: <health_check>}` (templates/kubeletplugin.yaml: `{{ range $key, $value :=
    .Values.featureGates }}{{ $key }}={{ $value }},{{ end }}`, trailing comma included).

    With the gate on, the plugin watches each GPU's XID and lost-GPU events over NVML and taints the GPU
    in its ResourceSlice (v0.5.0 cmd/gpu-kubelet-plugin/driver.go, `deviceHealthEvents`;
    device_health.go, `healthEventToTaint`): `gpu.nvidia.com/xid=<xid>:NoSchedule` for a fatal XID,
    `gpu.nvidia.com/gpu-lost:NoSchedule`, and effect None for the XIDs it ignores (13, 31, 43, 45, 68,
    109) and for a GPU it cannot watch. The taint stays until the plugin restarts (allocatable.go,
    `AddOrUpdateTaint`; issue 1455 plans its removal once NVML reports the GPU recovered).

    With `dynamic_mig` (the group's dra.migProfiles) `DynamicMIG=true` comes first (Go's template ranges over a map's
    keys in order) and the health check is off, as the driver wants."""
    if dynamic_mig:
        return f"{DYNAMIC_MIG_GATE}=true,{HEALTH_CHECK_GATE}=false,"
    return f"{HEALTH_CHECK_GATE}={'true' if health_check else 'false'},"


def daemonset_manifest(group: NodeGroupSpec, release: DriverRelease = RELEASE, gates: Any = None) -> dict[str, Any]:
    """templates/kubeletplugin.yaml with the values above: the init container that waits for the
    driver (`kubelet-plugin-prestart.sh`), then the `gpus` container alone. `gates`: its
    FEATURE_GATES (`feature_gates`), or what gives it once the cluster is asked whether it keeps
    device taints (gpu_nodes/providers/dra_features.py); by default the health check off.

    Left out of the chart's rendering: the empty `securityContext: {}` and `resources: {}`
    (values.yaml's defaults), the NFD `affinity` (our nodeSelector instead), and the `bash -c`
    script's nvkind branch with its MASK_NVIDIA_DRIVER_PARAMS, which the chart's values leave empty
    (the branch runs only when it is "true"); the container still runs `gpu-kubelet-plugin` under
    `bash -c`, which is how gpu_nodes/providers/gpu_allocators.py recognises the driver."""
    root = group.device_plugin.driver_root
    labels = _labels(group, release)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": daemonset_name(group), "namespace": namespace(group), "labels": labels},
        "spec": {
            "selector": {"matchLabels": selector_labels(APP_NAME, group.name)},
            # values.yaml `kubeletPlugin.updateStrategy`: all at once; a restarting kubelet plugin
            # leaves running pods their GPUs.
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    **image_pull_secrets(group),
                    "serviceAccountName": service_account_name(group),
                    "initContainers": [_init_container(root, release)],
                    "containers": _containers(group, release, feature_gates(False) if gates is None else gates),
                    "volumes": _volumes(root),
                    "nodeSelector": {GROUP_LABEL: group.name},
                    # The readiness gate too: the plugin must publish the node's GPUs for it to pass.
                    "tolerations": [*tolerations((*group.taints, GATE)), *group.device_plugin.tolerations],
                },
            },
        },
    }


def _containers(group: NodeGroupSpec, release: DriverRelease, gates: Any) -> list[dict[str, Any]]:
    """The `gpus` container; with dra.computeDomains the chart's `compute-domains` container before it
    (templates/kubeletplugin.yaml renders it first under resources.computeDomains.enabled)."""
    gpus = _gpus_container(group, release, gates)
    if not group.dra.compute_domains:
        return [gpus]
    return [compute_domains.compute_domains_container(group, release.image, release.pull_policy, gates), gpus]


def _init_container(root: str, release: DriverRelease) -> dict[str, Any]:
    return {
        "name": "init-container",
        "image": release.image,
        "securityContext": {"privileged": True},
        "command": ["bash", "/usr/bin/kubelet-plugin-prestart.sh"],
        "env": [
            {"name": "NVIDIA_DRIVER_ROOT", "value": root},
            # The chart's "Use runc: explicit void": the plugin gets no GPU from a runtime.
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
            {"name": "KUBELET_REGISTRAR_DIRECTORY_PATH", "value": KUBELET_REGISTRAR_DIRECTORY},
            {"name": "KUBELET_PLUGINS_DIRECTORY_PATH", "value": KUBELET_PLUGINS_DIRECTORY},
        ],
        "volumeMounts": [{"name": "driver-root-parent", "mountPath": "/driver-root-parent", **_parent_mount(root)}],
    }


def _parent_mount(root: str) -> dict[str, Any]:
    """Read-only for a host driver; HostToContainer for a driver container's root, whose mount
    appears after the pod starts (the chart's comment on `driver-root-parent`)."""
    return {"readOnly": True} if root == "/" else {"mountPropagation": "HostToContainer"}


def _gpus_container(group: NodeGroupSpec, release: DriverRelease, gates: Any) -> dict[str, Any]:
    probe = {"grpc": {"port": HEALTHCHECK_PORT, "service": "liveness"}, "timeoutSeconds": 10}
    return {
        "name": "gpus",
        "securityContext": {"privileged": True},
        "image": release.image,
        "imagePullPolicy": release.pull_policy,
        "command": ["bash", "-c"],
        "args": ["gpu-kubelet-plugin -v $(LOG_VERBOSITY)"],
        "startupProbe": {**probe, "failureThreshold": 600, "periodSeconds": 1},
        "livenessProbe": {**probe, "failureThreshold": 3, "periodSeconds": 30},
        "env": _gpus_env(group, release, gates),
        "volumeMounts": [
            {"name": "plugins-registry", "mountPath": KUBELET_REGISTRAR_DIRECTORY},
            {"name": "plugins", "mountPath": KUBELET_PLUGINS_DIRECTORY, "mountPropagation": "Bidirectional"},
            {"name": "cdi", "mountPath": CDI_ROOT},
            {"name": "driver-root", "mountPath": CONTAINER_DRIVER_ROOT, "mountPropagation": "HostToContainer"},
        ],
    }


def _gpus_env(group: NodeGroupSpec, release: DriverRelease, gates: Any) -> list[dict[str, Any]]:
    """The `gpus` container's environment in the chart's order, with the health check's feature gate
    (`gates`) and no CDI hook path or consumable shares set (values.yaml's defaults)."""

    def field(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    pull_secrets = [{"name": "IMAGE_PULL_SECRETS", "value": group.image_pull_secret}] if group.image_pull_secret else []
    return [
        {"name": "HTTP_ENDPOINT", "value": METRICS_ENDPOINT},
        {"name": "METRICS_PATH", "value": METRICS_PATH},
        {"name": "LOG_VERBOSITY", "value": LOG_VERBOSITY},
        {"name": "NVIDIA_DRIVER_ROOT", "value": group.device_plugin.driver_root},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
        {"name": "CDI_ROOT", "value": CDI_ROOT},
        {"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"},
        field("NODE_NAME", "spec.nodeName"),
        field("NAMESPACE", "metadata.namespace"),
        field("SERVICE_ACCOUNT_NAME", "spec.serviceAccountName"),
        {"name": "IMAGE_NAME", "value": release.image},
        *pull_secrets,
        {"name": "IMAGE_PULL_POLICY", "value": release.pull_policy},
        {"name": "FEATURE_GATES", "value": gates},
        {"name": "KUBELET_REGISTRAR_DIRECTORY_PATH", "value": KUBELET_REGISTRAR_DIRECTORY},
        {"name": "KUBELET_PLUGINS_DIRECTORY_PATH", "value": KUBELET_PLUGINS_DIRECTORY},
        {"name": "HEALTHCHECK_PORT", "value": str(HEALTHCHECK_PORT)},
    ]


def _volumes(root: str) -> list[dict[str, Any]]:
    """The chart's volumes, in its order: the driver root's parent is `/` for `/`, else the root
    without its last element (sprig's `dir (trimSuffix "/" ...)`). Every hostPath with its type, as
    the device plugin's (the chart leaves the first three untyped): kubelet makes its two
    directories when it starts, so they must be there (`Directory`); /var/run/cdi is made when missing."""
    parent = "/" if root == "/" else posixpath.dirname(root.rstrip("/"))
    return [
        {"name": "plugins-registry", "hostPath": {"path": KUBELET_REGISTRAR_DIRECTORY, "type": "Directory"}},
        {"name": "plugins", "hostPath": {"path": KUBELET_PLUGINS_DIRECTORY, "type": "Directory"}},
        {"name": "cdi", "hostPath": {"path": CDI_ROOT, "type": "DirectoryOrCreate"}},
        {"name": "driver-root-parent", "hostPath": {"path": parent, "type": "DirectoryOrCreate"}},
        {"name": "driver-root", "hostPath": {"path": root, "type": "DirectoryOrCreate"}},
    ]


def device_class_manifest(name: str, device_type: str, stack: str, extended_resource_name: str | None = None) -> dict[str, Any]:
    """A DeviceClass as the chart renders it on `resource.k8s.io/v1`: every device of the driver
    whose `type` attribute is `device_type`, and, given, the extended resource name whose plain requests
    it serves (`spec.extendedResourceName`, Kubernetes' DRAExtendedResource; types.go,
    `DeviceClassSpec`)."""
    selector = _TYPE_SELECTOR.format(driver=DRA_GPU_DRIVER, type=device_type)
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": selector}}]}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": claimed_labels(stack)},
        "spec": spec,
    }


def exact_gpu_request(name: str, gpus: int) -> dict[str, Any]:
    """One request of a claim: exactly `gpus` whole GPUs of the GPU DeviceClass (Kubernetes
    `staging/src/k8s.io/api/resource/v1/types.go`: `DeviceRequest.exactly`, an `ExactDeviceRequest`
    with `allocationMode: ExactCount` and its `count`)."""
    return {"name": name, "exactly": {"deviceClassName": GPU_DEVICE_CLASS, "allocationMode": "ExactCount", "count": gpus}}


def device_classes(stack: str, extended_resource: bool = False, with_compute_domains: bool = False) -> list[dict[str, Any]]:
    """`gpu.nvidia.com`, `mig.nvidia.com` and `vfio.gpu.nvidia.com`, cluster-wide and shared by every DRA
    group: create them once per stack, when it has a DRA group. Their names are the driver's own, which
    another install of the driver (its chart, the GPU Operator's GPUCluster) creates as well: they are
    claimed objects, like the shared namespaces: they carry the stack that made them (`stack`).

    The GPU class names the chart's `extendedResourceName: nvidia.com/gpu` only where the stack's DRA
    groups ask for plain `nvidia.com/gpu` requests (`extended_resource`, their `dra.extendedResourceName`):
    the chart renders it on every v1 cluster, but an API server without DRAExtendedResource (alpha and off
    in 1.34 and 1.35) drops it, so every preview would offer to set it again, and where the gate is on it
    would serve plain requests from DRA GPUs no group asked to offer them (docs/dra.md)."""
    classes = [
        device_class_manifest(GPU_DEVICE_CLASS, GPU_DEVICE_TYPE, stack, GPU_RESOURCE if extended_resource else None),
        device_class_manifest(MIG_DEVICE_CLASS, MIG_DEVICE_TYPE, stack),
        device_class_manifest(VFIO_DEVICE_CLASS, VFIO_DEVICE_TYPE, stack),
    ]
    # ComputeDomains' channels and daemons, where a group of the stack turns them on.
    return classes + (compute_domains.device_classes(stack) if with_compute_domains else [])


def _labels(group: NodeGroupSpec, release: DriverRelease) -> dict[str, str]:
    return standard_labels(APP_NAME, group.name, COMPONENT, image_tag(release.image))


def _unversioned(group: NodeGroupSpec) -> dict[str, str]:
    # No version label: these objects run no image, so a new plugin image leaves them as they are.
    return standard_labels(APP_NAME, group.name, COMPONENT)
