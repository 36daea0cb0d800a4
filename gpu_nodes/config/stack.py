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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_nodes.config.checks import is_dns_label, is_dns_subdomain
from gpu_nodes.config.credentials import private_key_problem, pull_secret_problem
from gpu_nodes.config.fields import BOOLEAN, LIST, STRING, Setting, setting, settings
from gpu_nodes.config.node_group import RUNTIME_CLASS_KEY, NodeGroupSpec, read_group
from gpu_nodes.config.preflight import SKIP_HOST_KEY_CHECK
from gpu_nodes.config.reading import Problems, Section, Undisclosed
from gpu_nodes.constants import DEFAULT_RUNTIME_CLASS, NAMESPACE, PULL_SECRET_NAME, VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.errors import ConfigError


def _names_setting(name: str, help: str, argument: str) -> Any:
    """A stack-level list of names, none by default."""
    return setting(
        f"{NAMESPACE}:{name}",
        LIST,
        "list of strings",
        help,
        default=(),
        default_text="none",
        argument=argument,
        annotation="list[str]",
    )


@dataclass(frozen=True)
class RuntimeClassSpec:
    name: str
    create: bool  # False: the class exists already (someone else's); we only name it


@dataclass(frozen=True)
class StackSpec:
    """A whole stack. Each field below with a `setting` is a stack setting, declared once, in the
    table's order: `GpuFleetArgs` has a field named as its `argument`, and the stack config's
    reading (`GpuFleetArgs.from_stack_config`), this reader, docs/configuration.md's table and Pulumi.yaml
    (those with `pulumi_type`) all follow the declarations."""

    node_groups: tuple[NodeGroupSpec, ...] = setting(
        f"{NAMESPACE}:nodeGroups",
        LIST,
        "list",
        "one entry per node group (below)",
        argument="node_groups",
        annotation="list[NodeGroup]",
    )
    # Whether it is given: the key itself goes to the SSH sessions only, as a secret.
    ssh_private_key_given: bool = setting(
        f"{NAMESPACE}:sshPrivateKey",
        STRING,
        "secret string",
        "private key for the machines (and the bastion)",
        default=None,
        default_text="required when any group runs preflight",
        argument="ssh_private_key",
        secret=True,
    )
    insecure_skip_host_key_check: bool = setting(
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
    # None: the stack uses no RuntimeClass.
    runtime_class_name: str | None = setting(
        RUNTIME_CLASS_KEY,
        STRING,
        "string, or `false`",
        "the RuntimeClass the device plugin names, and tenants' pods with `gpuAccess: runtimeClass`; "
        '`""` or `false`: none (see "How tenants get their GPUs")',
        default=DEFAULT_RUNTIME_CLASS,
        argument="runtime_class",
    )
    # None: as the name decides (see `runtime_class`).
    create_runtime_class: bool | None = setting(
        f"{NAMESPACE}:createRuntimeClass",
        BOOLEAN,
        "bool",
        "create the class (handler `nvidia`), or only name one that exists already",
        default=None,
        default_text="`true` for `nvidia`, `false` for another name",
        argument="create_runtime_class",
    )
    # Referenced, never created or deleted (gpu_nodes/providers/claims.py).
    existing_namespaces: tuple[str, ...] = _names_setting(
        "existingNamespaces",
        "namespaces the groups use that exist already: the stack puts its objects in them but never creates or "
        'deletes them (see "Objects the stack did not create")',
        "existing_namespaces",
    )
    # Other device plugin installs the stack may share the cluster with (gpu_nodes/providers/coexistence.py).
    hand_over: tuple[str, ...] = _names_setting(
        "handOver",
        "other NVIDIA device plugin or DRA driver installs allowed on the cluster, kept off this stack's nodes: "
        '`<namespace>/<DaemonSet>`, `ClusterPolicy/<name>` or `GPUCluster/<name>` (see "Another device plugin on the cluster")',
        "hand_over",
    )
    # The Secret that holds the login, which every pod names; None without a login.
    pull_secret: str | None = setting(
        f"{NAMESPACE}:imagePullSecret",
        STRING,
        "secret string",
        f"a registry login (`.dockerconfigjson`, as `docker login` writes `~/.docker/config.json`): the stack puts it "
        f'in a Secret `{PULL_SECRET_NAME}` in each namespace it uses, before the pods that name it (see "Private '
        'registries")',
        default=None,
        default_text="none",
        argument="image_pull_secret",
        secret=True,
    )
    # Settings given that have no effect (preflight settings with preflight off): warned about.
    warnings: tuple[str, ...] = ()

    @property
    def runtime_class(self) -> RuntimeClassSpec | None:
        """The class, if any: `nvidia` is created unless createRuntimeClass is false; another name
        (the GPU Operator's `nvidia-cdi`, say) is only named unless createRuntimeClass is true."""
        if self.runtime_class_name is None:
            return None
        name, create = self.runtime_class_name, self.create_runtime_class
        return RuntimeClassSpec(name, name == DEFAULT_RUNTIME_CLASS if create is None else create)

    @property
    def needs_ssh_key(self) -> bool:
        return any(group.preflight.enabled for group in self.node_groups)

    @property
    def missing_ssh_key(self) -> str | None:
        """What to say when a group runs preflight and no key is given; None when nothing is missing."""
        if self.needs_ssh_key and not self.ssh_private_key_given:
            return f"{SSH_PRIVATE_KEY.key}: not set; a group runs preflight, which logs in with it"
        return None


_DECLARED = dict(settings(StackSpec))
NODE_GROUPS = _DECLARED["node_groups"]
SSH_PRIVATE_KEY = _DECLARED["ssh_private_key_given"]
INSECURE_SKIP_HOST_KEY_CHECK = _DECLARED["insecure_skip_host_key_check"]
RUNTIME_CLASS = _DECLARED["runtime_class_name"]
CREATE_RUNTIME_CLASS = _DECLARED["create_runtime_class"]
EXISTING_NAMESPACES = _DECLARED["existing_namespaces"]
HAND_OVER = _DECLARED["hand_over"]
IMAGE_PULL_SECRET = _DECLARED["pull_secret"]
# The Kubernetes provider's own settings: documented beside ours, read by the provider.
KUBECONFIG = Setting(
    "kubernetes:kubeconfig",
    STRING,
    "secret string",
    "path or contents of the kubeconfig",
    default=None,
    default_text="`$KUBECONFIG` / `~/.kube/config`",
    secret=True,
)
KUBE_CONTEXT = Setting("kubernetes:context", STRING, "string", "kubeconfig context", default=None, default_text="current context")
# Every stack setting, in the order of docs/configuration.md's table.
STACK_SETTINGS = (*_DECLARED.values(), KUBECONFIG, KUBE_CONTEXT)
# The stack's settings as `GpuFleetArgs` names them.
ARGUMENTS = {s.argument: s for s in _DECLARED.values() if s.argument}


# The secret settings whose text has a shape to check (gpu_nodes/config/credentials.py).
SECRET_SHAPES = ((SSH_PRIVATE_KEY, private_key_problem), (IMAGE_PULL_SECRET, pull_secret_problem))


def add_secret_problems(problems: Problems, value_of: Callable[[Setting], Any]) -> None:
    """Each secret given as text that is not what it must be, named by its length only (an
    Output is checked by no one here)."""
    for s, problem in SECRET_SHAPES:
        value = value_of(s)
        wrong = problem(value) if isinstance(value, str) else None
        if wrong:
            problems.add(s.key, Undisclosed(len(value)), wrong)


def read_stack(values: Mapping[str, Any]) -> StackSpec:
    """The stack from its settings by key (`gpu-nodes:nodeGroups`, ...); raises ConfigError naming
    every mistake. A secret's value is only looked at for whether it is given."""
    problems = Problems()
    stack = Section(
        problems,
        "",
        dict(values),
        StackSpec,
        hooks={
            "node_groups": _read_groups,
            "ssh_private_key_given": lambda st, s: st.fields.raw.get(s.key) is not None,
            "runtime_class_name": _read_runtime_class_name,
            "create_runtime_class": _read_create_runtime_class,
            "existing_namespaces": _read_existing_namespaces,
            "hand_over": _read_hand_over,
            "pull_secret": lambda st, s: PULL_SECRET_NAME if st.fields.raw.get(s.key) is not None else None,
        },
    )
    # Warnings are collected while reading: all of it first, then the spec with them.
    stack.read_all()
    built = stack.build(warnings=tuple(problems.warnings))
    if built is None:
        raise ConfigError(problems.problems)
    return built


def parse_stack(node_groups: Any, **arguments: Any) -> StackSpec:
    """`read_stack`, the settings given as `GpuFleetArgs` names them (`runtime_class=...`)."""
    return read_stack({NODE_GROUPS.key: node_groups, **{ARGUMENTS[name].key: value for name, value in arguments.items()}})


def _read_groups(stack: Section[StackSpec], s: Setting) -> tuple[NodeGroupSpec, ...]:
    # What the groups depend on first, so that its problems come first.
    insecure = stack["insecure_skip_host_key_check"]
    stack["create_runtime_class"]
    runtime_class = stack["runtime_class_name"]
    pull_secret = stack["pull_secret"]
    raw = stack.fields.raw.get(s.key)
    if not isinstance(raw, (list, tuple)) or not raw:
        stack.problems.add(s.key, raw, "expected a list with at least one node group")
        return ()
    groups = []
    for index, item in enumerate(raw):
        # A program may pass each group as any mapping; the reader names whatever is no group.
        item = dict(item) if isinstance(item, Mapping) else item
        group = read_group(stack.problems, f"{s.key}[{index}]", item, insecure is True, runtime_class, pull_secret)
        if group is not None:
            groups.append(group)
    _check_across_groups(stack.problems, s.key, groups)
    return tuple(groups)


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
    r"((ClusterPolicy|GPUCluster)/[a-z0-9]([-a-z0-9.]*[a-z0-9])?|[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
)


