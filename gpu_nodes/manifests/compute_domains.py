"""NVIDIA's DRA driver's ComputeDomains, for the stack's DRA groups that turn them on (`dra.computeDomains`): what the
driver's chart renders with `resources.computeDomains.enabled=true` and its default `imex.mode: driverManaged`
(kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu, read on its main branch as stored,
0.5.0-dev of 2026-08-07: `crds/`, `templates/controller.yaml`, `templates/rbac-controller.yaml`,
`templates/rbac-compute-domain-daemon.yaml`, `templates/rbac-kubeletplugin.yaml`,
`templates/deviceclass-compute-domain-*.yaml`, `templates/kubeletplugin.yaml`), and the ComputeDomain each group's
proof uses.

- Once per stack, cluster-wide, each claimed (a stack never adopts another install's): the two CRDs
  (`computedomains` and `computedomaincliques`.resource.nvidia.com), the controller's ClusterRole and binding, the
  IMEX daemons' ClusterRole and binding; the two DeviceClasses beside the GPU ones (dra_driver.device_classes).
- Once per stack in the DRA groups' namespace: the controller's ServiceAccount, Role, RoleBinding and Deployment,
  and the IMEX daemons' ServiceAccount. The controller makes, per ComputeDomain, a DaemonSet of IMEX daemons there
  and, in the ComputeDomain's namespace, the ResourceClaimTemplate of its channel (cmd/compute-domain-controller/
  resourceclaimtemplate.go, templates/compute-domain-workload-claim-template.tmpl.yaml).
- Per group: the kubelet plugin's `compute-domains` container (dra_driver.daemonset_manifest) and its Role in the
  namespace (get `computedomaincliques`), and one ComputeDomain whose channel the group's IMEX Jobs claim, one per
  node, all in the verification namespace (gpu_nodes/manifests/verification.py).

The CRDs' schemas are the chart's, field for field, without their descriptions (which the API server keeps but
nothing reads); each is cited beside it.
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests.naming import claimed_labels, dns_label, selector_labels, standard_labels
from gpu_nodes.vocabulary import CONTROL_PLANE_KEY, HOSTNAME_LABEL, MASTER_KEY

API_GROUP = "resource.nvidia.com"
API_VERSION = f"{API_GROUP}/v1beta1"
# The driver of a ComputeDomain's channels and daemons (cmd/compute-domain-kubelet-plugin, DriverName).
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
# templates/deviceclass-compute-domain-default-channel.yaml and -daemon.yaml: the channel of id 0 and the daemons.
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
DAEMON_DEVICE_CLASS = "compute-domain-daemon.nvidia.com"
_CHANNEL_SELECTOR = (
    f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && device.attributes['{COMPUTE_DOMAIN_DRIVER}'].type == 'channel' "
    f"&& device.attributes['{COMPUTE_DOMAIN_DRIVER}'].id == 0"
)
_DAEMON_SELECTOR = f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && device.attributes['{COMPUTE_DOMAIN_DRIVER}'].type == 'daemon'"
# Where the kubelet plugin puts a claimed channel in the container (cmd/compute-domain-kubelet-plugin/nvlib.go,
# nvidia-caps-imex-channels; site/content/docs/concepts/compute-domains.md: /dev/nvidia-caps-imex-channels/chan*).
CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"

APP_NAME = "dra-driver-nvidia-gpu"
CONTROLLER = "controller"
# The chart's fixed names of what the IMEX daemons run as (rbac-compute-domain-daemon.yaml): the controller names
# the ServiceAccount in every daemon DaemonSet it makes.
DAEMON_ROLE = "compute-domain-daemon-role"
DAEMON_ROLE_BINDING = "compute-domain-daemon-role-binding"
DAEMON_SERVICE_ACCOUNT = "compute-domain-daemon-service-account"
# values.yaml: resources.computeDomains.imex (mode driverManaged, isolation domain), kubeletPlugin.containers.
# computeDomains.healthcheckPort, the metrics endpoints.
IMEX_MODE = "driverManaged"
IMEX_ISOLATION = "domain"
IMEX_HOST_SOCKET_PATH = "/etc/nvidia-imex/imex_ctrl.sock"
CD_HEALTHCHECK_PORT = 51515
CD_METRICS_ENDPOINT = ":8081"


def _status_enum() -> dict[str, Any]:
    return {"default": "NotReady", "enum": ["Ready", "NotReady"], "type": "string"}


def _crd(plural: str, kind: str, schema: dict[str, Any], stack: str, status: bool) -> dict[str, Any]:
    version: dict[str, Any] = {"name": "v1beta1", "schema": {"openAPIV3Schema": schema}, "served": True, "storage": True}
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{API_GROUP}", "labels": claimed_labels(stack)},
        "spec": {
            "group": API_GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [version],
        },
    }


_META = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}


def compute_domain_crd(stack: str) -> dict[str, Any]:
    """crds/resource.nvidia.com_computedomains.yaml (api/nvidia.com/resource/v1beta1/computedomain.go): spec.numNodes
    (>= 0, default 0, deprecated), spec.channel (resourceClaimTemplate.name, allocationMode All|Single, default
    Single), the spec immutable (`self == oldSelf`); status.status and status.nodes (a map list keyed by name)."""
    node = {
        "properties": {
            "cliqueID": {"type": "string"},
            "index": {"type": "integer"},
            "ipAddress": {"type": "string"},
            "name": {"type": "string"},
            "status": _status_enum(),
        },
        "required": ["cliqueID", "ipAddress", "name"],
        "type": "object",
    }
    channel = {
        "properties": {
            "allocationMode": {"default": "Single", "enum": ["All", "Single"], "type": "string"},
            "resourceClaimTemplate": {"properties": {"name": {"type": "string"}}, "required": ["name"], "type": "object"},
        },
        "required": ["resourceClaimTemplate"],
        "type": "object",
    }
    schema = {
        "properties": {
            **_META,
            "spec": {
                "properties": {"channel": channel, "numNodes": {"default": 0, "minimum": 0, "type": "integer"}},
                "required": ["channel"],
                "type": "object",
                "x-kubernetes-validations": [{"message": "A computeDomain.spec is immutable", "rule": "self == oldSelf"}],
            },
            "status": {
                "properties": {
                    "nodes": {
                        "items": node,
                        "type": "array",
                        "x-kubernetes-list-map-keys": ["name"],
                        "x-kubernetes-list-type": "map",
                    },
                    "status": _status_enum(),
                },
                "required": ["status"],
                "type": "object",
            },
        },
        "type": "object",
    }
    return _crd("computedomains", "ComputeDomain", schema, stack, status=True)


def compute_domain_clique_crd(stack: str) -> dict[str, Any]:
    """crds/resource.nvidia.com_computedomaincliques.yaml (computedomainclique.go): the IMEX daemons of one clique of
    a ComputeDomain, a map list keyed by nodeName."""
    daemon = {
        "properties": {
            "cliqueID": {"type": "string"},
            "index": {"type": "integer"},
            "ipAddress": {"type": "string"},
            "nodeName": {"type": "string"},
            "status": _status_enum(),
        },
        "required": ["cliqueID", "ipAddress", "nodeName"],
        "type": "object",
    }
    schema = {
        "properties": {
            **_META,
            "daemons": {
                "items": daemon,
                "type": "array",
                "x-kubernetes-list-map-keys": ["nodeName"],
                "x-kubernetes-list-type": "map",
            },
        },
        "type": "object",
    }
    return _crd("computedomaincliques", "ComputeDomainClique", schema, stack, status=False)


def crds(stack: str) -> list[dict[str, Any]]:
    return [compute_domain_crd(stack), compute_domain_clique_crd(stack)]


def device_classes(stack: str) -> list[dict[str, Any]]:
    """The two DeviceClasses the chart renders with ComputeDomains (driverManaged renders the daemon's too)."""
    return [
        _device_class(CHANNEL_DEVICE_CLASS, _CHANNEL_SELECTOR, stack),
        _device_class(DAEMON_DEVICE_CLASS, _DAEMON_SELECTOR, stack),
    ]


def _device_class(name: str, selector: str, stack: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": claimed_labels(stack)},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


# ---------------------------------------------------------------------------------------------- the controller


def controller_name() -> str:
    """The chart's `<name>-controller` (Deployment, ServiceAccount, lease)."""
    return f"{APP_NAME}-{CONTROLLER}"


def controller_cluster_role_name() -> str:
    return f"{APP_NAME}-clusterrole-controller"


def controller_cluster_role_binding_name(namespace: str) -> str:
    return f"{APP_NAME}-clusterrole-binding-controller-{namespace}"


def controller_role_name() -> str:
    return f"{APP_NAME}-role-controller"


def _labels(component: str) -> dict[str, str]:
    return standard_labels(APP_NAME, "compute-domains", component)


def controller_cluster_role(stack: str) -> dict[str, Any]:
    """rbac-controller.yaml's ClusterRole, rule for rule."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": controller_cluster_role_name(), "labels": claimed_labels(stack)},
        "rules": [
            {"apiGroups": [API_GROUP], "resources": ["computedomains"], "verbs": ["get", "list", "watch", "update"]},
            {"apiGroups": [API_GROUP], "resources": ["computedomains/status"], "verbs": ["update"]},
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaimtemplates"],
                "verbs": ["get", "list", "watch", "create", "update", "delete"],
            },
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "update"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        ],
    }


def controller_cluster_role_binding(namespace: str, stack: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": controller_cluster_role_binding_name(namespace), "labels": claimed_labels(stack)},
        "subjects": [{"kind": "ServiceAccount", "name": controller_name(), "namespace": namespace}],
        "roleRef": {"kind": "ClusterRole", "name": controller_cluster_role_name(), "apiGroup": "rbac.authorization.k8s.io"},
    }


def controller_service_account(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": controller_name(), "namespace": namespace, "labels": _labels(CONTROLLER)},
    }


def controller_role(namespace: str) -> dict[str, Any]:
    """rbac-controller.yaml's Role in the driver's namespace: the IMEX daemons' DaemonSets and the cliques."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": controller_role_name(), "namespace": namespace, "labels": _labels(CONTROLLER)},
        "rules": [
            {
                "apiGroups": ["apps"],
                "resources": ["daemonsets"],
                "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
            },
            {"apiGroups": [API_GROUP], "resources": ["computedomaincliques"], "verbs": ["get", "list", "watch", "update"]},
        ],
    }


def controller_role_binding(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{APP_NAME}-role-binding-controller", "namespace": namespace, "labels": _labels(CONTROLLER)},
        "subjects": [{"kind": "ServiceAccount", "name": controller_name(), "namespace": namespace}],
        "roleRef": {"kind": "Role", "name": controller_role_name(), "apiGroup": "rbac.authorization.k8s.io"},
    }


def controller_deployment(namespace: str, image: str, pull_policy: str, pull_secret: str | None) -> dict[str, Any]:
    """templates/controller.yaml with values.yaml's defaults: one replica without leader election, metrics on, the
    chart's control-plane tolerations and preferred affinity left as they are (the controller needs no GPU node), the
    chart's env in its order (no feature gates set: the driver's own defaults)."""

    def field(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    labels = {**_labels(CONTROLLER), **selector_labels(APP_NAME, CONTROLLER)}
    secrets = [{"name": "CD_DAEMON_IMAGE_PULL_SECRET_NAMES", "value": pull_secret}] if pull_secret else []
    env = [
        {"name": "HTTP_ENDPOINT", "value": ":8080"},
        {"name": "METRICS_PATH", "value": "/metrics"},
        {"name": "PPROF_PATH", "value": ""},
        {"name": "LOG_VERBOSITY", "value": "4"},
        {"name": "LOG_VERBOSITY_CD_DAEMON", "value": "4"},
        field("POD_NAME", "metadata.name"),
        field("NAMESPACE", "metadata.namespace"),
        {"name": "IMAGE_NAME", "value": image},
        *secrets,
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
        {"name": "IMEX_MODE", "value": IMEX_MODE},
        {"name": "IMEX_ISOLATION", "value": IMEX_ISOLATION},
        {"name": "LEADER_ELECTION_ENABLED", "value": "false"},
        {"name": "LEADER_ELECTION_LEASE_LOCK_NAME", "value": controller_name()},
        {"name": "LEADER_ELECTION_LEASE_LOCK_NAMESPACE", "value": namespace},
        {"name": "LEADER_ELECTION_LEASE_DURATION", "value": "15s"},
        {"name": "LEADER_ELECTION_RENEW_DEADLINE", "value": "10s"},
        {"name": "LEADER_ELECTION_RETRY_PERIOD", "value": "2s"},
    ]
    preferred = {
        "weight": 100,
        "preference": {"matchExpressions": [{"key": CONTROL_PLANE_KEY, "operator": "Exists"}]},
    }
    spread = {
        "weight": 100,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {f"{APP_NAME}-component": CONTROLLER}},
            "topologyKey": HOSTNAME_LABEL,
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": controller_name(), "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector_labels(APP_NAME, CONTROLLER)},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    **({"imagePullSecrets": [{"name": pull_secret}]} if pull_secret else {}),
                    "serviceAccountName": controller_name(),
                    "containers": [
                        {
                            "name": "compute-domain",
                            "image": image,
                            "imagePullPolicy": pull_policy,
                            "command": ["compute-domain-controller", "-v", "$(LOG_VERBOSITY)"],
                            "env": env,
                        }
                    ],
                    "affinity": {
                        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]},
                        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [spread]},
                    },
                    "tolerations": [
                        {"key": CONTROL_PLANE_KEY, "operator": "Exists", "effect": "NoSchedule"},
                        {"key": MASTER_KEY, "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                    ],
                },
            },
        },
    }


