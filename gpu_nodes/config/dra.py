"""The group's `dra` section: what a group whose GPUs NVIDIA's DRA driver allocates (`allocator: dra`)
offers its tenants beyond ResourceClaims. Whether a group may set it, and with which other groups, is
the group's and the stack's to weigh (gpu_nodes/config/node_group.py, gpu_nodes/config/stack.py)."""

from __future__ import annotations

from collections.abc import Sequence

from gpu_nodes.config.device_plugin import mig_profile_problem
from gpu_nodes.config.fields import Component, Need, section, setting
from gpu_nodes.config.problems import Problems


def read_mig_profiles(problems: Problems, key: str, raw: object) -> tuple[str, ...]:
    """MIG profiles as NVIDIA's DRA driver publishes them (a MIG device's `profile` attribute, `1g.10gb`:
    kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/reference/resourceslice-attributes.md), each once."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        problems.add(key, raw, "expected a list of MIG profiles, e.g. [1g.10gb, 3g.40gb]")
        return ()
    found: list[str] = []
    for index, profile in enumerate(raw):
        problem = mig_profile_problem(profile)
        if problem:
            problems.add(f"{key}[{index}]", profile, problem)
        elif isinstance(profile, str) and profile not in found:
            found.append(profile)
    return tuple(found)


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
    # NVIDIA's DRA driver's ComputeDomains (`resources.computeDomains.enabled` in its chart): its controller, the
    # kubelet plugin's compute-domains container and the DeviceClasses of IMEX channels and daemons
    # (kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu, site/content/docs/concepts/
    # compute-domains.md). Prerequisites (site/content/docs/prerequisites.md, "ComputeDomains additional
    # prerequisites"): driver 570.158.01, multi-node NVLink hardware, the nvidia.com/gpu.clique label, and the host's
    # nvidia-imex.service disabled: the driver runs the IMEX daemons itself.
    compute_domains: bool = setting(
        "computeDomains",
        "with allocator `dra` on NVLink-domain machines (`nvlinkDomain`): NVIDIA's DRA driver's ComputeDomains, which "
        "hand IMEX channels to jobs across the domain's machines; the group gets a ComputeDomain its proof uses. See "
        '"DRA", "ComputeDomains"',
        default=False,
        needs=(
            # Found on each machine, where preflight's dra-compute-domains check holds it (68-check-dra.sh,
            # `computedomains-driver`; tests/config/test_releases.py holds the two together).
            Need(
                Component.DRIVER,
                "570.158.01",
                "ComputeDomains (the driver's IMEX daemons)",
                "kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/prerequisites.md, ComputeDomains additional "
                "prerequisites",
            ),
        ),
    )
    # Dynamic MIG (the driver's DynamicMIG gate, alpha): the driver publishes every MIG partition each GPU could
    # hold and makes the one a claim is allocated when it prepares it (site/content/docs/guides/gpu-allocation/mig.md,
    # site/content/docs/concepts/gpu-allocation.md "How dynamic MIG works"). It needs Kubernetes' partitionable
    # devices (DRAPartitionableDevices on the API server and scheduler, beta and on from 1.36), and excludes the
    # driver's NVMLDeviceHealthCheck (site/content/docs/reference/feature-gates.md, "Constraints").
    mig_profiles: tuple[str, ...] = setting(
        "migProfiles",
        "with allocator `dra`: split GPUs by MIG on demand (the driver's DynamicMIG) and prove each profile listed, "
        'e.g. `[1g.10gb]`: a claim of one device of it, and a Job that sees its MIG device; needs Kubernetes\' '
        "DRAPartitionableDevices (beta and on from 1.36), which `pulumi up` checks. An Ampere GPU in MIG mode is offered "
        "only split: set `verification.gpusPerPod: []` and no `diagnostics` there. See \"DRA\", \"MIG under DRA\"",
        default=None,
        default_text="none",
        written=Sequence[str],
        parse=read_mig_profiles,
    )
