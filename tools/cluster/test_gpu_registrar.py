"""Unit tests for the pure functions of gpu-registrar.py (no cluster needed)."""

import importlib.util
import json
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


# ---------------------------------------------------------------- DRA: the simulated kubelet plugin of NVIDIA's DRA driver


def dra_node(name="gpu-node-1", gpus="4", hidden=None, model=None, uid="node-uid-1", xid=None):
    n = node(name=name, gpus=gpus)
    n["metadata"]["uid"] = uid
    if xid is not None:
        n["metadata"]["annotations"][reg.DRA_XID_ANNOTATION] = xid
    if hidden is not None:
        n["metadata"]["annotations"][reg.DRA_HIDDEN_ANNOTATION] = hidden
    if model is not None:
        n["metadata"]["annotations"][reg.GPU_MODEL_ANNOTATION] = model
    return n


def dra_pod(
    node_name="gpu-node-1", phase="Running", owner="DaemonSet", deleting=False, command=None, args=None, sidecar=False, gates=None
):
    """A pod of the DRA driver's kubelet plugin DaemonSet: its `gpus` container runs the plugin
    behind `bash -c`, as the chart's kubeletplugin.yaml does; `gates`: its FEATURE_GATES, as the chart
    writes values.yaml `featureGates`."""
    p = pod(node_name=node_name, phase=phase, owner=owner, name_label="dra-driver-nvidia-gpu", deleting=deleting)
    container = {
        "name": "gpus",
        "image": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1",
        "command": command if command is not None else ["bash", "-c"],
        "args": args if args is not None else ["exec gpu-kubelet-plugin -v $(LOG_VERBOSITY)"],
    }
    if gates is not None:
        container["env"] = [{"name": "LOG_VERBOSITY", "value": "4"}, {"name": "FEATURE_GATES", "value": gates}]
    if sidecar:
        p["spec"]["initContainers"] = [{**container, "restartPolicy": "Always"}]
        p["spec"]["containers"] = [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]
    else:
        p["spec"]["containers"] = [container]
    return p


def stored(slice_, resource_version="7", generation=1):
    """A slice as the API hands it back: with a resourceVersion and the pool generation it keeps."""
    s = json.loads(json.dumps(slice_))
    s["metadata"]["resourceVersion"] = resource_version
    s["metadata"]["uid"] = "slice-uid"
    s["spec"]["pool"]["generation"] = generation
    return s


