"""One NVIDIA device plugin per node: find another before anything of ours lands on a node.

Two plugins on one node both serve the fixed socket `nvidia-gpu.sock` and each removes it before
listening (k8s-device-plugin v0.20.0 `internal/plugin/server.go`): whichever started last wins,
and the other's GPUs vanish from kubelet. The device plugin chart schedules by
`nvidia.com/gpu.present=true` (our default label) and tolerates `nvidia.com/gpu`, so a chart
already on the cluster lands on our nodes as soon as we label them; the GPU Operator deploys its
plugin through its ClusterPolicy. So before the groups' taints and labels, a check lists:

- DaemonSets not ours that run the NVIDIA device plugin image;
- a GPU Operator ClusterPolicy whose device plugin is enabled.

Each stops the run, named, unless `gpu-nodes:handOver` lists it (`<namespace>/<name>` for a
DaemonSet, `ClusterPolicy/<name>`): for teams moving from the chart, who keep it off our nodes
(or remove it) while gpu-nodes takes over. A listed DaemonSet that still has a pod on one of our
nodes stops the run too. A refresh runs the check again and shows what it finds as drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.errors import GpuNodesError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.manifests.naming import PART_OF
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider

PLUGIN_IMAGE = "k8s-device-plugin"
HAND_OVER_KEY = "gpu-nodes:handOver"


class OtherPluginError(GpuNodesError):
    """Another NVIDIA device plugin would share the stack's nodes."""


@dataclass(frozen=True)
class OtherPlugin:
    """Another install of the NVIDIA device plugin: `ref` is how handOver names it."""

    ref: str
    what: str
    selector: Mapping[str, str] | None = None  # a DaemonSet's pod selector
    namespace: str | None = None


def plugin_daemonsets(daemonsets: Iterable[Mapping[str, Any]]) -> list[OtherPlugin]:
    """DaemonSets that run the NVIDIA device plugin and are not ours."""
    found = []
    for ds in daemonsets:
        metadata = ds.get("metadata") or {}
        if (metadata.get("labels") or {}).get("app.kubernetes.io/part-of") == PART_OF:
            continue
        containers = (((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        images = [c.get("image", "") for c in containers if PLUGIN_IMAGE in c.get("image", "")]
        if images:
            ref = f"{metadata.get('namespace')}/{metadata.get('name')}"
            selector = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            found.append(OtherPlugin(ref, f"DaemonSet {ref} (image {images[0]})", dict(selector), metadata.get("namespace")))
    return sorted(found, key=lambda p: p.ref)


def operator_policies(policies: Iterable[Mapping[str, Any]]) -> list[OtherPlugin]:
    """GPU Operator ClusterPolicies that deploy the operator's own device plugin."""
    found = []
    for policy in policies:
        plugin = (policy.get("spec") or {}).get("devicePlugin") or {}
        if plugin.get("enabled", True) is not False:
            name = (policy.get("metadata") or {}).get("name")
            found.append(OtherPlugin(f"ClusterPolicy/{name}", f"the GPU Operator's ClusterPolicy {name} (devicePlugin enabled)"))
    return found


def problems(others: Sequence[OtherPlugin], handed_over: Sequence[str], pods_on_our_nodes: Mapping[str, list[str]]) -> list[str]:
    """One line per install that stops the run; `pods_on_our_nodes`: handed-over ref -> its pods there."""
    lines = []
    for other in others:
        if other.ref not in handed_over:
            lines.append(
                f"{other.what} is on the cluster: two device plugins on one node take turns on the socket nvidia-gpu.sock "
                f"and GPUs vanish from kubelet. Remove it, or keep it off this stack's nodes and list {other.ref!r} in "
                f"{HAND_OVER_KEY}"
            )
        elif pods_on_our_nodes.get(other.ref):
            pods = ", ".join(pods_on_our_nodes[other.ref][:5])
            lines.append(
                f"{other.what} is listed in {HAND_OVER_KEY} but still runs on this stack's nodes ({pods}): keep it off them "
                "first (its nodeSelector or affinity), then run again"
            )
    return lines


def _look(props: Mapping[str, Any]) -> tuple[list[OtherPlugin], list[str]]:
    """What the cluster holds now: the other installs, and the lines that stop a run."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = api_client_from_props(props)
    daemonsets = api.sanitize_for_serialization(client.AppsV1Api(api).list_daemon_set_for_all_namespaces()).get("items", [])
    try:
        found: dict[str, Any] = client.CustomObjectsApi(api).list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies")  # type: ignore[assignment]
        policies = found.get("items", [])
    except ApiException as error:
        if error.status != 404:  # no GPU Operator: its CRD is not there
            raise
        policies = []
    others = [*plugin_daemonsets(daemonsets), *operator_policies(policies)]
    handed_over = list(props.get("handOver") or [])
    nodes = set(props.get("nodes") or [])
    pods_on_our_nodes: dict[str, list[str]] = {}
    for other in others:
        if other.ref in handed_over and other.selector and other.namespace:
            selector = ",".join(f"{k}={v}" for k, v in sorted(other.selector.items()))
            listed = client.CoreV1Api(api).list_namespaced_pod(other.namespace, label_selector=selector)
            pods = api.sanitize_for_serialization(listed).get("items", [])
            pods_on_our_nodes[other.ref] = sorted(
                f"{p['metadata']['name']} on {node}" for p in pods if (node := (p.get("spec") or {}).get("nodeName")) in nodes
            )
    return others, problems(others, handed_over, pods_on_our_nodes)


class CoexistenceProvider(ClusterResourceProvider):
    computed = ("handedOver", "found")

    def _look(self, props: Mapping[str, Any]) -> tuple[list[OtherPlugin], list[str]]:
        return _look(self.cluster_props(dict(props)))

    def _check(self, props: dict[str, Any]) -> dict[str, Any]:
        others, stops = self._look(props)
        if stops:
            raise OtherPluginError("\n".join(["another NVIDIA device plugin would share this stack's nodes:", *stops]))
        return {**props, "handedOver": [o.ref for o in others]}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_="device-plugin-coexistence", outs=self._check(props))

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = any(olds.get(k) != news.get(k) for k in ("nodes", "handOver")) or bool(olds.get("found"))
        return DiffResult(changes=changed)

    def update_own(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**self._check(news), "found": []})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # A refresh shows a plugin that appeared since as drift; the next `pulumi up` stops on it.
        _others, stops = self._look(props)
        return ReadResult(id_=id_, outs={**props, "found": stops})


class DevicePluginCoexistence(ClusterResource, module="gpu-nodes", name="DevicePluginCoexistence"):
    """Stops the run when another NVIDIA device plugin is on the cluster (see the module docstring)."""

    found: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        nodes: Sequence[str],
        hand_over: Sequence[str],
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props = {"nodes": sorted(nodes), "handOver": sorted(hand_over), "handedOver": None, "found": []}
        super().__init__(CoexistenceProvider(), name, props, cluster, opts)
