"""The syntax the settings share: a taint as kubectl taint writes it, an image pinned by tag or
digest."""

from __future__ import annotations

import pytest

from gpu_nodes.config.checks import parse_taint
from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of
from tests.factories import group


@pytest.mark.parametrize(
    "text, expected",
    [
        ("nvidia.com/gpu=present:NoSchedule", ("nvidia.com/gpu", "present", "NoSchedule")),
        ("dedicated:NoExecute", ("dedicated", None, "NoExecute")),
        ("example.com/empty=:PreferNoSchedule", ("example.com/empty", "", "PreferNoSchedule")),
    ],
)
def test_taint_syntax_as_kubectl_taint(text, expected):
    taint = parse_taint(text)
    assert taint is not None and (taint.key, taint.value, taint.effect) == expected, f"{text}: {taint}"
    assert str(taint) == text or taint.value == "", f"{text} round-trips as {taint}"


def test_image_without_tag():
    problems = problems_of(group(devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin"}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.image", "pinned by tag")


def test_image_tagged_latest_is_not_pinned():
    problems = problems_of(group(verification={"image": "nvcr.io/nvidia/cuda:latest"}))
    assert_one_problem(problems, f"{KEY}.verification.image", "'nvcr.io/nvidia/cuda:latest'", "not 'latest'")


def test_image_with_registry_port_but_no_tag():
    problems = problems_of(group(devicePlugin={"image": "registry.local:5000/k8s-device-plugin"}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.image", "pinned by tag")


def test_image_pinned_by_digest_is_accepted():
    digest = "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "a" * 64
    spec = parse_stack([group(devicePlugin={"image": digest})]).node_groups[0]
    assert spec.device_plugin.image == digest, spec.device_plugin
