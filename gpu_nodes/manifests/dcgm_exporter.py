"""NVIDIA's dcgm-exporter on a group's nodes (`metrics.enabled`): its DaemonSet, its Service and, where asked, a
Prometheus Operator ServiceMonitor; each node's proof scrapes the node's exporter pod (gpu_nodes/proof/
exporter_metrics.py).

Laid out as NVIDIA's chart lays it out (NVIDIA/dcgm-exporter deployment/templates/, tag 4.5.3-4.8.2 and later):
port 9400 named `metrics`, `/health` probes, `DCGM_EXPORTER_KUBERNETES` with `NODE_NAME` so that a GPU in use is
labelled with its pod, the kubelet's pod-resources socket read-only, `system-node-critical`. Where the chart runs
it as root with SYS_ADMIN (for the profiling fields), gpu-nodes runs it privileged, as the GPU Operator does
(gpu-operator assets/state-dcgm-exporter/0800_daemonset.yaml): it asks for no GPU, and only a privileged
container keeps the image's `NVIDIA_VISIBLE_DEVICES=all` under the hardened toolkit (isolation strict), as the
device plugin's pod does. It runs under the stack's RuntimeClass where the plugin does (the nvidia runtime hands it
the driver's libraries and every GPU).
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.metrics import EXPORTER_PORT, HEALTH_PATH, METRICS_PATH
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests.device_plugin import image_pull_secrets, management_runtime_class, nri_annotations, tolerations
from gpu_nodes.manifests.naming import dns_label, selector_labels, standard_labels
from gpu_nodes.vocabulary import GATE, GROUP_LABEL

APP_NAME = "dcgm-exporter"
COMPONENT = "metrics"
PORT_NAME = "metrics"
# The kubelet's pod-resources socket, read to label a GPU with the pod that holds it (the chart's `kubeletPath`).
POD_RESOURCES = "/var/lib/kubelet/pod-resources"
# The chart's probes: the exporter starts DCGM's host engine before it answers (deployment/values.yaml).
_PROBE = {"httpGet": {"path": HEALTH_PATH, "port": EXPORTER_PORT}, "initialDelaySeconds": 45, "periodSeconds": 5}


def exporter_name(group: NodeGroupSpec) -> str:
    return dns_label(APP_NAME, group.name)


def exporter_selector(group: NodeGroupSpec) -> dict[str, str]:
    """The labels that pick the group's exporter pods: the DaemonSet's selector and the Service's."""
    return selector_labels(APP_NAME, group.name)


def _labels(group: NodeGroupSpec) -> dict[str, str]:
    return standard_labels(APP_NAME, group.name, COMPONENT)


def daemonset_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    spec = group.metrics
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": exporter_name(group),
            "namespace": group.device_plugin.namespace,
            "labels": _labels(group),
            # Each node's readiness check waits for its own exporter pod and names a node whose exporter fails; a
            # rollout wait would fail the whole run for one node.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "selector": {"matchLabels": exporter_selector(group)},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": _labels(group), **_nri(group)},
                "spec": {
                    "nodeSelector": {GROUP_LABEL: group.name},
                    # The readiness gate too: the exporter must run for the node to pass.
                    "tolerations": tolerations((*group.taints, GATE)),
                    "priorityClassName": "system-node-critical",
                    **image_pull_secrets(group),
                    **management_runtime_class(group),
                    "containers": [
                        {
                            "name": APP_NAME,
                            "image": spec.image,
                            "env": [
                                {"name": "DCGM_EXPORTER_LISTEN", "value": f":{EXPORTER_PORT}"},
                                {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
                                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                            ],
                            "ports": [{"name": PORT_NAME, "containerPort": EXPORTER_PORT}],
                            "livenessProbe": _PROBE,
                            "readinessProbe": _PROBE,
                            "securityContext": {"privileged": True},
                            # The chart's requests and limits.
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"cpu": "200m", "memory": "512Mi"},
                            },
                            "volumeMounts": [{"name": "pod-resources", "mountPath": POD_RESOURCES, "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "pod-resources", "hostPath": {"path": POD_RESOURCES, "type": "Directory"}}],
                },
            },
        },
    }


def service_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """The exporter's Service, as the chart's: ClusterIP, port `metrics`."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": exporter_name(group), "namespace": group.device_plugin.namespace, "labels": _labels(group)},
        "spec": {
            "type": "ClusterIP",
            "selector": exporter_selector(group),
            "ports": [{"name": PORT_NAME, "port": EXPORTER_PORT, "targetPort": EXPORTER_PORT, "protocol": "TCP"}],
        },
    }


def service_monitor_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    """The Prometheus Operator's ServiceMonitor for the Service, as the chart's (`serviceMonitor.enabled`):
    its port, `/metrics`, every 30 s."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": exporter_name(group), "namespace": group.device_plugin.namespace, "labels": _labels(group)},
        "spec": {
            "selector": {"matchLabels": exporter_selector(group)},
            "namespaceSelector": {"matchNames": [group.device_plugin.namespace]},
            "endpoints": [{"port": PORT_NAME, "path": METRICS_PATH, "interval": "30s", "scrapeTimeout": "25s"}],
        },
    }


def _nri(group: NodeGroupSpec) -> dict[str, Any]:
    """On an NRI group's nodes, the annotation that gives the exporter its GPUs (device_plugin.nri_annotations)."""
    annotations = nri_annotations(group, APP_NAME)
    return {"annotations": annotations} if annotations else {}
