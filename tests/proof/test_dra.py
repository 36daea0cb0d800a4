"""What NVIDIA's DRA driver publishes of a node's GPUs, judged against what preflight found."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.dra import (
    ExpectedGpus,
    attribute,
    dra_gpu_problem,
    mig_profiles_problem,
    slice_findings,
    slice_problem,
    slices_of_node,
)
from tests.dra_slices import (
    A100,
    H100,
    gpu_device,
    mig_device,
    node_slices,
    preflight_report,
    resource_slice,
    tainted,
    uuid,
    xid_taint,
)

NODE = "h100-node-1"
EXPECTED = ExpectedGpus.from_report(preflight_report(4))


def test_exactly_the_gpus_preflight_found_pass():
    assert slice_problem(NODE, node_slices(NODE, 4), EXPECTED) is None, NODE


def test_a_missing_gpu_is_named_by_its_uuid():
    slices = [resource_slice(NODE, [gpu_device(i) for i in (0, 1, 3)])]
    problem = slice_problem(NODE, slices, EXPECTED)
    assert problem == f"node {NODE}: missing from its ResourceSlices: {uuid(2)}", problem


def test_a_gpu_preflight_did_not_find_is_unexpected():
    slices = [resource_slice(NODE, [*(gpu_device(i) for i in range(4)), gpu_device(4)])]
    problem = slice_problem(NODE, slices, EXPECTED)
    assert problem is not None and f"not found by preflight: gpu-4 {uuid(4)}" in problem, problem


def test_a_gpu_of_another_model_is_named_with_both_models():
    slices = [resource_slice(NODE, [gpu_device(0, A100), *(gpu_device(i) for i in (1, 2, 3))])]
    problem = slice_problem(NODE, slices, EXPECTED)
    assert problem == f"node {NODE}: {uuid(0)} is published as {A100}, preflight found {H100}", problem


def test_no_slice_for_the_node_says_so():
    problem = slice_problem(NODE, node_slices("other-node", 4), EXPECTED)
    assert problem is not None and problem.startswith(f"node {NODE}: no ResourceSlice of driver gpu.nvidia.com"), problem


def test_other_drivers_slices_are_ignored():
    slices = [*node_slices(NODE, 4), resource_slice(NODE, [gpu_device(7)], driver="compute-domain.nvidia.com")]
    assert slice_problem(NODE, slices, EXPECTED) is None, NODE


def test_only_the_newest_generation_counts():
    """types.go, ResourcePool.generation: consumers only consider the pool's highest generation."""
    old = resource_slice(NODE, [gpu_device(i) for i in range(4)], generation=1, suffix="old")
    new = resource_slice(NODE, [gpu_device(i) for i in range(3)], generation=2, suffix="new")
    problem = slice_problem(NODE, [old, new], EXPECTED)
    assert problem == f"node {NODE}: missing from its ResourceSlices: {uuid(3)}", problem


def test_an_incomplete_pool_is_not_judged_by_its_devices():
    """resourceSliceCount 2 at the newest generation, one slice seen: the driver is still writing."""
    part = resource_slice(NODE, [gpu_device(i) for i in range(2)], generation=3, slice_count=2)
    problem = slice_problem(NODE, [part], EXPECTED)
    assert problem == f"node {NODE}: pool {NODE} is incomplete at generation 3: 1 of 2 ResourceSlices", problem


def test_a_pool_of_several_slices_is_read_whole():
    first = resource_slice(NODE, [gpu_device(0), gpu_device(1)], generation=2, slice_count=2, suffix="a")
    second = resource_slice(NODE, [gpu_device(2), gpu_device(3)], generation=2, slice_count=2, suffix="b")
    assert slice_problem(NODE, [first, second], EXPECTED) is None, NODE


def test_mig_devices_are_not_gpus():
    devices = [*(gpu_device(i) for i in range(4)), mig_device(0, 0), mig_device(0, 1)]
    published = slices_of_node([resource_slice(NODE, devices)], NODE)
    assert [d.name for d in published.gpus] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"], published
    assert slice_problem(NODE, [resource_slice(NODE, devices)], EXPECTED) is None, NODE


def test_without_preflight_the_count_decides():
    problem = slice_problem(NODE, node_slices(NODE, 3), ExpectedGpus.counted(4))
    assert problem == f"node {NODE}: 3 GPU device(s) published, expected 4", problem


def test_without_preflight_the_groups_model_decides():
    problem = slice_problem(NODE, node_slices(NODE, 4, A100), ExpectedGpus.counted(4, H100))
    assert problem is not None and f"not of the group's model {H100}" in problem, problem
    assert slice_problem(NODE, node_slices(NODE, 4, A100), ExpectedGpus.counted(4)) is None, NODE


