"""The group's `dra` section: plain nvidia.com/gpu requests served through DRA (`extendedResourceName`),
refused where a tenant's plain pod would get something other than what a group asked for."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of
from tests.factories import group

GROUPS = "gpu-nodes:nodeGroups"
EXTENDED = {"extendedResourceName": True}


def dra_group(name: str = "h100", **overrides):
    return group(name, allocator="dra", **overrides)


def test_it_is_off_by_default():
    spec = parse_stack([dra_group()]).node_groups[0]
    assert spec.dra.extended_resource_name is False and spec.claims_gpus, spec.dra


def test_a_dra_group_that_serves_plain_requests_takes_no_claims():
    spec = parse_stack([dra_group(dra=EXTENDED)]).node_groups[0]
    assert spec.dra.extended_resource_name and not spec.claims_gpus, spec.dra


def test_a_device_plugin_group_may_not_ask_for_it():
    problems = problems_of(group(dra=EXTENDED))
    assert_one_problem(problems, f"{KEY}.dra.extendedResourceName", "only with allocator dra")


def test_an_unknown_key_in_the_section_is_named():
    problems = problems_of(dra_group(dra={"extendedResource": True}))
    assert_one_problem(problems, f"{KEY}.dra.extendedResource", "did you mean extendedResourceName")


def test_dra_groups_that_disagree_are_refused_naming_both():
    """The DeviceClass is the cluster's one: a group that did not ask would serve plain pods too."""
    problems = problems_of(dra_group("h100", dra=EXTENDED), dra_group("b200"))
    assert_one_problem(problems, f"{GROUPS}[1].dra.extendedResourceName", f"{GROUPS}[0].dra.extendedResourceName (h100) is true")


def test_dra_groups_that_agree_are_accepted():
    stack = parse_stack([dra_group("h100", dra=EXTENDED), dra_group("b200", dra=EXTENDED)])
    assert all(g.dra.extended_resource_name for g in stack.node_groups), stack.node_groups


@pytest.mark.parametrize(
    ("plugin", "key", "fragment"),
    [
        ({"timeSlicingReplicas": 4}, "timeSlicingReplicas", "one of 4 time-sliced shares of a GPU"),
        ({"sharing": {"replicas": 3}}, "sharing.replicas", "one of 3 time-sliced shares of a GPU"),
        ({"sharing": {"strategy": "mps", "replicas": 4}}, "sharing.replicas", "one of 4 MPS shares of a GPU"),
        ({"migStrategy": "single", "migDevices": {"3g.40gb": 2}}, "migStrategy", "a MIG device"),
    ],
)
def test_a_device_plugin_group_whose_gpu_is_not_a_whole_gpu_is_refused_beside_it(plugin, key, fragment):
    """The same plain request would get a whole GPU on a DRA node and a share or a MIG device on this one."""
    problems = problems_of(dra_group(dra=EXTENDED), group("a100", devicePlugin=plugin, verification={"gpusPerPod": [1]}))
    assert_one_problem(problems, f"{GROUPS}[1].devicePlugin.{key}", fragment, f"{GROUPS}[0].dra.extendedResourceName (h100)")


def test_replicas_renamed_nvidia_gpu_shared_leave_nvidia_gpu_a_whole_gpu():
    """renameByDefault: the plugin advertises the replicas as nvidia.com/gpu.shared, not nvidia.com/gpu."""
    renamed = group("a100", devicePlugin={"sharing": {"replicas": 4, "renameByDefault": True}}, verification={"gpusPerPod": [1]})
    assert len(parse_stack([dra_group(dra=EXTENDED), renamed]).node_groups) == 2


def test_a_whole_gpu_device_plugin_group_is_accepted_beside_it():
    """On a node that advertises nvidia.com/gpu the scheduler gives a plain pod the device plugin's GPU:
    a whole GPU either way."""
    assert len(parse_stack([dra_group(dra=EXTENDED), group("a100")]).node_groups) == 2


def test_a_time_sliced_group_is_accepted_where_no_dra_group_serves_plain_requests():
    stack = parse_stack([dra_group(), group("a100", devicePlugin={"timeSlicingReplicas": 4}, verification={"gpusPerPod": [1]})])
    assert len(stack.node_groups) == 2, stack.node_groups


def test_under_dynamic_mig_a_group_may_prove_mig_devices_only():
    """An Ampere GPU in MIG mode is offered only split (the driver's nvlib.go): no whole GPU for gpusPerPod to ask."""
    raw = group(allocator="dra", dra={"migProfiles": ["1g.10gb"]}, verification={"gpusPerPod": []})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.gpus_per_pod == () and spec.dra.mig_profiles == ("1g.10gb",)
    problems = problems_of(group(allocator="dra", verification={"gpusPerPod": []}))
    assert_one_problem(problems, "gpu-nodes:nodeGroups[0].verification.gpusPerPod", "at least one GPU count")
