"""Our taints on a node: read-modify-write that leaves everyone else's taints alone."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import (
    NodeKeptChangingError,
    NodeNotFoundError,
    NodeQuarantinedError,
    ResourceVersionConflictError,
    TaintConflictError,
)
from gpu_nodes.kube.node_taints import (
    MAX_ATTEMPTS,
    KubernetesNodeTaintApi,
    NodeTaintState,
    apply_taints,
    lift_gate,
    present,
    put_gate,
    reconcile,
)
from gpu_nodes.proof.quarantine import Quarantine, quarantine_of
from tests.fakes import GATE_TAINT, NVSENTINEL_TAINT, node, nvsentinel_quarantined

GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DEDICATED = {"key": "dedicated", "effect": "NoExecute"}
FOREIGN = {"key": "example.com/maintenance", "value": "true", "effect": "PreferNoSchedule"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-29T10:00:00Z"}


class FakeNodes:
    """An in-memory API server for node taints, with resourceVersion preconditions."""

    def __init__(self, taints: dict[str, list[dict]] | None = None):
        self.nodes = {name: list(t) for name, t in (taints or {}).items()}
        self.versions = {name: 1 for name in self.nodes}
        self.writes = 0
        self.before_write = None  # another writer, run between our read and our write
        self.quarantines: dict[str, Quarantine] = {}

    def read(self, node: str) -> NodeTaintState:
        if node not in self.nodes:
            raise NodeNotFoundError(node)
        return NodeTaintState(str(self.versions[node]), [dict(t) for t in self.nodes[node]], self.quarantines.get(node))

    def write(self, node: str, resource_version: str, taints: list[dict]) -> None:
        if self.before_write:
            self.before_write(self)
        if resource_version != str(self.versions[node]):
            raise ResourceVersionConflictError(f"{node}: stale resourceVersion {resource_version}")
        self.writes += 1
        self.nodes[node] = [dict(t) for t in taints]
        self.versions[node] += 1


# --- reconcile -----------------------------------------------------------------------------


def test_adds_ours_after_everyone_elses():
    assert reconcile([FOREIGN, UNREACHABLE], [GPU], previous=[]) == [FOREIGN, UNREACHABLE, GPU]


def test_already_present_is_left_as_is():
    assert reconcile([GPU, FOREIGN], [GPU], previous=[GPU]) == [GPU, FOREIGN]


def test_removes_only_what_we_set_and_no_longer_want():
    assert reconcile([FOREIGN, GPU, DEDICATED], [GPU], previous=[GPU, DEDICATED]) == [FOREIGN, GPU]


def test_destroy_removes_ours_and_keeps_others():
    assert reconcile([UNREACHABLE, GPU, FOREIGN], [], previous=[GPU]) == [UNREACHABLE, FOREIGN]


def test_a_changed_value_of_ours_replaces_the_old_one():
    new = {**GPU, "value": "shared"}
    assert reconcile([GPU, FOREIGN], [new], previous=[GPU]) == [FOREIGN, new]


def test_someone_elses_value_for_our_key_is_a_conflict():
    theirs = {**GPU, "value": "reserved"}
    with pytest.raises(TaintConflictError, match="nvidia.com/gpu=reserved:NoSchedule, set by someone else"):
        reconcile([theirs], [GPU], previous=[])


def test_same_key_with_another_effect_is_not_ours():
    other_effect = {**GPU, "effect": "NoExecute"}
    assert reconcile([other_effect], [GPU], previous=[]) == [other_effect, GPU]


def test_present_reports_only_ours_still_on_the_node():
    assert present([FOREIGN, GPU], [GPU, DEDICATED]) == [GPU]
    assert present([FOREIGN], [GPU]) == []


# --- apply with resourceVersion ----------------------------------------------------------


def test_apply_writes_once():
    api = FakeNodes({"n1": [FOREIGN]})
    apply_taints(api, "n1", [GPU], previous=[])
    assert api.nodes["n1"] == [FOREIGN, GPU], api.nodes
    assert api.writes == 1, api.writes


def test_apply_does_not_write_when_nothing_changes():
    api = FakeNodes({"n1": [GPU]})
    apply_taints(api, "n1", [GPU], previous=[GPU])
    assert api.writes == 0, api.nodes


def test_a_concurrent_writer_loses_nothing():
    api = FakeNodes({"n1": [FOREIGN]})
    added = []

    def other_writer(fake: FakeNodes) -> None:
        if not added:  # kubectl taint, once, between our read and our write
            fake.nodes["n1"].append(DEDICATED)
            fake.versions["n1"] += 1
            added.append(True)

    api.before_write = other_writer
    apply_taints(api, "n1", [GPU], previous=[])
    assert api.nodes["n1"] == [FOREIGN, DEDICATED, GPU], api.nodes


def test_gives_up_after_repeated_conflicts_with_a_clear_error():
    api = FakeNodes({"n1": []})

    def always_first(fake: FakeNodes) -> None:
        fake.versions["n1"] += 1

    api.before_write = always_first
    with pytest.raises(NodeKeptChangingError, match=f"node n1: its taints changed under us {MAX_ATTEMPTS} times"):
        apply_taints(api, "n1", [GPU], previous=[])


# --- the gate ---------------------------------------------------------------------------


def test_the_gate_goes_on_and_comes_off_leaving_the_rest():
    api = FakeNodes({"n1": [FOREIGN, GPU]})
    put_gate(api, "n1")
    assert api.nodes["n1"] == [FOREIGN, GPU, GATE_TAINT], api.nodes
    lift_gate(api, "n1")
    assert api.nodes["n1"] == [FOREIGN, GPU], api.nodes


# --- someone else's quarantine ----------------------------------------------------------------

UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def quarantined_by_nvsentinel(api: FakeNodes, node_name: str = "n1") -> None:
    """NVSentinel cordons n1 and adds its rule set's taint (tests/fakes.py, `nvsentinel_quarantined`)."""
    marked = nvsentinel_quarantined(node(node_name, taints=api.nodes[node_name]), taints=[NVSENTINEL_TAINT])
    api.nodes[node_name] = marked["spec"]["taints"]
    api.quarantines[node_name] = quarantine_of(marked)
    api.versions[node_name] += 1


