"""Resource names two parts of the config would both give: refused before anything is registered,
naming both; and the names computed are the names the group registers."""

from __future__ import annotations

import pulumi
import pytest

from gpu_nodes import ConfigError, GpuFleet, GpuFleetArgs
from gpu_nodes.config.stack import parse_stack
from gpu_nodes.resources.child_names import group_children
from tests.factories import SSH_KEY, group, node
from tests.pulumi_mocks import run_inline

COLLISIONS = [
    (
        "node name across groups",
        [group("a", nodes=[node("b-c")]), group("a-b", nodes=[node("c", 2)])],
        "node_groups[1].nodes[0].name: got 'c'; gives the resource name 'a-b-c-preflight'",
        "node_groups[0].nodes[0].name ('b-c')",
    ),
    (
        "per-node Job across groups",
        [group("a", nodes=[node("b-verify-c")]), group("a-verify-b", nodes=[node("c", 2)])],
        "gives the resource name 'a-verify-b-verify-c-1gpu'",
        "node_groups[0].nodes[0].name ('b-verify-c')",
    ),
    (
        "a group's priority class and another group's verification class",
        [group("a"), group("a-verification", priorityClass={"name": "gpu-other"})],
        "node_groups[1].name: got 'a-verification'; gives the resource name 'a-verification-priority-class'",
        "node_groups[0].name ('a')",
    ),
]


@pytest.mark.parametrize(("groups", "problem", "other"), [r[1:] for r in COLLISIONS], ids=[r[0] for r in COLLISIONS])
def test_a_name_two_parts_of_the_config_give_is_refused_naming_both(groups, problem, other):
    def program() -> None:
        with pytest.raises(ConfigError) as raised:
            GpuFleet("f", GpuFleetArgs(node_groups=groups, ssh_private_key=SSH_KEY))
        message = str(raised.value)
        found = [line for line in message.splitlines() if problem in line]
        assert len(found) == 1 and other in found[0], message
        assert len(raised.value.problems) == 1, message

    run = run_inline(program)
    registered = [r.urn for r in run.resources if r.type != "pulumi:pulumi:Stack"]
    assert registered == [], registered


CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


@pytest.mark.parametrize(
    "raw",
    [
        group("a100", verification={"gpusPerPod": [1, 2]}, devicePlugin={"timeSlicingReplicas": 1}),
        group("h100", nodes=1, devicePlugin={"migStrategy": "single"}, verification={"gpusPerPod": [1, 7], "perNode": False}),
        group(
            "a30",
            nodes=1,
            devicePlugin={"migStrategy": "mixed"},
            verification={"migResources": {"nvidia.com/mig-1g.6gb": 1}, "gpusPerPod": []},
        ),
        group("l4", nodes=[{"name": "l4-1"}], preflight={"enabled": False}),
        group("gb200", devicePlugin={"imex": {"channelIds": [0]}}, nvlinkDomain={"clique": CLIQUE, "imexPeers": ["10.0.0.1"]}),
        group("gb300", allocator="dra", dra={"computeDomains": True}, nvlinkDomain={"clique": CLIQUE}),
        group("a100", allocator="dra", dra={"migProfiles": ["1g.10gb", "7g.80gb"]}),
    ],
    ids=["per node", "group-wide", "mixed MIG", "no preflight", "IMEX channels", "ComputeDomains", "MIG under DRA"],
)
def test_the_names_computed_are_the_names_the_group_registers(raw):
    spec = parse_stack([raw]).node_groups[0]
    computed = sorted((c.type, f"f-{c.name}") for c in group_children(0, spec))

    def program() -> None:
        GpuFleet("f", GpuFleetArgs(node_groups=[raw], ssh_private_key=pulumi.Output.secret(SSH_KEY)))

    run = run_inline(program)
    (component,) = [r for r in run.resources if r.type == "gpu-nodes:index:GpuNodeGroup"]
    registered = sorted((r.type, r.name) for r in run.resources if r.parent == component.urn)
    assert registered == computed, f"{component.urn}: registered {registered}, computed {computed}"
