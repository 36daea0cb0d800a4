"""Unit tests for the pure functions of gpu-registrar.py (no cluster needed)."""

import importlib.util
import pathlib
import sys

import pytest

_path = pathlib.Path(__file__).with_name("gpu-registrar.py")
_spec = importlib.util.spec_from_file_location("gpu_registrar", _path)
reg = importlib.util.module_from_spec(_spec)
sys.modules["gpu_registrar"] = reg  # dataclasses look their module up there
_spec.loader.exec_module(reg)

GPU = reg.GPU_RESOURCE


def node(name="gpu-node-1", gpus="4", unhealthy=None, capacity=None, allocatable=None):
    annotations = {"kwok.x-k8s.io/node": "fake"}
    if gpus is not None:
        annotations[reg.GPUS_ANNOTATION] = gpus
    if unhealthy is not None:
        annotations[reg.UNHEALTHY_ANNOTATION] = unhealthy
    base = {"cpu": "48", "memory": "192Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "status": {
            "capacity": {**base, **(capacity or {})},
            "allocatable": {**base, **(allocatable or {})},
        },
    }


def pod(node_name="gpu-node-1", phase="Running", owner="DaemonSet", name_label="nvidia-device-plugin", deleting=False):
    meta = {"name": "plugin-x", "namespace": "kube-system", "labels": {}}
    if name_label is not None:
        meta["labels"]["app.kubernetes.io/name"] = name_label
    if owner is not None:
        meta["ownerReferences"] = [{"kind": owner, "name": "plugin", "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node_name}, "status": {"phase": phase}}


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "value,expected",
    [("4", 4), (" 8 ", 8), ("0", 0), ("-1", None), ("four", None), ("", None), (None, None), (2, 2)],
)
def test_parse_count(value, expected):
    assert reg.parse_count(value) == expected


def test_node_without_annotation_is_not_managed():
    assert reg.simulated_gpus(node(gpus=None)) is None
    assert reg.desired_gpus(node(gpus=None), {"gpu-node-1"}) is None
    assert reg.status_patch(node(gpus=None), None) is None


def test_node_without_annotations_at_all():
    n = {"metadata": {"name": "cpu-node-1"}, "status": {}}
    assert reg.simulated_gpus(n) is None
    assert reg.reconcile([n], [pod("cpu-node-1")]) == {}


# ---------------------------------------------------------------- which pods count


def test_running_daemonset_plugin_pod_counts():
    assert reg.nodes_with_running_plugin([pod()]) == {"gpu-node-1"}


@pytest.mark.parametrize("phase", ["Pending", "Succeeded", "Failed", "Unknown"])
def test_plugin_pod_not_running_does_not_count(phase):
    assert reg.nodes_with_running_plugin([pod(phase=phase)]) == set()


def test_terminating_plugin_pod_does_not_count():
    assert reg.nodes_with_running_plugin([pod(deleting=True)]) == set()


@pytest.mark.parametrize("owner", [None, "ReplicaSet", "Job"])
def test_plugin_pod_not_from_a_daemonset_does_not_count(owner):
    assert reg.nodes_with_running_plugin([pod(owner=owner)]) == set()


@pytest.mark.parametrize("label", [None, "nvidia-dcgm-exporter", "gpu-feature-discovery"])
def test_other_pods_do_not_count(label):
    assert reg.nodes_with_running_plugin([pod(name_label=label)]) == set()


def test_unscheduled_plugin_pod_does_not_count():
    p = pod()
    p["spec"]["nodeName"] = ""
    assert reg.nodes_with_running_plugin([p]) == set()


# ---------------------------------------------------------------- desired state and patches


def test_capacity_appears_when_plugin_runs():
    patches = reg.reconcile([node()], [pod()])
    assert patches == {"gpu-node-1": {"status": {"capacity": {GPU: "4"}, "allocatable": {GPU: "4"}}}}


def test_nothing_to_do_when_already_registered():
    n = node(capacity={GPU: "4"}, allocatable={GPU: "4"})
    assert reg.reconcile([n], [pod()]) == {}


def test_capacity_removed_when_plugin_goes_away():
    n = node(capacity={GPU: "4"}, allocatable={GPU: "4"})
    assert reg.reconcile([n], []) == {"gpu-node-1": {"status": {"capacity": {GPU: None}, "allocatable": {GPU: None}}}}


def test_nothing_to_do_without_plugin_and_without_gpus():
    assert reg.reconcile([node()], []) == {}


def test_plugin_on_another_node_does_not_register_this_one():
    nodes = [node("gpu-node-1"), node("gpu-node-2")]
    patches = reg.reconcile(nodes, [pod("gpu-node-2")])
    assert list(patches) == ["gpu-node-2"]


def test_count_follows_the_annotation():
    n = node(gpus="8", capacity={GPU: "4"}, allocatable={GPU: "4"})
    assert reg.reconcile([n], [pod()]) == {"gpu-node-1": {"status": {"capacity": {GPU: "8"}, "allocatable": {GPU: "8"}}}}


def test_zero_gpus_is_reported_as_zero():
    assert reg.desired_gpus(node(gpus="0"), {"gpu-node-1"}) == reg.Desired(0, 0)


def test_unhealthy_gpus_lower_allocatable_only():
    n = node(unhealthy="1", capacity={GPU: "4"}, allocatable={GPU: "4"})
    assert reg.reconcile([n], [pod()]) == {"gpu-node-1": {"status": {"allocatable": {GPU: "3"}}}}


def test_unhealthy_never_below_zero():
    assert reg.desired_gpus(node(unhealthy="9"), {"gpu-node-1"}) == reg.Desired(4, 0)


def test_non_integer_quantity_is_rewritten():
    n = node(capacity={GPU: "4k"}, allocatable={GPU: "4"})
    assert reg.reconcile([n], [pod()]) == {"gpu-node-1": {"status": {"capacity": {GPU: "4"}}}}


def test_other_resources_are_never_touched():
    n = node(capacity={GPU: "4"}, allocatable={GPU: "4"})
    patch = reg.status_patch(n, reg.Desired(None, None))
    assert set(patch["status"]["capacity"]) == {GPU}
    assert set(patch["status"]["allocatable"]) == {GPU}


def test_node_status_missing_entirely():
    n = {"metadata": {"name": "gpu-node-1", "annotations": {reg.GPUS_ANNOTATION: "2"}}}
    assert reg.reconcile([n], [pod()]) == {"gpu-node-1": {"status": {"capacity": {GPU: "2"}, "allocatable": {GPU: "2"}}}}


def test_current_gpus():
    assert reg.current_gpus(node(capacity={GPU: "4"}, allocatable={GPU: "3"})) == reg.Desired(4, 3)
    assert reg.current_gpus(node()) == reg.Desired(None, None)


# --------------------------------------------------------------------------- XIDs until a plugin restart


def with_xid(n, count="1", pinned=None):
    n["metadata"]["annotations"][reg.XID_ANNOTATION] = count
    if pinned is not None:
        n["metadata"]["annotations"][reg.XID_POD_ANNOTATION] = pinned
    return n


def plugin(uid, node_name="gpu-node-1"):
    p = pod(node_name)
    p["metadata"]["uid"] = uid
    return p


def test_an_xid_is_pinned_to_the_plugin_pod_that_saw_it():
    n = with_xid(node(capacity={GPU: "4"}, allocatable={GPU: "4"}))
    assert reg.xid_patches([n], [plugin("uid-1")]) == {
        "gpu-node-1": {"metadata": {"annotations": {reg.XID_POD_ANNOTATION: "uid-1"}}}
    }
    assert reg.reconcile([n], [plugin("uid-1")]) == {"gpu-node-1": {"status": {"allocatable": {GPU: "3"}}}}


def test_the_same_plugin_pod_keeps_the_gpu_unhealthy():
    n = with_xid(node(capacity={GPU: "4"}, allocatable={GPU: "3"}), pinned="uid-1")
    assert reg.xid_patches([n], [plugin("uid-1")]) == {}
    assert reg.reconcile([n], [plugin("uid-1")]) == {}


def test_a_new_plugin_pod_re_advertises_the_gpu_and_clears_the_xid():
    n = with_xid(node(capacity={GPU: "4"}, allocatable={GPU: "3"}), pinned="uid-1")
    cleared = {reg.XID_ANNOTATION: None, reg.XID_POD_ANNOTATION: None}
    assert reg.xid_patches([n], [plugin("uid-2")]) == {"gpu-node-1": {"metadata": {"annotations": cleared}}}
    assert reg.reconcile([n], [plugin("uid-2")]) == {"gpu-node-1": {"status": {"allocatable": {GPU: "4"}}}}


def test_an_xid_without_a_plugin_waits_for_one():
    n = with_xid(node())
    assert reg.xid_patches([n], []) == {}


# ------------------------------------------------- the plugin as the stack deploys it


@pytest.mark.parametrize("isolation", ["default", "strict"])
def test_a_plugin_pod_of_the_stacks_daemonset_counts_under_either_isolation(isolation):
    """Strict isolation changes how the plugin hands GPUs out (volume-mounts, a /dev/null mount),
    not what the simulated node reads from its pod: its labels, owner and phase."""
    from gpu_nodes.manifests.device_plugin import daemonset_manifest
    from tests.specs import group_spec

    template = daemonset_manifest(group_spec(isolation=isolation))["spec"]["template"]
    plugin = pod()
    plugin["metadata"]["labels"] = dict(template["metadata"]["labels"])
    plugin["spec"] = {**template["spec"], "nodeName": "gpu-node-1"}
    assert reg.nodes_with_running_plugin([plugin]) == {"gpu-node-1"}, plugin["metadata"]
    assert reg.reconcile([node()], [plugin])["gpu-node-1"]["status"]["capacity"][GPU] == "4"
# --------------------------------------------------------------------------- CDI needs the driver root


def cdi_plugin(strategy="cdi-cri", driver_root="/", mount_path="/driver-root", node_name="gpu-node-1"):
    """A plugin pod as our DaemonSet makes it under gpuAccess cdi; driver_root None: no volume."""
    p = pod(node_name)
    container = {"name": "nvidia-device-plugin-ctr", "env": [{"name": "DEVICE_LIST_STRATEGY", "value": strategy}]}
    p["spec"]["containers"] = [container]
    if driver_root is not None:
        container["volumeMounts"] = [{"name": "driver-root", "mountPath": mount_path, "readOnly": True}]
        p["spec"]["volumes"] = [{"name": "driver-root", "hostPath": {"path": driver_root, "type": "Directory"}}]
    return p


def test_a_cdi_plugin_without_the_driver_root_registers_no_gpus():
    """The real plugin exits: "unable to create cdi spec file" (k8s-device-plugin
    cmd/nvidia-device-plugin/plugin-manager.go), as it finds no driver files at /driver-root."""
    assert reg.reconcile([node()], [cdi_plugin(driver_root=None)]) == {}
    n = node(capacity={GPU: "4"}, allocatable={GPU: "4"})
    assert reg.reconcile([n], [cdi_plugin(driver_root=None)]) == {
        "gpu-node-1": {"status": {"capacity": {GPU: None}, "allocatable": {GPU: None}}}
    }


@pytest.mark.parametrize("strategy", ["cdi-cri", "cdi-annotations", "envvar,cdi-cri"])
def test_a_cdi_plugin_with_the_driver_root_mounted_registers_its_gpus(strategy):
    patches = reg.reconcile([node()], [cdi_plugin(strategy)])
    assert patches == {"gpu-node-1": {"status": {"capacity": {GPU: "4"}, "allocatable": {GPU: "4"}}}}, strategy


def test_the_driver_root_must_be_a_host_path_at_driver_root():
    elsewhere = cdi_plugin(mount_path="/host")
    assert reg.reconcile([node()], [elsewhere]) == {}
    not_host = cdi_plugin()
    not_host["spec"]["volumes"] = [{"name": "driver-root", "emptyDir": {}}]
    assert reg.reconcile([node()], [not_host]) == {}


def test_a_plugin_without_cdi_needs_no_driver_root():
    assert reg.reconcile([node()], [cdi_plugin("envvar", driver_root=None)]) != {}
