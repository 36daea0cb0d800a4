"""A node's target: what the group declares it offers, and how it travels as inputs and back."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.target import TARGET_KEYS, DeclaredGpus, NodeTarget
from gpu_nodes.resources.node_builders import expected_allocatable, node_target
from gpu_nodes.vocabulary import GpuSharing
from tests.fakes import target
from tests.specs import group_spec


def test_expected_is_gpus_per_node_times_time_slicing_replicas():
    assert expected_allocatable(group_spec(gpusPerNode=8)) == 8
    assert expected_allocatable(group_spec(gpusPerNode=2, devicePlugin={"timeSlicingReplicas": 4})) == 8


def test_single_mig_with_a_declared_layout_expects_each_device_as_one_gpu():
    spec = group_spec(gpusPerNode=8, devicePlugin={"migStrategy": "single", "migDevices": {"1g.10gb": 7}})
    assert node_target(spec, "n1").expected_gpus == 56


def test_a_declared_mig_layout_survives_the_engine_round_trip():
    spec = group_spec(
        devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb": 7}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb": 1}},
    )
    props = node_target(spec, "n1").to_props()
    read_back = NodeTarget.from_props({**props, "expectedMigDevices": {"nvidia.com/mig-1g.10gb": 28.0}})
    assert read_back.expected_mig_devices == {"nvidia.com/mig-1g.10gb": 28}, read_back


def test_a_new_mig_layout_is_a_new_target_even_with_the_same_count():
    """Under single both layouts give 4 nvidia.com/gpu; the node is proven again on the new one."""
    one, two = ({"migStrategy": "single", "migDevices": {p: 2}} for p in ("1g.10gb", "2g.20gb"))
    targets = [node_target(group_spec(gpusPerNode=2, devicePlugin=plugin), "n1") for plugin in (one, two)]
    assert targets[0].expected_gpus == targets[1].expected_gpus == 4, targets
    assert targets[0].to_props()["migDevices"] == {"1g.10gb": 2}, targets[0]
    assert targets[0].to_props() != targets[1].to_props(), targets


def test_without_a_mig_layout_the_target_has_no_layout_input():
    for spec in (group_spec(), group_spec(devicePlugin={"migStrategy": "single"})):
        assert "migDevices" not in node_target(spec, "n1").to_props(), spec.device_plugin


def test_the_target_reads_back_from_its_inputs_as_it_was():
    mig = NodeTarget(
        **{**vars(target(None)), "expected_mig_devices": {"nvidia.com/mig-1g.10gb": 7}, "mig_devices": {"1g.10gb": 7}}
    )
    for written in (target(), mig):
        assert NodeTarget.from_props(written.to_props()) == written, written.to_props()


def test_the_target_inputs_keep_their_keys():
    """Every deployed stack's state holds them: a renamed key is a new proof of every node."""
    mig = NodeTarget(
        **{**vars(target(None)), "expected_mig_devices": {"nvidia.com/mig-1g.10gb": 7}, "mig_devices": {"1g.10gb": 7}}
    )
    assert TARGET_KEYS == (
        "node",
        "labels",
        "taints",
        "pluginNamespace",
        "pluginSelector",
        "expectedGpus",
        "expectedMigDevices",
        "migDevices",
        "draGpus",
        "gpuResource",
    )
    assert tuple(mig.to_props()) == TARGET_KEYS[:-2]


def test_without_a_mig_layout_the_inputs_stay_as_before():
    assert "expectedMigDevices" not in node_target(group_spec(), "n1").to_props()


def test_numbers_from_the_engine_read_as_whole_numbers():
    read_back = NodeTarget.from_props({**target().to_props(), "expectedGpus": 4.0})
    assert read_back.expected_gpus == 4 and isinstance(read_back.expected_gpus, int)


def test_a_dra_groups_target_asks_its_slices_for_the_groups_count_and_model():
    spec = group_spec(allocator="dra", gpusPerNode=8, gpuModel="NVIDIA H100 80GB HBM3")
    found = node_target(spec, "n1")
    assert found.dra_gpus == {"count": 8, "model": "NVIDIA H100 80GB HBM3"}, found
    assert found.expected_gpus is None, found
    assert found.plugin_selector["app.kubernetes.io/name"] == "dra-driver-nvidia-gpu", found


def test_a_dra_target_reads_back_from_its_inputs_with_a_whole_count():
    written = node_target(group_spec(allocator="dra"), "n1")
    props = written.to_props()
    read_back = NodeTarget.from_props({**props, "draGpus": {"count": 4.0}})
    assert read_back == written and isinstance(read_back.dra_gpus["count"], int), props


def test_a_device_plugin_groups_target_has_no_dra_input():
    assert "draGpus" not in node_target(group_spec(), "n1").to_props()


@pytest.mark.parametrize(
    ("sharing", "written", "key"),
    [
        (GpuSharing("timeSlicing", 4), {"gpusPerNode": 2, "replicas": 4, "sharing": "timeSlicing"}, "sharing.replicas"),
        (GpuSharing("mps", 4), {"gpusPerNode": 2, "replicas": 4, "sharing": "mps"}, "sharing.replicas"),
        (
            GpuSharing("timeSlicing", 4, setting="timeSlicingReplicas"),
            {"gpusPerNode": 2, "replicas": 4},
            "timeSlicingReplicas",
        ),
        (GpuSharing("timeSlicing", 1), {"gpusPerNode": 2, "replicas": 1}, "sharing.replicas"),
    ],
    ids=["time-sliced by sharing", "mps", "time-sliced by the older spelling", "not shared"],
)
def test_the_declared_gpus_travel_as_inputs_and_come_back_naming_the_setting_the_group_used(sharing, written, key):
    declared = DeclaredGpus.of(2, sharing)
    assert declared.to_props() == written, declared
    back = DeclaredGpus.from_props(written).sharing
    assert (back.strategy, back.replicas, back.replicas_key) == (sharing.strategy, sharing.replicas, key), back