@pytest.mark.parametrize(
    ("attributes", "value"),
    [
        ({"uuid": {"string": "GPU-1"}}, "GPU-1"),
        ({"gpu.nvidia.com/uuid": {"string": "GPU-1"}}, "GPU-1"),
        ({"numaNode": {"int": 1}}, None),
        ({}, None),
    ],
)
def test_an_attribute_is_read_by_its_short_or_qualified_name(attributes: dict, value: str | None):
    """types.go, QualifiedName: a name without a domain is in the driver's domain."""
    assert attribute({"attributes": attributes}, "uuid") == value, attributes


def test_typed_values_of_every_kind_are_read():
    device = gpu_device(1)
    found = {name: attribute(device, name) for name in ("type", "cudaComputeCapability", "numaNode")}
    assert found == {"type": "gpu", "cudaComputeCapability": "9.0.0", "numaNode": 0}, found


def test_the_findings_name_a_gone_device():
    slices = [resource_slice(NODE, [gpu_device(i) for i in (0, 1, 2)])]
    lines = slice_findings(NODE, slices, EXPECTED)
    assert lines == [f"device {uuid(3)} of node {NODE} is gone from its ResourceSlice"], lines


def test_the_findings_name_a_new_device_and_its_slice():
    slices = [resource_slice(NODE, [*(gpu_device(i) for i in range(4)), gpu_device(5)])]
    lines = slice_findings(NODE, slices, EXPECTED)
    assert lines == [f"device gpu-5 {uuid(5)} ({H100}) of node {NODE} is new in its ResourceSlice {NODE}-gpu.nvidia.com-x7k2p"], (
        lines
    )


def test_no_findings_while_the_slices_agree():
    assert slice_findings(NODE, node_slices(NODE, 4), EXPECTED) == [], NODE


def test_preflight_gpus_are_read_in_index_order():
    report = {"gpus": [{"index": 1, "name": H100, "uuid": uuid(1)}, {"index": 0, "name": H100, "uuid": uuid(0)}]}
    expected = ExpectedGpus.from_report(report)
    assert expected.gpus == ((uuid(0), H100), (uuid(1), H100)), expected


def test_a_gpu_tainted_no_schedule_is_not_offered_and_named_with_its_taint():
    """The driver's health check taints a GPU with a fatal XID gpu.nvidia.com/xid=<xid>:NoSchedule."""
    slices = [resource_slice(NODE, [*(gpu_device(i) for i in range(3)), tainted(gpu_device(3), xid_taint(79))])]
    problem = slice_problem(NODE, slices, EXPECTED)
    expected = f"node {NODE}: not offered, tainted in its ResourceSlice: {uuid(3)} (gpu-3) gpu.nvidia.com/xid=79:NoSchedule"
    assert problem == expected, problem


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_either_withholding_effect_keeps_a_gpu_from_claims(effect: str):
    slices = [resource_slice(NODE, [tainted(gpu_device(0), xid_taint(48, effect)), *(gpu_device(i) for i in (1, 2, 3))])]
    problem = slice_problem(NODE, slices, EXPECTED)
    assert problem is not None and f"gpu.nvidia.com/xid=48:{effect}" in problem, problem


@pytest.mark.parametrize("effect", ["None", "SomeFutureEffect"])
def test_an_informational_or_unknown_effect_leaves_the_gpu_offered(effect: str):
    """types.go, DeviceTaint.effect: consumers must treat unknown effects like None (the driver's
    ignored XIDs and unmonitored GPUs are tainted with effect None)."""
    slices = [resource_slice(NODE, [tainted(gpu_device(0), xid_taint(43, effect)), *(gpu_device(i) for i in (1, 2, 3))])]
    assert slice_problem(NODE, slices, EXPECTED) is None, NODE


def test_a_lost_gpu_taint_has_no_value():
    lost = {"key": "gpu.nvidia.com/gpu-lost", "effect": "NoSchedule"}
    slices = [resource_slice(NODE, [tainted(gpu_device(0), lost), *(gpu_device(i) for i in (1, 2, 3))])]
    problem = slice_problem(NODE, slices, EXPECTED)
    assert problem is not None and f"{uuid(0)} (gpu-0) gpu.nvidia.com/gpu-lost:NoSchedule" in problem, problem


