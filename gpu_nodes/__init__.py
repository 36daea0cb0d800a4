"""gpu-nodes: bring GPU machines, already joined to a Kubernetes cluster, into service, and prove they work.

    from gpu_nodes import GpuFleet, GpuFleetArgs

    GpuFleet("gpus", GpuFleetArgs(node_groups=[...]), opts=pulumi.ResourceOptions(provider=k8s_provider))

README, "Use it in your own program".
"""

from gpu_nodes.config.args import NodeArgs, NodeGroupArgs
from gpu_nodes.errors import ConfigError, GpuNodesError
from gpu_nodes.resources.fleet import GpuFleet, GpuFleetArgs
from gpu_nodes.resources.node_group import GpuNodeGroup

__all__ = ["ConfigError", "GpuFleet", "GpuFleetArgs", "GpuNodeGroup", "GpuNodesError", "NodeArgs", "NodeGroupArgs"]
