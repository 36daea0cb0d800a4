"""gpu-nodes: bring the GPU node groups of this stack into service, and prove they work.

The stack config maps onto `GpuFleetArgs` key for key (docs/configuration.md); a
program of your own builds the fleet the same way (docs/own-program.md).
"""

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes import GpuFleet, GpuFleetArgs

# Every `gpu-nodes:*` key, read by its declaration; a key none declares is refused as a typo.
args = GpuFleetArgs.from_stack_config(
    # Each resource is also aliased to its bare name at the stack's root, where this program's
    # stacks may hold it: found there, it moves under the fleet with no replacement (pinned by
    # tests/golden/*.json; docs/own-program.md, "In Python").
    legacy_root_names=True,
)
# A mistake stops the program here, before anything is registered (the provider neither), with
# its message and no traceback (a GpuNodesError is a pulumi.RunError).
args.validate()

kubernetes = pulumi.Config("kubernetes")
# An explicit provider does not read kubernetes:* by itself, so it is read here.
provider = k8s.Provider("k8s", kubeconfig=kubernetes.get_secret("kubeconfig"), context=kubernetes.get("context"))
fleet = GpuFleet("gpu-nodes", args, opts=pulumi.ResourceOptions(provider=provider))

pulumi.export("nodeGroups", fleet.node_groups)
# What a tenant's GPU pod must say to get its GPUs on each group (docs/tenants.md).
pulumi.export("tenantAccess", fleet.tenant_access)
