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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpu_nodes.config.checks import is_dns_label, is_dns_subdomain
from gpu_nodes.config.credentials import private_key_problem, pull_secret_problem
from gpu_nodes.config.device_plugin import MPS
from gpu_nodes.config.fields import BOOLEAN, LIST, MISSING, STRING, Check, Parse, Setting, setting, settings
from gpu_nodes.config.node_group import RUNTIME_CLASS_KEY, NodeGroupSpec
from gpu_nodes.config.preflight import SKIP_HOST_KEY_CHECK, host_key_missing
from gpu_nodes.config.problems import Problem, Problems, Refusal, Undisclosed
from gpu_nodes.config.reading import read_section
from gpu_nodes.constants import DEFAULT_RUNTIME_CLASS, NAMESPACE, PULL_SECRET_NAME, VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.errors import ConfigError
from gpu_nodes.vocabulary import GPU_RESOURCE


def _names_setting(name: str, help: str, argument: str, parse: Parse) -> Any:
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
        parse=parse,
    )


_HAND_OVER_REF = re.compile(
    r"((ClusterPolicy|GPUCluster)/[a-z0-9]([-a-z0-9.]*[a-z0-9])?|[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
)


def read_names(problems: Problems, key: str, raw: list[Any], problem: Callable[[str], str | None]) -> tuple[str, ...]:
    """A stack-level list of names, each once, sorted; `problem` says what is wrong with one."""
    names: list[str] = []
    for index, name in enumerate(raw):
        wrong = problem(name) if isinstance(name, str) else "expected a string"
        if wrong:
            problems.add(f"{key}[{index}]", name, wrong)
        elif name not in names:
            names.append(name)
    return tuple(sorted(names))


def read_hand_over(problems: Problems, key: str, raw: list[Any]) -> tuple[str, ...]:
    """Other device plugin installs the stack may share the cluster with, by reference."""

    def problem(ref: str) -> str | None:
        expected = "expected <namespace>/<DaemonSet name>, ClusterPolicy/<name> or GPUCluster/<name>"
        return None if _HAND_OVER_REF.fullmatch(ref) else expected

    return read_names(problems, key, raw, problem)


def read_namespaces(problems: Problems, key: str, raw: list[Any]) -> tuple[str, ...]:
    """Namespaces to reference, not create; whether a group uses each is the stack's to weigh."""
    return read_names(
        problems, key, raw, lambda name: None if is_dns_label(name) else "expected a namespace name (DNS-1123 label)"
    )


