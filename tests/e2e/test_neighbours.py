"""Neighbours on the real cluster: NVIDIA's GPU Feature Discovery runs beside the stack, NVIDIA's
DRA driver on the stack's nodes stops the run, named. The manifests are upstream's
(tests/providers/fixtures/README.md); each test says what it changes in its copy.

Each test leaves the stack deployed, healthy and configured as it found it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import NODES, LocalEnv
from tests.e2e.stack_file import STACK_FILE, edit_group
from tests.providers.allocator_fixtures import dra_kubelet_plugin, gfd_static, resource_slice

pytestmark = pytest.mark.cluster

# The chart gives GFD and the plugin this toleration (deployments/helm/nvidia-device-plugin/values.yaml
# `tolerations`); the static GFD manifest has none, and our nodes carry nvidia.com/gpu:NoSchedule.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
GFD_NAMESPACE = "gpu-feature-discovery"
DRA_NAMESPACE = "nvidia-dra-driver-gpu"
DRA_REF = f"{DRA_NAMESPACE}/nvidia-dra-driver-gpu-kubelet-plugin"
GFD_LABEL = "nvidia.com/gpu.product"


def tolerating_gpu_taint(ds: dict[str, Any]) -> dict[str, Any]:
    ds = copy.deepcopy(ds)
    ds["spec"]["template"]["spec"]["tolerations"] = [GPU_TOLERATION]
    return ds


def manifest(namespace: str, ds: dict[str, Any]) -> str:
    """The namespace, the service account the DaemonSet names (its chart makes one), the DaemonSet."""
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    account = ds["spec"]["template"]["spec"].get("serviceAccountName")
    if account:
        docs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}})
    ds = copy.deepcopy(ds)
    ds["metadata"]["namespace"] = namespace
    return yaml.safe_dump_all([*docs, ds])


def pods_by_node(local: LocalEnv, namespace: str) -> dict[str, str]:
    pods = local.kubectl_json("get", "pods", "-n", namespace)["items"]
    return {p["spec"].get("nodeName", ""): p["status"].get("phase", "") for p in pods}


def gpu_slices_on(local: LocalEnv, nodes: list[str]) -> list[str]:
    """The names of the ResourceSlices of driver gpu.nvidia.com that name one of `nodes`."""
    found = local.kubectl_json("get", "resourceslices", "--field-selector", "spec.driver=gpu.nvidia.com")["items"]
    return [s["metadata"]["name"] for s in found if s["spec"].get("nodeName") in nodes]


def stack_up(local: LocalEnv) -> None:
    local.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=900)
    assert local.pulumi("preview", "--expect-no-changes", check=False).returncode == 0, "preview shows changes after up"


def test_gfd_runs_on_our_nodes_and_the_run_completes_with_gpu_feature_labels_off(deployed):
    """GFD from the upstream static manifest (plus the chart's nvidia.com/gpu toleration) lands on
    our nodes; `pulumi up` with `gpuFeatureLabels: false` completes beside it, leaves GFD's label
    keys to GFD, and a refresh finds no drift."""
    gfd = manifest(GFD_NAMESPACE, tolerating_gpu_taint(gfd_static()))
    old = edit_group(lambda group: group.update(gpuFeatureLabels=False))
    try:
        deployed.run("kubectl", "apply", "-f", "-", stdin=gfd)
        up = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        assert up.returncode == 0, deployed.explain("pulumi up stopped beside GFD", up)
        deployed.wait_until(
            f"GFD Running on {NODES}",
            lambda: all(pods_by_node(deployed, GFD_NAMESPACE).get(n) == "Running" for n in NODES),
        )
        for name in NODES:
            labels = deployed.node(name)["metadata"]["labels"]
            assert GFD_LABEL not in labels, deployed.explain(f"{name} still has our {GFD_LABEL}: {labels[GFD_LABEL]}")
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert drift.returncode == 0, deployed.explain("a refresh beside GFD shows drift", drift)
    finally:
        deployed.run("kubectl", "delete", "namespace", GFD_NAMESPACE, "--ignore-not-found", check=False)
        STACK_FILE.write_text(old)
    stack_up(deployed)


def test_nvidias_dra_kubelet_plugin_on_our_nodes_stops_the_run_naming_it(deployed):
    """NVIDIA's DRA driver's kubelet plugin, rendered from its chart and given the nvidia.com/gpu
    toleration its install guides set (`kubeletPlugin.tolerations`), lands on our nodes through
    our label nvidia.com/gpu.present=true: a refresh shows it as drift and `pulumi up` stops naming
    it, the reason and the way out. No node is opened or closed by the stopped run."""
    dra = manifest(DRA_NAMESPACE, tolerating_gpu_taint(dra_kubelet_plugin()))
    named = (
        f"DaemonSet {DRA_REF} (NVIDIA's DRA driver, chart nvidia-dra-driver-gpu of NVIDIA/k8s-dra-driver-gpu: "
        "container gpus runs gpu-kubelet-plugin"
    )
    try:
        deployed.run("kubectl", "apply", "-f", "-", stdin=dra)
        on_our_nodes = lambda: set(NODES) <= set(pods_by_node(deployed, DRA_NAMESPACE))  # noqa: E731
        deployed.wait_until("the DRA kubelet plugin on our nodes", on_our_nodes)
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert drift.returncode != 0 and named in drift.stdout, deployed.explain("the refresh missed the DRA driver", drift)
        stopped = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        output = stopped.stdout + stopped.stderr
        assert stopped.returncode != 0 and named in output, deployed.explain("pulumi up went on beside the DRA driver", stopped)
        for words in ("must not both hand out GPUs on one node", f"list {DRA_REF!r} in gpu-nodes:handOver"):
            assert words in output, deployed.explain(f"the stop does not say {words!r}", stopped)
    finally:
        deployed.run("kubectl", "delete", "namespace", DRA_NAMESPACE, "--ignore-not-found", "--wait", check=False)
    # Its slices outlive it by kubelet's grace period, as on a real node (tools/cluster/README.md, "DRA").
    deployed.wait_until("the DRA driver's slices to go", lambda: not gpu_slices_on(deployed, NODES), timeout=90)
    stack_up(deployed)


def test_a_gpu_resource_slice_for_our_node_stops_the_run_naming_node_and_slice(deployed):
    """A ResourceSlice of driver gpu.nvidia.com for one of our nodes (what the DRA driver's `gpus`
    container publishes; the test writes one of its own, which the local cluster's registrar leaves
    alone): `pulumi up` stops
    naming the slice and the node. The API server serves resource.k8s.io/v1 (Kubernetes 1.34+)."""
    versions = json.loads(deployed.kubectl("get", "--raw", "/apis/resource.k8s.io").stdout)
    assert "v1" in [v["version"] for v in versions["versions"]], versions
    slice_ = resource_slice(NODES[0], name=f"{NODES[0]}-gpu.nvidia.com-e2e")
    try:
        deployed.run("kubectl", "apply", "-f", "-", stdin=json.dumps(slice_))
        stopped = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        output = stopped.stdout + stopped.stderr
        expected = f"ResourceSlice {NODES[0]}-gpu.nvidia.com-e2e publishes the GPUs of {NODES[0]}, a node of this stack"
        assert stopped.returncode != 0 and expected in output, deployed.explain("pulumi up went on beside a DRA slice", stopped)
    finally:
        deployed.run("kubectl", "delete", "resourceslice", slice_["metadata"]["name"], "--ignore-not-found", check=False)
    stack_up(deployed)
