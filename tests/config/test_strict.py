"""Properties over every section of the stack config, one table per kind of mistake: a trailing
newline, a wrong shape, null, a reserved label or taint key, a value SSH or a registry would
refuse later; each is one problem naming the key and the value. And no value of any shape at
any key ends in a traceback. A section's own rules are tested in its own file (test_<section>.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.errors import ConfigError
from tests.config.problems import KEY, assert_one_problem, problems_of, stack_problems
from tests.factories import ECDSA_HOST_KEY, HOST_KEY, RSA_HOST_KEY, group, node


def with_node(**fields: Any) -> dict[str, Any]:
    return group(nodes=[{**node("n1"), **fields}])


def group_with(**fields: Any) -> dict[str, Any]:
    """A valid group with fields set to anything, nodes included."""
    return {**group(), **fields}


# --- 1. a trailing newline passes no pattern -------------------------------------------------

TRAILING_NEWLINE = [
    ("group name", [group(name="a100\n")], f"{KEY}.name"),
    ("node name", [group(nodes=[node("n1\n")])], f"{KEY}.nodes[0].name"),
    ("label key", [group(labels={"team\n": "ml"})], f"{KEY}.labels.team\n"),
    ("label value", [group(labels={"team": "ml\n"})], f"{KEY}.labels.team"),
    ("taint value", [group(taints=["k=v\n:NoSchedule"])], f"{KEY}.taints[0]"),
    ("taint key", [group(taints=["k\n=v:NoSchedule"])], f"{KEY}.taints[0]"),
    ("plugin namespace", [group(devicePlugin={"namespace": "ns\n"})], f"{KEY}.devicePlugin.namespace"),
    ("verification namespace", [group(verification={"namespace": "ns\n"})], f"{KEY}.verification.namespace"),
    ("priority class name", [group(priorityClass={"name": "pc\n"})], f"{KEY}.priorityClass.name"),
    ("minDriver", [group(preflight={"minDriver": "550\n"})], f"{KEY}.preflight.minDriver"),
    ("minToolkit", [group(preflight={"minToolkit": "1.17.8\n"})], f"{KEY}.preflight.minToolkit"),
    ("recheck", [group(preflight={"recheck": "2026-11-30\n"})], f"{KEY}.preflight.recheck"),
    ("plugin image", [group(devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0\n"})], f"{KEY}.devicePlugin.image"),
    ("image digest", [group(verification={"image": "nvcr.io/x@sha256:" + "a" * 64 + "\n"})], f"{KEY}.verification.image"),
    ("host key", [with_node(hostKey=HOST_KEY + "\n\n x")], f"{KEY}.nodes[0].hostKey"),
    (
        "toleration value",
        [group(devicePlugin={"tolerations": [{"key": "k", "value": "v\n"}]})],
        f"{KEY}.devicePlugin.tolerations[0]",
    ),
]


@pytest.mark.parametrize(("raw", "key"), [row[1:] for row in TRAILING_NEWLINE], ids=[row[0] for row in TRAILING_NEWLINE])
def test_a_trailing_newline_is_refused(raw, key):
    assert_one_problem(stack_problems(raw), key, "got")


@pytest.mark.parametrize(
    ("stack", "key"),
    [
        ({"runtime_class": "nvidia\n"}, "gpu-nodes:runtimeClass"),
        ({"hand_over": ["kube-system/nvdp\n"]}, "gpu-nodes:handOver[0]"),
        ({"existing_namespaces": ["gpu-verification\n"]}, "gpu-nodes:existingNamespaces[0]"),
    ],
    ids=["runtimeClass", "handOver", "existingNamespaces"],
)
def test_a_trailing_newline_in_a_stack_setting_is_refused(stack, key):
    assert_one_problem(problems_of(group(), **stack), key, "got")


# --- 2. wrong shapes: one problem each, never a traceback, never split into characters ----------

WRONG_SHAPES = [
    ("existingNamespaces true", {"existing_namespaces": True}, "gpu-nodes:existingNamespaces", "expected a list"),
    ("existingNamespaces a number", {"existing_namespaces": 3}, "gpu-nodes:existingNamespaces", "expected a list"),
    ("existingNamespaces a string", {"existing_namespaces": "ns"}, "gpu-nodes:existingNamespaces", "expected a list"),
    ("existingNamespaces a map", {"existing_namespaces": {"ns": 1}}, "gpu-nodes:existingNamespaces", "expected a list"),
    ("existingNamespaces false", {"existing_namespaces": False}, "gpu-nodes:existingNamespaces", "expected a list"),
    ("existingNamespaces {}", {"existing_namespaces": {}}, "gpu-nodes:existingNamespaces", "expected a list"),
    ("handOver 3.5", {"hand_over": 3.5}, "gpu-nodes:handOver", "expected a list"),
    ("handOver a string", {"hand_over": "kube-system/nvdp"}, "gpu-nodes:handOver", "expected a list"),
    ("handOver false", {"hand_over": False}, "gpu-nodes:handOver", "expected a list"),
    ("nodeGroups a map", {}, "gpu-nodes:nodeGroups", "expected a list"),
]


@pytest.mark.parametrize(("stack", "key", "fragment"), [r[1:] for r in WRONG_SHAPES], ids=[r[0] for r in WRONG_SHAPES])
def test_a_wrong_shape_is_one_problem(stack, key, fragment):
    raw_groups: Any = {"a100": group()} if not stack else [group()]
    problems = stack_problems(raw_groups, **stack)
    assert_one_problem(problems, key, fragment)
    assert len(problems) == 1, problems


GROUP_SHAPES = [
    ("label key not a string", group(labels={1: "x"}), f"{KEY}.labels.1", "expected a label key"),
    ("node with an int key", group(nodes=[{**node("n1"), 1: "x"}]), f"{KEY}.nodes[0].1", "unknown key"),
    ("taints a map", group(taints={"k:NoSchedule": 1}), f"{KEY}.taints", "expected a list"),
    ("taints false", group(taints=False), f"{KEY}.taints", "expected a list"),
    ("nodes a map", group_with(nodes={"n1": node("n1")}), f"{KEY}.nodes", "expected a list"),
    ("gpusPerPod a map", group(verification={"gpusPerPod": {1: 1}}), f"{KEY}.verification.gpusPerPod", "expected a list"),
    ("a group that is a string", "a100", KEY, "expected an object"),
]


@pytest.mark.parametrize(("raw", "key", "fragment"), [r[1:] for r in GROUP_SHAPES], ids=[r[0] for r in GROUP_SHAPES])
def test_a_wrong_shape_in_a_group_is_named(raw, key, fragment):
    assert_one_problem(problems_of(raw), key, fragment)


# --- 3. null is "not set" (the default) or refused; an empty model is refused ----------------


def test_null_nodes_are_required_nodes():
    assert_one_problem(problems_of(group_with(nodes=None)), f"{KEY}.nodes", "required")


def test_null_gpus_per_pod_is_the_default_job():
    assert parse_stack([group(verification={"gpusPerPod": None})]).node_groups[0].verification.gpus_per_pod == (1,)


def test_null_taints_are_the_default_taint():
    assert [str(t) for t in parse_stack([group(taints=None)]).node_groups[0].taints] == ["nvidia.com/gpu=present:NoSchedule"]


def test_null_labels_are_the_default_labels():
    labels = dict(parse_stack([group(labels=None)]).node_groups[0].labels)
    assert labels == {"accelerator": "nvidia", "nvidia.com/gpu.present": "true"}, labels


def test_an_empty_gpu_model_is_refused():
    assert_one_problem(problems_of(group(gpuModel="")), f"{KEY}.gpuModel", "got ''")


def test_an_explicit_empty_taint_list_still_means_no_taints():
    assert parse_stack([group(taints=[])]).node_groups[0].taints == ()


# --- 5. reserved label and taint keys: named with their owner ---------------------------------

RESERVED = [
    ("hostname label", group(labels={"kubernetes.io/hostname": "x"}), f"{KEY}.labels.kubernetes.io/hostname", "Kubernetes"),
    (
        "control-plane role",
        group(labels={"node-role.kubernetes.io/control-plane": ""}),
        f"{KEY}.labels.node-role.kubernetes.io/control-plane",
        "Kubernetes",
    ),
    ("k8s.io label", group(labels={"k8s.io/x": "y"}), f"{KEY}.labels.k8s.io/x", "Kubernetes"),
    ("stack label", group(labels={"gpu-nodes.dev/stack": "x"}), f"{KEY}.labels.gpu-nodes.dev/stack", "gpu-nodes itself"),
    ("readiness gate", group(taints=["gpu-nodes.dev/unverified=true:NoSchedule"]), f"{KEY}.taints[0]", "gpu-nodes itself"),
    ("unschedulable", group(taints=["node.kubernetes.io/unschedulable:NoSchedule"]), f"{KEY}.taints[0]", "Kubernetes"),
    ("not-ready", group(taints=["node.kubernetes.io/not-ready:NoExecute"]), f"{KEY}.taints[0]", "Kubernetes"),
]


@pytest.mark.parametrize(("raw", "key", "owner"), [r[1:] for r in RESERVED], ids=[r[0] for r in RESERVED])
def test_a_reserved_key_is_refused_naming_its_owner(raw, key, owner):
    assert_one_problem(problems_of(raw), key, f"belongs to {owner}")


def test_keys_that_only_look_alike_are_the_users():
    labels = {"nvidia.com/gpu.present": "true", "accelerator": "nvidia", "example.com/kubernetes.io-team": "ml"}
    spec = parse_stack([group(labels=labels, taints=["mykubernetes.io/x:NoSchedule"])]).node_groups[0]
    assert dict(spec.labels) == labels, spec.labels


# --- 7. weak checks: images by the reference grammar, host keys decoded, SSH users and hosts ---

RSA_AS_ED25519 = "ssh-ed25519 " + RSA_HOST_KEY.split()[1]
DIGEST = "sha256:" + "a" * 64
WEAK = [
    ("digest after any text", group(devicePlugin={"image": f"not an image@{DIGEST}"}), f"{KEY}.devicePlugin.image"),
    ("a tag with no repository", group(devicePlugin={"image": ":v1"}), f"{KEY}.devicePlugin.image"),
    (
        "upper-case repository",
        group(devicePlugin={"image": "nvcr.io/NVIDIA/k8s-device-plugin:v0.20.0"}),
        f"{KEY}.devicePlugin.image",
    ),
    ("a space", group(verification={"image": "nvcr.io/nvidia/cuda :12.4"}), f"{KEY}.verification.image"),
    ("a short digest", group(verification={"image": "nvcr.io/nvidia/cuda@sha256:abc"}), f"{KEY}.verification.image"),
    ("host key not base64 of a key", [with_node(hostKey="ssh-ed25519 AAAAnotakey")], f"{KEY}.nodes[0].hostKey"),
    ("RSA key labelled ed25519", [with_node(hostKey=RSA_AS_ED25519)], f"{KEY}.nodes[0].hostKey"),
    ("ecdsa key labelled ed25519", [with_node(hostKey="ssh-ed25519 " + ECDSA_HOST_KEY.split()[1])], f"{KEY}.nodes[0].hostKey"),
    ("sshHost with a space", [with_node(sshHost="gpu 01")], f"{KEY}.nodes[0].sshHost"),
    ("sshHost with a port", [with_node(sshHost="gpu-01:2222")], f"{KEY}.nodes[0].sshHost"),
    ("sshHost with a user", [with_node(sshHost="ops@gpu-01")], f"{KEY}.nodes[0].sshHost"),
    ("sshHost empty", [with_node(sshHost="")], f"{KEY}.nodes[0].sshHost"),
    ("sshUser empty", [with_node(sshUser="")], f"{KEY}.nodes[0].sshUser"),
    ("sshUser an option", [with_node(sshUser="-oProxyCommand=x")], f"{KEY}.nodes[0].sshUser"),
    ("sshUser a shell word", [with_node(sshUser="ops;id")], f"{KEY}.nodes[0].sshUser"),
    (
        "bastion host with a port",
        [group(preflight={"proxy": {"host": "b:22", "user": "ops", "hostKey": HOST_KEY}})],
        f"{KEY}.preflight.proxy.host",
    ),
    (
        "bastion user empty",
        [group(preflight={"proxy": {"host": "b", "user": "", "hostKey": HOST_KEY}})],
        f"{KEY}.preflight.proxy.user",
    ),
]


@pytest.mark.parametrize(("raw", "key"), [r[1:] for r in WEAK], ids=[r[0] for r in WEAK])
def test_a_value_ssh_or_a_registry_would_refuse_later_is_refused_now(raw, key):
    assert_one_problem(problems_of(*(raw if isinstance(raw, list) else [raw])), key, "got")


GOOD = [
    ("digest only", group(devicePlugin={"image": f"nvcr.io/nvidia/k8s-device-plugin@{DIGEST}"})),
    ("tag and digest", group(devicePlugin={"image": f"nvcr.io/nvidia/k8s-device-plugin:v0.20.0@{DIGEST}"})),
    ("registry with a port", group(verification={"image": "registry.local:5000/cuda:12.4.1-base"})),
    ("ecdsa host key", [with_node(hostKey=ECDSA_HOST_KEY + " root@gpu")]),
    ("IPv6 host", [with_node(sshHost="fd00::11")]),
    ("host name with a dot at the end", [with_node(sshHost="gpu-01.example.com.")]),
]


@pytest.mark.parametrize("raw", [r[1] for r in GOOD], ids=[r[0] for r in GOOD])
def test_what_ssh_and_registries_accept_is_accepted(raw):
    assert parse_stack(raw if isinstance(raw, list) else [raw]).node_groups


# --- 2. no value of any shape at any key ends in a traceback -----------------------------------

ODD_VALUES = [None, True, 0, -1, 3.5, "", "x\n", "ä", [], [1], ["x"], [None], {}, {"a": 1}, {1: "x", "b": 2}, [{}]]


def crashes(read: Any) -> list[str]:
    """The odd values `read` fails on with anything but a ConfigError (a traceback for the user)."""
    found = []
    for value in ODD_VALUES:
        try:
            read(value)
        except ConfigError:
            continue
        except Exception as error:  # what the user would see as a traceback
            found.append(f"{value!r}: {error!r}")
    return found


def group_keys() -> list[str]:
    from gpu_nodes.config.fields import readme_rows
    from gpu_nodes.config.node_group import NodeGroupSpec

    return [key for key, *_ in readme_rows(NodeGroupSpec) if "[]" not in key] + ["devicePlugin", "verification", "preflight"]


def with_value(dotted: str, value: Any) -> dict[str, Any]:
    raw = group()
    *parents, leaf = dotted.split(".")
    here = raw
    for part in parents:
        here = here.setdefault(part, {})
    here[leaf] = value
    return raw


@pytest.mark.parametrize("key", group_keys())
def test_any_value_at_a_group_key_is_read_or_refused_never_a_crash(key):
    assert crashes(lambda value: parse_stack([with_value(key, value)], runtime_class="nvidia")) == [], key


@pytest.mark.parametrize("key", ["migDevices", "tolerations", "resources"])
def test_a_map_with_keys_of_mixed_types_is_read_or_refused(key):
    values = {
        "migDevices": {1: 2, "1g.10gb": 7},
        "tolerations": [{1: "x", "key": "k"}],
        "resources": {"requests": {1: "1", "cpu": "1"}},
    }
    with pytest.raises(ConfigError):
        parse_stack([group(devicePlugin={"migStrategy": "single", key: values[key]})])


def test_mig_resources_with_keys_of_mixed_types_are_refused():
    plugin = {"migStrategy": "mixed"}
    with pytest.raises(ConfigError):
        parse_stack([group(devicePlugin=plugin, verification={"migResources": {1: 1, "nvidia.com/mig-1g.5gb": 1}})])


@pytest.mark.parametrize("key", ["name", "sshHost", "sshPort", "sshUser", "hostKey"])
def test_any_value_at_a_node_key_is_read_or_refused_never_a_crash(key):
    for value in ODD_VALUES:
        with pytest.raises(ConfigError):
            parse_stack([group(nodes=[{**node("n1"), key: value, "extra": 1}])])


@pytest.mark.parametrize(
    "argument", ["node_groups", "existing_namespaces", "hand_over", "insecure_skip_host_key_check", "runtime_class"]
)
def test_any_value_of_a_fleet_argument_is_read_or_refused_never_a_crash(argument):
    from gpu_nodes import GpuFleetArgs
    from tests.factories import SSH_KEY

    found = crashes(
        lambda value: GpuFleetArgs(**{"node_groups": [group()], "ssh_private_key": SSH_KEY, argument: value}).validate()
    )
    assert found == [], argument
