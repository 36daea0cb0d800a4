"""What NVIDIA's DRA driver shares across a stack's DRA groups, created once when a group uses it:
the check of which DRA fields the cluster keeps (gpu_nodes/providers/dra_features.py), then the
driver's DeviceClasses, each after its claim (what they select: gpu_nodes/manifests/dra_driver.py), and, where a group
turns on ComputeDomains, what the driver runs them with (gpu_nodes/manifests/compute_domains.py): its CRDs, its
controller and the IMEX daemons' account and rights.

The DeviceClasses, CRDs and the chart's fixed-name cluster roles are cluster-wide and named by the driver
(`gpu.nvidia.com`, `mig.nvidia.com`, `vfio.gpu.nvidia.com`, `compute-domain-*.nvidia.com`,
`computedomains.resource.nvidia.com`, ...): a cluster where the driver's chart or another stack made them already is
refused by the claim, named, as for the RuntimeClass; nothing of someone else's is adopted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import StackSpec
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests import compute_domains
from gpu_nodes.manifests.dra_driver import RELEASE, device_classes
from gpu_nodes.providers.claims import CREATE, Claim
from gpu_nodes.providers.dra_features import DraFeatures, DraFeaturesInputs
from gpu_nodes.resources.child_names import DRA_FEATURES_CHILD, compute_domain_child, device_class_child
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.namespaces import SharedNamespace
from gpu_nodes.resources.registration import claim_object, generic_object, register, register_claimed


@dataclass(frozen=True)
class SharedDra:
    """What a stack's DRA groups share: what the cluster keeps, and the DeviceClasses (with ComputeDomains, also their
    CRDs, controller and the IMEX daemons' rights: what a kubelet plugin and a claim wait for)."""

    features: DraFeatures
    device_classes: tuple[pulumi.Resource, ...]

    @property
    def device_taints(self) -> pulumi.Output[bool]:
        """Whether the API server keeps device taints (None under mocks that run no check: no)."""
        return self.features.deviceTaints.apply(bool)


def declare_shared_dra(
    stack: StackSpec,
    children: Children,
    cluster: ClusterAccess,
    owner: str,
    namespaces: Mapping[str, SharedNamespace] | None = None,
    pull_secret: str | None = None,
) -> SharedDra | None:
    """Register the DRA features check and the driver's DeviceClasses once, when a group uses allocator
    dra (the classes after the check and each after its claim); None for a stack without one. With ComputeDomains
    (`namespaces`: the stack's, the controller's among them), what runs them (`declare_compute_domains`)."""
    if not any(group.uses_dra for group in stack.node_groups):
        return None
    asking = [group.name for group in stack.node_groups if group.uses_dra and group.dra.extended_resource_name]
    mig = [group.name for group in stack.node_groups if group.uses_dra and group.dra.mig_profiles]
    features = DraFeatures(
        children.name(DRA_FEATURES_CHILD), DraFeaturesInputs(asking, mig), cluster, opts=children.opts(DRA_FEATURES_CHILD)
    )
    domains = compute_domain_groups(stack)
    classes: list[pulumi.Resource] = []
    for manifest in device_classes(owner, extended_resource=bool(asking), with_compute_domains=bool(domains)):
        name = manifest["metadata"]["name"]
        child = device_class_child(name)
        setting = "Remove it (the DRA driver's chart makes it too), or keep this stack's groups on allocator devicePlugin"
        checked = claim_object(children, child, Claim("DeviceClass", name, CREATE, owner, setting), cluster)
        classes.append(generic_object(manifest, children.name(child), children.opts(child, depends_on=[checked, features])))
    if domains and namespaces is not None:
        namespace = namespaces[domains[0].device_plugin.namespace]
        classes += declare_compute_domains(children, cluster, owner, namespace, pull_secret)
    return SharedDra(features, tuple(classes))


def compute_domain_groups(stack: StackSpec) -> list[NodeGroupSpec]:
    """The stack's DRA groups that turn ComputeDomains on (they share one namespace: config/stack.py)."""
    return [group for group in stack.node_groups if group.uses_dra and group.dra.compute_domains]


_CD_SETTING = "Remove it (the DRA driver's chart makes it too), or turn dra.computeDomains off in this stack"


# The typed class of each kind of what runs ComputeDomains (registration.register).
_CLASSES: dict[str, type[pulumi.CustomResource]] = {
    "CustomResourceDefinition": k8s.apiextensions.v1.CustomResourceDefinition,
    "ClusterRole": k8s.rbac.v1.ClusterRole,
    "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "Role": k8s.rbac.v1.Role,
    "RoleBinding": k8s.rbac.v1.RoleBinding,
    "Deployment": k8s.apps.v1.Deployment,
}


def declare_compute_domains(
    children: Children, cluster: ClusterAccess, owner: str, namespace: SharedNamespace, pull_secret: str | None
) -> list[pulumi.Resource]:
    """The ComputeDomains' CRDs, the controller's and the IMEX daemons' cluster roles and bindings (each after its
    claim), then in the DRA namespace their ServiceAccounts, the controller's Role and binding and its Deployment, as
    the driver's chart renders them (gpu_nodes/manifests/compute_domains.py). What the kubelet plugins wait for."""
    cd = compute_domains
    ns = namespace.name
    claimed: list[pulumi.Resource] = []
    for manifest in [
        *cd.crds(owner),
        cd.controller_cluster_role(owner),
        cd.daemon_cluster_role(owner),
        cd.controller_cluster_role_binding(ns, owner),
        cd.daemon_cluster_role_binding(ns, owner),
    ]:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        child = compute_domain_child(kind, name)
        claim = Claim(kind, name, CREATE, owner, _CD_SETTING)
        claimed.append(register_claimed(manifest, _CLASSES[kind], children, child, claim, cluster, after=list(claimed)))
    placed: list[pulumi.Resource] = []
    release = RELEASE
    for manifest in (
        cd.controller_service_account(ns),
        cd.daemon_service_account(ns),
        cd.controller_role(ns),
        cd.controller_role_binding(ns),
        cd.controller_deployment(ns, release.image, release.pull_policy, pull_secret),
    ):
        child = compute_domain_child(manifest["kind"], manifest["metadata"]["name"])
        opts = children.opts(child, depends_on=[*namespace.ready, *claimed, *placed], deleted_with=namespace.deleted_with)
        placed.append(register(manifest, _CLASSES[manifest["kind"]], children.name(child), opts))
    return [*claimed, *placed]
