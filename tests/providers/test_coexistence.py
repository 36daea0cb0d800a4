"""The coexistence check: another GPU allocator on the cluster (an NVIDIA device plugin, NVIDIA's DRA
driver, anything registering nvidia.com/gpu on our nodes) stops the run, named."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from gpu_nodes.errors import OtherPluginError
from gpu_nodes.manifests.dra_driver import daemonset_manifest
from gpu_nodes.proof.inputs import keys
from gpu_nodes.providers.coexistence import (
    RERUN_KEYS,
    CoexistenceInputs,
    CoexistenceProvider,
    pods_on_nodes,
    problems,
    read_gpu_slices,
    read_operator_configs,
    slices_in_the_way,
)
from gpu_nodes.providers.gpu_allocators import OtherAllocator, allocator_daemonsets, operator_clusters, operator_policies
from tests.providers.allocator_fixtures import dra_kubelet_plugin, gfd_static, operator_dra_kubelet_plugin, resource_slice
from tests.specs import group_spec

CHART = {
    "metadata": {
        "name": "nvdp-nvidia-device-plugin",
        "namespace": "kube-system",
        "labels": {"app.kubernetes.io/name": "nvidia-device-plugin"},
    },
    "spec": {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "nvidia-device-plugin"}},
        "template": {
            "spec": {"containers": [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}]}
        },
    },
}
OURS = {
    "metadata": {
        "name": "nvidia-device-plugin-a100",
        "namespace": "nvidia-device-plugin",
        "labels": {"app.kubernetes.io/part-of": "gpu-nodes"},
    },
    "spec": {"template": {"spec": {"containers": [{"image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]}}},
}
OTHER = {
    "metadata": {"name": "fluent-bit", "namespace": "logging"},
    "spec": {"template": {"spec": {"containers": [{"image": "fluent/fluent-bit:3.0"}]}}},
}


def test_a_chart_daemonset_is_found_ours_and_unrelated_ones_are_not():
    found = allocator_daemonsets([OURS, OTHER, CHART])
    assert [p.ref for p in found] == ["kube-system/nvdp-nvidia-device-plugin"], found
    assert found[0].what == "DaemonSet kube-system/nvdp-nvidia-device-plugin (image nvcr.io/nvidia/k8s-device-plugin:v0.17.1)"


def test_a_cluster_policy_counts_unless_its_device_plugin_is_off():
    on = {"metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": True}}}
    off = {"metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": False}}}
    assert [p.ref for p in operator_policies([on])] == ["ClusterPolicy/cluster-policy"]
    assert operator_policies([off]) == []


# The GPU Operator's GPUCluster (nvidia.com/v1alpha1, cluster-scoped, a singleton named gpu-cluster:
# NVIDIA/gpu-operator deployments/gpu-operator/crds/nvidia.com_gpuclusters.yaml), as its controller
# leaves it (status: controllers/gpucluster_controller.go updateCRStatus).
GPU_CLUSTER = {
    "apiVersion": "nvidia.com/v1alpha1",
    "kind": "GPUCluster",
    "metadata": {"name": "gpu-cluster", "finalizers": ["gpucluster.nvidia.com/dra-resourceclaim"]},
    "spec": {"draDriver": {"computeDomains": {"enabled": True}}},
    "status": {"state": "ready", "namespace": "gpu-operator"},
}


def test_a_gpu_cluster_always_counts_its_gpu_part_has_no_switch():
    (found,) = operator_clusters([GPU_CLUSTER])
    assert found.ref == "GPUCluster/gpu-cluster", found
    assert found.what == "the GPU Operator's GPUCluster gpu-cluster (its DRA driver hands out GPUs, driver gpu.nvidia.com)", found


def test_a_gpu_cluster_not_handed_over_stops_the_run_naming_the_label_that_keeps_it_off():
    (line,) = problems(operator_clusters([GPU_CLUSTER]), [], {})
    assert "NVIDIA's DRA driver and the device plugin must not both hand out GPUs on one node" in line, line
    assert "nvidia.com/gpu.deploy.dra-driver=false" in line, line
    assert line.endswith("or keep it off this stack's nodes and list 'GPUCluster/gpu-cluster' in gpu-nodes:handOver"), line
    assert problems(operator_clusters([GPU_CLUSTER]), ["GPUCluster/gpu-cluster"], {}) == []


class FakeOperatorApi:
    """CustomObjectsApi's list call for the GPU Operator's cluster-scoped resources, by (version, plural)."""

    def __init__(self, served: dict[tuple[str, str], list[dict]]) -> None:
        self.served = served
        self.asked: list[tuple[str, str, str]] = []

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> dict:
        self.asked.append((group, version, plural))
        if (version, plural) not in self.served:
            raise ApiException(status=404)
        return {"items": self.served[(version, plural)]}


def test_the_operators_cluster_policies_and_gpu_clusters_are_both_read():
    policy = {"metadata": {"name": "cluster-policy"}, "spec": {}}
    api = FakeOperatorApi({("v1", "clusterpolicies"): [policy], ("v1alpha1", "gpuclusters"): [GPU_CLUSTER]})
    assert read_operator_configs(api) == ([policy], [GPU_CLUSTER])
    assert api.asked == [("nvidia.com", "v1", "clusterpolicies"), ("nvidia.com", "v1alpha1", "gpuclusters")], api.asked


def test_an_operator_without_gpu_clusters_has_none():
    """GPU Operator releases before v26 have no GPUCluster CRD: the API server answers 404."""
    assert read_operator_configs(FakeOperatorApi({("v1", "clusterpolicies"): []})) == ([], [])


def test_an_install_not_handed_over_stops_the_run_naming_the_way_out():
    lines = problems(allocator_daemonsets([CHART]), [], {})
    assert len(lines) == 1 and "is on the cluster" in lines[0], lines
    assert "list 'kube-system/nvdp-nvidia-device-plugin' in gpu-nodes:handOver" in lines[0], lines


def test_a_handed_over_install_off_our_nodes_is_fine_and_on_them_is_not():
    found = allocator_daemonsets([CHART])
    assert problems(found, ["kube-system/nvdp-nvidia-device-plugin"], {}) == []
    on_ours = {"kube-system/nvdp-nvidia-device-plugin": ["nvdp-x on gpu-node-1"]}
    lines = problems(found, ["kube-system/nvdp-nvidia-device-plugin"], on_ours)
    assert len(lines) == 1 and "still runs on this stack's nodes (nvdp-x on gpu-node-1)" in lines[0], lines


def fake_look(others: list[OtherAllocator], stops: list[str]):
    return lambda self, props: (others, stops, [], [])


def test_the_provider_stops_the_run_with_every_line(monkeypatch):
    monkeypatch.setattr(CoexistenceProvider, "_look", fake_look(allocator_daemonsets([CHART]), ["first", "second"]))
    with pytest.raises(OtherPluginError) as failure:
        CoexistenceProvider().create({"nodes": ["n1"], "handOver": []})
    assert str(failure.value).splitlines() == [
        "another GPU allocator (an NVIDIA device plugin or DRA driver) would share this stack's nodes:",
        "first",
        "second",
    ]


def test_a_refresh_shows_a_plugin_that_appeared_since_as_drift(monkeypatch):
    monkeypatch.setattr(CoexistenceProvider, "_look", fake_look(allocator_daemonsets([CHART]), ["a chart appeared"]))
    outs = CoexistenceProvider().read("x", {"nodes": ["n1"], "handOver": [], "found": []}).outs
    assert outs["found"] == ["a chart appeared"], outs
    assert CoexistenceProvider().diff("x", outs, {"nodes": ["n1"], "handOver": []}).changes is True


def test_the_inputs_the_check_is_given_each_make_it_look_again():
    expected = ("nodes", "handOver", "draNodes", "refuseUnsupported")
    assert RERUN_KEYS == keys(CoexistenceInputs) == expected, keys(CoexistenceInputs)


def test_the_inputs_are_written_sorted_and_without_dra_nodes_where_no_group_uses_dra():
    written = CoexistenceInputs(["n2", "n1"], ["b/x", "a/y"]).to_props()
    assert written == {"nodes": ["n1", "n2"], "handOver": ["a/y", "b/x"]}, written
    assert CoexistenceInputs.from_props(written) == CoexistenceInputs(["n1", "n2"], ["a/y", "b/x"], []), written


def test_nothing_new_is_no_change():
    olds = {"nodes": ["n1"], "handOver": [], "found": []}
    assert CoexistenceProvider().diff("x", olds, {"nodes": ["n1"], "handOver": []}).changes is False
    assert CoexistenceProvider().diff("x", olds, {"nodes": ["n1", "n2"], "handOver": []}).changes is True


DRA_REF = "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin"


def test_gfd_beside_us_stops_nothing():
    assert problems(allocator_daemonsets([gfd_static()]), [], {}) == []


def test_the_dra_driver_stops_the_run_naming_why_and_the_way_out():
    (line,) = problems(allocator_daemonsets([dra_kubelet_plugin()]), [], {})
    assert line.startswith(f"DaemonSet {DRA_REF} (NVIDIA's DRA driver, chart nvidia-dra-driver-gpu of "), line
    assert "NVIDIA's DRA driver and the device plugin must not both hand out GPUs on one node" in line, line
    assert "resources.gpus.enabled=false" in line and f"list {DRA_REF!r} in gpu-nodes:handOver" in line, line


def test_a_gpu_clusters_dra_driver_stops_the_run_naming_the_label_not_a_chart_value():
    (line,) = problems(allocator_daemonsets([operator_dra_kubelet_plugin()]), [], {})
    assert "deploys it always with its GPU part" in line and "nvidia.com/gpu.deploy.dra-driver=false" in line, line
    assert "resources.gpus.enabled" not in line, line
    assert line.endswith("list 'gpu-operator/nvidia-dra-driver-kubelet-plugin' in gpu-nodes:handOver"), line


def test_a_handed_over_dra_driver_off_our_nodes_is_fine_and_on_them_is_not():
    found = allocator_daemonsets([dra_kubelet_plugin()])
    assert problems(found, [DRA_REF], {}) == []
    lines = problems(found, [DRA_REF], {DRA_REF: ["nvidia-dra-driver-gpu-kubelet-plugin-x on n1"]})
    assert len(lines) == 1, lines
    assert "still runs on this stack's nodes (nvidia-dra-driver-gpu-kubelet-plugin-x on n1)" in lines[0], lines


def test_a_gpu_resource_slice_on_our_node_stops_the_run_even_when_handed_over():
    lines = problems([], [DRA_REF], {}, slices=[("n1", "n1-gpu.nvidia.com-x7k2p")])
    assert lines == [
        "ResourceSlice n1-gpu.nvidia.com-x7k2p publishes the GPUs of n1, a node of this stack, for NVIDIA's DRA driver "
        "(driver gpu.nvidia.com): the DRA driver and the device plugin must not both hand out GPUs on one node. Keep the "
        "DRA driver's kubelet plugin off n1 (its nodeSelector or affinity), then run again"
    ], lines


def test_a_node_advertising_gpus_no_plugin_pod_explains_is_named():
    (line,) = problems([], [], {}, unexplained=[("n1", "4")])
    assert line.startswith("n1 advertises nvidia.com/gpu: 4 with no device plugin pod on it"), line
    assert "something else registers nvidia.com/gpu with its kubelet" in line, line


def owned_pod(name: str, node: str, owner_uid: str) -> dict:
    return {"metadata": {"name": name, "ownerReferences": [{"kind": "DaemonSet", "uid": owner_uid}]}, "spec": {"nodeName": node}}


def test_a_daemonsets_pods_are_told_by_owner_not_by_shared_labels():
    """The chart's three DaemonSets share one selector (its templates' `selectorLabels`)."""
    pods = [
        owned_pod("plugin-a", "n1", "uid-plugin"),
        owned_pod("gfd-a", "n2", "uid-gfd"),
        owned_pod("plugin-b", "cpu-1", "uid-plugin"),
    ]
    assert pods_on_nodes(pods, "uid-plugin", {"n1", "n2"}) == ["plugin-a on n1"]


class FakeSlices:
    """CustomObjectsApi's list call for ResourceSlices: answers per API version, or raises."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str, str]] = []

    def list_cluster_custom_object(self, group: str, version: str, plural: str, field_selector: str = "") -> dict:
        self.asked.append((group, version, field_selector))
        answer = self.answers.get(version, ApiException(status=404))
        if isinstance(answer, ApiException):
            raise answer
        return {"items": answer}


