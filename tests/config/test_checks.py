"""The syntax the settings share: a taint as kubectl taint writes it, an image pinned by tag or
digest."""

from __future__ import annotations

import pytest

from gpu_nodes.config.checks import parse_taint
from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of, refused
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


NOT_PINNED = [
    (
        "image_without_tag",
        group(devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin"}),
        f"{KEY}.devicePlugin.image",
        ("pinned by tag",),
    ),
    (
        "image_tagged_latest_is_not_pinned",
        group(verification={"image": "nvcr.io/nvidia/cuda:latest"}),
        f"{KEY}.verification.image",
        ("'nvcr.io/nvidia/cuda:latest'", "not 'latest'"),
    ),
    (
        "image_with_registry_port_but_no_tag",
        group(devicePlugin={"image": "registry.local:5000/k8s-device-plugin"}),
        f"{KEY}.devicePlugin.image",
        ("pinned by tag",),
    ),
]


@refused(NOT_PINNED)
def test_an_image_not_pinned_is_refused(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_image_pinned_by_digest_is_accepted():
    digest = "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "a" * 64
    spec = parse_stack([group(devicePlugin={"image": digest})]).node_groups[0]
    assert spec.device_plugin.image == digest, spec.device_plugin
