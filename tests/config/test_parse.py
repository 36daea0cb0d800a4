"""Stack config validation: defaults, and one clear message per mistake."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_nodes.config.checks import parse_taint
from gpu_nodes.config.stack import parse_stack, read_stack
from gpu_nodes.errors import ConfigError
from gpu_nodes.vocabulary import GROUP_LABEL
from tests.factories import RSA_HOST_KEY, group, node


def problems_of(*groups: dict[str, Any], insecure: Any = False) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack(list(groups), insecure_skip_host_key_check=insecure)
    return caught.value.problems


def assert_one_problem(problems: list[str], key: str, *fragments: str) -> None:
    matching = [p for p in problems if p.startswith(f"{key}:")]
    assert len(matching) == 1, f"expected one problem for {key}, got {problems}"
    for fragment in fragments:
        assert fragment in matching[0], f"{key}: expected {fragment!r} in {matching[0]!r}"


# --- defaults ----------------------------------------------------------------------------


def test_defaults_follow_the_runbook_and_upstream():
    spec = parse_stack([group()]).node_groups[0]
    assert dict(spec.labels) == {"accelerator": "nvidia", "nvidia.com/gpu.present": "true"}, spec.labels
    assert [str(t) for t in spec.taints] == ["nvidia.com/gpu=present:NoSchedule"], spec.taints
    assert spec.device_plugin.image == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", spec.device_plugin
    assert spec.device_plugin.namespace == "nvidia-device-plugin", spec.device_plugin
    assert spec.device_plugin.fail_on_init_error is True, spec.device_plugin
    assert spec.device_plugin.needs_config_file is False, spec.device_plugin
    assert spec.priority_class.value == 1_000_000, spec.priority_class
    assert spec.priority_class.name == "gpu-a100", spec.priority_class
    assert spec.verification.gpus_per_pod == (1,), spec.verification
    assert spec.verification.per_node is True, spec.verification
    assert spec.preflight.enabled is True, spec.preflight
    assert spec.preflight.container_runtime == "containerd", spec.preflight
    assert spec.nodes[0].ssh_port == 22, spec.nodes[0]


def test_nvidias_own_gpu_present_label_is_a_default():
    """GFD, NFD rules, the device plugin chart's affinity and the GPU Operator key on it."""
    spec = parse_stack([group()]).node_groups[0]
    assert spec.node_labels["nvidia.com/gpu.present"] == "true", spec.node_labels


def test_group_label_is_added_to_the_configured_labels():
    spec = parse_stack([group(labels={"team": "ml"})]).node_groups[0]
    assert spec.node_labels == {"team": "ml", GROUP_LABEL: "a100"}, spec.node_labels


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


def test_host_key_may_be_skipped_only_when_the_stack_says_so():
    raw = group()
    del raw["nodes"][0]["hostKey"]
    spec = parse_stack([raw], insecure_skip_host_key_check=True)
    assert spec.node_groups[0].nodes[0].host_key is None, spec


def test_every_mistake_is_reported_at_once():
    raw = group(name="Bad_Name", gpusPerNode=0)
    raw["nodes"] = [node("n1")]
    problems = problems_of(raw)
    assert len(problems) == 2, problems


# --- bad input: one test per mistake ------------------------------------------------------

KEY = "gpu-nodes:nodeGroups[0]"


def test_missing_node_groups():
    with pytest.raises(ConfigError) as caught:
        parse_stack(None)
    assert_one_problem(caught.value.problems, "gpu-nodes:nodeGroups", "at least one node group")


def test_missing_required_field():
    raw = group()
    del raw["gpusPerNode"]
    assert_one_problem(problems_of(raw), f"{KEY}.gpusPerNode", "required", "whole number")


def test_wrong_type():
    assert_one_problem(problems_of(group(gpusPerNode="8")), f"{KEY}.gpusPerNode", "'8'", "whole number")


def test_boolean_is_not_a_number():
    raw = group()
    raw["nodes"][0]["sshPort"] = True
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshPort", "True", "whole number")


