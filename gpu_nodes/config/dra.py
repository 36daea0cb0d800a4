"""The group's `dra` section: what a group whose GPUs NVIDIA's DRA driver allocates (`allocator: dra`)
offers its tenants beyond ResourceClaims. Whether a group may set it, and with which other groups, is
the group's and the stack's to weigh (gpu_nodes/config/node_group.py, gpu_nodes/config/stack.py)."""

from __future__ import annotations

from gpu_nodes.config.fields import section, setting


@section
class DraSpec:
    # Kubernetes' DRAExtendedResource (KEP 5004): a DeviceClass's `spec.extendedResourceName` lets the
    # scheduler serve a pod's plain extended-resource request from the class's devices, on a node
    # that does not advertise that resource itself (kube-scheduler
    # pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go,
    # `filterExtendedResources`). Alpha and off in 1.34 and 1.35 (pkg/features/kube_features.go at
    # v1.35.4), beta and on from 1.36 (staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go).
    extended_resource_name: bool = setting(
        "extendedResourceName",
        "with allocator `dra`: the DeviceClass `gpu.nvidia.com` serves plain `nvidia.com/gpu` requests "
        "(`extendedResourceName`, as the driver's chart renders it), so a tenant's pod that asks for "
        "`nvidia.com/gpu` gets the group's GPUs through DRA, and the verification Jobs ask so; needs Kubernetes' "
        'DRAExtendedResource (beta and on from 1.36), which `pulumi up` checks. See "DRA"',
        default=False,
    )