@pytest.mark.parametrize(
    "container,expected",
    [
        ({"command": ["bash", "-c"], "args": ["exec gpu-kubelet-plugin -v 6"]}, True),
        ({"command": ["bash", "-c", "set -e; /usr/bin/gpu-kubelet-plugin --node-name=$(NODE_NAME)"]}, True),
        ({"command": ["gpu-kubelet-plugin"]}, True),
        ({"command": ["bash", "-c"], "args": ["exec compute-domain-kubelet-plugin -v 6"]}, False),
        ({"command": ["python3", "gpu-kubelet-plugin"]}, False),  # a program given the name as an argument
        ({"image": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"}, False),  # the entrypoint
    ],
)
def test_a_dra_plugin_container_is_one_that_runs_gpu_kubelet_plugin(container, expected):
    assert (reg.DRA_PROGRAM in (reg.programs_of(container) or set())) is expected


@pytest.mark.parametrize(
    "p,expected",
    [
        (dra_pod(), True),
        (dra_pod(sidecar=True), True),
        (dra_pod(owner="ReplicaSet"), False),
        (dra_pod(owner=None), False),
        (dra_pod(phase="Pending"), False),
        (dra_pod(deleting=True), False),
        (dra_pod(args=["exec compute-domain-kubelet-plugin"]), False),
        (pod(), False),  # the device plugin's pod
    ],
)
def test_nodes_with_dra_plugin(p, expected):
    assert reg.nodes_with_dra_plugin([p]) == ({"gpu-node-1"} if expected else set())


def test_the_slice_is_the_one_the_driver_publishes_for_its_node():
    s = reg.desired_slice(dra_node())
    assert s["apiVersion"] == "resource.k8s.io/v1" and s["kind"] == "ResourceSlice"
    meta = s["metadata"]
    assert meta["name"].startswith("gpu-node-1-gpu.nvidia.com-") and len(meta["name"]) == len("gpu-node-1-gpu.nvidia.com-") + 5
    assert meta["generateName"] == "gpu-node-1-gpu.nvidia.com-"
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "gpu-node-1", "uid": "node-uid-1", "controller": True}]
    spec = s["spec"]
    assert spec["driver"] == "gpu.nvidia.com"
    assert spec["nodeName"] == "gpu-node-1"
    assert spec["pool"] == {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


def test_a_device_has_the_attributes_and_capacity_of_a_full_gpu():
    device = reg.desired_slice(dra_node())["spec"]["devices"][1]
    assert device == {
        "name": "gpu-1",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": "GPU-94ede898-553c-5091-9abe-34d98a7ec87b"},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Ampere"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "driverVersion": {"version": "580.178.4"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "resource.kubernetes.io/pciBusID": {"string": "0000:08:00.0"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


def test_uuids_are_those_the_fake_machine_prints():
    spec = importlib.util.spec_from_file_location("fakehost", pathlib.Path(__file__).parents[1] / "fakehost" / "fakehost.py")
    fakehost = importlib.util.module_from_spec(spec)
    sys.modules["fakehost"] = fakehost
    spec.loader.exec_module(fakehost)
    machine = fakehost.MachineSpec(hostname="gpu-node-2", gpus=8)
    lines = [line.split(", ") for line in fakehost.query_gpu_lines(machine).splitlines()]
    devices = reg.desired_slice(dra_node(name="gpu-node-2", gpus="8"))["spec"]["devices"]
    assert [d["attributes"]["uuid"]["string"] for d in devices] == [fields[2] for fields in lines]
    assert {d["attributes"]["productName"]["string"] for d in devices} == {machine.gpu_name}
    # As Masterminds semver prints the machine's driver: each part a number (580.178.04 -> 580.178.4).
    published = ".".join(str(int(part)) for part in machine.driver.split("."))
    assert {d["attributes"]["driverVersion"]["version"] for d in devices} == {published}
    assert {d["capacity"]["memory"]["value"] for d in devices} == {f"{machine.memory_mib // 1024}Gi"}
    other = fakehost.other_model(machine)
    h100 = reg.desired_slice(dra_node(model=other.gpu_name))["spec"]["devices"][0]
    assert h100["attributes"]["productName"] == {"string": other.gpu_name}
    assert h100["attributes"]["cudaComputeCapability"] == {"version": other.compute_cap + ".0"}
    assert h100["attributes"]["architecture"] == {"string": "Hopper"}
    assert h100["capacity"]["memory"] == {"value": f"{other.memory_mib}Mi"}


@pytest.mark.parametrize("n,expected", [(85899345920, "80Gi"), (81559 * 1024 * 1024, "81559Mi"), (1536, "1536"), (0, "0")])
def test_binary_si(n, expected):
    assert reg.binary_si(n) == expected


@pytest.mark.parametrize("hidden,expected", [("1", ["gpu-0", "gpu-1", "gpu-2"]), ("0", ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]), ("9", []), ("x", ["gpu-0", "gpu-1", "gpu-2", "gpu-3"])])
def test_hidden_gpus_are_left_out_of_the_slice(hidden, expected):
    assert [d["name"] for d in reg.desired_slice(dra_node(hidden=hidden))["spec"]["devices"]] == expected


def test_a_node_that_is_not_a_simulated_gpu_node_or_of_an_unknown_model_gets_no_slice():
    assert reg.desired_slice(dra_node(gpus=None)) is None
    assert reg.desired_slice(dra_node(model="NVIDIA B200")) is None
    assert reg.dra_actions([dra_node(gpus=None), dra_node(name="gpu-node-2", model="NVIDIA B200")], [dra_pod(), dra_pod("gpu-node-2")], [], 0.0, {}) == ([], {})


def test_slice_names_are_deterministic_and_per_node():
    assert reg.slice_name("gpu-node-1") == reg.slice_name("gpu-node-1")
    assert reg.slice_name("gpu-node-1") != reg.slice_name("gpu-node-2")


def test_a_running_plugin_creates_the_slice():
    actions, pending = reg.dra_actions([dra_node(), dra_node(name="gpu-node-2", uid="u2")], [dra_pod()], [], 100.0, {})
    assert [(a.kind, a.node) for a in actions] == [("create", "gpu-node-1")]
    assert actions[0].body == reg.desired_slice(dra_node())
    assert pending == {}


def test_no_write_when_the_stored_slice_is_equal():
    have = stored(reg.desired_slice(dra_node()))
    assert reg.dra_actions([dra_node()], [dra_pod()], [have], 100.0, {}) == ([], {})


def test_no_write_when_only_the_pool_generation_differs():
    have = stored(reg.desired_slice(dra_node()), generation=3)
    assert reg.dra_actions([dra_node()], [dra_pod()], [have], 100.0, {}) == ([], {})


def test_a_hidden_gpu_after_publishing_updates_the_slice_in_place():
    have = stored(reg.desired_slice(dra_node()), resource_version="42", generation=2)
    actions, _ = reg.dra_actions([dra_node(hidden="1")], [dra_pod()], [have], 100.0, {})
    assert [(a.kind, a.node) for a in actions] == [("update", "gpu-node-1")]
    body = actions[0].body
    assert body["metadata"]["name"] == have["metadata"]["name"]
    assert body["metadata"]["resourceVersion"] == "42"
    assert body["spec"]["pool"]["generation"] == 2  # an in-place update of a one-slice pool keeps it
    assert len(body["spec"]["devices"]) == 3


def test_a_recreated_node_gets_its_new_uid_as_owner():
    have = stored(reg.desired_slice(dra_node(uid="old")))
    actions, _ = reg.dra_actions([dra_node(uid="new")], [dra_pod()], [have], 100.0, {})
    assert [a.kind for a in actions] == ["update"]
    assert actions[0].body["metadata"]["ownerReferences"][0]["uid"] == "new"


def test_plugin_gone_wipes_the_slices_after_kubelets_delay():
    have = stored(reg.desired_slice(dra_node()))
    # the first pass without the plugin starts the clock: nothing yet
    actions, pending = reg.dra_actions([dra_node()], [], [have], 100.0, {})
    assert (actions, pending) == ([], {"gpu-node-1": 100.0})
    actions, pending = reg.dra_actions([dra_node()], [dra_pod(deleting=True)], [have], 129.0, pending)
    assert (actions, pending) == ([], {"gpu-node-1": 100.0})
    actions, pending = reg.dra_actions([dra_node()], [], [have], 130.0, pending)
    assert [(a.kind, a.node, a.body) for a in actions] == [("wipe", "gpu-node-1", None)]
    # once wiped, nothing is pending
    assert reg.dra_actions([dra_node()], [], [], 131.0, pending) == ([], {})


def test_a_plugin_back_before_the_delay_cancels_the_wipe():
    have = stored(reg.desired_slice(dra_node()))
    _, pending = reg.dra_actions([dra_node()], [], [have], 100.0, {})
    actions, pending = reg.dra_actions([dra_node()], [dra_pod()], [have], 110.0, pending)
    assert (actions, pending) == ([], {})
    actions, pending = reg.dra_actions([dra_node()], [], [have], 135.0, pending)
    assert (actions, pending) == ([], {"gpu-node-1": 135.0})


def test_the_wipe_delay_is_kubelets_by_default_and_can_be_zero():
    have = stored(reg.desired_slice(dra_node()))
    assert reg.DRA_WIPE_DELAY == 30.0
    actions, _ = reg.dra_actions([dra_node()], [], [have], 100.0, {}, wipe_delay=0)
    assert [a.kind for a in actions] == ["wipe"]


def test_slices_we_did_not_make_are_left_alone_where_no_plugin_of_ours_ran():
    """A slice someone else wrote (a test standing in for a real driver) on a node where our
    plugin never ran: kubelet would not wipe it either."""
    theirs = {
        "metadata": {"name": "gpu-node-1-gpu.nvidia.com-x7k2p", "resourceVersion": "3"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-node-1", "pool": {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]},
    }
    assert reg.dra_actions([dra_node()], [], [theirs], 100.0, {}) == ([], {})
    assert reg.dra_actions([dra_node()], [], [theirs], 1000.0, {"gpu-node-1": 0.0}) == ([], {})


def test_other_drivers_slices_are_not_ours():
    have = stored(reg.desired_slice(dra_node()))
    have["spec"]["driver"] = "compute-domain.nvidia.com"
    actions, _ = reg.dra_actions([dra_node()], [dra_pod()], [have], 100.0, {})
    assert [a.kind for a in actions] == ["create"]


def test_the_device_plugin_path_ignores_dra_plugin_pods():
    """A DRA plugin pod registers no nvidia.com/gpu: reconcile leaves the node without it."""
    assert reg.reconcile([node()], [dra_pod()]) == {}


# --------------------------------------------------------------------------- DRA: the driver's health check

HEALTHY = "NVMLDeviceHealthCheck=true,"


@pytest.mark.parametrize(
    "gates,expected",
    [
        (HEALTHY, True),
        ("NVMLDeviceHealthCheck=false,", False),
        ("MPSSupport=true,NVMLDeviceHealthCheck=True", True),
        ("NVMLDeviceHealthCheck=1", True),
        ("", False),
        (None, False),
    ],
)
def test_the_health_check_is_on_where_the_plugins_feature_gates_say_so(gates, expected):
    assert reg.health_checked(dra_pod(gates=gates)) is expected
    assert reg.dra_plugins([dra_pod(gates=gates)]) == {"gpu-node-1": expected}


def test_an_xid_taints_the_last_gpus_as_the_driver_does():
    """v0.5.0 device_health.go healthEventToTaint: a fatal XID is gpu.nvidia.com/xid=<xid>:NoSchedule."""
    devices = reg.desired_slice(dra_node(xid="1"), health_check=True)["spec"]["devices"]
    assert [d.get("taints") for d in devices] == [None, None, None, [{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule"}]]


def test_without_the_health_check_no_gpu_is_tainted():
    devices = reg.desired_slice(dra_node(xid="2"), health_check=False)["spec"]["devices"]
    assert not any("taints" in d for d in devices), devices


def test_hidden_gpus_are_not_tainted_the_published_ones_are():
    devices = reg.desired_slice(dra_node(hidden="1", xid="1"), health_check=True)["spec"]["devices"]
    assert [d["name"] for d in devices if "taints" in d] == ["gpu-2"], devices


def test_a_taint_is_written_in_place_and_its_time_added_is_the_servers():
    have = stored(reg.desired_slice(dra_node()))
    actions, _ = reg.dra_actions([dra_node(xid="1")], [dra_pod(gates=HEALTHY)], [have], 100.0, {})
    assert [a.kind for a in actions] == ["update"], actions
    stored_back = stored(actions[0].body)
    for device in stored_back["spec"]["devices"]:
        for taint in device.get("taints") or []:
            taint["timeAdded"] = "2026-12-06T10:00:00Z"  # the API server sets it
    assert reg.dra_actions([dra_node(xid="1")], [dra_pod(gates=HEALTHY)], [stored_back], 101.0, {}) == ([], {})


def test_the_taint_goes_with_the_annotation():
    tainted = stored(reg.desired_slice(dra_node(xid="1"), health_check=True))
    actions, _ = reg.dra_actions([dra_node()], [dra_pod(gates=HEALTHY)], [tainted], 100.0, {})
    assert [a.kind for a in actions] == ["update"] and not any("taints" in d for d in actions[0].body["spec"]["devices"])


def test_taints_the_api_server_dropped_are_not_written_again_and_again():
    """pkg/registry/resource/resourceslice/strategy.go: without DRADeviceTaints the taints are dropped."""
    want = reg.desired_slice(dra_node(xid="1"), health_check=True)
    kept_without = stored(reg.desired_slice(dra_node()))
    assert reg.taints_dropped(want, kept_without)
    assert not reg.taints_dropped(want, stored(want))
    actions, _ = reg.dra_actions([dra_node(xid="1")], [dra_pod(gates=HEALTHY)], [kept_without], 100.0, {}, taints_dropped_on={"gpu-node-1"})
    assert actions == [], actions


# --------------------------------------------------------------------------- sharing: time-slicing and MPS


def stack_pods(node_name="gpu-node-1", **device_plugin):
    """The plugin pod (and, under MPS, the MPS control daemon's) as the stack's DaemonSets make them for a
    group with this devicePlugin, on node_name, Running; and their ConfigMap, by (namespace, name)."""
    from gpu_nodes.manifests.device_plugin import config_map_manifest, daemonset_manifest
    from gpu_nodes.manifests.mps_control_daemon import daemonset_manifest as mps_daemonset
    from tests.specs import group_spec

    spec = group_spec(devicePlugin=device_plugin)

    def pod_of(manifest, uid):
        template = manifest["spec"]["template"]
        meta = {
            "name": f"{manifest['metadata']['name']}-x",
            "namespace": manifest["metadata"]["namespace"],
            "uid": uid,
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [{"kind": "DaemonSet", "name": manifest["metadata"]["name"], "controller": True}],
        }
        return {"metadata": meta, "spec": {**template["spec"], "nodeName": node_name}, "status": {"phase": "Running"}}

    plugin = pod_of(daemonset_manifest(spec), "plugin-uid")
    daemon = pod_of(mps_daemonset(spec), "daemon-uid") if spec.shares_through_mps else None
    config_map = config_map_manifest(spec)
    maps = {(config_map["metadata"]["namespace"], config_map["metadata"]["name"]): config_map} if config_map else {}
    return plugin, daemon, maps


MPS = {"sharing": {"strategy": "mps", "replicas": 4}}


@pytest.mark.parametrize("device_plugin", [{"timeSlicingReplicas": 4}, {"sharing": {"replicas": 4}}])
def test_a_time_sliced_plugin_registers_its_replicas(device_plugin):
    """api/config/v1/sharing.go: replicas > 1 of nvidia.com/gpu; each GPU is offered that many times."""
    plugin, _, maps = stack_pods(**device_plugin)
    patches = reg.reconcile([node()], [plugin], maps)
    assert patches == {"gpu-node-1": {"status": {"capacity": {GPU: "16"}, "allocatable": {GPU: "16"}}}}, patches


def test_an_mps_plugin_registers_nothing_until_its_daemon_runs():
    """internal/plugin/mps.go waitForDaemon: the plugin serves only once the MPS control daemon is ready."""
    plugin, daemon, maps = stack_pods(**MPS)
    assert reg.reconcile([node()], [plugin], maps, []) == {}
    patches = reg.reconcile([node()], [plugin], maps, [daemon])
    assert patches == {"gpu-node-1": {"status": {"capacity": {GPU: "16"}, "allocatable": {GPU: "16"}}}}, patches


def test_an_mps_daemon_on_another_node_or_not_running_does_not_count():
    plugin, daemon, maps = stack_pods(**MPS)
    elsewhere = json.loads(json.dumps(daemon))
    elsewhere["spec"]["nodeName"] = "gpu-node-2"
    pending = json.loads(json.dumps(daemon))
    pending["status"]["phase"] = "Pending"
    assert reg.reconcile([node()], [plugin], maps, [elsewhere, pending]) == {}


def test_an_mps_daemon_of_another_config_is_not_the_plugins():
    """cmd/mps-control-daemon/mps/ready.go Matches: the daemon's sharing.mps must be the plugin's."""
    plugin, _, maps = stack_pods(**MPS)
    _, other_daemon, other_maps = stack_pods(sharing={"strategy": "mps", "replicas": 8})
    other_name = other_daemon["spec"]["volumes"][-1]["configMap"]["name"] = "other-config"
    namespace = other_daemon["metadata"]["namespace"]
    both = {**maps, (namespace, other_name): next(iter(other_maps.values()))}
    assert reg.reconcile([node()], [plugin], both, [other_daemon]) == {}


def test_an_mps_plugin_without_mps_root_registers_nothing():
    """cmd/nvidia-device-plugin/main.go validateFlags: "using MPS requires --mps-root to be specified"."""
    plugin, daemon, maps = stack_pods(**MPS)
    container = plugin["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "MPS_ROOT"]
    assert reg.reconcile([node()], [plugin], maps, [daemon]) == {}


def test_renamed_replicas_are_registered_as_the_shared_resource_and_the_plain_one_goes():
    plugin, daemon, maps = stack_pods(sharing={**MPS["sharing"], "renameByDefault": True})
    was_plain = node(capacity={GPU: "4"}, allocatable={GPU: "4"})
    patches = reg.reconcile([was_plain], [plugin], maps, [daemon])
    shared = reg.SHARED_GPU_RESOURCE
    assert patches == {
        "gpu-node-1": {"status": {"capacity": {GPU: None, shared: "16"}, "allocatable": {GPU: None, shared: "16"}}}
    }, patches


def test_an_unhealthy_gpu_takes_all_its_replicas_with_it():
    plugin, daemon, maps = stack_pods(**MPS)
    patches = reg.reconcile([node(unhealthy="1")], [plugin], maps, [daemon])
    assert patches["gpu-node-1"]["status"] == {"capacity": {GPU: "16"}, "allocatable": {GPU: "12"}}, patches


def test_a_plugin_whose_config_map_is_missing_registers_nothing():
    """kubelet does not start a pod whose ConfigMap volume has no ConfigMap; a real plugin would not run."""
    plugin, _, _ = stack_pods(timeSlicingReplicas=4)
    assert reg.reconcile([node()], [plugin], {}) == {}


def test_a_config_file_the_registrar_cannot_read_registers_nothing():
    plugin, _, maps = stack_pods(timeSlicingReplicas=4)
    (key,) = maps
    maps[key] = {**maps[key], "data": {"config.yaml": "version: v1\nsharing:\n  timeSlicing: {}\n"}}
    assert reg.reconcile([node()], [plugin], maps) == {}


def test_the_config_maps_read_are_the_plugins_and_the_mps_daemons():
    plugin, daemon, maps = stack_pods(**MPS)
    verification = pod(owner="Job", name_label="gpu-verification")
    verification["spec"]["volumes"] = [{"name": "check", "configMap": {"name": "gpu-verify-a100-check"}}]
    assert reg.config_map_refs([plugin, daemon, verification]) == set(maps), maps


# ---------------------------------------------------------------- the pods that prove a node


def workload(component="diagnostics", phase="Running", node_name="gpu-node-1", restart="Never", owner="Job", **labels):
    """A pod of gpu-nodes' diagnostics Job, shaped as the product's manifests shape it."""
    meta = {
        "name": "gpu-verify-x-dcgm-abcde",
        "namespace": "gpu-verification",
        "uid": f"uid-{component}-{phase}-{node_name}",
        "labels": {
            "app.kubernetes.io/part-of": "gpu-nodes",
            "app.kubernetes.io/name": "gpu-verification",
            "app.kubernetes.io/component": component,
            **labels,
        },
        "ownerReferences": [{"kind": owner, "name": "gpu-verify-x", "controller": True}] if owner else [],
    }
    containers = [
        {
            "name": "dcgm",
            "image": "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
            "command": ["dcgmi", "diag", "-r", "1", "-j"],
            "resources": {"limits": {GPU: "4"}},
        },
        {"name": "isolation", "image": "busybox:1.37", "command": ["sh", "-c", "! ls /dev/nvidia*"]},
    ]
    spec = {"nodeName": node_name, "restartPolicy": restart, "containers": containers}
    spec["securityContext"] = {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase, "podIP": "198.18.0.130"}}


@pytest.mark.parametrize("component", ["diagnostics", "performance"])
def test_the_proofs_job_pods_are_run_by_the_registrar(component):
    assert reg.is_workload_pod(workload(component))


@pytest.mark.parametrize(
    "change",
    [
        {"component": "verification"},  # the GPU workload Job: kwok completes it, as before
        {"component": "access"},
        {"restart": "OnFailure"},  # kubelet restarts such a container in place: not played
        {"owner": "DaemonSet"},
        {"owner": None},
        {"pod-container-running-failed.stage.kwok.x-k8s.io": "true"},  # kwok's chaos stage has it
    ],
)
def test_other_pods_are_left_to_kwok(change):
    assert not reg.is_workload_pod(workload(**change))


def test_a_pod_not_of_gpu_nodes_is_left_to_kwok():
    p = workload()
    p["metadata"]["labels"]["app.kubernetes.io/part-of"] = "someone-else"
    assert not reg.is_workload_pod(p)


def test_only_running_pods_on_a_node_not_started_yet_start():
    pending, done, running = workload(phase="Pending"), workload(node_name="gpu-node-2"), workload(node_name="gpu-node-3")
    unscheduled = workload(node_name="")
    deleting = workload(node_name="gpu-node-4")
    deleting["metadata"]["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    started = reg.workloads_to_start([pending, done, running, unscheduled, deleting], [reg._uid(done)])
    assert started == [running]


@pytest.mark.parametrize(
    "command,expected",
    [
        (["dcgmi", "diag", "-r", "1", "-j"], "dcgmi"),
        (["/usr/local/mpi/bin/mpirun", "-np", "1", "/usr/local/bin/all_reduce_perf_mpi"], "mpirun"),
        (["sh", "-c", "dcgmi diag -r 1 -j"], None),  # a shell: not run on this machine
        (["nvidia-smi"], None),
    ],
)
def test_a_container_runs_when_its_command_names_a_program_of_the_machine(command, expected):
    programs = {"dcgmi", "mpirun", "all_reduce_perf", "all_reduce_perf_mpi"}
    assert reg.standin_program(reg.container_argv({"command": command}), programs) == expected


def test_a_container_without_a_command_runs_its_images_entrypoint_which_is_not_known():
    assert reg.container_argv({"args": ["diag"]}) is None
    assert reg.standin_program(None, {"dcgmi"}) is None


def test_args_follow_the_command():
    assert reg.container_argv({"command": ["dcgmi"], "args": ["diag", "-r", 2]}) == ["dcgmi", "diag", "-r", "2"]


def test_each_container_gets_the_gpus_it_asked_for_and_never_anothers():
    p = workload()
    p["spec"]["containers"][1]["resources"] = {"limits": {GPU: "2"}}
    p["spec"]["containers"][0]["resources"] = {"limits": {GPU: "2"}}
    assert reg.gpus_of_containers(p, 4) == {"dcgm": [0, 1], "isolation": [2, 3]}


def test_a_container_without_a_gpu_request_gets_none():
    assert reg.gpus_of_containers(workload(), 4) == {"dcgm": [0, 1, 2, 3], "isolation": []}


def test_shared_replicas_spread_over_the_gpus_the_node_has():
    p = workload()
    p["spec"]["containers"][0]["resources"] = {"limits": {reg.SHARED_GPU_RESOURCE: "8"}}  # 4 GPUs x 2 replicas
    assert reg.gpus_of_containers(p, 4)["dcgm"] == [0, 1, 2, 3]


def test_a_dra_claim_gives_the_devices_the_driver_allocated():
    p = workload()
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "gpu-verify-4gpu"}]
    p["status"]["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": "pod-gpus-x1"}]
    results = [{"driver": "gpu.nvidia.com", "pool": "gpu-node-1", "device": f"gpu-{i}", "request": "gpus"} for i in (3, 1)]
    results.append({"driver": "other.example.com", "pool": "gpu-node-1", "device": "gpu-0", "request": "gpus"})
    claim = {"status": {"allocation": {"devices": {"results": results}}}}
    assert reg.claim_names(p) == ["pod-gpus-x1"]
    assert reg.gpus_of_containers(p, 4, {"pod-gpus-x1": claim}) == {"dcgm": [1, 3], "isolation": []}


def test_the_environment_puts_the_machines_programs_first_and_names_the_gpus_given():
    p = workload()
    container = dict(p["spec"]["containers"][0])
    container["env"] = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "LEVEL", "value": "1"},
        {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},  # not resolved here
    ]
    env = reg.container_environment(p, container, ["GPU-a", "GPU-b"], pathlib.Path("/progs"))
    assert env["PATH"].split(":")[0] == "/progs"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "GPU-a,GPU-b"
    assert env["NODE_NAME"] == "gpu-node-1" and env["LEVEL"] == "1" and "SECRET" not in env
    assert env["HOSTNAME"] == "gpu-verify-x-dcgm-abcde"


def test_an_images_path_comes_after_the_machines_programs():
    container = {"env": [{"name": "PATH", "value": "/usr/local/mpi/bin:/usr/bin"}]}
    env = reg.container_environment(workload(), container, [], pathlib.Path("/progs"))
    assert env["PATH"] == "/progs:/usr/local/mpi/bin:/usr/bin"
    assert "NVIDIA_VISIBLE_DEVICES" not in env


def test_the_container_runs_as_its_user_before_the_pods():
    p = workload()
    assert reg.run_as(p, {}) == (65534, 65534)
    assert reg.run_as(p, {"securityContext": {"runAsUser": 1000}}) == (1000, 65534)
    p["spec"].pop("securityContext")
    assert reg.run_as(p, {}) == (None, None)


def test_a_log_is_one_cri_line_per_line_of_output():
    log = reg.cri_log('{\n\t"a" : 1\n}\n\nlast', 1765116000.5)
    assert log.splitlines() == [
        "2025-12-07T14:00:00.5Z stdout F {",
        '2025-12-07T14:00:00.5Z stdout F \t"a" : 1',
        "2025-12-07T14:00:00.5Z stdout F }",
        "2025-12-07T14:00:00.5Z stdout F ",
        "2025-12-07T14:00:00.5Z stdout F last",
    ]
    assert reg.cri_log("", 0) == ""


def test_times_are_go_rfc3339nano_with_trailing_zeros_dropped():
    assert reg.rfc3339nano(1765116000) == "2025-12-07T14:00:00Z"
    assert reg.rfc3339nano(1765116000.123456) == "2025-12-07T14:00:00.123456Z"
    assert reg.rfc3339(1765116000.9) == "2025-12-07T14:00:00Z"


def test_a_failed_container_with_fallback_to_logs_gets_its_logs_tail_as_message():
    container = {"terminationMessagePolicy": "FallbackToLogsOnError"}
    output = "".join(f"line {i}\n" for i in range(100))
    message = reg.termination_message(container, 226, output)
    assert message.splitlines() == [f"line {i}" for i in range(20, 100)]
    assert len(reg.termination_message(container, 1, "x" * 5000 + "\n").encode()) == 2048
    assert reg.termination_message(container, 0, output) == ""
    assert reg.termination_message({}, 226, output) == ""  # File: the message path, empty here


def run(name="dcgm", exit_code=0, message=""):
    return reg.ContainerRun(name, "img", exit_code, 1765116000.0, 1765116001.0, message, f"/logs/{name}/0.log")


def test_a_pod_whose_containers_all_exit_0_succeeds():
    patch = reg.completion_patch([run(), run("isolation")], 1765116002.0)["status"]
    assert patch["phase"] == "Succeeded"
    assert {c["type"]: (c["status"], c["reason"]) for c in patch["conditions"]} == {
        "Ready": ("False", "PodCompleted"),
        "ContainersReady": ("False", "PodCompleted"),
    }
    assert [s["state"]["terminated"]["reason"] for s in patch["containerStatuses"]] == ["Completed", "Completed"]


def test_a_pod_with_a_failed_container_fails_with_its_exit_code():
    patch = reg.completion_patch([run(exit_code=226, message="tail"), run("isolation")], 1765116002.0)["status"]
    assert patch["phase"] == "Failed"
    assert {c["reason"] for c in patch["conditions"]} == {"PodFailed"}
    dcgm = patch["containerStatuses"][0]
    assert dcgm["name"] == "dcgm" and dcgm["ready"] is False and dcgm["restartCount"] == 0
    assert dcgm["state"]["terminated"] == {
        "exitCode": 226,
        "reason": "Error",
        "message": "tail",
        "startedAt": "2025-12-07T14:00:00Z",
        "finishedAt": "2025-12-07T14:00:01Z",
    }


def test_the_logs_object_is_the_pods_and_names_each_containers_file():
    p = workload()
    obj = reg.logs_object(p, [run(), run("isolation")])
    assert obj["apiVersion"] == "kwok.x-k8s.io/v1alpha1" and obj["kind"] == "Logs"
    assert (obj["metadata"]["name"], obj["metadata"]["namespace"]) == ("gpu-verify-x-dcgm-abcde", "gpu-verification")
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "gpu-verify-x-dcgm-abcde", "uid": p["metadata"]["uid"]}
    ]
    assert obj["spec"]["logs"] == [
        {"containers": ["dcgm"], "logsFile": "/logs/dcgm/0.log"},
        {"containers": ["isolation"], "logsFile": "/logs/isolation/0.log"},
    ]


def test_the_stage_that_holds_these_pods_selects_what_the_registrar_runs():
    """stages/pod-run-by-registrar.yaml and is_workload_pod say the same, and the stage outweighs pod-complete."""
    import yaml

    stage = yaml.safe_load(_path.with_name("stages").joinpath("pod-run-by-registrar.yaml").read_text())
    exprs = {e["key"]: (e["operator"], e.get("values")) for e in stage["spec"]["selector"]["matchExpressions"]}
    assert exprs['.metadata.labels["app.kubernetes.io/part-of"]'] == ("In", [reg.PART_OF])
    assert exprs['.metadata.labels["app.kubernetes.io/component"]'] == ("In", list(reg.WORKLOAD_COMPONENTS))
    assert exprs[f'.metadata.labels["{reg.CHAOS_LABEL}"]'] == ("DoesNotExist", None)
    assert exprs[".spec.restartPolicy"] == ("In", ["Never"])
    assert exprs[".metadata.ownerReferences.[].kind"] == ("In", ["Job"])
    assert stage["spec"]["weight"] > 0
    assert not (stage["spec"].get("next") or {}) and not stage["spec"].get("steps")


# ---------------------------------------------------------------- dcgm-exporter pods


def exporter(ip="198.18.0.131", phase="Running", node_name="gpu-node-1", host_network=False, env=None, args=None):
    container = {"name": "dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"}
    container["ports"] = [{"name": "metrics", "containerPort": 9400}]
    if env is not None:
        container["env"] = env
    if args is not None:
        container["args"] = args
    return {
        "metadata": {
            "name": "dcgm-exporter-x7k2p",
            "namespace": "nvidia-device-plugin",
            "uid": f"exp-{ip}-{node_name}",
            "labels": {"app.kubernetes.io/name": "dcgm-exporter", "app.kubernetes.io/component": "metrics"},
            "ownerReferences": [{"kind": "DaemonSet", "name": "dcgm-exporter", "controller": True}],
        },
        "spec": {"nodeName": node_name, "hostNetwork": host_network, "containers": [container]},
        "status": {"phase": phase, "podIP": ip},
    }


NODE_NAME_ENV = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]