def test_the_gate_stays_on_a_node_nvsentinel_holds_and_their_taints_stay_too():
    api = FakeNodes({"n1": [GPU, GATE_TAINT]})
    quarantined_by_nvsentinel(api)
    with pytest.raises(NodeQuarantinedError) as refused:
        lift_gate(api, "n1")
    assert api.nodes["n1"] == [GPU, GATE_TAINT, UNSCHEDULABLE, NVSENTINEL_TAINT], api.nodes
    assert api.writes == 0, api.writes
    message = str(refused.value)
    assert message.startswith("node n1: NVSentinel's quarantine (state quarantined): cordoned, taint "), message
    assert "keeps its gate (gpu-nodes.dev/unverified=true:NoSchedule)" in message, message


def test_a_quarantine_that_lands_between_our_read_and_our_write_keeps_the_gate():
    api = FakeNodes({"n1": [GPU, GATE_TAINT]})

    def nvsentinel_first(fake: FakeNodes) -> None:
        fake.before_write = None
        quarantined_by_nvsentinel(fake)

    api.before_write = nvsentinel_first
    with pytest.raises(NodeQuarantinedError):
        lift_gate(api, "n1")
    assert GATE_TAINT in api.nodes["n1"] and NVSENTINEL_TAINT in api.nodes["n1"], api.nodes


class FakeCore:
    """CoreV1Api's read_node and patch_node, answering with one kubernetes client model."""

    def __init__(self, found: object) -> None:
        self.found = found
        self.patches: list[dict] = []

    def read_node(self, name: str) -> object:
        return self.found

    def patch_node(self, name: str, body: dict, **_: object) -> None:
        self.patches.append(body)


def api_over(found_node: dict) -> tuple[KubernetesNodeTaintApi, FakeCore]:
    """KubernetesNodeTaintApi over a Node the API server returns, as the client deserializes it."""
    from kubernetes import client

    api_client = client.ApiClient()
    model = api_client._ApiClient__deserialize(found_node, "V1Node")  # type: ignore[attr-defined]
    api = KubernetesNodeTaintApi(api_client)
    core = FakeCore(model)
    api._core = core  # type: ignore[assignment]
    return api, core


def test_the_api_reads_nvsentinels_quarantine_with_the_taints():
    found = nvsentinel_quarantined(node(taints=[GPU, GATE_TAINT]), taints=[NVSENTINEL_TAINT])
    found["metadata"]["resourceVersion"] = "42"
    api, _ = api_over(found)
    state = api.read("n1")
    assert state.quarantine == quarantine_of(found), state
    assert state.taints == [GPU, GATE_TAINT, UNSCHEDULABLE, NVSENTINEL_TAINT], state.taints


def test_our_writes_carry_only_the_taint_list_never_the_cordon():
    found = nvsentinel_quarantined(node(taints=[GPU]), taints=[NVSENTINEL_TAINT])
    found["metadata"]["resourceVersion"] = "42"
    api, core = api_over(found)
    put_gate(api, "n1")
    (body,) = core.patches
    assert body == {
        "metadata": {"resourceVersion": "42"},
        "spec": {"taints": [GPU, UNSCHEDULABLE, NVSENTINEL_TAINT, GATE_TAINT]},
    }, body