def test_null_is_not_set_where_a_value_is_needed():
    """`enabled:` with nothing after it is null: not set, so the default; a required key stays required."""
    assert parse_stack([group(preflight={"enabled": None})]).node_groups[0].preflight.enabled is True
    assert_one_problem(problems_of(group(name=None)), f"{KEY}.name", "the key is required", "a string")
    raw = group()
    raw["nodes"][0]["sshHost"] = None
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshHost", "the key is required", "a string")


def test_null_list_or_object_is_the_default_not_empty():
    spec = parse_stack([group(taints=None, labels=None)]).node_groups[0]
    assert [str(t) for t in spec.taints] == ["nvidia.com/gpu=present:NoSchedule"], spec
    assert dict(spec.labels) == {"accelerator": "nvidia", "nvidia.com/gpu.present": "true"}, spec
    # Optional fields take null as unset.
    assert parse_stack([group(preflight={"minDriver": None})]).node_groups[0].preflight.min_driver is None


def test_unknown_key_is_a_typo():
    assert_one_problem(problems_of(group(gpusPerPod=[1])), f"{KEY}.gpusPerPod", "unknown key", "gpusPerNode")


def test_invalid_group_name():
    assert_one_problem(problems_of(group(name="GPU_A100")), f"{KEY}.name", "'GPU_A100'", "DNS-1123 label")


def test_invalid_node_name():
    raw = group()
    raw["nodes"][0]["name"] = "Node One"
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].name", "'Node One'", "node name")


def test_no_nodes():
    assert_one_problem(problems_of(group(nodes=0)), f"{KEY}.nodes", "at least one node")


def test_duplicate_node_in_a_group():
    raw = group()
    raw["nodes"].append(node("a100-node-1", 9))
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[2].name", "'a100-node-1'", "listed once")


def test_node_in_two_groups():
    first, second = group("a100"), group("h100")
    second["nodes"][0]["name"] = "a100-node-1"
    assert_one_problem(problems_of(first, second), "gpu-nodes:nodeGroups[1].nodes", "'a100-node-1'", "one group only")


def test_duplicate_group_name():
    second = group("a100")
    second["nodes"] = [node("other-node")]
    assert_one_problem(problems_of(group("a100"), second), "gpu-nodes:nodeGroups[1].name", "unique")


def test_invalid_label_key():
    assert_one_problem(problems_of(group(labels={"bad key!": "x"})), f"{KEY}.labels.bad key!", "label key")


def test_invalid_label_value():
    assert_one_problem(problems_of(group(labels={"tier": "not ok!"})), f"{KEY}.labels.tier", "'not ok!'", "label value")


def test_label_value_must_be_a_string():
    assert_one_problem(problems_of(group(labels={"count": 8})), f"{KEY}.labels.count", "8", "label value")


def test_group_label_is_reserved():
    assert_one_problem(problems_of(group(labels={GROUP_LABEL: "x"})), f"{KEY}.labels.{GROUP_LABEL}", "set by gpu-nodes")


def test_taint_that_does_not_parse():
    assert_one_problem(problems_of(group(taints=["nvidia.com/gpu=present"])), f"{KEY}.taints[0]", "key[=value]:Effect")


def test_taint_with_unknown_effect():
    assert_one_problem(problems_of(group(taints=["gpu=yes:NoRun"])), f"{KEY}.taints[0]", "'gpu=yes:NoRun'", "NoExecute")


def test_duplicate_taint_key_and_effect():
    problems = problems_of(group(taints=["gpu=a:NoSchedule", "gpu=b:NoSchedule"]))
    assert_one_problem(problems, f"{KEY}.taints[1]", "one taint per key and effect")


def test_gpus_per_node_below_one():
    assert_one_problem(problems_of(group(gpusPerNode=0)), f"{KEY}.gpusPerNode", "at least 1")


def test_gpus_per_pod_below_one():
    assert_one_problem(problems_of(group(verification={"gpusPerPod": [0]})), f"{KEY}.verification.gpusPerPod[0]", "at least 1")


def test_gpus_per_pod_above_gpus_per_node():
    problems = problems_of(group(verification={"gpusPerPod": [1, 8]}))
    assert_one_problem(problems, f"{KEY}.verification.gpusPerPod[1]", "8", "at most gpusPerNode (4)")


