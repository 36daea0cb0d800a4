"""What NVIDIA's DRA driver shares across a stack's DRA groups, created once when a group uses it:
the check of which DRA fields the cluster keeps (gpu_nodes/providers/dra_features.py), then the
driver's DeviceClasses, each after its claim (what they select: gpu_nodes/manifests/dra_driver.py).

The DeviceClasses are cluster-wide and named by the driver (`gpu.nvidia.com`, `mig.nvidia.com`,
`vfio.gpu.nvidia.com`): a cluster where the driver's chart or another stack made them already is
refused by the claim, named, as for the RuntimeClass; nothing of someone else's is adopted.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from gpu_nodes.config.stack import StackSpec
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests.dra_driver import device_classes
from gpu_nodes.providers.claims import CREATE, Claim
from gpu_nodes.providers.dra_features import DraFeatures, DraFeaturesInputs
from gpu_nodes.resources.child_names import DRA_FEATURES_CHILD, device_class_child
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.registration import claim_object, generic_object


@dataclass(frozen=True)
class SharedDra:
    """What a stack's DRA groups share: what the cluster keeps, and the DeviceClasses."""

    features: DraFeatures
    device_classes: tuple[pulumi.Resource, ...]

    @property
    def device_taints(self) -> pulumi.Output[bool]:
        """Whether the API server keeps device taints (None under mocks that run no check: no)."""
        return self.features.deviceTaints.apply(bool)


def declare_shared_dra(stack: StackSpec, children: Children, cluster: ClusterAccess, owner: str) -> SharedDra | None:
    """Register the DRA features check and the driver's DeviceClasses once, when a group uses allocator
    dra (the classes after the check and each after its claim); None for a stack without one."""
    if not any(group.uses_dra for group in stack.node_groups):
        return None
    asking = [group.name for group in stack.node_groups if group.uses_dra and group.dra.extended_resource_name]
    features = DraFeatures(
        children.name(DRA_FEATURES_CHILD), DraFeaturesInputs(asking), cluster, opts=children.opts(DRA_FEATURES_CHILD)
    )
    classes: list[pulumi.Resource] = []
    for manifest in device_classes(owner, extended_resource=bool(asking)):
        name = manifest["metadata"]["name"]
        child = device_class_child(name)
        setting = "Remove it (the DRA driver's chart makes it too), or keep this stack's groups on allocator devicePlugin"
        checked = claim_object(children, child, Claim("DeviceClass", name, CREATE, owner, setting), cluster)
        classes.append(generic_object(manifest, children.name(child), children.opts(child, depends_on=[checked, features])))
    return SharedDra(features, tuple(classes))
