"""NVIDIA's DRA driver for a DRA group: its kubelet plugin, account, rights and the DeviceClasses."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gpu_nodes.manifests.dra_driver import (
    RELEASE,
    cluster_role_binding_manifest,
    cluster_role_manifest,
    daemonset_manifest,
    device_classes,
    feature_gates,
    plugin_revision,
    service_account_manifest,
)
from gpu_nodes.providers.gpu_allocators import runs_dra_gpu_plugin
from gpu_nodes.vocabulary import GROUP_LABEL, NAME_LABEL, PART_OF_LABEL, VERSION_LABEL
from tests.manifests.daemonset_parts import container, pod_spec
from tests.specs import group_spec


def dra_group(name: str = "h100", **overrides):
    return group_spec(name, allocator="dra", **overrides)


def env(manifest: dict) -> dict[str, str]:
    """The gpus container's plain values (the chart also passes some from the pod's own fields)."""
    return {e["name"]: e["value"] for e in container(manifest)["env"] if "value" in e}


def test_the_image_is_the_pinned_release():
    ds = daemonset_manifest(dra_group())
    images = {c["image"] for c in [*pod_spec(ds)["initContainers"], *pod_spec(ds)["containers"]]}
    assert images == {"registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0"}, ds["metadata"]["name"]
    assert RELEASE.version == "0.5.0", RELEASE


def test_only_the_gpus_container_runs_the_gpu_kubelet_plugin():
    ds = daemonset_manifest(dra_group())
    names = [c["name"] for c in pod_spec(ds)["containers"]]
    assert names == ["gpus"], ds["metadata"]["name"]
    assert runs_dra_gpu_plugin(container(ds)), ds["metadata"]["name"]


def test_it_runs_on_exactly_the_groups_nodes():
    ds = daemonset_manifest(dra_group())
    assert pod_spec(ds)["nodeSelector"] == {GROUP_LABEL: "h100"}, ds["metadata"]["name"]
    assert "affinity" not in pod_spec(ds), ds["metadata"]["name"]


def test_it_tolerates_the_groups_taints_the_gate_and_upstreams():
    ds = daemonset_manifest(dra_group(taints=["dedicated=ml:NoExecute"]))
    found = pod_spec(ds)["tolerations"]
    assert found == [
        {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
        {"key": "gpu-nodes.dev/unverified", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ], ds["metadata"]["name"]


def kubelet_plugin_manifests(group) -> list[dict]:
    """What the resource layer registers for a DRA group's kubelet plugin, in its order."""
    return [
        service_account_manifest(group),
        cluster_role_manifest(group),
        cluster_role_binding_manifest(group),
        daemonset_manifest(group),
    ]


def test_two_groups_do_not_collide():
    a, b = kubelet_plugin_manifests(dra_group("h100")), kubelet_plugin_manifests(dra_group("a100"))
    names_a = {(m["kind"], m["metadata"]["name"]) for m in a}
    names_b = {(m["kind"], m["metadata"]["name"]) for m in b}
    assert not names_a & names_b, names_a & names_b


def test_the_objects_carry_our_labels_and_the_daemonset_its_version():
    for manifest in kubelet_plugin_manifests(dra_group()):
        labels = manifest["metadata"]["labels"]
        assert labels[NAME_LABEL] == "dra-driver-nvidia-gpu" and labels[PART_OF_LABEL] == "gpu-nodes", manifest["metadata"]
    assert daemonset_manifest(dra_group())["metadata"]["labels"][VERSION_LABEL] == "v0.5.0"


def test_the_pods_select_and_carry_the_selector_labels():
    ds = daemonset_manifest(dra_group())
    selector = ds["spec"]["selector"]["matchLabels"]
    assert selector.items() <= ds["spec"]["template"]["metadata"]["labels"].items(), ds["metadata"]["name"]


def test_the_account_is_bound_to_the_groups_cluster_role():
    group = dra_group()
    account, binding = service_account_manifest(group), cluster_role_binding_manifest(group)
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    assert binding["subjects"] == [subject], binding["metadata"]["name"]
    assert binding["roleRef"]["name"] == cluster_role_manifest(group)["metadata"]["name"], binding["metadata"]["name"]
    assert pod_spec(daemonset_manifest(group))["serviceAccountName"] == account["metadata"]["name"], account


def test_the_account_keeps_its_token():
    """The plugin writes ResourceSlices through the API: unlike the device plugin's, it needs one."""
    account = service_account_manifest(dra_group())
    assert "automountServiceAccountToken" not in account, account["metadata"]["name"]
    assert "automountServiceAccountToken" not in pod_spec(daemonset_manifest(dra_group())), account["metadata"]["name"]


def test_the_cluster_role_lets_the_plugin_publish_resource_slices():
    role = cluster_role_manifest(dra_group())
    rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in role["rules"]}
    assert rules[("resource.k8s.io", "resourceslices")] == ["get", "list", "watch", "create", "update", "delete"], role
    assert rules[("resource.k8s.io", "resourceclaims")] == ["get", "list", "watch"], role