def test_a_running_exporter_pod_is_served_on_its_pod_ip_and_port():
    serve, refused = reg.exporter_endpoints([exporter(env=NODE_NAME_ENV)], {"gpu-node-1": node()})
    assert refused == []
    (endpoint,) = serve.values()
    assert (endpoint.ip, endpoint.port, endpoint.node, endpoint.hostname, endpoint.gpus) == (
        "198.18.0.131",
        9400,
        "gpu-node-1",
        "gpu-node-1",
        4,
    )


def test_without_node_name_the_exporters_hostname_is_the_pods():
    (endpoint,) = reg.exporter_endpoints([exporter()], {"gpu-node-1": node()})[0].values()
    assert endpoint.hostname == "dcgm-exporter-x7k2p"


@pytest.mark.parametrize(
    "container,port",
    [
        ({}, 9400),
        ({"env": [{"name": "DCGM_EXPORTER_LISTEN", "value": ":9500"}]}, 9500),
        ({"args": ["-a", ":9401"]}, 9401),
        ({"args": ["--address=[::]:9402"]}, 9402),
        ({"args": ["-f", "/etc/dcgm-exporter/dcp-metrics-included.csv"]}, 9400),
    ],
)
def test_the_exporter_listens_where_its_flags_say(container, port):
    assert reg.listen_port(container) == port