# ------------------------------------------------------------------------------------------ the IMEX daemons


def daemon_cluster_role(stack: str) -> dict[str, Any]:
    """rbac-compute-domain-daemon.yaml's ClusterRole (driverManaged)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": DAEMON_ROLE, "labels": claimed_labels(stack)},
        "rules": [
            {
                "apiGroups": [API_GROUP],
                "resources": ["computedomains", "computedomains/status"],
                "verbs": ["get", "list", "watch", "update", "patch"],
            },
            {
                "apiGroups": [API_GROUP],
                "resources": ["computedomaincliques"],
                "verbs": ["get", "list", "watch", "create", "update", "patch"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        ],
    }


def daemon_service_account(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DAEMON_SERVICE_ACCOUNT, "namespace": namespace, "labels": _labels("compute-domain-daemon")},
    }


def daemon_cluster_role_binding(namespace: str, stack: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": DAEMON_ROLE_BINDING, "labels": claimed_labels(stack)},
        "subjects": [{"kind": "ServiceAccount", "name": DAEMON_SERVICE_ACCOUNT, "namespace": namespace}],
        "roleRef": {"kind": "ClusterRole", "name": DAEMON_ROLE, "apiGroup": "rbac.authorization.k8s.io"},
    }


# ------------------------------------------------------------------------------------ a group's kubelet plugin


def plugin_role_name(group: NodeGroupSpec) -> str:
    return dns_label(APP_NAME, "kubelet-plugin", "cliques", group.name)


def plugin_role(group: NodeGroupSpec) -> dict[str, Any]:
    """rbac-kubeletplugin.yaml's Role in the driver's namespace: the compute-domains container reads the cliques."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {
            "name": plugin_role_name(group),
            "namespace": group.device_plugin.namespace,
            "labels": standard_labels(APP_NAME, group.name, "kubelet-plugin"),
        },
        "rules": [{"apiGroups": [API_GROUP], "resources": ["computedomaincliques"], "verbs": ["get"]}],
    }


