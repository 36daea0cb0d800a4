"""The policy pack (policy/): the device plugin tolerates every taint its group sets.

The stack it validates is the one the program registers under mocks, so the rule is
checked against the real resource shapes; the e2e tier runs it under the engine.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, StackValidationArgs

from policy.gpu_nodes_policy import DAEMONSET, tolerates, validate
from tests.factories import group
from tests.pulumi_mocks import Registered, run_component


def as_policy_resources(registered: list[Registered]) -> list[PolicyResource]:
    """What the engine hands a stack policy: each resource with its parent resolved."""
    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    by_urn: dict[str, PolicyResource] = {}
    for resource in registered:
        by_urn[resource.urn] = PolicyResource(
            resource.type, resource.inputs, resource.urn, resource.name, opts, None, None, [], {}
        )
    for resource in registered:
        by_urn[resource.urn].parent = by_urn.get(resource.parent)
    return list(by_urn.values())


def violations(resources: list[PolicyResource]) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    validate(StackValidationArgs(resources), lambda message, urn=None: found.append((message, urn)))
    return found


def stack(raw: dict[str, Any]) -> list[PolicyResource]:
    return as_policy_resources(run_component(raw).resources)


def test_the_programs_own_stack_passes():
    raw = group("a100", taints=["nvidia.com/gpu=present:NoSchedule", "example.com/dedicated=ml:NoExecute"])
    assert violations(stack(raw)) == []


def drop_plugin_toleration(resources: list[PolicyResource], key: str) -> PolicyResource:
    """The group's plugin, edited to no longer tolerate taints with this key."""
    plugin = next(r for r in resources if r.resource_type == DAEMONSET)
    props = copy.deepcopy(dict(plugin.props))
    pod = props["spec"]["template"]["spec"]
    pod["tolerations"] = [t for t in pod["tolerations"] if t["key"] != key]
    plugin.props = props
    return plugin


@pytest.mark.parametrize(
    "key, taint",
    [
        ("example.com/dedicated", "example.com/dedicated=ml:NoExecute"),
        ("gpu-nodes.dev/unverified", "gpu-nodes.dev/unverified=true:NoSchedule"),
    ],
    ids=["a group taint", "the readiness gate"],
)
def test_a_plugin_that_misses_a_taint_its_nodes_carry_is_a_violation(key, taint):
    resources = stack(group("a100", taints=["nvidia.com/gpu=present:NoSchedule", "example.com/dedicated=ml:NoExecute"]))
    plugin = drop_plugin_toleration(resources, key)
    found = violations(resources)
    assert [urn for _, urn in found] == [plugin.urn], found
    assert taint in found[0][0], found


def test_toleration_matching_follows_kubernetes():
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, taint)
    assert tolerates({"key": "nvidia.com/gpu", "value": "present"}, taint)
    assert tolerates({"operator": "Exists"}, taint)
    assert not tolerates({"key": "nvidia.com/gpu", "value": "absent", "effect": "NoSchedule"}, taint)
    assert not tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, taint)
    assert not tolerates({"key": "other", "operator": "Exists"}, taint)
