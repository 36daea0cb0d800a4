"""Our taints on a node, added and removed one by one without touching anyone else's.

`Node.spec.taints` is an atomic list: a server-side apply patch would take ownership of the
whole list (and delete it on destroy). So, like `kubectl taint`, this reads the node, edits
the list and writes it back guarded by `resourceVersion`, retrying when another writer got
there first. A Pulumi dynamic provider wraps that, and `read` reports which of our taints are
still on the node, so that `pulumi refresh` shows a taint removed out of band.

The same resource puts the readiness gate (`vocabulary.GATE`) on the node, with our taints,
before our labels let the device plugin land; the node's readiness check lifts it. `read`
also reports the node's GPU health, so a node that degraded since the last run (NotReady,
plugin not Running, a GPU lost) is drift; `pulumi up --refresh` then puts the gate back and
starts a new verification round, which the Jobs carry, so that they run again.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from gpu_nodes.errors import NodeKeptChangingError, NodeNotFoundError, ResourceVersionConflictError, TaintConflictError
from gpu_nodes.kube.client import ClusterAccess, api_client_from_props
from gpu_nodes.kube.node_health import NodeTarget, degradation, node_taints, target_props
from gpu_nodes.kube.shared_views import cluster_view_from_props
from gpu_nodes.providers.cluster_resource import ClusterResource, ClusterResourceProvider
from gpu_nodes.vocabulary import GATE, Taint

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

TaintDict = dict[str, str]
MAX_ATTEMPTS = 8


@dataclass(frozen=True)
class NodeTaintState:
    resource_version: str
    taints: list[TaintDict]


class NodeTaintApi(Protocol):
    def read(self, node: str) -> NodeTaintState: ...

    def write(self, node: str, resource_version: str, taints: list[TaintDict]) -> None: ...


def reconcile(existing: list[TaintDict], desired: list[TaintDict], previous: list[TaintDict]) -> list[TaintDict]:
    """The node's next taint list: drop what we set before and no longer want, add what we want.

    Everyone else's taints stay as they are, in place, `timeAdded` included.
    """
    dropped = {Taint.from_k8s(t) for t in previous} - {Taint.from_k8s(t) for t in desired}
    result = [t for t in existing if Taint.from_k8s(t) not in dropped]
    for taint in desired:
        wanted = Taint.from_k8s(taint)
        holder = next((t for t in result if Taint.from_k8s(t).slot == wanted.slot), None)
        if holder is None:
            result.append(dict(taint))
        elif Taint.from_k8s(holder) != wanted:
            raise TaintConflictError(
                f"the node already has taint {Taint.from_k8s(holder)}, set by someone else; gpu-nodes would set "
                f"{Taint.from_k8s(taint)}. Remove it (kubectl taint node NODE {holder['key']}:{holder['effect']}-) "
                "or configure the same value"
            )
    return result


def present(existing: list[TaintDict], ours: list[TaintDict]) -> list[TaintDict]:
    """Those of our taints that the node still carries, in our order."""
    on_node = {Taint.from_k8s(t) for t in existing}
    return [dict(t) for t in ours if Taint.from_k8s(t) in on_node]


def apply_taints(api: NodeTaintApi, node: str, desired: list[TaintDict], previous: list[TaintDict]) -> None:
    """Read-modify-write the node's taints, retrying when the node changed in between."""
    for _ in range(MAX_ATTEMPTS):
        state = api.read(node)
        taints = reconcile(state.taints, desired, previous)
        if taints == state.taints:
            return
        try:
            api.write(node, state.resource_version, taints)
            return
        except ResourceVersionConflictError:
            continue
    raise NodeKeptChangingError(
        f"node {node}: its taints changed under us {MAX_ATTEMPTS} times in a row; run pulumi up again"
    )


class NodeReader(Protocol):
    """What refresh reads: the process's shared watches (`cluster_view.ClusterView`)."""

    def node(self, name: str) -> dict[str, Any] | None: ...

    def pods(self, namespace: str, labels: dict[str, str], node: str | None = None) -> list[dict[str, Any]]: ...