@pytest.mark.parametrize(
    "pod",
    [
        exporter(ip="10.0.0.5"),  # a node without the podCIDR up.sh gives: kwok's default --cidr
        exporter(host_network=True, ip="198.18.0.131"),
        exporter(ip=""),
    ],
)
def test_an_exporter_pod_outside_the_simulated_network_is_refused(pod):
    serve, refused = reg.exporter_endpoints([pod], {"gpu-node-1": node()})
    assert serve == {} and refused == [pod]


@pytest.mark.parametrize("pod", [exporter(phase="Pending"), exporter(node_name="gone-node")])
def test_an_exporter_pod_not_running_on_a_known_node_is_not_served(pod):
    assert reg.exporter_endpoints([pod], {"gpu-node-1": node()}) == ({}, [])


def test_an_exporter_pod_that_went_or_changed_is_stopped_and_a_new_one_started():
    nodes = {"gpu-node-1": node(), "gpu-node-2": node("gpu-node-2")}
    old = reg.exporter_endpoints([exporter(), exporter(ip="198.18.1.1", node_name="gpu-node-2")], nodes)[0]
    moved = exporter(ip="198.18.0.132")
    moved["metadata"]["uid"] = "exp-198.18.0.131-gpu-node-1"  # same pod, new IP
    new = reg.exporter_endpoints([moved], nodes)[0]
    stop, start = reg.exporter_changes(old, new)
    assert stop == sorted(old) and [e.ip for e in start] == ["198.18.0.132"]
    assert reg.exporter_changes(new, new) == ([], [])