def test_priority_value_above_user_range():
    problems = problems_of(group(priorityClass={"value": 2_000_000_000}))
    assert_one_problem(problems, f"{KEY}.priorityClass.value", "2000000000", "reserved for system classes")


def test_priority_class_name_reserved_prefix():
    problems = problems_of(group(priorityClass={"name": "system-gpu"}))
    assert_one_problem(problems, f"{KEY}.priorityClass.name", "'system-gpu'", "reserved")


def test_priority_class_name_leaves_room_for_the_verification_class():
    problems = problems_of(group(priorityClass={"name": "p" * 250}))
    assert_one_problem(problems, f"{KEY}.priorityClass.name", "at most 240 characters", "-verification")


def test_priority_class_name_taken_by_another_groups_verification_class():
    second = group("h100", priorityClass={"name": "gpu-a100-verification"})
    second["nodes"] = [node("other-node")]
    problems = problems_of(group("a100"), second)
    assert_one_problem(problems, "gpu-nodes:nodeGroups[1].priorityClass.name", "'gpu-a100-verification'", "'a100'")


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


def test_unknown_mig_strategy():
    problems = problems_of(group(devicePlugin={"migStrategy": "all"}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migStrategy", "'all'", "none, single, mixed")


MIG_1G = "nvidia.com/mig-1g.5gb"


def test_mixed_mig_needs_the_mig_resources_to_verify():
    """With mixed, MIG GPUs are advertised only as nvidia.com/mig-<profile>: nvidia.com/gpu
    Jobs alone would prove nothing about them (or stay Pending until their deadline)."""
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed"}))
    assert_one_problem(
        problems, f"{KEY}.verification.migResources", "nothing", "migStrategy 'mixed'", '{"nvidia.com/mig-1g.5gb": 1}'
    )


def test_mixed_mig_with_mig_resources_parses():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {MIG_1G: 2}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.mig_resources == ((MIG_1G, 2),), spec.verification


def test_mixed_mig_may_verify_mig_devices_only():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"gpusPerPod": [], "migResources": {MIG_1G: 1}})
    spec = parse_stack([raw]).node_groups[0]
    assert spec.verification.gpus_per_pod == (), spec.verification


def test_mig_resources_only_with_mixed():
    problems = problems_of(group(devicePlugin={"migStrategy": "single"}, verification={"migResources": {MIG_1G: 1}}))
    assert_one_problem(problems, f"{KEY}.verification.migResources", "only with devicePlugin.migStrategy 'mixed'")


def test_mig_resource_name_must_be_a_mig_resource():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {"nvidia.com/gpu": 1}})
    problems = problems_of(raw)
    assert_one_problem(problems, f"{KEY}.verification.migResources.nvidia.com/gpu", "nvidia.com/mig-<profile>")


def test_mig_resource_count_is_bounded_by_seven_per_gpu():
    raw = group(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {MIG_1G: 29}})
    problems = problems_of(raw)
    assert_one_problem(problems, f"{KEY}.verification.migResources.{MIG_1G}", "29", "at most 28")


def test_single_mig_pods_may_ask_for_more_devices_than_gpus():
    """With single, each MIG device is one nvidia.com/gpu: up to seven per GPU."""
    raw = group(devicePlugin={"migStrategy": "single"}, verification={"gpusPerPod": [1, 8]})
    assert parse_stack([raw]).node_groups[0].verification.gpus_per_pod == (1, 8)


def test_mig_devices_are_read_per_gpu_in_mig_parteds_format():
    raw = group(
        devicePlugin={"migStrategy": "mixed", "migDevices": {"2g.20gb": 2, "1g.10gb": 3}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb": 1}},
    )
    spec = parse_stack([raw]).node_groups[0]
    assert spec.device_plugin.mig_devices == (("1g.10gb", 3), ("2g.20gb", 2)), spec.device_plugin


def test_media_extension_profiles_are_accepted_and_named_as_the_plugin_registers_them():
    """mig-parted takes `1g.10gb+me` (pkg/types/mig_profile.go); the plugin registers it as
    nvidia.com/mig-1g.10gb.me (a resource name cannot hold '+')."""
    raw = group(
        devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb+me": 1, "1g.10gb": 5}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb.me": 1}},
    )
    spec = parse_stack([raw]).node_groups[0]
    assert spec.device_plugin.mig_devices == (("1g.10gb", 5), ("1g.10gb+me", 1)), spec.device_plugin
    assert spec.device_plugin.mig_allocatable(2) == {"nvidia.com/mig-1g.10gb": 10, "nvidia.com/mig-1g.10gb.me": 2}


