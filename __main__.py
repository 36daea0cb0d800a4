"""gpu-nodes: bring the GPU node groups of this stack into service, and prove they work."""

import pulumi
import pulumi_kubernetes as k8s

from components.config import NAMESPACE, ConfigError, parse_stack
from components.namespaces import declare_namespaces
from components.node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.runtime_class import declare_runtime_class

config = pulumi.Config(NAMESPACE)
try:
    stack = parse_stack(
        config.get_object("nodeGroups"),
        config.get_object("insecureSkipHostKeyCheck", False),
        # Strings as given (a name, "" or "false"); parse_stack reads them.
        config.get("runtimeClass"),
        config.get("createRuntimeClass"),
    )
except ConfigError as error:
    # A user mistake: a clean message, no traceback, and nothing registered.
    raise pulumi.RunError(str(error)) from None

ssh_private_key = config.require_secret("sshPrivateKey") if stack.needs_ssh_key else None

# The provider is configured the standard way (kubernetes:kubeconfig / kubernetes:context);
# an explicit provider does not read that config by itself, so it is passed on here.
kubernetes_config = pulumi.Config("kubernetes")
kubeconfig = kubernetes_config.get_secret("kubeconfig")
kube_context = kubernetes_config.get("context")
provider = k8s.Provider("k8s", kubeconfig=kubeconfig, context=kube_context)
namespaces = declare_namespaces(stack, provider)
runtime_class = declare_runtime_class(stack, provider)

report = {}
for spec in stack.node_groups:
    group = GpuNodeGroup(
        spec.name,
        GpuNodeGroupArgs(
            spec=spec,
            device_plugin_namespace=namespaces[spec.device_plugin.namespace],
            verification_namespace=namespaces[spec.verification.namespace],
            runtime_class=runtime_class,
            ssh_private_key=ssh_private_key,
            kubeconfig=kubeconfig,
            kube_context=kube_context,
        ),
        opts=pulumi.ResourceOptions(providers={"kubernetes": provider}),
    )
    report[spec.name] = group.nodes

pulumi.export("nodeGroups", report)
