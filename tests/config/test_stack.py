"""The stack's own settings (gpu-nodes:nodeGroups, existingNamespaces, handOver,
insecureSkipHostKeyCheck), the checks across groups, and the stack config read whole."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack, read_stack
from gpu_nodes.errors import ConfigError
from tests.config.problems import KEY, assert_one_problem, problems_of
from tests.factories import group, node


def test_valid_example_stacks_parse():
    import yaml

    from tests.pulumi_mocks import ROOT

    for stack in ("prod", "staging"):
        config = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
        parsed = read_stack({key: value for key, value in config.items() if key.startswith("gpu-nodes:")})
        assert parsed.node_groups, f"Pulumi.{stack}.yaml has no node groups"
    # Docker through older cri-dockerd accepts no RuntimeClass handler: staging runs without one.
    staging = yaml.safe_load((ROOT / "Pulumi.staging.yaml").read_text())["config"]
    assert parse_stack(staging["gpu-nodes:nodeGroups"], runtime_class=staging["gpu-nodes:runtimeClass"]).runtime_class is None


def test_preflight_disabled_needs_no_ssh_fields():
    raw = group(preflight={"enabled": False})
    raw["nodes"] = [{"name": "n1"}]
    spec = parse_stack([raw])
    assert spec.needs_ssh_key is False, spec


def test_every_mistake_is_reported_at_once():
    raw = group(name="Bad_Name", gpusPerNode=0)
    raw["nodes"] = [node("n1")]
    problems = problems_of(raw)
    assert len(problems) == 2, problems


def test_missing_node_groups():
    with pytest.raises(ConfigError) as caught:
        parse_stack(None)
    assert_one_problem(caught.value.problems, "gpu-nodes:nodeGroups", "the key is required", "a list")


def test_node_in_two_groups():
    first, second = group("a100"), group("h100")
    second["nodes"][0]["name"] = "a100-node-1"
    assert_one_problem(problems_of(first, second), "gpu-nodes:nodeGroups[1].nodes", "'a100-node-1'", "one group only")


def test_duplicate_group_name():
    second = group("a100")
    second["nodes"] = [node("other-node")]
    assert_one_problem(problems_of(group("a100"), second), "gpu-nodes:nodeGroups[1].name", "unique")


def test_priority_class_name_taken_by_another_groups_verification_class():
    second = group("h100", priorityClass={"name": "gpu-a100-verification"})
    second["nodes"] = [node("other-node")]
    problems = problems_of(group("a100"), second)
    assert_one_problem(problems, "gpu-nodes:nodeGroups[1].priorityClass.name", "'gpu-a100-verification'", "'a100'")


def test_same_namespace_for_plugin_and_verification():
    problems = problems_of(group(devicePlugin={"namespace": "gpu"}, verification={"namespace": "gpu"}))
    assert_one_problem(problems, f"{KEY}.verification.namespace", "must differ")


def test_existing_namespaces_must_be_ones_the_groups_use():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], existing_namespaces=["team-gpu", "gpu-verification"])
    problems = caught.value.problems
    assert_one_problem(problems, "gpu-nodes:existingNamespaces", "'team-gpu'", "no group uses it", "nvidia-device-plugin")


def test_existing_namespaces_are_namespace_names():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], existing_namespaces=["gpu-verification", "Bad_Name"])
    assert_one_problem(caught.value.problems, "gpu-nodes:existingNamespaces[1]", "DNS-1123 label")


def test_existing_namespaces_are_read_once_each_in_order():
    stack = parse_stack([group()], existing_namespaces=["nvidia-device-plugin", "gpu-verification", "gpu-verification"])
    assert stack.existing_namespaces == ("gpu-verification", "nvidia-device-plugin"), stack


def test_existing_namespaces_is_a_list():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], existing_namespaces="gpu-verification")
    assert_one_problem(caught.value.problems, "gpu-nodes:existingNamespaces", "'gpu-verification'", "expected a list")


def test_hand_over_names_the_gpu_operators_gpu_cluster():
    stack = parse_stack([group()], hand_over=["GPUCluster/gpu-cluster"])
    assert stack.hand_over == ("GPUCluster/gpu-cluster",), stack


def test_hand_over_names_daemonsets_or_cluster_policies():
    stack = parse_stack([group()], hand_over=["kube-system/nvdp-nvidia-device-plugin", "ClusterPolicy/cluster-policy"])
    assert stack.hand_over == ("ClusterPolicy/cluster-policy", "kube-system/nvdp-nvidia-device-plugin"), stack
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], hand_over=["nvdp-nvidia-device-plugin"])
    expected = "<namespace>/<DaemonSet name>, ClusterPolicy/<name> or GPUCluster/<name>"
    assert_one_problem(caught.value.problems, "gpu-nodes:handOver[0]", expected)


def test_insecure_flag_must_be_boolean():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], insecure_skip_host_key_check="yes")
    assert_one_problem(caught.value.problems, "gpu-nodes:insecureSkipHostKeyCheck", "'yes'", "true or false")
