"""The program's wiring, once: from a parsed stack to its node groups (`__main__.py`, the tests)."""

from __future__ import annotations

import pulumi

from gpu_nodes.config.specs import NodeGroupSpec
from gpu_nodes.config.stack_settings import StackSpec
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.providers.claims import stack_label_value
from gpu_nodes.providers.coexistence import DevicePluginCoexistence
from gpu_nodes.resources.namespaces import declare_namespaces
from gpu_nodes.resources.node_group import GpuNodeGroup, GpuNodeGroupArgs
from gpu_nodes.resources.runtime_class import declare_runtime_class


def build_groups(
    stack: StackSpec,
    cluster: ClusterAccess,
    ssh_private_key: pulumi.Input[str] | None,
    pull_secret: pulumi.Input[str] | None = None,
) -> dict[str, GpuNodeGroup]:
    """The Kubernetes provider, the shared namespaces (with the pull Secret) and RuntimeClass, and
    one GpuNodeGroup per group."""
    provider = cluster.provider("k8s")
    owner = stack_label_value()
    namespaces = declare_namespaces(stack, provider, cluster, owner, pull_secret)
    nodes = [node.name for group in stack.node_groups for node in group.nodes]
    coexistence = DevicePluginCoexistence("device-plugin-coexistence", nodes, stack.hand_over, cluster)
    runtime_class = declare_runtime_class(stack, provider, cluster, owner)
    return {
        spec.name: GpuNodeGroup(
            spec.name,
            GpuNodeGroupArgs(
                spec=spec,
                device_plugin_namespace=namespaces[spec.device_plugin.namespace],
                verification_namespace=namespaces[spec.verification.namespace],
                runtime_class=runtime_class,
                ssh_private_key=ssh_private_key,
                cluster=cluster,
                stack_label=owner,
                before_nodes=[coexistence],
            ),
            opts=pulumi.ResourceOptions(providers={"kubernetes": provider}),
        )
        for spec in stack.node_groups
    }


def tenant_access(group: NodeGroupSpec) -> dict[str, str | None]:
    """How a tenant's GPU pod gets its GPUs on this group: the path, and the RuntimeClass it must name."""
    return {"gpuAccess": group.gpu_access, "runtimeClassName": group.tenant_runtime_class}
