"""How a tenant's pod gets a DRA group's GPUs: the data of the `tenantAccess` output for a group
whose GPUs NVIDIA's DRA driver allocates, with a ResourceClaimTemplate to copy.

A device plugin group's entry (gpu_nodes/resources/fleet.py `tenant_access`) says the path, the
RuntimeClass and the isolation; a tenant asks for `nvidia.com/gpu`. Under DRA the tenant asks with a
claim of the DeviceClass `gpu.nvidia.com`, and the scheduler places the pod on a node whose
ResourceSlices can satisfy it. A claim selects devices only: its CEL selectors see a device's
attributes (`device.attributes['gpu.nvidia.com'].productName`, ...), never its node's labels
(Kubernetes `staging/src/k8s.io/api/resource/v1/types.go`, `CELDeviceSelector`), so a claim cannot
say "this group". A tenant lands on the group's nodes as on a device plugin group's: by the group
label in `nodeSelector`, with the group's taints tolerated.
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests import dra_driver
from gpu_nodes.manifests.naming import dns_label
from gpu_nodes.vocabulary import GPU_RESOURCE, GROUP_LABEL

# The request's name in the tenant's claim, which a container names in `resources.claims`.
TENANT_REQUEST = "gpu"


def tenant_claim_template(group: NodeGroupSpec, gpus: int = 1) -> dict[str, Any]:
    """A ResourceClaimTemplate a tenant copies into its namespace: exactly `gpus` whole GPUs of the
    DeviceClass `gpu.nvidia.com`. No namespace: it goes where the tenant's pods run."""
    return {
        "apiVersion": dra_driver.RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": tenant_claim_template_name(group, gpus)},
        "spec": {"spec": {"devices": {"requests": [dra_driver.exact_gpu_request(TENANT_REQUEST, gpus)]}}},
    }


def tenant_claim_template_name(group: NodeGroupSpec, gpus: int = 1) -> str:
    return dns_label(group.name, f"{gpus}gpu")


def tenant_placement(group: NodeGroupSpec) -> dict[str, Any]:
    """What a tenant's pod sets to land on the group's nodes: the group label, and a toleration of
    each of the group's taints (not the readiness gate: a node still gated is not the tenant's yet)."""
    found = [
        {"key": t.key, "operator": "Exists", "effect": t.effect}
        if t.value is None
        else {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
        for t in group.taints
    ]
    return {"nodeSelector": {GROUP_LABEL: group.name}, "tolerations": found}


def dra_tenant_access(group: NodeGroupSpec) -> dict[str, Any]:
    """A DRA group's `tenantAccess` entry: the keys every group's entry has (`gpuAccess`,
    `runtimeClassName`, `isolation`), the allocator, the DeviceClass, the placement and a template to
    copy. A pod takes the GPUs with `spec.resourceClaims: [{name: gpu, resourceClaimTemplateName:
    <the template's name>}]` and, in each container that uses them, `resources.claims: [{name: gpu}]`.
    Where the DeviceClass serves plain requests (`dra.extendedResourceName`), also the name a pod may ask
    for instead, `resources.limits: {nvidia.com/gpu: N}`: the scheduler makes the claim."""
    plain = {"extendedResourceName": GPU_RESOURCE} if group.dra.extended_resource_name else {}
    return {
        "gpuAccess": group.gpu_access,
        "runtimeClassName": group.tenant_runtime_class,
        "isolation": group.isolation,
        "allocator": group.allocator,
        "deviceClassName": dra_driver.GPU_DEVICE_CLASS,
        **tenant_placement(group),
        "resourceClaimTemplate": tenant_claim_template(group),
        **plain,
    }
