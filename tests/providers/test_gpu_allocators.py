"""What allocates GPUs: which DaemonSets of NVIDIA's software are device plugins or its DRA
driver, which are neighbours (GFD, the MPS control daemon), read from real manifests
(fixtures/README.md)."""

from __future__ import annotations

import pytest

from gpu_nodes.providers.gpu_allocators import allocator_daemonsets, dra_slices_on, nodes_with_unexplained_gpus
from tests.fakes import node
from tests.providers.allocator_fixtures import (
    chart,
    dra_compute_domains_only,
    dra_kubelet_plugin,
    dra_sigs_kubelet_plugin,
    gfd_static,
    operator_dra_kubelet_plugin,
    operator_plugin,
    plugin_without_command,
    resource_slice,
)

OURS = {
    "metadata": {
        "name": "nvidia-device-plugin-a100",
        "namespace": "nvidia-device-plugin",
        "labels": {"app.kubernetes.io/part-of": "gpu-nodes"},
    },
    "spec": {"template": {"spec": {"containers": [{"name": "plugin", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]}}},
}


@pytest.mark.parametrize(
    ("case", "daemonset", "expected"),
    [
        ("GFD, upstream static manifest", gfd_static, None),
        ("the chart's GFD", lambda: chart("gfd"), None),
        ("the chart's MPS control daemon", lambda: chart("mps"), None),
        ("the chart's device plugin", lambda: chart("plugin"), "device-plugin"),
        ("the plugin image's entrypoint (no command)", plugin_without_command, "device-plugin"),
        ("the GPU Operator's plugin behind /bin/sh -c", operator_plugin, "device-plugin"),
        ("NVIDIA's DRA kubelet plugin", dra_kubelet_plugin, "dra"),
        ("the DRA driver with only compute domains", dra_compute_domains_only, None),
        ("the DRA driver's chart from kubernetes-sigs", dra_sigs_kubelet_plugin, "dra"),
        ("kubernetes-sigs chart, compute domains only", lambda: dra_compute_domains_only(dra_sigs_kubelet_plugin()), None),
        ("the DRA kubelet plugin of a GPUCluster, behind exec", operator_dra_kubelet_plugin, "operator-dra"),
        ("our own device plugin", lambda: OURS, None),
    ],
)
def test_what_a_daemonset_runs_decides_whether_it_allocates_gpus(case, daemonset, expected):
    ds = daemonset()
    found = allocator_daemonsets([ds])
    kinds = [a.kind for a in found]
    assert kinds == ([expected] if expected else []), f"{case}: {ds['metadata']['name']} classified as {kinds}"


def test_a_device_plugin_is_named_by_namespace_name_and_image():
    (found,) = allocator_daemonsets([chart("plugin")])
    assert found.ref == "nvidia-device-plugin/nvdp-nvidia-device-plugin", found
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    assert found.what == f"DaemonSet nvidia-device-plugin/nvdp-nvidia-device-plugin (image {image})", found


def test_the_dra_driver_is_named_by_its_daemonset_its_chart_and_the_container_that_allocates():
    (found,) = allocator_daemonsets([dra_kubelet_plugin()])
    assert found.ref == "nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin", found
    assert found.what == (
        "DaemonSet nvidia-dra-driver-gpu/nvidia-dra-driver-gpu-kubelet-plugin (NVIDIA's DRA driver, chart "
        "nvidia-dra-driver-gpu of NVIDIA/k8s-dra-driver-gpu: container gpus runs gpu-kubelet-plugin, image "
        "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0)"
    ), found


def test_the_dra_driver_from_its_kubernetes_sigs_home_is_named_so():
    (found,) = allocator_daemonsets([dra_sigs_kubelet_plugin()])
    assert found.ref == "dra-driver-nvidia-gpu/dra-driver-nvidia-gpu-kubelet-plugin", found
    assert found.what == (
        "DaemonSet dra-driver-nvidia-gpu/dra-driver-nvidia-gpu-kubelet-plugin (NVIDIA's DRA driver, chart "
        "dra-driver-nvidia-gpu of kubernetes-sigs/dra-driver-nvidia-gpu: container gpus runs gpu-kubelet-plugin, "
        "image registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1)"
    ), found


def test_a_dra_driver_a_gpu_cluster_deployed_is_named_by_its_gpu_cluster():
    (found,) = allocator_daemonsets([operator_dra_kubelet_plugin()])
    assert found.ref == "gpu-operator/nvidia-dra-driver-kubelet-plugin", found
    assert found.what == (
        "DaemonSet gpu-operator/nvidia-dra-driver-kubelet-plugin (NVIDIA's DRA driver, deployed by the GPU Operator's "
        "GPUCluster gpu-cluster: container gpus runs gpu-kubelet-plugin, image "
        "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1)"
    ), found


@pytest.mark.parametrize(
    ("case", "slice_", "expected"),
    [
        ("gpu.nvidia.com on our node", resource_slice("n1", name="n1-gpu.nvidia.com-x7k2p"), [("n1", "n1-gpu.nvidia.com-x7k2p")]),
        ("gpu.nvidia.com on another node", resource_slice("cpu-node-1"), []),
        ("compute domains on our node", resource_slice("n1", driver="compute-domain.nvidia.com"), []),
        ("another vendor's driver on our node", resource_slice("n1", driver="gpu.example.com"), []),
    ],
)
def test_a_gpu_resource_slice_counts_only_on_our_nodes(case, slice_, expected):
    assert dra_slices_on([slice_], {"n1", "n2"}) == expected, case


@pytest.mark.parametrize(
    ("case", "nodes", "with_plugin_pod", "expected"),
    [
        ("GPUs and no plugin pod", [node("n1", gpus=4)], set(), [("n1", "4")]),
        ("GPUs and a plugin pod", [node("n1", gpus=4)], {"n1"}, []),
        ("no GPUs advertised", [node("n1", gpus=None)], set(), []),
        ("GPUs gone, the key left at 0", [node("n1", gpus=0)], set(), []),
        ("not a node of this stack", [node("cpu-1", gpus=4)], set(), []),
    ],
)
def test_a_node_that_advertises_gpus_with_no_plugin_pod_on_it_is_named(case, nodes, with_plugin_pod, expected):
    assert nodes_with_unexplained_gpus(nodes, {"n1", "n2"}, with_plugin_pod) == expected, case
