"""Our taints: read-modify-write that leaves everyone else's taints alone."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import (
    GpuNodesError,
    NodeKeptChangingError,
    NodeNotFoundError,
    ResourceVersionConflictError,
    TaintConflictError,
)
from gpu_nodes.kube.node_health import target_props
from gpu_nodes.providers import taints as taints_module
from gpu_nodes.providers.taints import MAX_ATTEMPTS, NodeTaintsProvider, NodeTaintState, apply_taints, present, reconcile
from tests.fakes import GATE_TAINT, FakeCluster, FakeTaintApi, node, plugin_pod, target

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

    def read(self, node: str) -> NodeTaintState:
        if node not in self.nodes:
            raise NodeNotFoundError(node)
        return NodeTaintState(str(self.versions[node]), [dict(t) for t in self.nodes[node]])

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


# --- the dynamic provider --------------------------------------------------------------


@pytest.fixture
def cluster(monkeypatch) -> FakeCluster:
    fake = FakeCluster([node("n1", taints=[FOREIGN])], [plugin_pod("n1")])
    monkeypatch.setattr(taints_module.NodeTaintsProvider, "_api", lambda self, props: FakeTaintApi(fake))
    monkeypatch.setattr(taints_module.NodeTaintsProvider, "_view", lambda self, props: fake)
    return fake


def props(*taints: dict, **overrides) -> dict:
    return {
        **target_props(target()),
        "taints": list(taints),
        "gate": GATE_TAINT,
        "kubeconfig": "secret",
        "context": None,
        **overrides,
    }


def taints_on(cluster: FakeCluster, name: str = "n1") -> list[dict]:
    return cluster.nodes[name]["spec"]["taints"]


def test_provider_create_gates_the_node_and_delete_removes_ours_and_the_gate(cluster):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    assert created.id == "n1" and taints_on(cluster) == [FOREIGN, GPU, GATE_TAINT], taints_on(cluster)
    assert (created.outs["round"], created.outs["health"]) == (1, []), created.outs
    provider.delete("n1", created.outs)
    assert taints_on(cluster) == [FOREIGN], taints_on(cluster)


def test_provider_update_swaps_only_our_taints_and_leaves_the_gate_off(cluster):
    provider = NodeTaintsProvider()
    provider.create(props(GPU, DEDICATED))
    cluster.nodes["n1"]["spec"]["taints"].remove(GATE_TAINT)  # the readiness check lifted it
    updated = provider.update("n1", {**props(GPU, DEDICATED), "round": 1, "health": []}, props(GPU))
    assert taints_on(cluster) == [FOREIGN, GPU], taints_on(cluster)
    assert updated.outs["round"] == 1, updated.outs


def test_provider_read_shows_a_taint_removed_out_of_band(cluster):
    provider = NodeTaintsProvider()
    provider.create(props(GPU))
    cluster.nodes["n1"]["spec"]["taints"] = [FOREIGN]  # kubectl taint node n1 nvidia.com/gpu-
    read = provider.read("n1", props(GPU))
    assert read.outs["taints"] == [], read.outs
    diff = provider.diff("n1", read.outs, props(GPU))
    assert diff.changes, "refresh must turn the missing taint into a pending change"


def test_provider_read_of_a_healthy_node_finds_no_degradation(cluster):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == [], read.outs
    assert not provider.diff("n1", read.outs, props(GPU)).changes


def test_a_degraded_node_is_drift_and_up_gates_it_again_in_a_new_round(cluster):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # opened
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"  # an XID error
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == ['status.allocatable["nvidia.com/gpu"] is 3, expected 4'], read.outs
    assert provider.diff("n1", read.outs, props(GPU)).changes, "a degraded node must be a pending change"
    updated = provider.update("n1", read.outs, props(GPU))
    assert GATE_TAINT in taints_on(cluster), "the degraded node was not gated again"
    assert (updated.outs["round"], updated.outs["health"]) == (2, []), updated.outs


def test_an_existing_node_from_before_the_gate_is_gated_once(cluster):
    provider = NodeTaintsProvider()
    old = {k: v for k, v in props(GPU).items() if k != "gate"}
    provider.create(old)
    assert provider.diff("n1", old, props(GPU)).changes
    provider.update("n1", old, props(GPU))
    assert taints_on(cluster) == [FOREIGN, GPU, GATE_TAINT], taints_on(cluster)


def test_provider_create_on_a_node_not_in_the_cluster_is_an_operator_error(cluster):
    with pytest.raises(GpuNodesError, match="node ghost not found"):
        NodeTaintsProvider().create(props(GPU, node="ghost"))


def test_provider_delete_of_a_vanished_node_succeeds(cluster):
    NodeTaintsProvider().delete("gone", props(GPU, node="gone"))


def test_rotated_credentials_are_a_change_that_keeps_the_taints():
    diff = NodeTaintsProvider().diff("n1", props(GPU), props(GPU, kubeconfig="rotated"))
    assert diff.changes and not diff.replaces, vars(diff)


def test_provider_diff_replaces_on_another_node():
    diff = NodeTaintsProvider().diff("n1", props(GPU), props(GPU, node="n2"))
    assert diff.replaces == ["node"] and diff.delete_before_replace, diff
