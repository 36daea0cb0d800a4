"""The group's `nvlinkDomain` section (gpu_nodes/config/nvlink.py) and the IMEX channels that need it: the device
plugin's (`devicePlugin.imex`, with the machines' own IMEX daemon listing `imexPeers`) and a DRA group's
ComputeDomains (`dra.computeDomains`, whose daemons are the driver's)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of, refused
from tests.factories import group

# A clique as k8s-device-plugin's imex labeler writes it (internal/lm/imex.go): <ClusterUUID>.<CliqueId>, as the
# recorded H100 fabric reports them (tests/scripts/hopper.py).
CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
DOMAIN = {"clique": CLIQUE, "imexPeers": ["10.0.0.1", "10.0.0.2"]}
CHANNEL = {"imex": {"channelIds": [0]}}


def imex_group(**overrides: Any) -> dict[str, Any]:
    return group(devicePlugin={**CHANNEL, **overrides.pop("devicePlugin", {})}, nvlinkDomain=DOMAIN, **overrides)


def test_a_device_plugin_group_of_an_nvlink_domain_reads_its_clique_peers_and_channel():
    spec = parse_stack([imex_group(devicePlugin={"imex": {"channelIds": [0], "required": True}})]).node_groups[0]
    assert spec.nvlink_domain is not None and spec.nvlink_domain.clique == CLIQUE
    assert spec.nvlink_domain.imex_peers == ("10.0.0.1", "10.0.0.2")
    assert spec.device_plugin.imex.channel_ids == (0,) and spec.device_plugin.imex.required


def test_without_the_section_a_group_has_no_domain_and_no_channel():
    spec = parse_stack([group()]).node_groups[0]
    assert spec.nvlink_domain is None and spec.device_plugin.imex.channel_ids == ()


def test_peers_are_read_as_addresses_once_each():
    domain = {"clique": CLIQUE, "imexPeers": ["10.0.0.1", "10.0.0.1", "fd00::1"]}
    spec = parse_stack([group(devicePlugin=CHANNEL, nvlinkDomain=domain)]).node_groups[0]
    assert spec.nvlink_domain is not None and spec.nvlink_domain.imex_peers == ("10.0.0.1", "fd00::1")


@refused(
    [
        (
            "a clique without its uuid",
            group(nvlinkDomain={"clique": "4026"}),
            f"{KEY}.nvlinkDomain.clique",
            ["<ClusterUUID>.<CliqueId>"],
        ),
        (
            "a peer that is a name",
            group(nvlinkDomain={"clique": CLIQUE, "imexPeers": ["gpu-01"]}),
            f"{KEY}.nvlinkDomain.imexPeers[0]",
            ["IP address"],
        ),
        (
            "peers not a list",
            group(nvlinkDomain={"clique": CLIQUE, "imexPeers": "10.0.0.1"}),
            f"{KEY}.nvlinkDomain.imexPeers",
            ["expected a list"],
        ),
        (
            "a channel but 0",
            group(devicePlugin={"imex": {"channelIds": [1]}}, nvlinkDomain=DOMAIN),
            f"{KEY}.devicePlugin.imex.channelIds",
            ["[] or [0]"],
        ),
        (
            "two channels",
            group(devicePlugin={"imex": {"channelIds": [0, 1]}}, nvlinkDomain=DOMAIN),
            f"{KEY}.devicePlugin.imex.channelIds",
            ["[] or [0]"],
        ),
        ("a channel without a domain", group(devicePlugin=CHANNEL), f"{KEY}.nvlinkDomain", ["IMEX daemon running"]),
        (
            "a channel without peers",
            group(devicePlugin=CHANNEL, nvlinkDomain={"clique": CLIQUE}),
            f"{KEY}.nvlinkDomain.imexPeers",
            ["listing the domain's machines"],
        ),
        (
            "channels under dra",
            group(allocator="dra", devicePlugin=CHANNEL),
            f"{KEY}.devicePlugin.imex.channelIds",
            ["dra.computeDomains"],
        ),
        (
            "host peers under dra",
            group(allocator="dra", nvlinkDomain=DOMAIN),
            f"{KEY}.nvlinkDomain.imexPeers",
            ["nvidia-imex service disabled"],
        ),
        (
            "ComputeDomains without dra",
            group(dra={"computeDomains": True}, nvlinkDomain={"clique": CLIQUE}),
            f"{KEY}.dra.computeDomains",
            ["only with allocator dra"],
        ),
        (
            "ComputeDomains without a domain",
            group(allocator="dra", dra={"computeDomains": True}),
            f"{KEY}.nvlinkDomain",
            ["spans machines of one clique"],
        ),
    ]
)
def test_refused(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_required_without_a_channel_has_no_effect():
    [warning] = parse_stack([group(devicePlugin={"imex": {"required": True}})]).warnings
    assert warning.startswith(f"{KEY}.devicePlugin.imex.required: True has no effect"), warning


def test_a_dra_group_with_compute_domains_needs_only_the_clique():
    spec = parse_stack([group(allocator="dra", dra={"computeDomains": True}, nvlinkDomain={"clique": CLIQUE})]).node_groups[0]
    assert spec.dra.compute_domains and spec.nvlink_domain is not None and not spec.nvlink_domain.imex_peers


@pytest.mark.parametrize("tag", ["v0.16.2", "v0.15.0"])
def test_a_plugin_before_v0_17_0_cannot_inject_a_channel(tag):
    raw = imex_group(devicePlugin={"image": f"nvcr.io/nvidia/k8s-device-plugin:{tag}"})
    assert_one_problem(problems_of(raw), f"{KEY}.devicePlugin.imex.channelIds", "needs device plugin v0.17.0", "IMEX_CHANNEL_IDS")


def test_groups_with_compute_domains_share_the_namespace_the_drivers_one_controller_runs_in():
    def domain(name: str, namespace: str) -> dict[str, Any]:
        return group(
            name,
            allocator="dra",
            dra={"computeDomains": True},
            nvlinkDomain={"clique": CLIQUE},
            devicePlugin={"namespace": namespace},
        )

    assert len(parse_stack([domain("gb200", "nvidia-dra"), domain("gb300", "nvidia-dra")]).node_groups) == 2
    problems = problems_of(domain("gb200", "nvidia-dra"), domain("gb300", "other-dra"))
    assert_one_problem(problems, "gpu-nodes:nodeGroups[1].devicePlugin.namespace", "one ComputeDomain controller", "nvidia-dra")