def test_resource_slices_are_read_from_the_newest_version_the_server_has():
    api = FakeSlices({"v1beta1": [resource_slice("n1")]})
    slices, note = read_gpu_slices(api)
    assert [s["spec"]["nodeName"] for s in slices] == ["n1"] and note is None, (slices, note)
    assert [v for _, v, _ in api.asked] == ["v1", "v1beta2", "v1beta1"], api.asked
    assert {g for g, _, _ in api.asked} == {"resource.k8s.io"} and {f for _, _, f in api.asked} == {"spec.driver=gpu.nvidia.com"}


def test_a_server_without_resource_slices_has_none():
    assert read_gpu_slices(FakeSlices({})) == ([], None)


def test_rbac_that_forbids_resource_slices_is_said_not_raised():
    slices, note = read_gpu_slices(FakeSlices({"v1": ApiException(status=403, reason="Forbidden")}))
    assert slices == [] and note is not None, note
    assert "cannot list resourceslices.resource.k8s.io (403 Forbidden)" in note and "DaemonSet" in note, note


def test_the_provider_records_what_it_could_not_check(monkeypatch):
    monkeypatch.setattr(CoexistenceProvider, "_look", lambda self, props: ([], [], ["cannot list resourceslices"], []))
    outs = CoexistenceProvider().create({"nodes": ["n1"], "handOver": []}).outs
    assert outs["unchecked"] == ["cannot list resourceslices"], outs


def test_the_drivers_slices_on_a_dra_groups_node_stop_nothing_and_on_a_device_plugin_node_they_do():
    slices = [resource_slice("dra-node"), resource_slice("plugin-node")]
    found = slices_in_the_way(slices, {"dra-node", "plugin-node"}, {"dra-node"})
    assert [node for node, _ in found] == ["plugin-node"], found


def test_a_dra_groups_own_kubelet_plugin_is_no_other_allocator():
    ours = daemonset_manifest(group_spec("h100", allocator="dra"))
    assert allocator_daemonsets([ours]) == [], ours["metadata"]