# ---------------------------------------------------------------- running them (the machine's real programs)


class RecordingClient:
    """The API calls the runner makes, recorded."""

    def __init__(self):
        self.logs, self.patches, self.reads = [], [], []

    def put_logs(self, body):
        self.logs.append(body)
        return body

    def read_log(self, namespace, pod, container):
        """As kwok serves it once it holds the pod's Logs: the file's text."""
        files = {entry["containers"][0]: entry["logsFile"] for body in self.logs for entry in body["spec"]["logs"]}
        self.reads.append(container)
        return log_text(files[container]) if container in files else None

    def patch_pod_status(self, namespace, name, patch):
        self.patches.append((namespace, name, patch))
        return patch

    def get_resource_claim(self, namespace, name):
        return None

    def list_pods(self, label_selector):
        return []


def play(tmp_path, pod, n=None):
    """Runs the pod as the registrar does, as the test's own user: the pod's user (65534) may not reach a checkout
    in a closed home directory (test_the_program_runs_as_the_containers_user covers that switch)."""
    pod["spec"].pop("securityContext", None)
    client = RecordingClient()
    runner = reg.WorkloadRunner(client, reg.PROGRAMS, tmp_path / "fakehosts", tmp_path / "logs", timeout=60)
    runner.sync([pod], {"gpu-node-1": n or node()})
    runner.wait()
    return client


