"""Our taints on a node, added and removed one by one without touching anyone else's.

`Node.spec.taints` is an atomic list: a server-side apply patch would take ownership of the
whole list (and delete it on destroy). So, like `kubectl taint`, this reads the node, edits
the list and writes it back guarded by `resourceVersion`, retrying when another writer got
there first. The taints resource sets our taints and the gate this way; the readiness check
lifts the gate, and puts it back on a node that fails a new proof.

The write carries the taint list and nothing else: never `spec.unschedulable`, so a cordon (NVSentinel's,
an operator's) stays as it is. The gate is not lifted while NVSentinel has the node in quarantine
(gpu_nodes/proof/quarantine.py), read in the same read as the taints: a quarantine that lands between our
read and our write changes the node's resourceVersion, so the write fails, and the next read sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gpu_nodes.errors import (
    ClusterError,
    NodeKeptChangingError,
    NodeNotFoundError,
    NodeQuarantinedError,
    ResourceVersionConflictError,
    TaintConflictError,
)
from gpu_nodes.proof.quarantine import Quarantine, quarantine_of
from gpu_nodes.vocabulary import GATE, Taint

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

TaintDict = dict[str, str]
MAX_ATTEMPTS = 8


@dataclass(frozen=True)
class NodeTaintState:
    resource_version: str
    taints: list[TaintDict]
    # Someone else's quarantine of the node: the gate stays on while it holds.
    quarantine: Quarantine | None = None


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


def apply_taints(
    api: NodeTaintApi, node: str, desired: list[TaintDict], previous: list[TaintDict], unless_quarantined: bool = False
) -> None:
    """Read-modify-write the node's taints, retrying when the node changed in between;
    `unless_quarantined`: refuse on a node someone else has in quarantine."""
    for _ in range(MAX_ATTEMPTS):
        state = api.read(node)
        if unless_quarantined and state.quarantine is not None:
            raise NodeQuarantinedError(
                f"node {node}: {state.quarantine}. gpu-nodes keeps its gate ({GATE}) on it and leaves "
                f"{state.quarantine.by}'s cordon and taints alone; once {state.quarantine.by} releases the node, "
                "run `pulumi up --refresh` to prove it again"
            )
        taints = reconcile(state.taints, desired, previous)
        if taints == state.taints:
            return
        try:
            api.write(node, state.resource_version, taints)
            return
        except ResourceVersionConflictError:
            continue
    raise NodeKeptChangingError(f"node {node}: its taints changed under us {MAX_ATTEMPTS} times in a row; run pulumi up again")


def put_gate(api: NodeTaintApi, node: str) -> None:
    """Gate the node (`vocabulary.GATE`): it takes no new GPU work until it is proven."""
    apply_taints(api, node, desired=[GATE.to_k8s()], previous=[])


def lift_gate(api: NodeTaintApi, node: str) -> None:
    """Lift the node's gate, leaving every other taint as it is; never while someone else has it in quarantine."""
    apply_taints(api, node, desired=[], previous=[GATE.to_k8s()], unless_quarantined=True)


class KubernetesNodeTaintApi:
    """`NodeTaintApi` over the Kubernetes API, with a JSON merge patch carrying resourceVersion."""

    def __init__(self, api: ApiClient):
        from kubernetes import client

        self._api = api
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
            raise ClusterError(f"node {node}: the API server returned no resourceVersion")
        quarantine = quarantine_of(self._api.sanitize_for_serialization(obj))
        return NodeTaintState(resource_version=obj.metadata.resource_version, taints=taints, quarantine=quarantine)

    def write(self, node: str, resource_version: str, taints: list[TaintDict]) -> None:
        from kubernetes.client.exceptions import ApiException

        body = {"metadata": {"resourceVersion": resource_version}, "spec": {"taints": taints}}
        try:
            self._core.patch_node(node, body, _content_type="application/merge-patch+json")
        except ApiException as error:
            if error.status == 409:
                raise ResourceVersionConflictError(str(error)) from error
            raise