def test_without_preflight_a_tainted_gpu_is_named_though_the_count_is_right():
    slices = [resource_slice(NODE, [tainted(gpu_device(0), xid_taint()), *(gpu_device(i) for i in (1, 2, 3))])]
    problem = slice_problem(NODE, slices, ExpectedGpus.counted(4))
    expected = f"node {NODE}: not offered, tainted in its ResourceSlice: {uuid(0)} (gpu-0) gpu.nvidia.com/xid=79:NoSchedule"
    assert problem == expected, problem


def test_the_findings_name_a_tainted_device_and_its_taint():
    slices = [resource_slice(NODE, [*(gpu_device(i) for i in range(3)), tainted(gpu_device(3), xid_taint(94))])]
    lines = slice_findings(NODE, slices, EXPECTED)
    assert lines == [
        f"device {uuid(3)} (gpu-3) of node {NODE} is tainted gpu.nvidia.com/xid=94:NoSchedule in its ResourceSlice: not offered"
    ], lines


def test_a_tainted_gpu_preflight_did_not_find_is_named_once_as_unexpected():
    slices = [resource_slice(NODE, [*(gpu_device(i) for i in range(4)), tainted(gpu_device(4), xid_taint())])]
    lines = slice_findings(NODE, slices, EXPECTED)
    new = f"device gpu-4 {uuid(4)} ({H100}) of node {NODE} is new in its ResourceSlice {NODE}-gpu.nvidia.com-x7k2p"
    assert lines == [new], lines


# --- dynamic MIG: a device of each profile the group proves --------------------------------------------


def mig_slices(profiles: tuple[str, ...] = ("1g.10gb",), taint: bool = False) -> list[dict]:
    """The driver's split slices under DynamicMIG on 1.35+ (driver.go, generateSplitResourceSlices): the counters' slice
    first, then one per GPU with the GPU and its partitions."""
    counters = resource_slice(NODE, [], slice_count=5, suffix="c0000")
    per_gpu = []
    for gpu in range(4):
        migs = []
        for profile in profiles:
            device = mig_device(gpu, 0)
            device["attributes"]["profile"] = {"string": profile}
            device["name"] = f"gpu-{gpu}-mig-{profile.replace('.', '')}-0"
            if taint:
                device["taints"] = [xid_taint()]
            migs.append(device)
        per_gpu.append(resource_slice(NODE, [gpu_device(gpu), *migs], slice_count=5, suffix=f"g000{gpu}"))
    return [counters, *per_gpu]


def test_each_profile_offered_on_a_gpu_passes():
    assert mig_profiles_problem(NODE, mig_slices(("1g.10gb", "3g.40gb")), ["1g.10gb", "3g.40gb"]) is None
    assert dra_gpu_problem(NODE, {"count": 4, "migProfiles": ["1g.10gb"]}, mig_slices(), None) is None


def test_a_profile_no_device_offers_is_named_with_the_profiles_listed():
    problem = mig_profiles_problem(NODE, mig_slices(("1g.10gb",)), ["1g.10gb", "7g.80gb"])
    assert problem is not None and "no MIG device of profile 7g.80gb" in problem and "listed: 1g.10gb" in problem, problem


def test_without_dynamic_mig_the_slices_list_whole_gpus_only_and_each_profile_is_missing():
    problem = dra_gpu_problem(NODE, {"count": 4, "migProfiles": ["1g.10gb"]}, node_slices(NODE, 4), None)
    assert problem is not None and "profiles listed: none" in problem and "DynamicMIG" in problem, problem


def test_a_tainted_mig_device_is_not_offered():
    problem = mig_profiles_problem(NODE, mig_slices(taint=True), ["1g.10gb"])
    assert problem is not None and "1g.10gb" in problem, problem


def test_the_gpus_are_judged_before_the_profiles():
    slices = mig_slices()
    slices[1]["spec"]["devices"] = []  # gpu-0 gone, and its partitions with it
    problem = dra_gpu_problem(NODE, {"count": 4, "migProfiles": ["1g.10gb"]}, slices, None)
    assert problem is not None and "4 GPU device" not in problem and "3 GPU device(s) published, expected 4" in problem


def test_an_ampere_gpu_in_mig_mode_offered_only_split_counts_as_published():
    """nvlib.go: on Ampere in MIG mode the driver publishes the GPU's MIG profiles and not the GPU itself."""
    slices = mig_slices()
    for item in slices[1:]:
        item["spec"]["devices"] = [d for d in item["spec"]["devices"] if d["attributes"]["type"]["string"] == "mig"]
    assert dra_gpu_problem(NODE, {"count": 4, "migProfiles": ["1g.10gb"]}, slices, None) is None
    assert dra_gpu_problem(NODE, {"count": 4}, slices, None) is not None, "whole GPUs only without dynamic MIG"
