"""gpu-nodes: bring GPU machines, already joined to a Kubernetes cluster, into service, and prove they work.

    from gpu_nodes import GpuFleet, GpuFleetArgs

    GpuFleet("gpus", GpuFleetArgs(node_groups=[...]), opts=pulumi.ResourceOptions(provider=k8s_provider))

README, "Use it in your own program". Every failure meant for the operator is a `GpuNodesError`,
and one of three kinds a program can catch apart: `ConfigError` (what was asked is wrong),
`ClusterError` (the cluster is in the way or does not answer), `NodeError` (a node failed its
proof, or cannot be marked); gpu_nodes/errors.py says who raises each.
"""

from gpu_nodes.config.args import NodeArgs, NodeGroupArgs, SshProxyArgs
from gpu_nodes.errors import ClusterError, ConfigError, GpuNodesError, NodeError
from gpu_nodes.resources.fleet import GpuFleet, GpuFleetArgs
from gpu_nodes.resources.node_group import GpuNodeGroup

__all__ = [
    "ClusterError",
    "ConfigError",
    "GpuFleet",
    "GpuFleetArgs",
    "GpuNodeGroup",
    "GpuNodesError",
    "NodeArgs",
    "NodeError",
    "NodeGroupArgs",
    "SshProxyArgs",
]
