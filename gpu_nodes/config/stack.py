"""The stack's own settings (`gpu-nodes:*` beside the node groups: the SSH key, host key checking,
the RuntimeClass, namespaces that exist already, other device plugin installs, the registry
login), the spec of a whole stack, and its reader, which reads each group and the checks across
groups.

Everything here is pure: it takes plain data (as `pulumi.Config.require_object` returns it)
and either returns specs or raises `ConfigError` listing every problem found, so that a bad
stack fails before a single resource is registered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpu_nodes.config.checks import is_dns_label, is_dns_subdomain
from gpu_nodes.config.fields import BOOLEAN, LIST, STRING, Problems, Setting
from gpu_nodes.config.node_group import RUNTIME_CLASS_KEY, NodeGroupSpec, read_group
from gpu_nodes.config.preflight import SKIP_HOST_KEY_CHECK
from gpu_nodes.constants import DEFAULT_RUNTIME_CLASS, NAMESPACE, PULL_SECRET_NAME, VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.errors import ConfigError


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
    SKIP_HOST_KEY_CHECK,
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
    RUNTIME_CLASS_KEY,
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


def parse_stack(
    node_groups: Any,
    insecure_skip_host_key_check: Any = False,
    runtime_class: Any = None,
    create_runtime_class: Any = None,
    existing_namespaces: Any = None,
    has_pull_secret: bool = False,
    hand_over: Any = None,
) -> StackSpec:
    """Validate the whole stack config; raise ConfigError with every problem found.

    `runtime_class` and `create_runtime_class` are the raw strings of `gpu-nodes:runtimeClass`
    and `gpu-nodes:createRuntimeClass` (None when unset), see `parse_runtime_class`.
    """
    problems = Problems()
    key = NODE_GROUPS.key
    groups: list[NodeGroupSpec] = []
    if insecure_skip_host_key_check is None:  # not set
        insecure_skip_host_key_check = False
    if not INSECURE_SKIP_HOST_KEY_CHECK.kind.accepts(insecure_skip_host_key_check):
        problems.add(INSECURE_SKIP_HOST_KEY_CHECK.key, insecure_skip_host_key_check, "expected true or false")
        insecure_skip_host_key_check = False
    runtime = read_runtime_class(problems, runtime_class, create_runtime_class)
    if not isinstance(node_groups, list) or not node_groups:
        problems.add(key, node_groups, "expected a list with at least one node group")
    else:
        for index, raw in enumerate(node_groups):
            group = read_group(
                problems, f"{key}[{index}]", raw, insecure_skip_host_key_check, runtime.name if runtime else None, has_pull_secret
            )
            if group is not None:
                groups.append(group)
        _check_across_groups(problems, key, groups)
    existing = parse_existing_namespaces(problems, existing_namespaces, groups)
    handed_over = parse_hand_over(problems, hand_over)
    if problems.problems:
        raise ConfigError(problems.problems)
    return StackSpec(
        node_groups=tuple(groups),
        insecure_skip_host_key_check=insecure_skip_host_key_check,
        runtime_class=runtime,
        existing_namespaces=existing,
        hand_over=handed_over,
        warnings=tuple(problems.warnings),
    )


def _check_across_groups(problems: Problems, key: str, groups: list[NodeGroupSpec]) -> None:
    seen_groups: dict[str, int] = {}
    seen_nodes: dict[str, str] = {}
    seen_priority: dict[str, str] = {}
    namespace_use: dict[str, str] = {}
    for index, group in enumerate(groups):
        if group.name in seen_groups:
            problems.add(
                f"{key}[{index}].name",
                group.name,
                f"group names must be unique (also used by nodeGroups[{seen_groups[group.name]}])",
            )
        seen_groups.setdefault(group.name, index)
        for node in group.nodes:
            owner = seen_nodes.setdefault(node.name, group.name)
            if owner != group.name:
                problems.add(
                    f"{key}[{index}].nodes", node.name, f"a node may belong to one group only (already in group {owner!r})"
                )
        pc_name = group.priority_class.name
        for taken in (pc_name, pc_name + VERIFICATION_PRIORITY_SUFFIX):
            pc_owner = seen_priority.setdefault(taken, group.name)
            if pc_owner != group.name:
                problems.add(f"{key}[{index}].priorityClass.name", pc_name, f"{taken!r} is already used by group {pc_owner!r}")
                break
        # One namespace cannot be both privileged (plugin) and restricted (verification).
        for namespace, use in ((group.device_plugin.namespace, "devicePlugin"), (group.verification.namespace, "verification")):
            other = namespace_use.setdefault(namespace, use)
            if other != use:
                problems.add(
                    f"{key}[{index}].{use}.namespace",
                    namespace,
                    "the device plugin namespace (Pod Security privileged) and the verification namespace "
                    "(Pod Security restricted) must differ",
                )


_HAND_OVER_REF = re.compile(
    r"(ClusterPolicy/[a-z0-9]([-a-z0-9.]*[a-z0-9])?|[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
)


def parse_hand_over(problems: Problems, raw: Any) -> tuple[str, ...]:
    """Other device plugin installs the stack may share the cluster with, by reference."""

    def problem(ref: str) -> str | None:
        return None if _HAND_OVER_REF.fullmatch(ref) else "expected <namespace>/<DaemonSet name> or ClusterPolicy/<name>"

    return _read_names(problems, HAND_OVER.key, raw, "a list such as [kube-system/nvdp-nvidia-device-plugin]", problem)


def parse_existing_namespaces(problems: Problems, raw: Any, groups: list[NodeGroupSpec]) -> tuple[str, ...]:
    """Namespaces to reference, not create: each one a group uses."""
    used = {name for group in groups for name in (group.device_plugin.namespace, group.verification.namespace)}

    def problem(name: str) -> str | None:
        if not is_dns_label(name):
            return "expected a namespace name (DNS-1123 label)"
        return f"no group uses it; the groups use {', '.join(sorted(used))}" if groups and name not in used else None

    return _read_names(problems, EXISTING_NAMESPACES.key, raw, "a list of namespace names", problem)


def _read_names(problems: Problems, key: str, raw: Any, expected: str, problem: Callable[[str], str | None]) -> tuple[str, ...]:
    """A stack-level list of names, each once, sorted; `problem` says what is wrong with one."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, f"expected {expected}")
        return ()
    names: list[str] = []
    for index, name in enumerate(raw):
        wrong = problem(name) if isinstance(name, str) else "expected a string"
        if wrong:
            problems.add(f"{key}[{index}]", name, wrong)
        elif name not in names:
            names.append(name)
    return tuple(sorted(names))


