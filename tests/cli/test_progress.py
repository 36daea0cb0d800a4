"""The live view's state, read from engine events: each node proven, gated or failed; what drifted."""

from __future__ import annotations

import pytest

from gpu_nodes.cli.progress import StackProgress, counted, fleet_line, node_of, view
from tests.cli.events import error, failed, outputs, pre

NODES = ("gpu-node-1", "gpu-node-10", "gpu-node-2")


@pytest.mark.parametrize(
    ("name", "node"),
    [
        ("gpu-nodes-a100-gpu-node-1-taints", "gpu-node-1"),
        ("gpu-nodes-a100-gpu-node-10-readiness", "gpu-node-10"),
        ("gpu-nodes-a100-verify-gpu-node-2-gpus-1", "gpu-node-2"),
        ("gpu-nodes-a100-device-plugin", None),
    ],
)
def test_a_resource_belongs_to_the_node_its_name_carries(name: str, node: str | None):
    assert node_of(name, NODES) == node


def up_progress() -> StackProgress:
    progress = StackProgress("a100", NODES)
    progress.start("up")
    return progress


def test_a_node_is_gated_once_its_taints_are_set_and_proven_once_its_readiness_passes():
    progress = up_progress()
    for event in (outputs("create", "g-gpu-node-1-taints"), outputs("create", "g-gpu-node-2-taints")):
        progress.on_event(event)
    assert progress.counts() == {"nodes": 3, "proven": 0, "gated": 2, "failed": 0}, progress
    progress.on_event(outputs("create", "g-gpu-node-1-readiness"))
    assert progress.counts() == {"nodes": 3, "proven": 1, "gated": 1, "failed": 0}, progress


def test_a_failed_step_or_an_error_naming_a_node_marks_it_failed_with_the_message():
    progress = up_progress()
    progress.on_event(outputs("create", "g-gpu-node-2-taints"))
    progress.on_event(failed("create", "g-gpu-node-10-preflight"))
    progress.on_event(error("node gpu-node-2 stays gated: pluginRunning", "g-gpu-node-2-readiness"))
    assert progress.counts()["failed"] == 2 and progress.counts()["gated"] == 0, progress
    assert progress.failed["gpu-node-2"] == "node gpu-node-2 stays gated: pluginRunning", progress.failed
    assert progress.failed["gpu-node-10"] == "create g-gpu-node-10-preflight failed", progress.failed


def test_the_step_shown_is_the_last_one_started():
    progress = up_progress()
    progress.on_event(pre("create", "g-gpu-node-1-labels"))
    assert progress.step == "create g-gpu-node-1-labels"
    assert "create g-gpu-node-1-labels" in progress.line(6), progress.line(6)


@pytest.mark.parametrize(
    ("check", "event", "expected"),
    [
        ("preview", pre("update", "g-gpu-node-2-labels"), [("update", "gpu-node-2", "preview")]),
        ("refresh", outputs("update", "g-gpu-node-1-taints"), [("update", "gpu-node-1", "refresh")]),
        ("refresh", outputs("delete", "g-device-plugin"), [("delete", None, "refresh")]),
        ("refresh", outputs("same", "g-gpu-node-1-taints"), []),
        ("refresh", pre("refresh", "g-gpu-node-1-taints"), []),
        ("preview", pre("same", "g-gpu-node-1-labels"), []),
    ],
    ids=["preview-update", "refresh-update", "refresh-delete", "refresh-same", "refresh-pre", "preview-same"],
)
def test_drift_is_each_step_that_changes_something(check: str, event, expected: list):
    progress = StackProgress("a100", NODES)
    progress.start("drift")
    progress.check(check)
    progress.on_event(event)
    assert [(c.op, c.node, c.check) for c in progress.changes] == expected, progress.changes


def test_the_fleet_line_counts_nodes_settled_on_up_and_stacks_otherwise():
    a, b = up_progress(), StackProgress("b", ("gpu-node-3",))
    a.on_event(outputs("create", "g-gpu-node-1-readiness"))
    a.finish(True)
    b.start("up")
    assert "1/4" in fleet_line([a, b]) and "stacks finished 1/2" in fleet_line([a, b]), fleet_line([a, b])
    lines = view([a, b])
    assert lines[0].startswith("a100  passed   proven 1/3") and lines[1].startswith("b     running"), lines


@pytest.mark.parametrize(
    ("urn", "expected"),
    [
        ("urn:pulumi:b::p::pulumi:providers:pulumi-python::default", False),
        ("urn:pulumi:b::p::pulumi:providers:kubernetes::default_4_25_0", False),
        ("urn:pulumi:b::p::pulumi:providers:kubernetes::k8s", True),
        ("urn:pulumi:b::p::pulumi:pulumi:Stack::p-b", False),
        ("urn:pulumi:b::p::pulumi-python:dynamic:Resource::g-n2-labels", True),
    ],
)
def test_drift_counts_what_the_engine_counts(urn: str, expected: bool):
    assert counted(urn) is expected
