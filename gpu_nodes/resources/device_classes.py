"""The DeviceClasses of NVIDIA's DRA driver, created once per stack after their claims, when a
group of the stack uses the driver (what they select: gpu_nodes/manifests/dra_driver.py).

They are cluster-wide and named by the driver (`gpu.nvidia.com`, `mig.nvidia.com`): a cluster
where the driver's chart or another stack made them already is refused by the claim, named, as
for the RuntimeClass; nothing of someone else's is adopted.
"""

from __future__ import annotations

import pulumi

from gpu_nodes.config.stack import StackSpec
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests.dra_driver import device_classes
from gpu_nodes.providers.claims import CREATE, Claim
from gpu_nodes.resources.child_names import device_class_child
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.registration import claim_object, generic_object


def declare_device_classes(
    stack: StackSpec, children: Children, cluster: ClusterAccess, owner: str
) -> tuple[pulumi.Resource, ...]:
    """Register the driver's DeviceClasses once, when a group uses allocator dra (each after its claim)."""
    if not any(group.uses_dra for group in stack.node_groups):
        return ()
    classes: list[pulumi.Resource] = []
    for manifest in device_classes(owner):
        name = manifest["metadata"]["name"]
        child = device_class_child(name)
        setting = "Remove it (the DRA driver's chart makes it too), or keep this stack's groups on allocator devicePlugin"
        checked = claim_object(children, child, Claim("DeviceClass", name, CREATE, owner, setting), cluster)
        classes.append(generic_object(manifest, children.name(child), children.opts(child, depends_on=[checked])))
    return tuple(classes)