def log_text(path):
    """The container's output back from its CRI log, as kubectl logs prints it."""
    return "".join(line.split(" ", 3)[3] + "\n" for line in pathlib.Path(path).read_text().splitlines())


def test_a_diagnostics_pod_runs_dcgmi_against_the_machine_and_succeeds(tmp_path):
    pod = workload()
    client = play(tmp_path, pod)
    ((namespace, name, patch),) = client.patches
    assert (namespace, name) == ("gpu-verification", "gpu-verify-x-dcgm-abcde")
    assert patch["status"]["phase"] == "Succeeded"
    exits = {s["name"]: s["state"]["terminated"]["exitCode"] for s in patch["status"]["containerStatuses"]}
    assert exits == {"dcgm": 0, "isolation": 0}
    (logs,) = client.logs
    files = {entry["containers"][0]: entry["logsFile"] for entry in logs["spec"]["logs"]}
    document = json.loads(log_text(files["dcgm"]))
    assert [e["entity_id"] for e in document["entity_groups"][0]["entities"]] == [0, 1, 2, 3]
    assert document["metadata"]["version"] == "4.6.0"
    assert log_text(files["isolation"]) == ""  # not run: a shell of a plain image


class SlowLogsClient(RecordingClient):
    """An API whose kubelet server serves a pod's logs only from its third read on (kwok's watch of Logs lagging)."""

    def __init__(self):
        super().__init__()
        self.events = []

    def read_log(self, namespace, pod, container):
        lagging = len(self.events) < 2
        served = None if lagging else super().read_log(namespace, pod, container)
        self.events.append(("read", container, served is not None))
        return served

    def patch_pod_status(self, namespace, name, patch):
        self.events.append(("end", name, True))
        return super().patch_pod_status(namespace, name, patch)


def test_a_pods_end_is_written_once_the_api_serves_its_logs(tmp_path):
    """kubelet's log of an ended container is whole before its status is written; so is the registrar's."""
    pod = workload()
    pod["spec"].pop("securityContext", None)
    client = SlowLogsClient()
    runner = reg.WorkloadRunner(client, reg.PROGRAMS, tmp_path / "fakehosts", tmp_path / "logs", timeout=60)
    runner.sync([pod], {"gpu-node-1": node()})
    runner.wait()
    ends = [i for i, event in enumerate(client.events) if event[0] == "end"]
    served = {event[1] for event in client.events[: ends[0]] if event[0] == "read" and event[2]}
    assert len(ends) == 1 and served == {"dcgm", "isolation"}, client.events
    assert any(event[0] == "read" and not event[2] for event in client.events), "the lag was not played"


def test_a_performance_pod_runs_all_reduce_perf_through_mpirun(tmp_path):
    pod = workload("performance")
    pod["spec"]["containers"] = [
        {
            "name": "nccl",
            "image": "nvcr.io/nvidia/pytorch:25.11-py3",
            "command": ["/usr/local/mpi/bin/mpirun", "-np", "1", "/usr/local/bin/all_reduce_perf_mpi"],
            "args": ["-b", "4G", "-e", "4G", "-f", "2", "-g", "4"],
            "resources": {"limits": {GPU: "4"}},
        }
    ]
    client = play(tmp_path, pod)
    ((_, _, patch),) = client.patches
    assert patch["status"]["phase"] == "Succeeded"
    output = log_text(client.logs[0]["spec"]["logs"][0]["logsFile"])
    rows = [line.split() for line in output.splitlines() if line and not line.startswith("#")]
    assert [(r[0], r[7]) for r in rows] == [("4294967296", "232.81")]  # the recorded DGX A100 at 4 GiB


def test_a_container_asking_for_more_gpus_than_it_was_given_fails_as_nccl_tests_does(tmp_path):
    pod = workload("performance")
    pod["spec"]["containers"] = [
        {
            "name": "nccl",
            "image": "nvcr.io/nvidia/pytorch:25.11-py3",
            "command": ["all_reduce_perf_mpi", "-b", "1G", "-e", "1G", "-g", "4"],
            "resources": {"limits": {GPU: "2"}},
            "terminationMessagePolicy": "FallbackToLogsOnError",
        }
    ]
    client = play(tmp_path, pod)
    ((_, _, patch),) = client.patches
    terminated = patch["status"]["containerStatuses"][0]["state"]["terminated"]
    assert patch["status"]["phase"] == "Failed"
    assert terminated["exitCode"] == 5  # testNotImplemented
    assert "Invalid number of GPUs: 4 requested but only 2 were found." in terminated["message"]


