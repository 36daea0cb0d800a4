"""The rack's GPU fleet: what this program builds (docs/own-program.md). `__main__.py` imports it and
exports its report; the tests import it under Pulumi's mocks (test_program.py), as Pulumi's testing
guide has a program's resources in a module of their own.

One stack per rack: the stack with `shared: own` creates the namespaces and the RuntimeClass
the racks share, the others (`shared: reference`) only name them, and never delete them.
"""

from typing import cast

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes import GpuFleet, GpuFleetArgs, NodeArgs, NodeGroupArgs

config = pulumi.Config()
# The team's own provider: the fleet reaches the cluster through it and nothing else.
cluster = k8s.Provider("cluster", kubeconfig=config.require_secret("kubeconfig"))

owns_shared = config.get("shared", "own") == "own"
# With a key, the fleet checks each machine over SSH before it lets it in (preflight), and each node
# names its machine (`sshHost`, `sshUser`, `hostKey`); without one, the rack's machines are ones
# another tool has checked, named by their node name alone.
ssh_key = config.get_secret("sshPrivateKey")  # None when the stack sets none

# The stack's config is untyped YAML: each node as written, a name alone or a map of its connection (which the
# fleet's reader checks, naming any mistake).
nodes: list[NodeArgs] = [
    cast(NodeArgs, node) if isinstance(node, dict) else {"name": node} for node in config.require_object("nodes")
]
# Typed as the stack config spells a group (gpu_nodes.NodeGroupArgs): mypy refuses a misspelled key or a wrong type.
rack: NodeGroupArgs = {
    "name": config.require("rack"),
    "gpusPerNode": config.get_int("gpusPerNode", 8),
    "nodes": nodes,
    "devicePlugin": {"namespace": "gpus-device-plugin"},
    "verification": {"namespace": "gpus-verification"},
}
if ssh_key is None:
    rack["preflight"] = {"enabled": False}
fleet = GpuFleet(
    "gpus",
    GpuFleetArgs(
        node_groups=[rack],
        ssh_private_key=ssh_key,
        runtime_class="nvidia-gpus",
        create_runtime_class=owns_shared,
        existing_namespaces=() if owns_shared else ("gpus-device-plugin", "gpus-verification"),
    ),
    opts=pulumi.ResourceOptions(provider=cluster),
)
