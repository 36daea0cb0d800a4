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
        ("'latest'", "such as '1.17.8'"),
    ),
]


@refused(REFUSED)
def test_a_bad_preflight_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_the_minimum_toolkit_is_the_cve_fix_by_default_and_can_be_turned_off():
    assert parse_stack([group()]).node_groups[0].preflight.min_toolkit == "1.17.8"
    assert parse_stack([group(preflight={"minToolkit": ""})]).node_groups[0].preflight.min_toolkit == ""


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