@pytest.mark.parametrize("profile", ["1g.10gb+gfx", "1g.10gb+me+me", "1g.10gb.me"])
def test_an_unknown_profile_attribute_is_refused(profile):
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed", "migDevices": {profile: 1}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.{profile}", f"'{profile}'", "1g.10gb+me")


def test_mig_devices_only_with_a_mig_strategy():
    problems = problems_of(group(devicePlugin={"migDevices": {"1g.10gb": 7}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices", "only with devicePlugin.migStrategy 'single' or 'mixed'")


def test_mig_devices_names_a_bad_profile_and_a_bad_count():
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed", "migDevices": {"big": 1, "1g.10gb": 8}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.big", "'big'", "a MIG profile such as 1g.10gb")
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.1g.10gb", "8", "1 to 7 devices per GPU")


def test_mig_devices_fit_one_gpu():
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb": 4, "2g.20gb": 4}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices", "at most 7 MIG devices per GPU in all")


def test_single_mig_has_one_profile():
    problems = problems_of(group(devicePlugin={"migStrategy": "single", "migDevices": {"1g.10gb": 3, "2g.20gb": 2}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices", "'single' needs one profile on every GPU")


def test_mixed_jobs_ask_only_for_profiles_the_layout_has():
    raw = group(devicePlugin={"migStrategy": "mixed", "migDevices": {"3g.40gb": 2}}, verification={"migResources": {MIG_1G: 1}})
    problems = problems_of(raw)
    assert_one_problem(
        problems, f"{KEY}.verification.migResources.{MIG_1G}", "one of devicePlugin.migDevices: nvidia.com/mig-3g.40gb"
    )


def test_gpu_model_needs_preflight():
    problems = problems_of(group(gpuModel="NVIDIA H100 80GB HBM3", preflight={"enabled": False}))
    assert_one_problem(problems, f"{KEY}.gpuModel", "'NVIDIA H100 80GB HBM3'", "needs preflight")


def test_a_gfd_label_in_config_clashes_with_the_feature_labels():
    raw = group(labels={"accelerator": "nvidia", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    problems = problems_of(raw)
    assert_one_problem(problems, f"{KEY}.labels.nvidia.com/gpu.product", "'NVIDIA-H100-80GB-HBM3'", "gpuFeatureLabels false")


def test_a_gfd_label_in_config_is_fine_with_the_feature_labels_off():
    raw = group(labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, gpuFeatureLabels=False)
    assert parse_stack([raw]).node_groups[0].node_labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"


def test_existing_namespaces_must_be_ones_the_groups_use():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], existing_namespaces=["team-gpu", "Bad_Name"])
    problems = caught.value.problems
    assert_one_problem(problems, "gpu-nodes:existingNamespaces[0]", "'team-gpu'", "no group uses it", "nvidia-device-plugin")
    assert_one_problem(problems, "gpu-nodes:existingNamespaces[1]", "DNS-1123 label")


def test_existing_namespaces_are_read_once_each_in_order():
    stack = parse_stack([group()], existing_namespaces=["nvidia-device-plugin", "gpu-verification", "gpu-verification"])
    assert stack.existing_namespaces == ("gpu-verification", "nvidia-device-plugin"), stack


def test_existing_namespaces_is_a_list():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], existing_namespaces="gpu-verification")
    assert_one_problem(caught.value.problems, "gpu-nodes:existingNamespaces", "a list of namespace names")


def test_the_minimum_toolkit_is_the_cve_fix_by_default_and_can_be_turned_off():
    assert parse_stack([group()]).node_groups[0].preflight.min_toolkit == "1.17.8"
    assert parse_stack([group(preflight={"minToolkit": ""})]).node_groups[0].preflight.min_toolkit == ""


def test_a_minimum_toolkit_must_be_a_version():
    problems = problems_of(group(preflight={"minToolkit": "latest"}))
    assert_one_problem(problems, f"{KEY}.preflight.minToolkit", "'latest'", "such as '1.17.8'")


@pytest.mark.parametrize(
    ("toleration", "fragment"),
    [
        ({"key": "a", "operator": "Maybe"}, "operator Equal or Exists"),
        ({"operator": "Equal", "value": "x"}, "without a key must have operator Exists"),
        ({"key": "a", "operator": "Exists", "value": "x"}, "Exists takes no value"),
        ({"key": "a", "effect": "NoRun"}, "expected effect NoSchedule, PreferNoSchedule, NoExecute"),
        ({"key": "a", "effect": "NoSchedule", "tolerationSeconds": 30}, "only with effect NoExecute"),
        ({"key": "a", "colour": "red"}, "expected an object with key, operator"),
    ],
)
def test_a_bad_plugin_toleration_is_named(toleration, fragment):
    problems = problems_of(group(devicePlugin={"tolerations": [toleration]}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.tolerations[0]", fragment)


def test_plugin_resources_are_quantities_of_known_resources():
    raw = {"requests": {"cpu": "fast", "gpu": "1"}, "limits": {"memory": 128}}
    problems = problems_of(group(devicePlugin={"resources": raw}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.resources.requests.cpu", "'fast'", "a Kubernetes quantity")
    assert_one_problem(problems, f"{KEY}.devicePlugin.resources.requests.gpu", "one of cpu, memory")
    spec = parse_stack([group(devicePlugin={"resources": {"limits": {"memory": 128, "cpu": "0.5"}}})]).node_groups[0]
    assert spec.device_plugin.resources == {"limits": {"cpu": "0.5", "memory": "128"}}, spec.device_plugin


def test_ignored_xids_mean_nothing_with_health_checks_off():
    problems = problems_of(group(devicePlugin={"healthChecks": False, "ignoredXids": [109]}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.ignoredXids", "no effect with healthChecks false")


def test_an_xid_is_a_number():
    problems = problems_of(group(devicePlugin={"ignoredXids": ["109"]}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.ignoredXids[0]", "an XID number")


def test_a_pull_policy_is_one_kubernetes_knows():
    problems = problems_of(group(devicePlugin={"imagePullPolicy": "Sometimes"}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.imagePullPolicy", "'Sometimes'", "Always, IfNotPresent, Never")


def test_hand_over_names_daemonsets_or_cluster_policies():
    stack = parse_stack([group()], hand_over=["kube-system/nvdp-nvidia-device-plugin", "ClusterPolicy/cluster-policy"])
    assert stack.hand_over == ("ClusterPolicy/cluster-policy", "kube-system/nvdp-nvidia-device-plugin"), stack
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], hand_over=["nvdp-nvidia-device-plugin"])
    assert_one_problem(caught.value.problems, "gpu-nodes:handOver[0]", "<namespace>/<DaemonSet name> or ClusterPolicy/<name>")


@pytest.mark.parametrize("value", [0, "0%", "150%", "ten", True])
def test_max_unavailable_is_a_count_or_a_percentage(value):
    problems = problems_of(group(devicePlugin={"maxUnavailable": value}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.maxUnavailable", "at least 1, or a percentage from 1% to 100%")


def test_empty_gpus_per_pod_without_mig_resources():
    problems = problems_of(group(verification={"gpusPerPod": []}))
    assert_one_problem(problems, f"{KEY}.verification.gpusPerPod", "at least one GPU count")


def test_time_slicing_replicas_below_one():
    problems = problems_of(group(devicePlugin={"timeSlicingReplicas": 0}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.timeSlicingReplicas", "1 (time-slicing off)")


def test_unknown_container_runtime():
    problems = problems_of(group(preflight={"containerRuntime": "podman"}))
    assert_one_problem(problems, f"{KEY}.preflight.containerRuntime", "'podman'", "containerd, docker, cri-o")


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


@pytest.mark.parametrize("value", ["", " leading-space", "line\nbreak", "x" * 65])
def test_malformed_recheck(value):
    problems = problems_of(group(preflight={"recheck": value}))
    assert_one_problem(problems, f"{KEY}.preflight.recheck", "1-64 printable characters")


@pytest.mark.parametrize(("value", "expected"), [(0, "1 to 600 seconds"), (601, "1 to 600 seconds"), ("30", "whole number")])
def test_bad_ssh_timeout(value, expected):
    problems = problems_of(group(preflight={"sshTimeoutSeconds": value}))
    assert_one_problem(problems, f"{KEY}.preflight.sshTimeoutSeconds", repr(value), expected)


@pytest.mark.parametrize(("value", "expected"), [(0, "1 to 1000 machines"), (1001, "1 to 1000 machines"), ("10", "whole number")])
def test_bad_max_sessions(value, expected):
    problems = problems_of(group(preflight={"maxSessions": value}))
    assert_one_problem(problems, f"{KEY}.preflight.maxSessions", repr(value), expected)


def test_max_sessions_defaults_to_what_a_stock_sshd_accepts():
    assert parse_stack([group()]).node_groups[0].preflight.max_sessions == 10
    assert parse_stack([group(preflight={"maxSessions": 50})]).node_groups[0].preflight.max_sessions == 50


def test_ssh_timeout_is_optional():
    assert parse_stack([group()]).node_groups[0].preflight.ssh_timeout_seconds is None
    assert parse_stack([group(preflight={"sshTimeoutSeconds": 60})]).node_groups[0].preflight.ssh_timeout_seconds == 60


def test_proxy_without_host_key():
    problems = problems_of(group(preflight={"proxy": {"host": "bastion", "user": "ops"}}))
    assert_one_problem(problems, f"{KEY}.preflight.proxy.hostKey", "insecureSkipHostKeyCheck")


def test_missing_ssh_host_when_preflight_runs():
    raw = group()
    del raw["nodes"][0]["sshHost"]
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshHost", "required")


def test_port_out_of_range():
    raw = group()
    raw["nodes"][0]["sshPort"] = 70000
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshPort", "70000", "1 to 65535")


def test_same_namespace_for_plugin_and_verification():
    problems = problems_of(group(devicePlugin={"namespace": "gpu"}, verification={"namespace": "gpu"}))
    assert_one_problem(problems, f"{KEY}.verification.namespace", "must differ")


def test_insecure_flag_must_be_boolean():
    with pytest.raises(ConfigError) as caught:
        parse_stack([group()], insecure_skip_host_key_check="yes")
    assert_one_problem(caught.value.problems, "gpu-nodes:insecureSkipHostKeyCheck", "'yes'", "true or false")


# --- taint syntax ------------------------------------------------------------------------


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


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("driverRoot", "run/nvidia/driver", "absolute directory path"),
        ("driverRoot", "/run/../driver", "absolute directory path"),
        ("driverRoot", "/run/nvidia driver", "absolute directory path"),
        ("driverRoot", 1, "expected a string"),
        ("cdiHookPath", "nvidia-ctk", "absolute path of nvidia-ctk or nvidia-cdi-hook"),
        ("cdiHookPath", "/usr/bin/ctk", "absolute path of nvidia-ctk or nvidia-cdi-hook"),
        ("cdiHookPath", "/usr/bin/", "absolute path of nvidia-ctk or nvidia-cdi-hook"),
    ],
)
def test_bad_driver_root_or_cdi_hook_path(key, value, expected):
    """The hook's program decides its arguments (`nvidia-ctk hook X`, or `nvidia-cdi-hook X`:
    nvidia-container-toolkit internal/discover/hooks.go), so no other name can run the hooks."""
    problems = problems_of(group(gpuAccess="cdi", devicePlugin={key: value}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.{key}", expected)


@pytest.mark.parametrize(
    ("key", "value"), [("driverRoot", "/run/nvidia/driver"), ("cdiHookPath", "/usr/local/nvidia/toolkit/nvidia-cdi-hook")]
)
def test_driver_root_and_cdi_hook_path_accept_absolute_paths(key, value):
    spec = parse_stack([group(gpuAccess="cdi", devicePlugin={key: value})]).node_groups[0]
    assert getattr(spec.device_plugin, "driver_root" if key == "driverRoot" else "cdi_hook_path") == value, spec.device_plugin
