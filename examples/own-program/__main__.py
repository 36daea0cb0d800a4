"""A platform team's own Pulumi program with a GPU fleet in it (docs/own-program.md).

One stack per rack: the stack with `shared: own` creates the namespaces and the RuntimeClass
the racks share, the others (`shared: reference`) only name them, and never delete them.
"""

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes import GpuFleet, GpuFleetArgs

config = pulumi.Config()
# The team's own provider: the fleet reaches the cluster through it and nothing else.
cluster = k8s.Provider("cluster", kubeconfig=config.require_secret("kubeconfig"))

owns_shared = config.get("shared", "own") == "own"
fleet = GpuFleet(
    "gpus",
    GpuFleetArgs(
        node_groups=[
            {
                "name": config.require("rack"),
                "gpusPerNode": config.get_int("gpusPerNode", 8),
                "nodes": [{"name": name} for name in config.require_object("nodes")],
                "devicePlugin": {"namespace": "gpus-device-plugin"},
                "verification": {"namespace": "gpus-verification"},
                # This example brings in machines whose setup another tool has checked.
                "preflight": {"enabled": False},
            }
        ],
        runtime_class="nvidia-gpus",
        create_runtime_class=owns_shared,
        existing_namespaces=() if owns_shared else ("gpus-device-plugin", "gpus-verification"),
    ),
    opts=pulumi.ResourceOptions(provider=cluster),
)

pulumi.export("nodeGroups", fleet.node_groups)