def _read_hand_over(stack: Section[StackSpec], s: Setting) -> tuple[str, ...]:
    """Other device plugin installs the stack may share the cluster with, by reference."""

    def problem(ref: str) -> str | None:
        expected = "expected <namespace>/<DaemonSet name>, ClusterPolicy/<name> or GPUCluster/<name>"
        return None if _HAND_OVER_REF.fullmatch(ref) else expected

    return _read_names(stack, s, "a list such as [kube-system/nvdp-nvidia-device-plugin]", problem)


def _read_existing_namespaces(stack: Section[StackSpec], s: Setting) -> tuple[str, ...]:
    """Namespaces to reference, not create: each one a group uses."""
    groups = stack["node_groups"]
    used = {name for group in groups for name in (group.device_plugin.namespace, group.verification.namespace)}

    def problem(name: str) -> str | None:
        if not is_dns_label(name):
            return "expected a namespace name (DNS-1123 label)"
        return f"no group uses it; the groups use {', '.join(sorted(used))}" if groups and name not in used else None

    return _read_names(stack, s, "a list of namespace names", problem)


def _read_names(
    stack: Section[StackSpec], s: Setting, expected: str, problem: Callable[[str], str | None]
) -> tuple[str, ...]:
    """A stack-level list of names, each once, sorted; `problem` says what is wrong with one."""
    problems, key, raw = stack.problems, s.key, stack.fields.raw.get(s.key)
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
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


