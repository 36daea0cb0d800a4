"""The shared namespaces, each at the Pod Security level its pods need, and the pull Secret in each."""

from __future__ import annotations

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.manifests.namespaces import PRIVILEGED, RESTRICTED, namespace_levels, namespace_manifest, pull_secret_manifest
from gpu_nodes.vocabulary import POD_SECURITY_PREFIX, STACK_LABEL
from tests.factories import group

STACK = "gpu-nodes.test"


def test_the_plugin_namespace_is_privileged_and_the_verification_namespace_restricted():
    """The device plugin mounts hostPath volumes; the verification pods drop every capability."""
    stack = parse_stack([group(devicePlugin={"namespace": "plugins"}, verification={"namespace": "checks"})])
    assert namespace_levels(stack) == {"checks": RESTRICTED, "plugins": PRIVILEGED}


def test_groups_that_share_a_namespace_need_it_once():
    stack = parse_stack([group("a100"), group("h100")])
    levels = namespace_levels(stack)
    assert list(levels) == sorted(levels) and len(levels) == 2, levels


def test_a_namespace_enforces_audits_and_warns_at_its_level():
    manifest = namespace_manifest("plugins", PRIVILEGED, STACK)
    labels = manifest["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"{POD_SECURITY_PREFIX}{mode}"] == PRIVILEGED, labels
        assert labels[f"{POD_SECURITY_PREFIX}{mode}-version"] == "latest", labels
    assert labels[STACK_LABEL] == STACK, labels


def test_the_pull_secret_carries_the_login_as_given_and_the_claim_label():
    manifest = pull_secret_manifest("plugins", STACK, login="{}")
    assert manifest["type"] == "kubernetes.io/dockerconfigjson", manifest
    assert manifest["stringData"] == {".dockerconfigjson": "{}"}, manifest
    assert manifest["metadata"]["namespace"] == "plugins" and manifest["metadata"]["labels"][STACK_LABEL] == STACK