def test_the_exporters_server_answers_metrics_and_health_as_dcgm_exporter(tmp_path):
    import threading
    import urllib.request

    endpoint = reg.ExporterEndpoint("uid-1", "ns/dcgm-exporter-x", "gpu-node-1", "127.0.0.1", 0, "gpu-node-1", 2, "")
    server = reg._ExporterServer(("127.0.0.1", 0), reg._ExporterHandler)
    server.endpoint, server.pages = endpoint, reg.ExporterPages(tmp_path / "fakehosts")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
            page = resp.read().decode()
            assert resp.headers["Content-Type"].startswith("text/plain")
        with urllib.request.urlopen(f"{base}/health", timeout=10) as resp:
            assert resp.read() == b"OK"
    finally:
        server.shutdown()
        server.server_close()
    temps = [line for line in page.splitlines() if line.startswith("DCGM_FI_DEV_GPU_TEMP{")]
    assert [line.split('gpu="')[1].split('"')[0] for line in temps] == ["0", "1"]
    assert all(f'UUID="{reg.gpu_uuid("gpu-node-1", i)}"' in temps[i] for i in range(2))
    assert all('hostname="gpu-node-1"' in line for line in temps)


def test_exporter_servers_bind_the_pod_ip_once_and_unbind_it_when_the_pod_goes(tmp_path):
    """The servers' bookkeeping, with lo left alone: the IP goes to the bind function (a recorder here), and a bind
    that fails leaves nothing served."""
    calls = []

    def bind(ip, present):
        calls.append((ip, present))
        raise OSError("not here")

    servers = reg.ExporterServers(reg.ExporterPages(tmp_path), bind)
    servers.sync([exporter()], {"gpu-node-1": node()})
    assert calls == [("198.18.0.131", True)] and servers.serving == {}


def runner(tmp_path):
    return reg.WorkloadRunner(RecordingClient(), reg.PROGRAMS, tmp_path / "fakehosts", tmp_path / "logs", timeout=60)


def test_the_program_runs_as_the_containers_user(tmp_path):
    """With programs any user may run (a directory of its own here, not the checkout, which may be closed)."""
    import os
    import shutil
    import tempfile

    programs = pathlib.Path(tempfile.mkdtemp(prefix="gpu-registrar-programs-"))
    try:
        programs.chmod(0o755)
        (programs / "dcgmi").write_text("#!/bin/sh\necho 'dcgmi stand-in: only `diag` is simulated' >&2\nexit 255\n")
        (programs / "dcgmi").chmod(0o755)
        open_runner = reg.WorkloadRunner(RecordingClient(), programs, tmp_path, tmp_path, timeout=60)
        output, code, start_error = open_runner._execute(["/usr/bin/id", "-u"], {"PATH": "/usr/bin"}, 65534, 65534)
    finally:
        shutil.rmtree(programs)
    # Only root may switch users, as kubelet's runtime does; the registrar runs as root under up.sh.
    assert (output.strip(), code, start_error) == ("65534" if os.geteuid() == 0 else str(os.geteuid()), 0, None)


def test_where_the_containers_user_cannot_run_the_programs_they_run_as_the_registrars(tmp_path):
    import os

    closed = reg.WorkloadRunner(RecordingClient(), tmp_path / "closed", tmp_path, tmp_path, timeout=60)
    output, code, _ = closed._execute(["/usr/bin/id", "-u"], {"PATH": "/usr/bin"}, 65534, 65534)
    assert (output.strip(), code) == (str(os.geteuid()), 0)


def test_a_program_that_cannot_start_ends_as_containerd_ends_it(tmp_path):
    output, code, start_error = runner(tmp_path)._execute([str(tmp_path / "missing")], {}, None, None)
    assert (output, code) == ("", 128) and "failed to start" in start_error
    run = reg.ContainerRun("dcgm", "img", code, 0.0, 1.0, start_error, "", start_error=True)
    terminated = reg.completion_patch([run], 2.0)["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert terminated["message"].startswith("failed to start")


def test_a_program_that_outlives_the_timeout_is_killed(tmp_path):
    slow = reg.WorkloadRunner(RecordingClient(), reg.PROGRAMS, tmp_path, tmp_path, timeout=0.5)
    output, code, _ = slow._execute(["/bin/sleep", "30"], {"PATH": "/bin"}, None, None)
    assert code == 137 and "killed by the local cluster's gpu-registrar after" in output


# ---------------------------------------------------------------- NRI-mode nodes


def nri_node(name="gpu-node-1"):
    n = node(name=name)
    n["metadata"]["annotations"][reg.TOOLKIT_ANNOTATION] = "nri"
    return n


def nri_plugin_pod(runtime_class=None, annotated=True):
    p = pod()
    p["metadata"]["uid"] = "plugin-uid"
    p["spec"]["containers"] = [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]
    if runtime_class:
        p["spec"]["runtimeClassName"] = runtime_class
    if annotated:
        p["metadata"]["annotations"] = {"nvidia.cdi.k8s.io/container.nvidia-device-plugin-ctr": "management.nvidia.com/gpu=all"}
    return p


def test_on_an_nri_node_only_a_plugin_asking_the_nri_plugin_for_its_devices_registers():
    assert reg.reconcile([nri_node()], [nri_plugin_pod()])["gpu-node-1"]["status"]["capacity"][GPU] == "4"
    assert reg.reconcile([nri_node()], [nri_plugin_pod(annotated=False)]) == {}
    assert reg.reconcile([nri_node()], [nri_plugin_pod(runtime_class="nvidia")]) == {}
    # Elsewhere the annotation changes nothing.
    assert reg.reconcile([node()], [nri_plugin_pod(runtime_class="nvidia")])["gpu-node-1"]["status"]["capacity"][GPU] == "4"


# ---------------------------------------------------------------- dynamic MIG and ComputeDomains


def cd_dra_pod(gates="NVMLDeviceHealthCheck=false,", domains=True):
    p = dra_pod(gates=gates)
    if domains:
        p["spec"]["containers"].insert(
            0, {"name": "compute-domains", "command": ["bash", "-c"], "args": ["compute-domain-kubelet-plugin -v $(LOG_VERBOSITY)"]}
        )
    return p


def test_a_plugin_running_compute_domains_publishes_channel_0_and_a_daemon_in_a_slice_of_their_driver():
    assert reg.dra_parts([cd_dra_pod()]) == {"gpu-node-1": reg.DraParts(dynamic_mig=False, compute_domains=True)}
    actions = reg.extra_slice_actions([dra_node()], [cd_dra_pod()], [])
    ((action,),) = [actions]
    assert action.kind == "create" and action.body["spec"]["driver"] == "compute-domain.nvidia.com"
    devices = {d["name"]: d["attributes"] for d in action.body["spec"]["devices"]}
    assert devices == {
        "channel-0": {"type": {"string": "channel"}, "id": {"int": 0}},
        "daemon-0": {"type": {"string": "daemon"}, "id": {"int": 0}},
    }
    assert action.body["metadata"]["name"] != reg.slice_name("gpu-node-1"), "a slice of its own"
    # Once stored, nothing to do; the container gone (plugin restarted without it), the slice goes.
    assert reg.extra_slice_actions([dra_node()], [cd_dra_pod()], [stored(action.body)]) == []
    (gone,) = reg.extra_slice_actions([dra_node()], [cd_dra_pod(domains=False)], [stored(action.body)])
    assert gone.kind == "delete" and gone.body["metadata"]["name"] == action.body["metadata"]["name"]


def test_dynamic_mig_publishes_each_profile_as_a_partition_consuming_its_gpus_counters_in_a_pool_of_two_slices():
    pods = [cd_dra_pod(gates="DynamicMIG=true,NVMLDeviceHealthCheck=false,", domains=False)]
    assert reg.dra_parts(pods)["gpu-node-1"].dynamic_mig
    h100 = dra_node(model="NVIDIA H100 PCIe")
    (create,), _ = reg.dra_actions([h100], pods, [], 0.0, {})
    devices = create.body["spec"]["devices"]
    assert create.body["spec"]["pool"]["resourceSliceCount"] == 2
    whole = [d for d in devices if d["attributes"]["type"]["string"] == "gpu"]
    migs = [d for d in devices if d["attributes"]["type"]["string"] == "mig"]
    assert len(whole) == 4 and len(migs) == 4 * len(reg.MIG_PROFILES), "Hopper: whole GPUs and their partitions"
    one = next(d for d in migs if d["name"] == "gpu-1-mig-1g10gb-19-0")
    assert one["attributes"]["profile"] == {"string": "1g.10gb"}
    assert one["attributes"]["parentUUID"] == {"string": reg.gpu_uuid("gpu-node-1", 1)}
    assert one["consumesCounters"] == [{"counterSet": "gpu-1-counter-set", "counters": {"memory-slice-0": {"value": "1"}}}]
    (counters,) = [a.body for a in reg.extra_slice_actions([h100], pods, [])]
    assert "devices" not in counters["spec"] and [c["name"] for c in counters["spec"]["sharedCounters"]] == [
        f"gpu-{i}-counter-set" for i in range(4)
    ]
    assert counters["spec"]["pool"] == create.body["spec"]["pool"]


def test_on_ampere_dynamic_mig_publishes_the_partitions_and_not_the_whole_gpus():
    pods = [cd_dra_pod(gates="DynamicMIG=true,", domains=False)]
    (create,), _ = reg.dra_actions([dra_node()], pods, [], 0.0, {})
    types = {d["attributes"]["type"]["string"] for d in create.body["spec"]["devices"]}
    assert types == {"mig"}, types


def compute_domain(uid="cd-uid-1", deleting=False):
    meta = {"name": "gpu-verify-gb200-imex", "namespace": "gpu-verification", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "gpu-verify-gb200-imex-channel"}}},
    }