def _read_runtime_class_name(stack: Section[StackSpec], s: Setting) -> str | None:
    """A class's name; None for "" or false (no RuntimeClass: preflight then requires nvidia as the default runtime)."""
    name = stack.fields.raw.get(s.key)
    if name is None:
        return DEFAULT_RUNTIME_CLASS
    if _turned_off(name):
        return None
    if not isinstance(name, str) or name == "true" or not is_dns_subdomain(name):
        stack.problems.add(s.key, name, 'expected a RuntimeClass name (DNS-1123 subdomain), or "" / false to use no RuntimeClass')
        return None
    return name


def _read_create_runtime_class(stack: Section[StackSpec], s: Setting) -> bool | None:
    # Stack config reaches the program as strings: YAML `false` arrives as "false".
    create = _boolean_text(stack.fields.raw.get(s.key))
    if create is not None and not isinstance(create, bool):
        stack.problems.add(s.key, create, "expected true or false")
        return None
    if create is True and _turned_off(stack.fields.raw.get(RUNTIME_CLASS_KEY)):
        stack.problems.add(s.key, create, f'nothing to create: {RUNTIME_CLASS_KEY} is off ("" or false)')
    return bool(create) if create is not None else None


def _turned_off(name: Any) -> bool:
    return name is False or name in ("", "false")


def _boolean_text(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value
