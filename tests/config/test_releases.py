"""Every setting held to the release that honours it (gpu_nodes/config/releases.py): each rule declared with its
setting (`setting(..., needs=...)`) refuses the release before the one it names, naming the setting, the release
found and the first that honours it, and takes that first release; a test per rule below, and a test that no rule
goes without one."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpu_nodes.config.fields import Component
from gpu_nodes.config.node_group import NodeGroupSpec, dra_driver_release_problems
from gpu_nodes.config.releases import declared_needs, requirements, unmet
from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of
from tests.factories import ROOT, group

PLUGIN = "nvcr.io/nvidia/k8s-device-plugin"
# The CVEs of bulletin 5659, which names plugins up to 0.17.2 under the CDI strategies: accepted where a CDI group
# runs an older release, so that only the rule under test refuses it.
ACCEPTED = ["CVE-2025-23266", "CVE-2025-23267"]
STRATEGY = "devicePlugin.sharing.strategy"
# An NVLink domain's clique as GPU Feature Discovery labels it (`nvidia.com/gpu.clique`), for the IMEX rule.
CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


# (the rule, the group's settings that call for it, the key refused, the release before it, the first that honours it)
RULES: list[tuple[str, dict[str, Any], str, str, str]] = [
    ("timeSlicing", {"devicePlugin": {"sharing": {"strategy": "timeSlicing", "replicas": 4}}}, STRATEGY, "0.11.0", "0.12.0"),
    ("mps", {"devicePlugin": {"sharing": {"strategy": "mps", "replicas": 4}}}, STRATEGY, "0.14.5", "0.15.0"),
    (
        "renameByDefault",
        {"devicePlugin": {"sharing": {"replicas": 4, "renameByDefault": True}}},
        "devicePlugin.sharing.renameByDefault",
        "0.11.0",
        "0.12.0",
    ),
    (
        "failRequestsGreaterThanOne under timeSlicing",
        {"devicePlugin": {"sharing": {"replicas": 4, "failRequestsGreaterThanOne": True}}},
        "devicePlugin.sharing.failRequestsGreaterThanOne",
        "0.11.0",
        "0.12.0",
    ),
    (
        "failRequestsGreaterThanOne false under mps",
        {"devicePlugin": {"sharing": {"strategy": "mps", "replicas": 4, "failRequestsGreaterThanOne": False}}},
        "devicePlugin.sharing.failRequestsGreaterThanOne",
        "0.19.0",
        "0.20.0",
    ),
    ("timeSlicingReplicas", {"devicePlugin": {"timeSlicingReplicas": 2}}, "devicePlugin.timeSlicingReplicas", "0.11.0", "0.12.0"),
    ("migStrategy", {"devicePlugin": {"migStrategy": "single"}}, "devicePlugin.migStrategy", "0.11.0", "0.12.0"),
    (
        "migDevices of a +me profile",
        {"devicePlugin": {"migStrategy": "single", "migDevices": {"1g.10gb+me": 1}}},
        "devicePlugin.migDevices",
        "0.12.3",
        "0.13.0",
    ),
    ("enabledXids", {"devicePlugin": {"enabledXids": [45]}}, "devicePlugin.enabledXids", "0.17.4", "0.18.0"),
    ("gpuAccess cdi", {"gpuAccess": "cdi", "devicePlugin": {"acceptAdvisories": ACCEPTED}}, "gpuAccess", "0.14.5", "0.15.0"),
    ("gpuAccess defaultRuntime", {"gpuAccess": "defaultRuntime"}, "gpuAccess", "0.4.0", "0.5.0"),
    ("isolation strict", {"isolation": "strict"}, "isolation", "0.6.0", "0.7.0"),
    ("deviceIdStrategy", {"devicePlugin": {"deviceIdStrategy": "index"}}, "devicePlugin.deviceIdStrategy", "0.8.2", "0.9.0"),
    (
        "allocationPolicy",
        # Time-slicing, so that the policy has replicas to place.
        {"devicePlugin": {"allocationPolicy": "packed", "sharing": {"replicas": 2}}},
        "devicePlugin.allocationPolicy",
        "0.19.3",
        "0.20.0",
    ),
    (
        "cdiFeatureFlags",
        {"gpuAccess": "cdi", "devicePlugin": {"cdiFeatureFlags": ["disable-ipc-discoverer"]}},
        "devicePlugin.cdiFeatureFlags",
        "0.18.1",
        "0.18.2",
    ),
    (
        "cdiDisableHooks",
        {"gpuAccess": "cdi", "devicePlugin": {"cdiDisableHooks": ["enable-cuda-compat"]}},
        "devicePlugin.cdiDisableHooks",
        "0.19.3",
        "0.20.0",
    ),
    (
        "deviceDiscoveryStrategy",
        {"devicePlugin": {"deviceDiscoveryStrategy": "nvml"}},
        "devicePlugin.deviceDiscoveryStrategy",
        "0.15.1",
        "0.16.0",
    ),
    (
        "imex channelIds",
        {"devicePlugin": {"imex": {"channelIds": [0]}}, "nvlinkDomain": {"clique": CLIQUE, "imexPeers": ["10.0.0.11"]}},
        "devicePlugin.imex.channelIds",
        "0.16.1",
        "0.17.0",
    ),
]


def with_plugin(release: str, settings_given: dict[str, Any]) -> dict[str, Any]:
    plugin = {"image": f"{PLUGIN}:v{release}", **settings_given.get("devicePlugin", {})}
    return group(**{**settings_given, "devicePlugin": plugin})


@pytest.mark.parametrize(("given", "key", "before", "since"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_a_setting_on_a_release_before_the_one_that_honours_it_is_refused(given, key, before, since):
    assert_one_problem(
        problems_of(with_plugin(before, given)),
        f"{KEY}.{key}",
        f"needs device plugin v{since} or later",
        f"devicePlugin.image {PLUGIN}:v{before} is {before}, which does not read it",
    )


@pytest.mark.parametrize(("given", "since"), [(r[1], r[4]) for r in RULES], ids=[r[0] for r in RULES])
def test_the_first_release_that_honours_it_is_taken(given, since):
    assert parse_stack([with_plugin(since, given)]).node_groups


def test_a_time_sliced_group_that_refuses_nothing_needs_no_more_than_time_slicing():
    """failRequestsGreaterThanOne false is the plugin's own default under time-slicing: nothing to read."""
    raw = with_plugin("0.12.0", {"devicePlugin": {"sharing": {"replicas": 4, "failRequestsGreaterThanOne": False}}})
    assert parse_stack([raw]).node_groups