def read_runtime_class_name(problems: Problems, key: str, name: str) -> str | None:
    """A class's name; None for "" or "false" (no RuntimeClass: preflight then requires nvidia as the default runtime)."""
    if name in ("", "false"):
        return None
    if name == "true" or not is_dns_subdomain(name):
        problems.add(key, name, 'expected a RuntimeClass name (DNS-1123 subdomain), or "" / false to use no RuntimeClass')
        return None
    return name


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
        check=Check(lambda groups: len(groups) >= 1, "expected a list with at least one node group"),
        section=NodeGroupSpec,
        # The stack's RuntimeClass and pull Secret, which every group's pods name.
        complete=lambda stack: tuple(
            replace(group, runtime_class=stack.runtime_class_name, image_pull_secret=stack.pull_secret)
            for group in stack.node_groups
        ),
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
        parse=read_runtime_class_name,
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
        read_namespaces,
    )
    # Other device plugin installs the stack may share the cluster with (gpu_nodes/providers/coexistence.py).
    hand_over: tuple[str, ...] = _names_setting(
        "handOver",
        "other NVIDIA device plugin or DRA driver installs allowed on the cluster, kept off this stack's nodes: "
        '`<namespace>/<DaemonSet>`, `ClusterPolicy/<name>` or `GPUCluster/<name>` (see "Another device plugin on the cluster")',
        "hand_over",
        read_hand_over,
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

    def cross_checks(self) -> Iterator[Problem]:
        yield from _across_groups(self.node_groups)
        yield from _plain_gpu_request_problems(self.node_groups)
        yield from _compute_domain_problems(self.node_groups)
        yield from _runtime_class_problems(self)
        yield from _host_key_problems(self)
        used = {name for group in self.node_groups for name in (group.device_plugin.namespace, group.verification.namespace)}
        for name in self.existing_namespaces:
            if name not in used:
                yield Problem(EXISTING_NAMESPACES.key, name, f"no group uses it; the groups use {', '.join(sorted(used))}")

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


def read_stack(values: Mapping[str, Any], refuse: Refusal | None = None) -> StackSpec:
    """The stack from its settings by key (`gpu-nodes:nodeGroups`, ...); raises ConfigError naming
    every mistake. A secret's value is only looked at for whether it is given. `refuse`: the error
    for a mistake in a value another resource gives, found when it resolves (`Problems.refuse_later`)."""
    problems = Problems(refuse)
    given = {SSH_PRIVATE_KEY.key: "ssh_private_key_given", IMAGE_PULL_SECRET.key: "pull_secret"}
    secrets = {
        "ssh_private_key_given": values.get(SSH_PRIVATE_KEY.key) is not None,
        "pull_secret": PULL_SECRET_NAME if values.get(IMAGE_PULL_SECRET.key) is not None else None,
    }
    settings_read = {key: _as_config(key, value) for key, value in values.items() if key not in given}
    # Warnings are collected while reading: all of it first, then the spec with them.
    built = read_section(problems, "", settings_read, StackSpec, given=secrets)
    if built is None:
        raise ConfigError(problems.problems)
    return replace(built, warnings=tuple(problems.warnings))


def _as_config(key: str, value: Any) -> Any:
    """A setting as stack config writes it: a program's tuples and mappings as lists and dicts, and
    the strings Pulumi's config hands over for YAML's true and false as booleans where a boolean
    is meant (and `false` for the RuntimeClass as its "none")."""
    if key == CREATE_RUNTIME_CLASS.key:
        return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value
    if key == RUNTIME_CLASS.key and value is False:
        return ""
    if isinstance(value, tuple):
        value = list(value)
    if key == NODE_GROUPS.key and isinstance(value, list):
        # A program may pass each group as any mapping; the reader names whatever is no group.
        return [dict(item) if isinstance(item, Mapping) else item for item in value]
    return value


def parse_stack(node_groups: Any, refuse: Refusal | None = None, **arguments: Any) -> StackSpec:
    """`read_stack`, the settings given as `GpuFleetArgs` names them (`runtime_class=...`)."""
    values = {NODE_GROUPS.key: node_groups, **{ARGUMENTS[name].key: value for name, value in arguments.items()}}
    return read_stack(values, refuse)


def _across_groups(groups: tuple[NodeGroupSpec, ...]) -> Iterator[Problem]:
    """Names, nodes, priority classes and namespaces the groups cannot share."""
    key = NODE_GROUPS.key
    seen_groups: dict[str, int] = {}
    seen_nodes: dict[str, str] = {}
    seen_priority: dict[str, str] = {}
    namespace_use: dict[str, str] = {}
    for index, group in enumerate(groups):
        if group.name in seen_groups:
            yield Problem(
                f"{key}[{index}].name",
                group.name,
                f"group names must be unique (also used by nodeGroups[{seen_groups[group.name]}])",
            )
        seen_groups.setdefault(group.name, index)
        for node in group.nodes:
            owner = seen_nodes.setdefault(node.name, group.name)
            if owner != group.name:
                yield Problem(
                    f"{key}[{index}].nodes", node.name, f"a node may belong to one group only (already in group {owner!r})"
                )
        pc_name = group.priority_class.name
        for taken in (pc_name, pc_name + VERIFICATION_PRIORITY_SUFFIX):
            pc_owner = seen_priority.setdefault(taken, group.name)
            if pc_owner != group.name:
                yield Problem(f"{key}[{index}].priorityClass.name", pc_name, f"{taken!r} is already used by group {pc_owner!r}")
                break
        # One namespace cannot be both privileged (plugin) and restricted (verification).
        for namespace, use in ((group.device_plugin.namespace, "devicePlugin"), (group.verification.namespace, "verification")):
            other = namespace_use.setdefault(namespace, use)
            if other != use:
                yield Problem(
                    f"{key}[{index}].{use}.namespace",
                    namespace,
                    "the device plugin namespace (Pod Security privileged) and the verification namespace "
                    "(Pod Security restricted) must differ",
                )


def _plain_gpu_request_problems(groups: tuple[NodeGroupSpec, ...]) -> Iterator[Problem]:
    """What a tenant's plain `nvidia.com/gpu` pod gets, where a DRA group's DeviceClass serves that name
    (`dra.extendedResourceName`). The DeviceClass `gpu.nvidia.com` is one per cluster and selects every
    GPU of the driver, whichever group's node publishes it: the DRA groups agree, or a group that did not
    ask would serve plain pods too. On a node that advertises `nvidia.com/gpu` itself the scheduler gives
    the pod the device plugin's (kube-scheduler `filterExtendedResources`: DRA only where the node's
    allocatable has none), so a device plugin group beside it must mean a whole GPU by the name too."""
    key = NODE_GROUPS.key
    asking = [(index, group) for index, group in enumerate(groups) if group.uses_dra and group.dra.extended_resource_name]
    if not asking:
        return
    first, first_group = asking[0]
    named = f"{key}[{first}].dra.extendedResourceName ({first_group.name})"
    for index, group in enumerate(groups):
        if group.uses_dra and not group.dra.extended_resource_name:
            yield Problem(
                f"{key}[{index}].dra.extendedResourceName",
                False,
                f"{named} is true: the DeviceClass gpu.nvidia.com it sets is the cluster's one for every DRA group, "
                "so a plain nvidia.com/gpu pod could get this group's GPUs too; set it alike on every DRA group",
            )
        elif not group.uses_dra and (meaning := _plugin_gpu_meaning(group)):
            setting_key, value, what = meaning
            yield Problem(
                f"{key}[{index}].devicePlugin.{setting_key}",
                value,
                f"here nvidia.com/gpu is {what}, while with {named} true a plain nvidia.com/gpu pod gets a whole GPU "
                "on a DRA node: the same request would mean two things; keep this group's nvidia.com/gpu a whole GPU, "
                "or set extendedResourceName false",
            )


def _compute_domain_problems(groups: tuple[NodeGroupSpec, ...]) -> Iterator[Problem]:
    """The DRA driver's ComputeDomains run one controller per cluster, in one namespace, where it makes every
    ComputeDomain's IMEX daemons (its chart's `NAMESPACE`: kubernetes-sigs/dra-driver-nvidia-gpu
    templates/controller.yaml): the stack runs it in the namespace of its groups that turn them on, which must be one."""
    key = NODE_GROUPS.key
    on = [(index, group) for index, group in enumerate(groups) if group.uses_dra and group.dra.compute_domains]
    if not on:
        return
    first, first_group = on[0]
    for index, group in on[1:]:
        if group.device_plugin.namespace != first_group.device_plugin.namespace:
            yield Problem(
                f"{key}[{index}].devicePlugin.namespace",
                group.device_plugin.namespace,
                f"{key}[{first}] ({first_group.name}) turns dra.computeDomains on in namespace "
                f"{first_group.device_plugin.namespace!r}: the driver's one ComputeDomain controller runs there and makes "
                "every domain's IMEX daemons there; give the groups with ComputeDomains one devicePlugin.namespace",
            )


def _plugin_gpu_meaning(group: NodeGroupSpec) -> tuple[str, Any, str] | None:
    """The device plugin setting under which a group's `nvidia.com/gpu` is not a whole GPU (its key under
    devicePlugin, its value) and what the name then means; None where it is a whole GPU. Replicas renamed
    `nvidia.com/gpu.shared` (`renameByDefault`) leave `nvidia.com/gpu` unclaimed there."""
    plugin = group.device_plugin
    sharing = plugin.sharing
    if sharing.shares and sharing.resource == GPU_RESOURCE:
        how = "MPS" if sharing.strategy == MPS else "time-sliced"
        return sharing.replicas_key, sharing.replicas, f"one of {sharing.replicas} {how} shares of a GPU"
    if plugin.mig_strategy == "single":
        return "migStrategy", plugin.mig_strategy, "a MIG device (migStrategy single)"
    return None


def _runtime_class_problems(stack: StackSpec) -> Iterator[Problem]:
    """What the stack's RuntimeClass setting leaves the groups and itself."""
    if stack.create_runtime_class is True and stack.runtime_class_name is None:
        yield Problem(CREATE_RUNTIME_CLASS.key, True, f'nothing to create: {RUNTIME_CLASS_KEY} is off ("" or false)')
    if stack.runtime_class_name is not None:
        return
    for index, group in enumerate(stack.node_groups):
        if group.gpu_access in ("runtimeClass", "cdi") and not group.uses_dra:
            # With cdi the plugin itself needs the class: without nvidia as the default it has no NVML otherwise.
            who = "tenants must name" if group.gpu_access == "runtimeClass" else "the device plugin runs under"
            yield Problem(
                f"{NODE_GROUPS.key}[{index}].gpuAccess",
                group.gpu_access,
                f"needs the RuntimeClass {who}, but {RUNTIME_CLASS_KEY} is off; set it, or use defaultRuntime",
            )
        elif group.uses_dra and group.metrics.enabled:
            # The exporter asks for no GPU: as the GPU Operator runs it, the nvidia runtime hands it every GPU.
            yield Problem(
                f"{NODE_GROUPS.key}[{index}].metrics.enabled",
                True,
                f"needs the RuntimeClass dcgm-exporter runs under (nvidia is not a DRA node's default runtime), but "
                f"{RUNTIME_CLASS_KEY} is off; set it",
            )


def _host_key_problems(stack: StackSpec) -> Iterator[Problem]:
    """Every machine preflight reaches, and its bastion, with a pinned host key, unless the stack
    accepts any."""
    if stack.insecure_skip_host_key_check:
        return
    for index, group in enumerate(stack.node_groups):
        if not group.preflight.enabled:
            continue
        here = f"{NODE_GROUPS.key}[{index}]"
        for node_index, node in enumerate(group.nodes):
            if node.host_key is None:
                yield Problem(f"{here}.nodes[{node_index}].hostKey", MISSING, host_key_missing())
        if group.preflight.proxy is not None and group.preflight.proxy.host_key is None:
            yield Problem(f"{here}.preflight.proxy.hostKey", MISSING, host_key_missing())