def parse_runtime_class(name: Any, create: Any = None) -> RuntimeClassSpec | None:
    """`gpu-nodes:runtimeClass` / `gpu-nodes:createRuntimeClass`; None when the class is off.

    - unset: the class `nvidia` (handler `nvidia`), created by this stack;
    - another name: a class that exists already (the GPU Operator's `nvidia-cdi`, say): named,
      not created, unless createRuntimeClass is true;
    - "" or false: no RuntimeClass; preflight then requires nvidia as the default runtime.
    createRuntimeClass: false with `nvidia` names an existing `nvidia` class instead of creating
    (and on destroy deleting) it.
    """
    problems = Problems()
    spec = read_runtime_class(problems, name, create)
    if problems.problems:
        raise ConfigError(problems.problems)
    return spec


def read_runtime_class(problems: Problems, name: Any, create: Any) -> RuntimeClassSpec | None:
    name_key, create_key = RUNTIME_CLASS.key, CREATE_RUNTIME_CLASS.key
    # Stack config reaches the program as strings: YAML `false` arrives as "false".
    create = _boolean_text(create)
    if create is not None and not isinstance(create, bool):
        problems.add(create_key, create, "expected true or false")
        create = None
    if name is None:
        name = DEFAULT_RUNTIME_CLASS
    if name is False or name in ("", "false"):
        if create is True:
            problems.add(create_key, create, f'nothing to create: {name_key} is off ("" or false)')
        return None
    if not isinstance(name, str) or name == "true" or not is_dns_subdomain(name):
        problems.add(name_key, name, 'expected a RuntimeClass name (DNS-1123 subdomain), or "" / false to use no RuntimeClass')
        return None
    return RuntimeClassSpec(name=name, create=create if create is not None else name == DEFAULT_RUNTIME_CLASS)


def _boolean_text(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value
