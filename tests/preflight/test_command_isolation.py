"""The group's isolation reaches the preflight command line and its triggers."""

from __future__ import annotations

from gpu_nodes.config.parse import parse_stack
from gpu_nodes.preflight.command import preflight_arguments, triggers
from tests.factories import group


def preflight(**config):
    return parse_stack([group("a100", **config)]).node_groups[0].preflight


def test_strict_isolation_asks_preflight_for_the_hardened_toolkit():
    args = preflight_arguments(preflight(isolation="strict"), 4)
    assert args[args.index("--isolation") + 1] == "strict", args


def test_default_isolation_adds_no_argument():
    assert "--isolation" not in preflight_arguments(preflight(), 4)
    assert "--isolation" not in preflight_arguments(preflight(isolation="default"), 4)


def test_a_new_isolation_reruns_preflight_and_default_keeps_the_triggers():
    assert triggers(preflight(isolation="strict"), 4) != triggers(preflight(), 4)
    assert triggers(preflight(isolation="default"), 4) == triggers(preflight(), 4)
