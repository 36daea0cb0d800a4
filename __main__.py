"""gpu-nodes: bring the GPU node groups of this stack into service, and prove they work."""

import pulumi

from gpu_nodes.config.parse import ConfigError, parse_stack
from gpu_nodes.constants import NAMESPACE
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.resources.program import build_groups, tenant_access

config = pulumi.Config(NAMESPACE)
pull_secret = config.get_secret("imagePullSecret")
try:
    stack = parse_stack(
        config.get_object("nodeGroups"),
        config.get_object("insecureSkipHostKeyCheck", False),
        # Strings as given (a name, "" or "false"); parse_stack reads them.
        config.get("runtimeClass"),
        config.get("createRuntimeClass"),
        config.get_object("existingNamespaces"),
        has_pull_secret=pull_secret is not None,
        hand_over=config.get_object("handOver"),
    )
except ConfigError as error:
    # A user mistake: a clean message, no traceback, and nothing registered.
    raise pulumi.RunError(str(error)) from None

ssh_private_key = config.require_secret("sshPrivateKey") if stack.needs_ssh_key else None

# The provider is configured the standard way (kubernetes:kubeconfig / kubernetes:context).
groups = build_groups(stack, ClusterAccess.from_stack_config(), ssh_private_key, pull_secret)

report = {name: group.nodes for name, group in groups.items()}
pulumi.export("nodeGroups", report)
# What a tenant's GPU pod must say to get its GPUs on each group (README, "How tenants get their GPUs").
tenants = {spec.name: tenant_access(spec) for spec in stack.node_groups}
pulumi.export("tenantAccess", tenants)
