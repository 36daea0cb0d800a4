"""The stack's own settings beside its node groups, and the spec of a whole stack.

`STACK_SETTINGS` lists them in the README's order; gpu_nodes/config/parse.py and
gpu_nodes/config/stack.py read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_nodes.config.fields import BOOLEAN, LIST, STRING, Setting
from gpu_nodes.config.specs import NodeGroupSpec
from gpu_nodes.constants import DEFAULT_RUNTIME_CLASS, NAMESPACE, PULL_SECRET_NAME


@dataclass(frozen=True)
class RuntimeClassSpec:
    name: str
    create: bool  # False: the class exists already (someone else's); we only name it


@dataclass(frozen=True)
class StackSpec:
    node_groups: tuple[NodeGroupSpec, ...]
    insecure_skip_host_key_check: bool
    runtime_class: RuntimeClassSpec | None = None
    # Namespaces that exist already: referenced, never created or deleted (gpu_nodes/providers/claims.py).
    existing_namespaces: tuple[str, ...] = ()
    # Other device plugin installs the stack may share the cluster with (gpu_nodes/providers/coexistence.py).
    hand_over: tuple[str, ...] = ()
    # Settings given that have no effect (preflight settings with preflight off): warned about.
    warnings: tuple[str, ...] = ()

    @property
    def needs_ssh_key(self) -> bool:
        return any(group.preflight.enabled for group in self.node_groups)


# The stack's own keys, in the README's order. Those with `pulumi_type` are declared in
# Pulumi.yaml's `config:` too; the others cannot be (Pulumi.yaml says why).
NODE_GROUPS = Setting(f"{NAMESPACE}:nodeGroups", LIST, "list", "one entry per node group (below)", argument="node_groups")
SSH_PRIVATE_KEY = Setting(
    f"{NAMESPACE}:sshPrivateKey",
    STRING,
    "secret string",
    "private key for the machines (and the bastion)",
    default_text="required when any group runs preflight",
    argument="ssh_private_key",
)
INSECURE_SKIP_HOST_KEY_CHECK = Setting(
    f"{NAMESPACE}:insecureSkipHostKeyCheck",
    BOOLEAN,
    "bool",
    'accept any SSH host key for nodes without `hostKey` (see "Host keys")',
    default=False,
    pulumi_type="boolean",
    pulumi_description="Accept any SSH host key for nodes without a pinned hostKey. "
    "Leaves preflight open to a man in the middle.",
    argument="insecure_skip_host_key_check",
)
RUNTIME_CLASS = Setting(
    f"{NAMESPACE}:runtimeClass",
    STRING,
    "string, or `false`",
    "the RuntimeClass the device plugin names, and tenants' pods with `gpuAccess: runtimeClass`; "
    '`""` or `false`: none (see "How tenants get their GPUs")',
    default=DEFAULT_RUNTIME_CLASS,
    argument="runtime_class",
)
CREATE_RUNTIME_CLASS = Setting(
    f"{NAMESPACE}:createRuntimeClass",
    BOOLEAN,
    "bool",
    "create the class (handler `nvidia`), or only name one that exists already",
    default=None,
    default_text="`true` for `nvidia`, `false` for another name",
    argument="create_runtime_class",
)
HAND_OVER = Setting(
    f"{NAMESPACE}:handOver",
    LIST,
    "list of strings",
    "other NVIDIA device plugin or DRA driver installs allowed on the cluster, kept off this stack's nodes: "
    '`<namespace>/<DaemonSet>` or `ClusterPolicy/<name>` (see "Another device plugin on the cluster")',
    default=(),
    default_text="none",
    argument="hand_over",
)
IMAGE_PULL_SECRET = Setting(
    f"{NAMESPACE}:imagePullSecret",
    STRING,
    "secret string",
    f"a registry login (`.dockerconfigjson`, as `docker login` writes `~/.docker/config.json`): the stack puts it in "
    f'a Secret `{PULL_SECRET_NAME}` in each namespace it uses, before the pods that name it (see "Private registries")',
    default=None,
    default_text="none",
    argument="image_pull_secret",
)
EXISTING_NAMESPACES = Setting(
    f"{NAMESPACE}:existingNamespaces",
    LIST,
    "list of strings",
    "namespaces the groups use that exist already: the stack puts its objects in them but never creates or "
    'deletes them (see "Objects the stack did not create")',
    default=(),
    default_text="none",
    argument="existing_namespaces",
)
KUBECONFIG = Setting(
    "kubernetes:kubeconfig",
    STRING,
    "secret string",
    "path or contents of the kubeconfig",
    default=None,
    default_text="`$KUBECONFIG` / `~/.kube/config`",
)
KUBE_CONTEXT = Setting("kubernetes:context", STRING, "string", "kubeconfig context", default=None, default_text="current context")
STACK_SETTINGS = (
    NODE_GROUPS,
    SSH_PRIVATE_KEY,
    INSECURE_SKIP_HOST_KEY_CHECK,
    RUNTIME_CLASS,
    CREATE_RUNTIME_CLASS,
    EXISTING_NAMESPACES,
    HAND_OVER,
    IMAGE_PULL_SECRET,
    KUBECONFIG,
    KUBE_CONTEXT,
)
