"""The fleet's arguments for Python programs, under the names the Python API has always given them.

They are the generated typed inputs (gpu_nodes/config/inputs.py), one source with the package's schema: a
group as one entry of `gpu-nodes:nodeGroups`, keyed as the stack config is (docs/configuration.md, "Node group
settings"), each section typed, a setting of fixed words its enum or its word, a value that may come from another
resource a `pulumi.Input`. mypy refuses a misspelled key or a wrong type in a program; one reader validates what
reaches it at run time, naming the key, the value and what is allowed.
"""

from __future__ import annotations

from gpu_nodes.config.inputs import Node, NodeGroup, SshProxy

# One machine, already joined to the cluster.
NodeArgs = Node
# A bastion, as `preflight.proxy`.
SshProxyArgs = SshProxy
# One group of like machines, as one entry of `gpu-nodes:nodeGroups`.
NodeGroupArgs = NodeGroup