def plugin_role_binding(group: NodeGroupSpec, service_account: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": plugin_role_name(group),
            "namespace": group.device_plugin.namespace,
            "labels": standard_labels(APP_NAME, group.name, "kubelet-plugin"),
        },
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": group.device_plugin.namespace}],
        "roleRef": {"kind": "Role", "name": plugin_role_name(group), "apiGroup": "rbac.authorization.k8s.io"},
    }


# ---------------------------------------------------------------------------------- the group's ComputeDomain


def compute_domain_name(group: NodeGroupSpec) -> str:
    return dns_label("gpu-verify", group.name, "imex")


def channel_template_name(group: NodeGroupSpec) -> str:
    """The ResourceClaimTemplate of the ComputeDomain's channel, which its controller makes in its namespace."""
    return dns_label("gpu-verify", group.name, "imex-channel")


def compute_domain_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """The group's ComputeDomain, in the verification namespace, as the driver's guide writes one
    (site/content/docs/guides/compute-domain-workloads.md): numNodes 0 (deprecated; with IMEXDaemonsWithDNSNames the
    recommended value), one channel per workload (allocationMode Single), the template its controller makes."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ComputeDomain",
        "metadata": {
            "name": compute_domain_name(group),
            "namespace": group.verification.namespace,
            "labels": standard_labels("gpu-verification", group.name, "imex"),
        },
        "spec": {
            "numNodes": 0,
            "channel": {"resourceClaimTemplate": {"name": channel_template_name(group)}, "allocationMode": "Single"},
        },
    }


def compute_domains_container(group: NodeGroupSpec, image: str, pull_policy: str, gates: Any) -> dict[str, Any]:
    """templates/kubeletplugin.yaml's `compute-domains` container, with values.yaml's defaults (metrics on,
    driverManaged IMEX, its health service on 51515), `gates` its FEATURE_GATES as for the `gpus` container."""

    def field(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    probe = {"grpc": {"port": CD_HEALTHCHECK_PORT, "service": "liveness"}, "timeoutSeconds": 10}
    return {
        "name": "compute-domains",
        "securityContext": {"privileged": True},
        "image": image,
        "imagePullPolicy": pull_policy,
        "command": ["bash", "-c"],
        "args": ["compute-domain-kubelet-plugin -v $(LOG_VERBOSITY)"],
        "startupProbe": {**probe, "failureThreshold": 600, "periodSeconds": 1},
        "livenessProbe": {**probe, "failureThreshold": 3, "periodSeconds": 10},
        "env": [
            {"name": "HTTP_ENDPOINT", "value": CD_METRICS_ENDPOINT},
            {"name": "METRICS_PATH", "value": "/metrics"},
            {"name": "LOG_VERBOSITY", "value": "4"},
            {"name": "MASK_NVIDIA_DRIVER_PARAMS", "value": ""},
            {"name": "NVIDIA_DRIVER_ROOT", "value": group.device_plugin.driver_root},
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
            {"name": "CDI_ROOT", "value": "/var/run/cdi"},
            {"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"},
            field("NODE_NAME", "spec.nodeName"),
            field("NAMESPACE", "metadata.namespace"),
            {"name": "FEATURE_GATES", "value": gates},
            {"name": "IMEX_MODE", "value": IMEX_MODE},
            {"name": "IMEX_ISOLATION", "value": IMEX_ISOLATION},
            {"name": "IMEX_HOST_SOCKET_PATH", "value": IMEX_HOST_SOCKET_PATH},
            {"name": "KUBELET_REGISTRAR_DIRECTORY_PATH", "value": "/var/lib/kubelet/plugins_registry"},
            {"name": "KUBELET_PLUGINS_DIRECTORY_PATH", "value": "/var/lib/kubelet/plugins"},
            {"name": "HEALTHCHECK_PORT", "value": str(CD_HEALTHCHECK_PORT)},
            # values.yaml kubeletPlugin.containers.computeDomains.gpuCliqueLabelEnabled: false (GFD, or gpu-nodes'
            # own labels from preflight, write nvidia.com/gpu.clique).
            {"name": "GPU_CLIQUE_LABEL_ENABLED", "value": "false"},
        ],
        "volumeMounts": [
            {"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
            {"name": "plugins", "mountPath": "/var/lib/kubelet/plugins", "mountPropagation": "Bidirectional"},
            {"name": "cdi", "mountPath": "/var/run/cdi"},
            {"name": "driver-root", "mountPath": "/driver-root", "readOnly": True, "mountPropagation": "HostToContainer"},
        ],
    }