def controller_pod():
    return {
        "metadata": {"name": "dra-driver-nvidia-gpu-controller-x", "namespace": "nvidia-device-plugin"},
        "spec": {"containers": [{"name": "compute-domain", "command": ["compute-domain-controller", "-v", "4"]}]},
        "status": {"phase": "Running"},
    }


def test_the_played_controller_makes_each_domains_channel_template_and_deletes_it_with_the_domain():
    assert reg.controller_actions([compute_domain()], [], []) == ([], []), "no controller running: nothing"
    (template,), deletes = reg.controller_actions([compute_domain()], [], [controller_pod()])
    assert deletes == []
    assert template["metadata"] == {
        "namespace": "gpu-verification",
        "name": "gpu-verify-gb200-imex-channel",
        "labels": {"resource.nvidia.com/computeDomain": "cd-uid-1", "resource.nvidia.com/computeDomainTarget": "Workload"},
    }
    devices = template["spec"]["spec"]["devices"]
    assert devices["requests"] == [{"name": "channel", "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"}}]
    params = devices["config"][0]["opaque"]["parameters"]
    assert params == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomainChannelConfig",
        "domainID": "cd-uid-1",
        "allocationMode": "Single",
    }
    assert reg.controller_actions([compute_domain()], [template], [controller_pod()]) == ([], [])
    assert reg.controller_actions([], [template], [controller_pod()]) == ([], [template])
    assert reg.controller_actions([compute_domain(deleting=True)], [template], [controller_pod()]) == ([], [template])


# ---------------------------------------------------------------- the IMEX channel's Job


def imex_workload(claims=False):
    p = workload("imex")
    p["spec"]["containers"] = [
        {
            "name": "imex",
            "image": "docker.io/library/ubuntu:22.04",
            "command": ["ls", "/dev/nvidia-caps-imex-channels/channel0"],
            "resources": {"claims": [{"name": "imex-channel"}]} if claims else {"limits": {GPU: "1"}},
            "terminationMessagePolicy": "FallbackToLogsOnError",
        }
    ]
    if claims:
        p["spec"]["resourceClaims"] = [{"name": "imex-channel", "resourceClaimTemplateName": "t"}]
        p["status"]["resourceClaimStatuses"] = [{"name": "imex-channel", "resourceClaimName": "imex-claim"}]
    return p


def test_the_imex_component_is_run_by_the_registrar():
    assert reg.is_workload_pod(imex_workload())


def test_the_device_plugins_channels_are_read_from_the_plugin_on_the_node():
    plugin = pod()
    plugin["spec"]["containers"] = [{"name": "p", "env": [{"name": "IMEX_CHANNEL_IDS", "value": "0"}]}]
    assert reg.plugin_imex_channels([plugin, pod(node_name="gpu-node-2")]) == {"gpu-node-1": "0"}


def test_a_node_without_the_channel_fails_the_imex_job_naming_the_path(tmp_path):
    """A node without a fake machine has no /dev/nvidia-caps-imex-channels: the plugin's channel is not there."""
    client = RecordingClient()
    runner = reg.WorkloadRunner(client, reg.PROGRAMS, tmp_path / "fakehosts", tmp_path / "logs", timeout=60)
    p = imex_workload()
    p["spec"].pop("securityContext", None)
    plugin = pod()
    plugin["spec"]["containers"] = [{"name": "p", "env": [{"name": "IMEX_CHANNEL_IDS", "value": "0"}]}]
    runner.sync([p, plugin], {"gpu-node-1": node()})
    runner.wait()
    ((_, _, patch),) = client.patches
    terminated = patch["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (patch["status"]["phase"], terminated["exitCode"]) == ("Failed", 2), patch
    assert "cannot access '/dev/nvidia-caps-imex-channels/channel0'" in terminated["message"]


def test_a_compute_domains_channel_claimed_is_in_the_container(tmp_path):
    class Claims(RecordingClient):
        def get_resource_claim(self, namespace, name):
            results = [{"driver": "compute-domain.nvidia.com", "pool": "gpu-node-1", "device": "channel-0", "request": "channel"}]
            return {"status": {"allocation": {"devices": {"results": results}}}}

    client = Claims()
    runner = reg.WorkloadRunner(client, reg.PROGRAMS, tmp_path / "fakehosts", tmp_path / "logs", timeout=60)
    p = imex_workload(claims=True)
    p["spec"].pop("securityContext", None)
    runner.sync([p], {"gpu-node-1": node()})
    runner.wait()
    ((_, _, patch),) = client.patches
    assert patch["status"]["phase"] == "Succeeded", patch
    assert log_text(client.logs[0]["spec"]["logs"][0]["logsFile"]) == "/dev/nvidia-caps-imex-channels/channel0\n"
