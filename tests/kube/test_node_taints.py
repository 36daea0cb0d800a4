"""Our taints on a node: read-modify-write that leaves everyone else's taints alone."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import NodeKeptChangingError, NodeNotFoundError, ResourceVersionConflictError, TaintConflictError
from gpu_nodes.kube.node_taints import (
    MAX_ATTEMPTS,
    NodeTaintState,
    apply_taints,
    lift_gate,
    present,
    put_gate,
    reconcile,
)
from tests.fakes import GATE_TAINT

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


# --- the gate ---------------------------------------------------------------------------


def test_the_gate_goes_on_and_comes_off_leaving_the_rest():
    api = FakeNodes({"n1": [FOREIGN, GPU]})
    put_gate(api, "n1")
    assert api.nodes["n1"] == [FOREIGN, GPU, GATE_TAINT], api.nodes
    lift_gate(api, "n1")
    assert api.nodes["n1"] == [FOREIGN, GPU], api.nodes
