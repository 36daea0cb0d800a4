"""A group's preflight settings, and the host keys preflight checks the machines and the bastion
by."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of, refused
from tests.factories import RSA_HOST_KEY, group


def test_host_key_may_be_skipped_only_when_the_stack_says_so():
    raw = group()
    del raw["nodes"][0]["hostKey"]
    spec = parse_stack([raw], insecure_skip_host_key_check=True)
    assert spec.node_groups[0].nodes[0].host_key is None, spec


def test_missing_host_key():
    raw = group()
    del raw["nodes"][1]["hostKey"]
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[1].hostKey", "ssh-keyscan", "insecureSkipHostKeyCheck")


def test_an_rsa_host_key_is_refused_with_the_reason():
    raw = group(preflight={"proxy": {"host": "bastion", "user": "ops", "hostKey": RSA_HOST_KEY}})
    raw["nodes"][0]["hostKey"] = RSA_HOST_KEY
    problems = problems_of(raw)
    for key in (f"{KEY}.nodes[0].hostKey", f"{KEY}.preflight.proxy.hostKey"):
        assert_one_problem(problems, key, "'ssh-rsa'", "ed25519 or ecdsa", "OpenSSH 8.8")


def test_malformed_host_key():
    raw = group()
    raw["nodes"][0]["hostKey"] = "AAAAC3Nza"
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].hostKey", "OpenSSH public host key")


REFUSED = [
    (
        "proxy_without_host_key",
        group(preflight={"proxy": {"host": "bastion", "user": "ops"}}),
        f"{KEY}.preflight.proxy.hostKey",
        ("insecureSkipHostKeyCheck",),
    ),
    (
        "unknown_container_runtime",
        group(preflight={"containerRuntime": "podman"}),
        f"{KEY}.preflight.containerRuntime",
        ("'podman'", "containerd, docker, cri-o"),
    ),
    (
        "a_minimum_toolkit_must_be_a_version",
        group(preflight={"minToolkit": "latest"}),
        f"{KEY}.preflight.minToolkit",
        ("'latest'", "such as '1.19.1'"),
    ),
]



@refused(REFUSED)
def test_a_bad_preflight_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


REFUSED_TOOLKIT = [
    (
        "driver_advisories_that_are_neither_warn_nor_refuse",
        group(preflight={"driverAdvisories": "ignore"}),
        f"{KEY}.preflight.driverAdvisories",
        ("'ignore'", "warn", "refuse"),
    ),
    (
        "a_minimum_toolkit_below_the_advisories_floor",
        group(preflight={"minToolkit": "1.17.8"}),
        f"{KEY}.preflight.minToolkit",
        ("'1.17.8'", "at least 1.19.1", "open to CVE-2026-24260 (fixed in 1.19.1)", "acceptToolkitAdvisories"),
    ),
    (
        "an_accepted_advisory_that_is_not_one",
        group(preflight={"acceptToolkitAdvisories": ["CVE-2026-0000"]}),
        f"{KEY}.preflight.acceptToolkitAdvisories[0]",
        ("'CVE-2026-0000'", "CVE-2025-23266", "CVE-2026-24260"),
    ),
    (
        "accepted_advisories_that_are_no_list",
        group(preflight={"acceptToolkitAdvisories": "CVE-2026-24260"}),
        f"{KEY}.preflight.acceptToolkitAdvisories",
        ("expected a list",),
    ),
]


@refused(REFUSED_TOOLKIT)
def test_a_bad_toolkit_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_driver_advisories_are_a_warning_unless_the_group_refuses_them():
    assert parse_stack([group()]).node_groups[0].preflight.driver_advisories == "warn"
    assert parse_stack([group(preflight={"driverAdvisories": "refuse"})]).node_groups[0].preflight.driver_advisories == "refuse"


def test_the_toolkit_floor_comes_from_the_advisories_and_no_minimum_is_set_by_default():
    assert parse_stack([group()]).node_groups[0].preflight.min_toolkit is None
    assert parse_stack([group(preflight={"minToolkit": ""})]).node_groups[0].preflight.min_toolkit is None


def test_a_minimum_toolkit_above_the_floor_is_kept():
    assert parse_stack([group(preflight={"minToolkit": "1.20.0"})]).node_groups[0].preflight.min_toolkit == "1.20.0"


def test_a_lower_minimum_is_taken_when_every_cve_it_lets_in_is_accepted():
    accepted = ["CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"]
    spec = parse_stack([group(preflight={"minToolkit": "1.17.4", "acceptToolkitAdvisories": accepted})]).node_groups[0]
    assert (spec.preflight.min_toolkit, spec.preflight.accept_toolkit_advisories) == ("1.17.4", tuple(accepted)), spec.preflight


def test_a_lower_minimum_names_only_the_cves_not_accepted():
    problems = problems_of(group(preflight={"minToolkit": "1.17.8", "acceptToolkitAdvisories": ["CVE-2025-23266"]}))
    assert_one_problem(problems, f"{KEY}.preflight.minToolkit", "CVE-2026-24260")
    assert not any("CVE-2025-23266 (fixed" in p for p in problems), problems


@pytest.mark.parametrize("value", ["", " leading-space", "line\nbreak", "x" * 65])
def test_malformed_recheck(value):
    problems = problems_of(group(preflight={"recheck": value}))
    assert_one_problem(problems, f"{KEY}.preflight.recheck", "1-64 printable characters")


@pytest.mark.parametrize(("value", "expected"), [(0, "1 to 600 seconds"), (601, "1 to 600 seconds"), ("30", "whole number")])
def test_bad_ssh_timeout(value, expected):
    problems = problems_of(group(preflight={"sshTimeoutSeconds": value}))
    assert_one_problem(problems, f"{KEY}.preflight.sshTimeoutSeconds", repr(value), expected)


def test_ssh_timeout_is_optional():
    assert parse_stack([group()]).node_groups[0].preflight.ssh_timeout_seconds is None
    assert parse_stack([group(preflight={"sshTimeoutSeconds": 60})]).node_groups[0].preflight.ssh_timeout_seconds == 60


@pytest.mark.parametrize(("value", "expected"), [(0, "1 to 1000 machines"), (1001, "1 to 1000 machines"), ("10", "whole number")])
def test_bad_max_sessions(value, expected):
    problems = problems_of(group(preflight={"maxSessions": value}))
    assert_one_problem(problems, f"{KEY}.preflight.maxSessions", repr(value), expected)


def test_max_sessions_defaults_to_what_a_stock_sshd_accepts():
    assert parse_stack([group()]).node_groups[0].preflight.max_sessions == 10
    assert parse_stack([group(preflight={"maxSessions": 50})]).node_groups[0].preflight.max_sessions == 50
