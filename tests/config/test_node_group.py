"""A node group: its defaults, its own keys (name, gpusPerNode, nodes, labels, taints,
priorityClass, the GPU facts settings), and the checks between its sections."""

from __future__ import annotations

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.vocabulary import GROUP_LABEL
from tests.config.problems import KEY, MIG_1G, assert_one_problem, problems_of, refused
from tests.factories import group, node


def test_defaults_follow_the_runbook_and_upstream():
    spec = parse_stack([group()]).node_groups[0]
    assert dict(spec.labels) == {"accelerator": "nvidia", "nvidia.com/gpu.present": "true"}, spec.labels
    assert [str(t) for t in spec.taints] == ["nvidia.com/gpu=present:NoSchedule"], spec.taints
    assert spec.device_plugin.image == "nvcr.io/nvidia/k8s-device-plugin:v0.20.1", spec.device_plugin
    assert spec.device_plugin.namespace == "nvidia-device-plugin", spec.device_plugin
    assert spec.device_plugin.fail_on_init_error is True, spec.device_plugin
    assert spec.device_plugin.needs_config_file is False, spec.device_plugin
    assert spec.priority_class.value == 1_000_000, spec.priority_class
    assert spec.priority_class_name == "gpu-a100", spec.priority_class
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


def test_invalid_node_name():
    raw = group()
    raw["nodes"][0]["name"] = "Node One"
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].name", "'Node One'", "node name")


def test_duplicate_node_in_a_group():
    raw = group()
    raw["nodes"].append(node("a100-node-1", 9))
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[2].name", "'a100-node-1'", "listed once")


def test_missing_ssh_host_when_preflight_runs():
    raw = group()
    del raw["nodes"][0]["sshHost"]
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshHost", "required")


def test_port_out_of_range():
    raw = group()
    raw["nodes"][0]["sshPort"] = 70000
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshPort", "70000", "1 to 65535")


def test_a_gfd_label_in_config_is_fine_with_the_feature_labels_off():
    raw = group(labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, gpuFeatureLabels=False)
    assert parse_stack([raw]).node_groups[0].node_labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"


REFUSED = [
    ("invalid_group_name", group(name="GPU_A100"), f"{KEY}.name", ("'GPU_A100'", "DNS-1123 label")),
    ("no_nodes", group(nodes=0), f"{KEY}.nodes", ("at least one node",)),
    ("invalid_label_key", group(labels={"bad key!": "x"}), f"{KEY}.labels.bad key!", ("label key",)),
    ("invalid_label_value", group(labels={"tier": "not ok!"}), f"{KEY}.labels.tier", ("'not ok!'", "label value")),
    ("label_value_must_be_a_string", group(labels={"count": 8}), f"{KEY}.labels.count", ("8", "label value")),
    ("group_label_is_reserved", group(labels={GROUP_LABEL: "x"}), f"{KEY}.labels.{GROUP_LABEL}", ("set by gpu-nodes",)),
    ("taint_that_does_not_parse", group(taints=["nvidia.com/gpu=present"]), f"{KEY}.taints[0]", ("key[=value]:Effect",)),
    ("taint_with_unknown_effect", group(taints=["gpu=yes:NoRun"]), f"{KEY}.taints[0]", ("'gpu=yes:NoRun'", "NoExecute")),
    (
        "duplicate_taint_key_and_effect",
        group(taints=["gpu=a:NoSchedule", "gpu=b:NoSchedule"]),
        f"{KEY}.taints[1]",
        ("one taint per key and effect",),
    ),
    ("gpus_per_node_below_one", group(gpusPerNode=0), f"{KEY}.gpusPerNode", ("at least 1",)),
    (
        "priority_value_above_user_range",
        group(priorityClass={"value": 2_000_000_000}),
        f"{KEY}.priorityClass.value",
        ("2000000000", "reserved for system classes"),
    ),
    (
        "priority_class_name_reserved_prefix",
        group(priorityClass={"name": "system-gpu"}),
        f"{KEY}.priorityClass.name",
        ("'system-gpu'", "reserved"),
    ),
    (
        "priority_class_name_leaves_room_for_the_verification_class",
        group(priorityClass={"name": "p" * 250}),
        f"{KEY}.priorityClass.name",
        ("at most 240 characters", "-verification"),
    ),
    (
        "gpu_model_needs_preflight",
        group(gpuModel="NVIDIA H100 80GB HBM3", preflight={"enabled": False}),
        f"{KEY}.gpuModel",
        ("'NVIDIA H100 80GB HBM3'", "needs preflight"),
    ),
    (
        "a_gfd_label_in_config_clashes_with_the_feature_labels",
        group(labels={"accelerator": "nvidia", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
        f"{KEY}.labels.nvidia.com/gpu.product",
        ("'NVIDIA-H100-80GB-HBM3'", "gpuFeatureLabels false"),
    ),
    (
        "an_mps_groups_mps_capable_label_is_written_from_the_facts",
        group(labels={"nvidia.com/mps.capable": "true"}, devicePlugin={"sharing": {"strategy": "mps", "replicas": 2}}),
        f"{KEY}.labels.nvidia.com/mps.capable",
        ("'true'", "gpuFeatureLabels false"),
    ),
    (
        "mixed_jobs_ask_only_for_profiles_the_layout_has",
        group(devicePlugin={"migStrategy": "mixed", "migDevices": {"3g.40gb": 2}}, verification={"migResources": {MIG_1G: 1}}),
        f"{KEY}.verification.migResources.{MIG_1G}",
        ("one of devicePlugin.migDevices: nvidia.com/mig-3g.40gb",),
    ),
]


@refused(REFUSED)
def test_a_bad_group_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_a_group_without_mps_may_set_mps_capable_itself():
    """We write nvidia.com/mps.capable only on an MPS group's nodes: elsewhere the label is the config's."""
    raw = group(labels={"accelerator": "nvidia", "nvidia.com/mps.capable": "true"})
    assert dict(parse_stack([raw]).node_groups[0].labels)["nvidia.com/mps.capable"] == "true"
