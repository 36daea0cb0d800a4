"""The device plugin's MPS control daemon for a group that shares its GPUs through MPS
(`devicePlugin.sharing.strategy: mps`): a DaemonSet on exactly the group's nodes.

It follows the chart (k8s-device-plugin v0.20.0
`deployments/helm/nvidia-device-plugin/templates/daemonset-mps-control-daemon.yml`, with its default
values): the plugin's own image running its own program (`command: [mps-control-daemon]`; the image's
entrypoint is the plugin, `deployments/container/Dockerfile`), first as an init container that mounts a
tmpfs at `<MPS root>/shm` with Bidirectional propagation so that the host and the plugin see it
(`mps-control-daemon mount-shm`, `cmd/mps-control-daemon/mount/mount-shm.go`), then as the daemon, which
sets each GPU's compute mode to EXCLUSIVE_PROCESS (`nvidia-smi -c`), starts `nvidia-cuda-mps-control -d`
per shared resource with its pipe and log directories under the MPS root, sets each client's pinned
memory and active thread share to 1/replicas, and writes `.ready` (`cmd/mps-control-daemon/main.go`,
`mps/daemon.go`). Privileged, as the chart runs both containers; `hostPID: true`, the chart's default
since 0.19 (`mps.enableHostPID`; pull request 1045: the MPS server finds its own PID through
/proc/self, as NVIDIA's DRA driver found, kubernetes-sigs/dra-driver-nvidia-gpu pull request 115); the
driver's `compute,utility` capabilities, which bring `nvidia-smi` and `nvidia-cuda-mps-control` in.

Where it differs from the chart, and why: it selects the group's nodes by the group label, as our
plugin does, not by `nvidia.com/mps.capable`, which GPU Feature Discovery writes (we write it from
preflight's facts only where `gpuFeatureLabels` is on); its labels and selector are its own, not the
plugin's (the chart gives the two DaemonSets the same selector, so a look for the plugin's pods would
find the daemon's); the config file is our ConfigMap mounted as a volume, as for our plugin, with no
config-manager beside it, and a new config rolls the pods (the config's hash annotation).
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.checks import image_tag
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests.device_plugin import (
    CONFIG_DIR,
    CONFIG_KEY,
    MPS_CONTAINER_ROOT,
    api_access,
    config_map_name,
    image_pull_policy,
    image_pull_secrets,
    management_runtime_class,
    mps_mounts,
    mps_volumes,
    nri_annotations,
    pod_annotations,
    tolerations,
    update_strategy,
)
from gpu_nodes.manifests.naming import selector_labels, standard_labels
from gpu_nodes.vocabulary import GATE, GROUP_LABEL

APP_NAME = "nvidia-device-plugin-mps-control-daemon"
PROGRAM = "mps-control-daemon"
CONTAINER = "mps-control-daemon-ctr"


def daemonset_name(group: NodeGroupSpec) -> str:
    return f"{APP_NAME}-{group.name}"


def daemonset_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    spec = group.device_plugin
    resources = {"resources": spec.resources} if spec.resources else {}
    pull_policy = image_pull_policy(spec.image_pull_policy)
    labels = standard_labels(APP_NAME, group.name, "mps-control-daemon", image_tag(spec.image))
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": daemonset_name(group), "namespace": spec.namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": selector_labels(APP_NAME, group.name)},
            "updateStrategy": update_strategy(spec),
            "template": {
                "metadata": {"labels": labels, "annotations": {**pod_annotations(group), **nri_annotations(group, CONTAINER)}},
                "spec": {
                    "nodeSelector": {GROUP_LABEL: group.name},
                    # As the plugin: the daemon must be there for the plugin to serve, and the node to pass.
                    "tolerations": [*tolerations((*group.taints, GATE)), *spec.tolerations],
                    "priorityClassName": "system-node-critical",
                    "hostPID": True,
                    **api_access(group),
                    **image_pull_secrets(group),
                    **management_runtime_class(group),
                    "initContainers": [
                        {
                            "name": "mps-control-daemon-mounts",
                            "image": spec.image,
                            **pull_policy,
                            "command": [PROGRAM, "mount-shm"],
                            "securityContext": {"privileged": True},
                            **resources,
                            "volumeMounts": [
                                {"name": "mps-root", "mountPath": MPS_CONTAINER_ROOT, "mountPropagation": "Bidirectional"}
                            ],
                        }
                    ],
                    "containers": [
                        {
                            "name": CONTAINER,
                            "image": spec.image,
                            **pull_policy,
                            "command": [PROGRAM],
                            "env": [
                                {
                                    "name": "NODE_NAME",
                                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                                },
                                {"name": "CONFIG_FILE", "value": f"{CONFIG_DIR}/{CONFIG_KEY}"},
                                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                            ],
                            "securityContext": {"privileged": True},
                            **resources,
                            "volumeMounts": [
                                *mps_mounts(),
                                {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [*mps_volumes(), {"name": "config", "configMap": {"name": config_map_name(group)}}],
                },
            },
        },
    }
