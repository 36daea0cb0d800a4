"""Exact GPU capacity: each node's allocatable nvidia.com/gpu against what the group declares."""

from __future__ import annotations

import pytest

from components.gpu_capacity import (
    CapacityMismatchError,
    NodeGpuCapacityProvider,
    expected_allocatable,
    wait_for_capacity,
)
from tests.fakes import FakeClock
from tests.specs import group_spec


class FakeNodes:
    """Plays a node's allocatable nvidia.com/gpu: one value per read, the last one repeated."""

    def __init__(self, *values: int | None):
        self.values = list(values)
        self.reads: list[str] = []

    def allocatable_gpus(self, node: str) -> int | None:
        value = self.values[min(len(self.reads), len(self.values) - 1)]
        self.reads.append(node)
        return value


def wait(nodes: FakeNodes, expected: int = 4, timeout: float = 60, replicas: int = 1) -> int:
    clock = FakeClock()
    return wait_for_capacity(nodes, "gpu-node-2", expected, timeout, expected // replicas, replicas, clock, clock.sleep)


def test_expected_is_gpus_per_node():
    assert expected_allocatable(group_spec(gpusPerNode=8)) == 8


def test_time_slicing_multiplies_the_expected_count():
    assert expected_allocatable(group_spec(gpusPerNode=2, devicePlugin={"timeSlicingReplicas": 4})) == 8


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_mig_layout_decides_the_count_so_it_is_not_checked(strategy):
    mig = {"migResources": {"nvidia.com/mig-1g.5gb": 1}} if strategy == "mixed" else {}
    assert expected_allocatable(group_spec(devicePlugin={"migStrategy": strategy}, verification=mig)) is None


def test_exact_count_passes_at_once_with_one_read():
    nodes = FakeNodes(4)
    assert wait(nodes) == 4
    assert nodes.reads == ["gpu-node-2"], nodes.reads


def test_waits_for_the_plugin_to_register():
    """Kubelet reports the plugin's devices a little after the DaemonSet rolled out."""
    nodes = FakeNodes(None, 0, 4)
    assert wait(nodes) == 4
    assert len(nodes.reads) == 3, nodes.reads


def test_a_lost_gpu_fails_naming_the_node_and_both_figures():
    with pytest.raises(CapacityMismatchError) as caught:
        wait(FakeNodes(3))
    message = str(caught.value)
    assert message.startswith('node gpu-node-2: status.allocatable["nvidia.com/gpu"] is 3, expected 4'), message
    assert "unhealthy" in message, message


def test_more_gpus_than_declared_fail_too():
    with pytest.raises(CapacityMismatchError, match=r"is 8, expected 4"):
        wait(FakeNodes(8))


def test_no_gpu_registered_is_said_so():
    with pytest.raises(CapacityMismatchError, match=r"is not set \(no GPU registered\), expected 4"):
        wait(FakeNodes(None))


def test_time_slicing_is_explained_in_the_figure():
    with pytest.raises(CapacityMismatchError, match=r"expected 8 \(gpusPerNode 2 x timeSlicingReplicas 4\)"):
        wait(FakeNodes(4), expected=8, replicas=4)


PROPS = {"node": "gpu-node-2", "expected": 4, "gpusPerNode": 4, "replicas": 1, "pluginRevision": "r1", "waitSeconds": 60}


def test_a_new_plugin_checks_again():
    provider = NodeGpuCapacityProvider()
    olds = {**PROPS, "allocatable": 4}
    assert provider.diff("gpu-node-2", olds, {**PROPS, "pluginRevision": "r2"}).changes
    assert not provider.diff("gpu-node-2", olds, {**PROPS, "kubeconfig": "rotated"}).changes


def test_a_gpu_lost_since_the_last_run_shows_on_refresh_and_checks_again():
    provider = NodeGpuCapacityProvider()
    provider._api = lambda _props: FakeNodes(3)
    refreshed = provider.read("gpu-node-2", {**PROPS, "allocatable": 4})
    assert refreshed.outs["allocatable"] == 3, refreshed.outs
    assert provider.diff("gpu-node-2", refreshed.outs, PROPS).changes


def test_numbers_from_the_engine_read_as_whole_numbers():
    """The engine hands a dynamic provider every number as a float: 4.0 must still say 4."""
    provider = NodeGpuCapacityProvider()
    provider._api = lambda _props: FakeNodes(3)
    as_sent = {**PROPS, "expected": 4.0, "gpusPerNode": 4.0, "replicas": 1.0, "waitSeconds": 0.0}
    with pytest.raises(CapacityMismatchError, match=r"is 3, expected 4 \(gpusPerNode 4\) after 0s"):
        provider.create(as_sent)