class KubernetesNodeTaintApi:
    """`NodeTaintApi` over the Kubernetes API, with a JSON merge patch carrying resourceVersion."""

    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._core = client.CoreV1Api(api)

    def read(self, node: str) -> NodeTaintState:
        from kubernetes.client.exceptions import ApiException

        try:
            obj = self._core.read_node(node)
        except ApiException as error:
            if error.status == 404:
                raise NodeNotFoundError(f"node {node} not found") from error
            raise
        taints = [
            {k: v for k, v in {"key": t.key, "value": t.value, "effect": t.effect}.items() if v}
            | ({"timeAdded": t.time_added.isoformat().replace("+00:00", "Z")} if t.time_added else {})
            for t in (obj.spec.taints if obj.spec else None) or []
        ]
        if obj.metadata is None or obj.metadata.resource_version is None:
            raise ValueError(f"node {node}: the API server returned no resourceVersion")
        return NodeTaintState(resource_version=obj.metadata.resource_version, taints=taints)

    def write(self, node: str, resource_version: str, taints: list[TaintDict]) -> None:
        from kubernetes.client.exceptions import ApiException

        body = {"metadata": {"resourceVersion": resource_version}, "spec": {"taints": taints}}
        try:
            self._core.patch_node(node, body, _content_type="application/merge-patch+json")
        except ApiException as error:
            if error.status == 409:
                raise ResourceVersionConflictError(str(error)) from error
            raise


# What the health check on refresh compares the node with.
_HEALTH_INPUTS = ("labels", "pluginNamespace", "pluginSelector", "expectedGpus", "expectedMigDevices")


def _ours(props: dict[str, Any]) -> list[TaintDict]:
    return [dict(t) for t in props.get("taints") or []]


def _gate(props: dict[str, Any]) -> list[TaintDict]:
    return [dict(props["gate"])] if props.get("gate") else []


class NodeTaintsProvider(ClusterResourceProvider):
    """Owns only the listed taints and the gate on one node; the resource id is the node name."""

    computed = ("round", "health")

    def _api(self, props: dict[str, Any]) -> NodeTaintApi:
        return KubernetesNodeTaintApi(api_client_from_props(self.cluster_props(props)))

    def create(self, props: dict[str, Any]) -> CreateResult:
        apply_taints(self._api(props), props["node"], _ours(props) + _gate(props), previous=[])
        return CreateResult(id_=props["node"], outs={**props, "round": 1, "health": []})

    def diff_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Credentials (kubeconfig, context) are how we reach the node, not what we own on it (see ClusterResourceProvider).
        replaces = ["node"] if olds.get("node") != news.get("node") else []
        changed = bool(replaces) or _ours(olds) != _ours(news) or _gate(olds) != _gate(news)
        changed = changed or any(olds.get(key) != news.get(key) for key in _HEALTH_INPUTS)
        # A refresh found the node degraded: gate it and verify it again.
        return DiffResult(changes=changed or bool(olds.get("health")), replaces=replaces, delete_before_replace=True)

    def update_own(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        regate = bool(olds.get("health")) or _gate(olds) != _gate(news)
        desired = _ours(news) + (_gate(news) if regate else [])
        apply_taints(self._api(news), news["node"], desired, previous=_ours(olds))
        verification_round = int(olds.get("round") or 1) + (1 if olds.get("health") else 0)
        return UpdateResult(outs={**news, "round": verification_round, "health": []})

    def _view(self, props: dict[str, Any]) -> NodeReader:
        return cluster_view_from_props(self.cluster_props(props))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        view = self._view(props)
        node = view.node(id_)
        outs = {**props, "taints": present(node_taints(node), _ours(props))}
        if props.get("gate"):
            target = NodeTarget.from_props(props)
            outs["health"] = degradation(
                target, node, view.pods(target.plugin_namespace, dict(target.plugin_selector), node=target.node)
            )
        return ReadResult(id_=id_, outs=outs)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        # A node that is gone took our taints with it.
        with contextlib.suppress(NodeNotFoundError):
            apply_taints(self._api(props), props["node"], desired=[], previous=_ours(props) + _gate(props))


class NodeTaints(ClusterResource, module="gpu-nodes", name="NodeTaints"):
    """Our taints and the readiness gate on one node (see the module docstring for why this is not a NodePatch)."""

    node: pulumi.Output[str]
    taints: pulumi.Output[list[TaintDict]]
    # Goes up by one each time a degraded node is gated again; the node's Jobs carry it.
    round: pulumi.Output[int]
    health: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        target: NodeTarget,
        cluster: ClusterAccess,
        opts: pulumi.ResourceOptions | None = None,
    ):
        props = {
            **target_props(target),
            "gate": GATE.to_k8s(),
            "round": None,
            "health": None,
        }
        super().__init__(NodeTaintsProvider(), name, props, cluster, opts)
