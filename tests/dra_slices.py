"""ResourceSlices shaped as NVIDIA's DRA driver publishes them, for the tests of the slice arithmetic.

One pool per node, named after it; each whole GPU a device `gpu-<minor>` with the attributes of
dra-driver-nvidia-gpu `cmd/gpu-kubelet-plugin/deviceinfo.go` (`GpuInfo.Attributes`), typed values as
`resource.k8s.io/v1` writes them; a MIG device `type: mig` with its own UUID. A GPU the driver's
health check found failed carries the taint it writes (v0.5.0 `cmd/gpu-kubelet-plugin/device_health.go`,
`healthEventToTaint`), with the `timeAdded` the API server adds.
"""

from __future__ import annotations

from typing import Any

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


def uuid(index: int) -> str:
    return f"GPU-{index:08x}-3e5a-4b17-9c2e-5da9abb51763"


def gpu_device(index: int, model: str = H100, gpu_uuid: str | None = None) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu_uuid or uuid(index)},
            "productName": {"string": model},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "580.105.8"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{index:02x}"},
            "numaNode": {"int": index // 4},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


def xid_taint(xid: int = 79, effect: str = "NoSchedule") -> dict[str, Any]:
    """The taint the driver writes for an XID: NoSchedule for a fatal one, None for one it ignores."""
    return {"key": "gpu.nvidia.com/xid", "value": str(xid), "effect": effect, "timeAdded": "2026-12-06T10:00:00Z"}


def tainted(device: dict[str, Any], *taints: dict[str, Any]) -> dict[str, Any]:
    return {**device, "taints": list(taints)}


def mig_device(parent: int, placement: int, model: str = H100) -> dict[str, Any]:
    return {
        "name": f"gpu-{parent}-mig-1g10gb-{placement}",
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": f"MIG-{parent:04x}{placement:04x}-0929-581a-0000-000000000000"},
            "parentUUID": {"string": uuid(parent)},
            "profile": {"string": "1g.10gb"},
            "productName": {"string": model},
        },
        "capacity": {"memory": {"value": "10Gi"}},
    }


def resource_slice(
    node: str,
    devices: list[dict[str, Any]],
    generation: int = 1,
    slice_count: int = 1,
    suffix: str = "x7k2p",
    driver: str = "gpu.nvidia.com",
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}-{suffix}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": slice_count},
            "devices": devices,
        },
    }


def node_slices(node: str, gpus: int = 4, model: str = H100, generation: int = 1) -> list[dict[str, Any]]:
    """The one slice a node with `gpus` whole GPUs of `model` publishes."""
    return [resource_slice(node, [gpu_device(i, model) for i in range(gpus)], generation)]


def preflight_report(gpus: int = 4, model: str = H100) -> dict[str, Any]:
    """The part of preflight's report the slices are compared with."""
    return {"gpus": [{"index": i, "name": model, "uuid": uuid(i), "memoryMiB": 81559} for i in range(gpus)]}