def test_the_dra_driver_below_the_floor_is_refused_naming_the_allocator():
    (spec,) = parse_stack([group(allocator="dra")]).node_groups
    [problem] = list(dra_driver_release_problems(spec, "0.3.0"))
    assert (problem.key, problem.value) == ("allocator", "dra"), problem
    assert "needs DRA driver v0.4.0 or later" in problem.allowed and "is 0.3.0, which does not read it" in problem.allowed


def test_the_dra_driver_gpu_nodes_deploys_honours_every_dra_group_setting():
    (spec,) = parse_stack([group(allocator="dra", dra={"extendedResourceName": True})]).node_groups
    assert list(dra_driver_release_problems(spec)) == []


def test_every_rule_names_what_it_deploys_and_where_upstream_says_so():
    for key, need in declared_needs(NodeGroupSpec):
        assert need.what and need.source and need.since, key


def test_every_device_plugin_rule_has_a_test_above():
    tested = {(key, since) for _, _, key, _, since in RULES}
    declared = {(key, need.since) for key, need in declared_needs(NodeGroupSpec) if need.component is Component.DEVICE_PLUGIN}
    assert declared == tested, f"rules without a test: {sorted(declared - tested)}; tests of no rule: {sorted(tested - declared)}"


def test_the_machines_floors_a_dra_group_needs_are_those_preflight_holds_each_machine_to():
    """The NVIDIA driver's and the toolkit's releases are found on the machines: 68-check-dra.sh refuses a machine
    below them, and its floors are the ones declared with `allocator`."""
    script = (ROOT / "gpu_nodes/scripts/preflight/68-check-dra.sh").read_text()
    floors = dict(re.findall(r"^  \[(driver|toolkit)\]=(\S+)$", script, re.M))
    declared = {
        {Component.DRIVER: "driver", Component.TOOLKIT: "toolkit"}[need.component]: need.since
        for key, need in declared_needs(NodeGroupSpec)
        if key == "allocator" and need.component in (Component.DRIVER, Component.TOOLKIT)
    }
    assert declared == floors == {"driver": "565", "toolkit": "1.18.0"}, (declared, floors)


def test_a_groups_requirements_are_those_of_what_it_sets():
    (spec,) = parse_stack([with_plugin("0.20.1", {"devicePlugin": {"sharing": {"strategy": "mps", "replicas": 4}}})]).node_groups
    found = {(r.key, r.need.since) for r in requirements(spec, Component.DEVICE_PLUGIN)}
    assert found == {("gpuAccess", "0.5.0"), ("devicePlugin.sharing.strategy", "0.15.0")}, found
    assert unmet(list(requirements(spec, Component.DEVICE_PLUGIN)), "0.15.0") == []


def test_the_driver_floor_of_compute_domains_is_the_one_preflight_holds_each_machine_to():
    """68-check-dra.sh's dra-compute-domains check refuses a machine below `computedomains-driver`, the floor
    declared with `dra.computeDomains`."""
    script = (ROOT / "gpu_nodes/scripts/preflight/68-check-dra.sh").read_text()
    [floor] = re.findall(r"^  \[computedomains-driver\]=(\S+)$", script, re.M)
    declared = [need.since for key, need in declared_needs(NodeGroupSpec) if key == "dra.computeDomains"]
    assert declared == [floor] == ["570.158.01"], (declared, floor)


def test_the_toolkit_floor_of_an_nri_group_is_the_one_preflight_holds_each_machine_to():
    """73-check-nri.sh refuses a toolkit below NRI_TOOLKIT_FLOOR, the floor declared with `containerToolkit`."""
    script = (ROOT / "gpu_nodes/scripts/preflight/73-check-nri.sh").read_text()
    [floor] = re.findall(r"^readonly NRI_TOOLKIT_FLOOR=(\S+)$", script, re.M)
    declared = [need.since for key, need in declared_needs(NodeGroupSpec) if key == "containerToolkit"]
    assert declared == [floor] == ["1.20.0"], (declared, floor)


def test_only_an_nri_group_needs_the_nri_toolkit_floor():
    (runtime_group,) = parse_stack([group()]).node_groups
    nri = group(gpuAccess="cdi", containerToolkit="nri", devicePlugin={"acceptAdvisories": ACCEPTED})
    (nri_group,) = parse_stack([nri]).node_groups
    assert list(requirements(runtime_group, Component.TOOLKIT)) == []
    found = [(r.key, r.value, r.need.since) for r in requirements(nri_group, Component.TOOLKIT)]
    assert found == [("containerToolkit", "nri", "1.20.0")], found
