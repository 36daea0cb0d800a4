"""gpu-nodes: bring the GPU node groups of this stack into service, and prove they work.

The stack config maps onto `GpuFleetArgs` key for key (README, "Stack configuration"); a
program of your own builds the fleet the same way (README, "Use it in your own program").
"""

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes import GpuFleet, GpuFleetArgs
from gpu_nodes.constants import NAMESPACE

config = pulumi.Config(NAMESPACE)
args = GpuFleetArgs(
    node_groups=config.get_object("nodeGroups") or [],
    # Strings as given (a name, "" or "false"); the fleet reads them.
    runtime_class=config.get("runtimeClass"),
    create_runtime_class=config.get("createRuntimeClass"),
    existing_namespaces=config.get_object("existingNamespaces") or (),
    hand_over=config.get_object("handOver") or (),
    insecure_skip_host_key_check=config.get_object("insecureSkipHostKeyCheck", False),
    image_pull_secret=config.get_secret("imagePullSecret"),
    # Asked for only when a group runs preflight (Pulumi.yaml says why it is not declared).
    ssh_private_key=config.get_secret("sshPrivateKey"),
    # Stacks of this program predate the fleet: keep their resources' names (no replacement).
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
# What a tenant's GPU pod must say to get its GPUs on each group (README, "How tenants get their GPUs").
pulumi.export("tenantAccess", fleet.tenant_access)
