"""Real manifests of NVIDIA's GPU software, loaded for the coexistence tests (fixtures/README.md
names the source of each), and the variants the tests need, each built from one of them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((FIXTURES / name).read_text()) if doc]


def daemonset(name: str, index: int = 0, namespace: str | None = None) -> dict[str, Any]:
    """The `index`th DaemonSet of a fixture; `namespace` for a manifest that leaves it to kubectl."""
    ds = copy.deepcopy(load(name)[index])
    if namespace:
        ds["metadata"]["namespace"] = namespace
    return ds


def gfd_static() -> dict[str, Any]:
    return daemonset("gpu-feature-discovery-daemonset.yaml", namespace="gpu-feature-discovery")


def chart(component: str) -> dict[str, Any]:
    """One of the device plugin chart's DaemonSets: plugin, gfd or mps."""
    return daemonset("nvidia-device-plugin-chart-daemonsets.yaml", ("plugin", "gfd", "mps").index(component))


def operator_plugin() -> dict[str, Any]:
    return daemonset("gpu-operator-device-plugin-daemonset.yaml")


def dra_kubelet_plugin() -> dict[str, Any]:
    return daemonset("nvidia-dra-driver-gpu-kubelet-plugin.yaml")


def dra_sigs_kubelet_plugin() -> dict[str, Any]:
    """The DRA driver's chart from its home at kubernetes-sigs (`dra-driver-nvidia-gpu`)."""
    return daemonset("dra-driver-nvidia-gpu-kubelet-plugin.yaml")


def operator_dra_kubelet_plugin() -> dict[str, Any]:
    """The DRA kubelet plugin a GPU Operator GPUCluster deploys."""
    return daemonset("gpu-operator-dra-kubelet-plugin-daemonset.yaml")


def dra_compute_domains_only(ds: dict[str, Any] | None = None) -> dict[str, Any]:
    """A DRA chart with `resources.gpus.enabled=false`: its template leaves out the `gpus` container."""
    ds = ds or dra_kubelet_plugin()
    spec = ds["spec"]["template"]["spec"]
    spec["containers"] = [c for c in spec["containers"] if c["name"] != "gpus"]
    return ds


def plugin_without_command() -> dict[str, Any]:
    """The chart's plugin container without `command`: the image's ENTRYPOINT runs (the older
    static `nvidia-device-plugin.yml` does so)."""
    ds = chart("plugin")
    del ds["spec"]["template"]["spec"]["containers"][0]["command"]
    return ds


def resource_slice(node: str, driver: str = "gpu.nvidia.com", name: str | None = None) -> dict[str, Any]:
    """A ResourceSlice (resource.k8s.io/v1) as a DRA kubelet plugin publishes it for its node."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{driver}-x7k2p"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }
