"""The split: which stack owns the shared namespaces and RuntimeClass, each stack's config, the order."""

from __future__ import annotations

import pytest

from gpu_nodes.cli.plan import RECOMMENDED_STACK_NODES, phases, plan_fleet
from gpu_nodes.errors import FleetError
from tests.cli.fleets import fleet, group

SHARED = ["gpu-verification", "nvidia-device-plugin"]


def three_stacks(**extra):
    return plan_fleet(fleet(group("a", "n1"), group("b", "n2"), group("c", "n3"), **extra))


def test_the_owner_creates_the_shared_objects_and_the_others_reference_them():
    plan = three_stacks()
    owner, *others = plan.stacks
    assert owner.owner and owner.creates == tuple(SHARED) and owner.references == (), owner
    assert "gpu-nodes:existingNamespaces" not in owner.config and "gpu-nodes:createRuntimeClass" not in owner.config
    for stack in others:
        assert stack.config["gpu-nodes:existingNamespaces"] == SHARED, stack
        assert stack.config["gpu-nodes:createRuntimeClass"] == "false", stack
        assert stack.creates == () and not stack.owner, stack


def test_each_stack_gets_its_own_groups_and_the_shared_settings():
    plan = three_stacks(config={"kubernetes:kubeconfig": "/k"})
    for stack, name in zip(plan.stacks, "abc", strict=True):
        assert [g["name"] for g in stack.config["gpu-nodes:nodeGroups"]] == [name], stack.config
        assert stack.config["kubernetes:kubeconfig"] == "/k", stack.config
        assert stack.nodes == (f"n{'abc'.index(name) + 1}",), stack


def test_an_owner_named_in_the_file_owns():
    plan = three_stacks(owner="c")
    assert plan.owner.name == "c" and plan.stack("a").config["gpu-nodes:createRuntimeClass"] == "false"


@pytest.mark.parametrize(
    ("runtime", "expected_other"),
    [
        ({"gpu-nodes:runtimeClass": "nvidia-cdi"}, None),  # someone else's class: every stack only names it
        ({"gpu-nodes:runtimeClass": "false"}, None),  # no class at all
        ({"gpu-nodes:runtimeClass": "gpus", "gpu-nodes:createRuntimeClass": "true"}, "false"),
        ({"gpu-nodes:createRuntimeClass": "false"}, "false"),  # an existing nvidia class
    ],
    ids=["named-class", "no-class", "created-other-name", "existing-nvidia"],
)
def test_only_a_class_the_owner_creates_is_referenced_with_create_false(runtime: dict, expected_other: str | None):
    plan = three_stacks(config=runtime)
    assert plan.stack("b").config.get("gpu-nodes:createRuntimeClass") == expected_other, plan.stack("b").config
    assert plan.owner.config.get("gpu-nodes:createRuntimeClass") == runtime.get("gpu-nodes:createRuntimeClass")


def test_a_namespace_only_one_other_stack_uses_is_its_own():
    own = {"verification": {"namespace": "verify-b"}}
    plan = plan_fleet(fleet(group("a", "n1"), group("b", "n2", **own)))
    assert plan.stack("b").creates == ("verify-b",), plan.stack("b")
    assert plan.stack("b").config["gpu-nodes:existingNamespaces"] == ["nvidia-device-plugin"], plan.stack("b").config


def test_a_namespace_that_exists_already_is_referenced_by_every_stack():
    plan = three_stacks(config={"gpu-nodes:existingNamespaces": ["gpu-verification"]})
    assert plan.owner.creates == ("nvidia-device-plugin",), plan.owner
    assert plan.owner.config["gpu-nodes:existingNamespaces"] == ["gpu-verification"], plan.owner.config


def test_a_namespace_two_other_stacks_share_without_the_owner_is_refused_naming_both():
    own = {"verification": {"namespace": "verify-bc"}}
    with pytest.raises(FleetError) as caught:
        plan_fleet(fleet(group("a", "n1"), group("b", "n2", **own), group("c", "n3", **own)))
    message = str(caught.value)
    assert "namespace 'verify-bc'" in message and "b (stack b), c (stack c)" in message and "owner 'a'" in message, message


def test_a_group_larger_than_the_recommended_size_is_named_with_the_figure():
    nodes = [f"n{i}" for i in range(RECOMMENDED_STACK_NODES + 1)]
    plan = plan_fleet(fleet(group("big", *nodes), group("small", "m1")))
    assert len(plan.warnings) == 1 and "group 'big' has 101 nodes, more than the 100" in plan.warnings[0], plan.warnings


def test_a_stack_of_several_groups_past_the_size_is_named():
    half = RECOMMENDED_STACK_NODES // 2 + 1
    g1, g2 = group("g1", *(f"a{i}" for i in range(half))), group("g2", *(f"b{i}" for i in range(half)))
    plan = plan_fleet(fleet(g1, g2, stacks={"both": ["g1", "g2"]}))
    assert len(plan.warnings) == 1 and "stack 'both' has 102 nodes in groups g1, g2" in plan.warnings[0], plan.warnings


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("up", [["a"], ["b", "c"]]),
        ("destroy", [["b", "c"], ["a"]]),
        ("preview", [["a", "b", "c"]]),
        ("drift", [["a", "b", "c"]]),
    ],
)
def test_the_owner_runs_alone_first_on_up_and_last_on_destroy(command: str, expected: list[list[str]]):
    assert phases(three_stacks(), command) == expected


def test_a_fleet_of_one_stack_has_one_phase():
    assert phases(plan_fleet(fleet(group("a", "n1"))), "up") == [["a"]]
    assert phases(plan_fleet(fleet(group("a", "n1"))), "destroy") == [["a"]]