def test_the_stacks_pull_secret_is_named_by_the_pod_and_passed_to_the_plugin():
    ds = daemonset_manifest(dataclasses.replace(dra_group(), image_pull_secret="registry-login"))
    assert pod_spec(ds)["imagePullSecrets"] == [{"name": "registry-login"}], ds["metadata"]["name"]
    assert env(ds)["IMAGE_PULL_SECRETS"] == "registry-login", ds["metadata"]["name"]
    assert "imagePullSecrets" not in pod_spec(daemonset_manifest(dra_group())), ds["metadata"]["name"]


@pytest.mark.parametrize(
    ("root", "parent"), [("/", "/"), ("/run/nvidia/driver", "/run/nvidia"), ("/run/nvidia/driver/", "/run/nvidia")]
)
def test_the_driver_root_and_its_parent_are_mounted(root: str, parent: str):
    ds = daemonset_manifest(dra_group(devicePlugin={"driverRoot": root}))
    paths = {v["name"]: v["hostPath"]["path"] for v in pod_spec(ds)["volumes"]}
    assert (paths["driver-root"], paths["driver-root-parent"]) == (root, parent), ds["metadata"]["name"]
    assert env(ds)["NVIDIA_DRIVER_ROOT"] == root, ds["metadata"]["name"]


def test_every_host_path_says_what_it_expects_there():
    ds = daemonset_manifest(dra_group())
    untyped = [v["name"] for v in pod_spec(ds)["volumes"] if "type" not in v["hostPath"]]
    assert untyped == [], ds["metadata"]["name"]


@pytest.mark.parametrize(("on", "value"), [(True, "NVMLDeviceHealthCheck=true,"), (False, "NVMLDeviceHealthCheck=false,")])
def test_the_health_check_gate_is_written_as_the_chart_writes_feature_gates(on: bool, value: str):
    """templates/kubeletplugin.yaml: `{{ range $key, $value := .Values.featureGates }}{{ $key }}={{ $value }},{{ end }}`."""
    assert feature_gates(on) == value
    assert env(daemonset_manifest(dra_group(), gates=feature_gates(on)))["FEATURE_GATES"] == value


def test_without_an_answer_the_health_check_is_off():
    assert env(daemonset_manifest(dra_group()))["FEATURE_GATES"] == "NVMLDeviceHealthCheck=false,"


def test_the_feature_gates_sit_where_the_chart_puts_them():
    """After IMAGE_PULL_POLICY (no CDI hook path or consumable shares set), before the kubelet's paths."""
    names = [e["name"] for e in container(daemonset_manifest(dra_group()))["env"]]
    assert names[names.index("IMAGE_PULL_POLICY") + 1 : names.index("KUBELET_REGISTRAR_DIRECTORY_PATH")] == ["FEATURE_GATES"], (
        names
    )


def test_the_gpus_container_gets_no_gpu_from_a_runtime():
    ds = daemonset_manifest(dra_group())
    assert env(ds)["NVIDIA_VISIBLE_DEVICES"] == "void", ds["metadata"]["name"]
    assert "runtimeClassName" not in pod_spec(ds), ds["metadata"]["name"]


def test_the_rendering_is_deterministic():
    first = json.dumps(kubelet_plugin_manifests(dra_group()), sort_keys=True)
    assert first == json.dumps(kubelet_plugin_manifests(dra_group()), sort_keys=True)


def test_a_new_driver_root_is_a_new_revision():
    assert plugin_revision(dra_group()) != plugin_revision(dra_group(devicePlugin={"driverRoot": "/run/nvidia/driver"}))


# --------------------------------------------------------------------------- the DeviceClasses


def selector(device_type: str) -> list[dict]:
    return [
        {
            "cel": {
                "expression": f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{device_type}'"
            }
        }
    ]


def test_the_device_classes_are_the_charts():
    """The three classes the chart renders with resources.gpus.enabled, on resource.k8s.io/v1 (the GPU
    class's template, jgehrcke/k8s-dra-driver-gpu d7b7d1ec deviceclass-gpu.yaml; the three selectors as
    NVIDIA/gpu-operator 31dfd0eb manifests/state-dra-driver/04x0_deviceclass-*.yaml render them), without
    the GPU class's extendedResourceName unless the stack's DRA groups ask for it."""
    found = {c["metadata"]["name"]: c["spec"] for c in device_classes("gpu-nodes.test")}
    assert found == {
        "gpu.nvidia.com": {"selectors": selector("gpu")},
        "mig.nvidia.com": {"selectors": selector("mig")},
        "vfio.gpu.nvidia.com": {"selectors": selector("vfio")},
    }, found


def test_the_gpu_class_serves_plain_requests_where_the_groups_ask():
    """As the chart renders it on v1: extendedResourceName nvidia.com/gpu, on the GPU class only."""
    found = {c["metadata"]["name"]: c["spec"] for c in device_classes("gpu-nodes.test", extended_resource=True)}
    assert found["gpu.nvidia.com"] == {"selectors": selector("gpu"), "extendedResourceName": "nvidia.com/gpu"}, found
    assert all("extendedResourceName" not in spec for name, spec in found.items() if name != "gpu.nvidia.com"), found


def test_the_device_classes_are_cluster_wide():
    for device_class in device_classes("gpu-nodes.test"):
        assert device_class["apiVersion"] == "resource.k8s.io/v1", device_class["metadata"]["name"]
        assert "namespace" not in device_class["metadata"], device_class["metadata"]["name"]
