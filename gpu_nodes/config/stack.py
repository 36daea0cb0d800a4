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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpu_nodes.config.checks import is_dns_label, is_dns_subdomain
from gpu_nodes.config.credentials import private_key_problem, pull_secret_problem
from gpu_nodes.config.fields import Check, Parse, Setting, section, setting, settings
from gpu_nodes.config.node_group import RUNTIME_CLASS_KEY, NodeGroupSpec
from gpu_nodes.config.preflight import SKIP_HOST_KEY_CHECK, host_key_missing
from gpu_nodes.config.problems import MISSING, Problem, Problems, Refusal, Undisclosed
from gpu_nodes.config.reading import cross_check, read_fields
from gpu_nodes.constants import DEFAULT_RUNTIME_CLASS, NAMESPACE, PULL_SECRET_NAME, VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.errors import ConfigError
from gpu_nodes.vocabulary import GPU_RESOURCE, MPS


def _names_setting(name: str, help: str, parse: Parse[tuple[str, ...]]) -> tuple[str, ...]:
    """A stack-level list of names, none by default."""
    return setting(f"{NAMESPACE}:{name}", help, default=(), default_text="none", written=Sequence[str], parse=parse)


_HAND_OVER_REF = re.compile(
    r"((ClusterPolicy|GPUCluster)/[a-z0-9]([-a-z0-9.]*[a-z0-9])?|[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
)


def read_names(problems: Problems, key: str, raw: list[object], problem: Callable[[str], str | None]) -> tuple[str, ...]:
    """A stack-level list of names, each once, sorted; `problem` says what is wrong with one."""
    names: list[str] = []
    for index, name in enumerate(raw):
        wrong = problem(name) if isinstance(name, str) else "expected a string"
        if wrong or not isinstance(name, str):
            problems.add(f"{key}[{index}]", name, wrong or "expected a string")
        elif name not in names:
            names.append(name)
    return tuple(sorted(names))


def read_hand_over(problems: Problems, key: str, raw: list[object]) -> tuple[str, ...]:
    """Other device plugin installs the stack may share the cluster with, by reference."""

    def problem(ref: str) -> str | None:
        expected = "expected <namespace>/<DaemonSet name>, ClusterPolicy/<name> or GPUCluster/<name>"
        return None if _HAND_OVER_REF.fullmatch(ref) else expected

    return read_names(problems, key, raw, problem)


def read_namespaces(problems: Problems, key: str, raw: list[object]) -> tuple[str, ...]:
    """Namespaces to reference, not create; whether a group uses each is the stack's to weigh."""
    return read_names(
        problems, key, raw, lambda name: None if is_dns_label(name) else "expected a namespace name (DNS-1123 label)"
    )


def read_runtime_class_name(problems: Problems, key: str, name: str) -> str | None:
    """A class's name; None for "" or "false" (no RuntimeClass: preflight then requires nvidia as the
    default runtime)."""
    if name in ("", "false"):
        return None
    if name == "true" or not is_dns_subdomain(name):
        problems.add(key, name, 'expected a RuntimeClass name (DNS-1123 subdomain), or "" / false to use no RuntimeClass')
        return None
    return name


def is_given(problems: Problems, key: str, secret: object) -> bool:
    """Whether a secret is given: its text (or a secret Output) goes to where it is used alone, and its shape
    is checked by its length only (`add_secret_problems`)."""
    return secret is not None


@dataclass(frozen=True)
class RuntimeClassSpec:
    name: str
    create: bool  # False: the class exists already (someone else's); we only name it


@dataclass(frozen=True)
class Naming:
    """How messages name the stack's settings, as the program that gave them wrote them: stack config by its keys
    (`gpu-nodes:nodeGroups[0].gpusPerNode`), a Python program by `GpuFleetArgs`' arguments (`node_groups[0]...`),
    the component package by its inputs (`nodeGroups[0]...`), and a group on its own by its own keys
    (`gpusPerNode`). The reader reads one vocabulary, the declarations' keys; only the messages are named so."""

    name: Callable[[Setting], str]
    # A group on its own: its keys are not under `nodeGroups[0]`.
    one_group: bool = False

    def of(self, s: Setting) -> str:
        return "" if self.one_group and s.key == NODE_GROUPS.key else self.name(s)

    def group(self, index: int, rest: str = "") -> str:
        """A key within group `index`: `gpu-nodes:nodeGroups[1].gpuAccess`."""
        if self.one_group:
            return rest
        at = f"{self.of(NODE_GROUPS)}[{index}]"
        return f"{at}.{rest}" if rest else at

    def fields(self) -> dict[str, str]:
        """Each stack setting's key, as messages name it."""
        return {s.key: self.of(s) for s in STACK_SETTINGS}


STACK_KEYS = Naming(lambda s: s.key)
PROGRAM_ARGUMENTS = Naming(lambda s: s.argument)
PACKAGE_INPUTS = Naming(lambda s: s.name)
ONE_GROUP = Naming(lambda s: s.name, one_group=True)


@section
class StackSpec:
    """A whole stack. Each field below with a `setting` is a stack setting, declared once, in the
    table's order: `GpuFleetArgs` has a field named as its `argument`, and the stack config's
    reading (`GpuFleetArgs.from_stack_config`), this reader, docs/configuration.md's table and Pulumi.yaml
    (those with `pulumi_description`) all follow the declarations."""

    node_groups: tuple[NodeGroupSpec, ...] = setting(
        f"{NAMESPACE}:nodeGroups",
        "one entry per node group (below)",
        check=Check(lambda groups: len(groups) >= 1, "expected a list with at least one node group"),
    )
    # Whether it is given: the key itself goes to the SSH sessions only, as a secret.
    has_ssh_private_key: bool = setting(
        f"{NAMESPACE}:sshPrivateKey",
        "private key for the machines (and the bastion)",
        default=None,
        default_text="required when any group runs preflight",
        secret=True,
        written=str,
        parse=is_given,
    )
    insecure_skip_host_key_check: bool = setting(
        SKIP_HOST_KEY_CHECK,
        'accept any SSH host key for nodes without `hostKey` (see "Host keys")',
        default=False,
        pulumi_description="Accept any SSH host key for nodes without a pinned hostKey. "
        "Leaves preflight open to a man in the middle.",
    )
    # None: the stack uses no RuntimeClass.
    runtime_class_name: str | None = setting(
        RUNTIME_CLASS_KEY,
        "the RuntimeClass the device plugin names, and tenants' pods with `gpuAccess: runtimeClass`; "
        '`""` or `false`: none (see "How tenants get their GPUs")',
        default=DEFAULT_RUNTIME_CLASS,
        written=str,
        parse=read_runtime_class_name,
    )
    # None: as the name decides (see `runtime_class`).
    create_runtime_class: bool | None = setting(
        f"{NAMESPACE}:createRuntimeClass",
        "create the class (handler `nvidia`), or only name one that exists already",
        default=None,
        default_text="`true` for `nvidia`, `false` for another name",
    )
    # Referenced, never created or deleted (gpu_nodes/providers/claims.py).
    existing_namespaces: tuple[str, ...] = _names_setting(
        "existingNamespaces",
        "namespaces the groups use that exist already: the stack puts its objects in them but never creates or "
        'deletes them (see "Objects the stack did not create")',
        read_namespaces,
    )
    # Other device plugin installs the stack may share the cluster with (gpu_nodes/providers/coexistence.py).
    hand_over: tuple[str, ...] = _names_setting(
        "handOver",
        "other NVIDIA device plugin or DRA driver installs allowed on the cluster, kept off this stack's nodes: "
        '`<namespace>/<DaemonSet>`, `ClusterPolicy/<name>` or `GPUCluster/<name>` (see "Another device plugin on the cluster")',
        read_hand_over,
    )
    # Whether a login is given: the Secret that holds it is `pull_secret`, which every pod names.
    has_image_pull_secret: bool = setting(
        f"{NAMESPACE}:imagePullSecret",
        f"a registry login (`.dockerconfigjson`, as `docker login` writes `~/.docker/config.json`): the stack puts it "
        f'in a Secret `{PULL_SECRET_NAME}` in each namespace it uses, before the pods that name it (see "Private '
        'registries")',
        default=None,
        default_text="none",
        secret=True,
        written=str,
        parse=is_given,
    )
    # Settings given that have no effect (preflight settings with preflight off), and risks accepted: warned about.
    warnings: tuple[str, ...] = ()
    # How this stack's messages name its settings.
    naming: Naming = field(default=STACK_KEYS, compare=False)

    def cross_checks(self) -> Iterator[Problem]:
        yield from _across_groups(self)
        yield from _plain_gpu_request_problems(self)
        yield from _compute_domain_problems(self)
        yield from _runtime_class_problems(self)
        yield from _host_key_problems(self)
        used = {name for group in self.node_groups for name in (group.device_plugin.namespace, group.verification.namespace)}
        for name in self.existing_namespaces:
            if name not in used:
                yield Problem(
                    self.naming.of(EXISTING_NAMESPACES), name, f"no group uses it; the groups use {', '.join(sorted(used))}"
                )

    @property
    def pull_secret(self) -> str | None:
        """The Secret that holds the registry login, which every pod names; None without a login."""
        return PULL_SECRET_NAME if self.has_image_pull_secret else None

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
        if self.needs_ssh_key and not self.has_ssh_private_key:
            return f"{self.naming.of(SSH_PRIVATE_KEY)}: not set; a group runs preflight, which logs in with it"
        return None


_DECLARED = dict(settings(StackSpec))
NODE_GROUPS = _DECLARED["node_groups"]
SSH_PRIVATE_KEY = _DECLARED["has_ssh_private_key"]
INSECURE_SKIP_HOST_KEY_CHECK = _DECLARED["insecure_skip_host_key_check"]
RUNTIME_CLASS = _DECLARED["runtime_class_name"]
CREATE_RUNTIME_CLASS = _DECLARED["create_runtime_class"]
EXISTING_NAMESPACES = _DECLARED["existing_namespaces"]
HAND_OVER = _DECLARED["hand_over"]
IMAGE_PULL_SECRET = _DECLARED["has_image_pull_secret"]


@section
class KubernetesProviderSettings:
    """The Kubernetes provider's own settings: documented beside ours, read by the provider (never by us)."""

    kubeconfig: str | None = setting(
        "kubernetes:kubeconfig",
        "path or contents of the kubeconfig",
        default=None,
        default_text="`$KUBECONFIG` / `~/.kube/config`",
        secret=True,
    )
    context: str | None = setting("kubernetes:context", "kubeconfig context", default=None, default_text="current context")


KUBECONFIG, KUBE_CONTEXT = (s for _, s in settings(KubernetesProviderSettings))
# The stack's own settings, in the order of docs/configuration.md's table.
OWN_SETTINGS = tuple(_DECLARED.values())
# Every stack setting, in the order of docs/configuration.md's table.
STACK_SETTINGS = (*OWN_SETTINGS, KUBECONFIG, KUBE_CONTEXT)


# The secret settings whose text has a shape to check (gpu_nodes/config/credentials.py).
SECRET_SHAPES = ((SSH_PRIVATE_KEY, private_key_problem), (IMAGE_PULL_SECRET, pull_secret_problem))


def add_secret_problems(problems: Problems, value_of: Callable[[Setting], object], naming: Naming = STACK_KEYS) -> None:
    """Each secret given as text that is not what it must be, named by its length only (an
    Output is checked by no one here)."""
    for s, problem in SECRET_SHAPES:
        value = value_of(s)
        wrong = problem(value) if isinstance(value, str) else None
        if wrong and isinstance(value, str):
            problems.add(naming.of(s), Undisclosed(len(value)), wrong)


def read_stack(values: Mapping[str, object], refuse: Refusal | None = None, naming: Naming = STACK_KEYS) -> StackSpec:
    """The stack from its settings by key (`gpu-nodes:nodeGroups`, ...), the one reading of a run; raises
    ConfigError naming every mistake as `naming` says. A secret's value is only looked at for whether it is
    given. `refuse`: the error for a mistake in a value another resource gives, found when it resolves
    (`Problems.refuse_later`)."""
    problems = Problems(refuse)
    written = {key: _as_config(key, value) for key, value in values.items()}
    built = read_fields(problems, "", written, StackSpec, naming.fields())
    if built is None:
        raise ConfigError(problems.problems)
    # The stack's RuntimeClass and pull Secret, which every group's pods name; its checks across groups name its
    # settings as the program wrote them.
    groups = tuple(
        replace(group, runtime_class=built.runtime_class_name, image_pull_secret=built.pull_secret) for group in built.node_groups
    )
    stack = replace(built, node_groups=groups, naming=naming)
    cross_check(problems, "", stack)
    if problems.problems:
        raise ConfigError(problems.problems)
    # Warnings are collected while reading: all of it first, then the spec with them.
    return replace(stack, warnings=tuple(problems.warnings))


def _as_config(key: str, value: object) -> object:
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


def parse_stack(node_groups: object, refuse: Refusal | None = None, **arguments: object) -> StackSpec:
    """`read_stack`, the settings given as `GpuFleetArgs` names them (`runtime_class=...`), named by their keys."""
    by_argument = {s.argument: s for s in OWN_SETTINGS}
    values = {NODE_GROUPS.key: node_groups, **{by_argument[name].key: value for name, value in arguments.items()}}
    return read_stack(values, refuse)


def _across_groups(stack: StackSpec) -> Iterator[Problem]:
    """Names, nodes, priority classes and namespaces the groups cannot share."""
    groups, at = stack.node_groups, stack.naming.group
    seen_groups: dict[str, int] = {}
    seen_nodes: dict[str, str] = {}
    seen_priority: dict[str, str] = {}
    namespace_use: dict[str, str] = {}
    for index, group in enumerate(groups):
        if group.name in seen_groups:
            yield Problem(
                at(index, "name"),
                group.name,
                f"group names must be unique (also used by {at(seen_groups[group.name])})",
            )
        seen_groups.setdefault(group.name, index)
        for node in group.nodes:
            owner = seen_nodes.setdefault(node.name, group.name)
            if owner != group.name:
                yield Problem(
                    at(index, "nodes"), node.name, f"a node may belong to one group only (already in group {owner!r})"
                )
        pc_name = group.priority_class_name
        for taken in (pc_name, pc_name + VERIFICATION_PRIORITY_SUFFIX):
            pc_owner = seen_priority.setdefault(taken, group.name)
            if pc_owner != group.name:
                yield Problem(at(index, "priorityClass.name"), pc_name, f"{taken!r} is already used by group {pc_owner!r}")
                break
        # One namespace cannot be both privileged (plugin) and restricted (verification).
        for namespace, use in ((group.device_plugin.namespace, "devicePlugin"), (group.verification.namespace, "verification")):
            other = namespace_use.setdefault(namespace, use)
            if other != use:
                yield Problem(
                    at(index, f"{use}.namespace"),
                    namespace,
                    "the device plugin namespace (Pod Security privileged) and the verification namespace "
                    "(Pod Security restricted) must differ",
                )


def _plain_gpu_request_problems(stack: StackSpec) -> Iterator[Problem]:
    """What a tenant's plain `nvidia.com/gpu` pod gets, where a DRA group's DeviceClass serves that name
    (`dra.extendedResourceName`). The DeviceClass `gpu.nvidia.com` is one per cluster and selects every
    GPU of the driver, whichever group's node publishes it: the DRA groups agree, or a group that did not
    ask would serve plain pods too. On a node that advertises `nvidia.com/gpu` itself the scheduler gives
    the pod the device plugin's (kube-scheduler `filterExtendedResources`: DRA only where the node's
    allocatable has none), so a device plugin group beside it must mean a whole GPU by the name too."""
    groups, at = stack.node_groups, stack.naming.group
    asking = [(index, group) for index, group in enumerate(groups) if group.uses_dra and group.dra.extended_resource_name]
    if not asking:
        return
    first, first_group = asking[0]
    named = f"{at(first, 'dra.extendedResourceName')} ({first_group.name})"
    for index, group in enumerate(groups):
        if group.uses_dra and not group.dra.extended_resource_name:
            yield Problem(
                at(index, "dra.extendedResourceName"),
                False,
                f"{named} is true: the DeviceClass gpu.nvidia.com it sets is the cluster's one for every DRA group, "
                "so a plain nvidia.com/gpu pod could get this group's GPUs too; set it alike on every DRA group",
            )
        elif not group.uses_dra and (meaning := _plugin_gpu_meaning(group)):
            setting_key, value, what = meaning
            yield Problem(
                at(index, f"devicePlugin.{setting_key}"),
                value,
                f"here nvidia.com/gpu is {what}, while with {named} true a plain nvidia.com/gpu pod gets a whole GPU "
                "on a DRA node: the same request would mean two things; keep this group's nvidia.com/gpu a whole GPU, "
                "or set extendedResourceName false",
            )


def _compute_domain_problems(stack: StackSpec) -> Iterator[Problem]:
    """The DRA driver's ComputeDomains run one controller per cluster, in one namespace, where it makes every
    ComputeDomain's IMEX daemons (its chart's `NAMESPACE`: kubernetes-sigs/dra-driver-nvidia-gpu
    templates/controller.yaml): the stack runs it in the namespace of its groups that turn them on, which must be one."""
    groups, at = stack.node_groups, stack.naming.group
    on = [(index, group) for index, group in enumerate(groups) if group.uses_dra and group.dra.compute_domains]
    if not on:
        return
    first, first_group = on[0]
    for index, group in on[1:]:
        if group.device_plugin.namespace != first_group.device_plugin.namespace:
            yield Problem(
                at(index, "devicePlugin.namespace"),
                group.device_plugin.namespace,
                f"{at(first)} ({first_group.name}) turns dra.computeDomains on in namespace "
                f"{first_group.device_plugin.namespace!r}: the driver's one ComputeDomain controller runs there and makes "
                "every domain's IMEX daemons there; give the groups with ComputeDomains one devicePlugin.namespace",
            )


def _plugin_gpu_meaning(group: NodeGroupSpec) -> tuple[str, object, str] | None:
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
    named = stack.naming
    runtime_class = named.of(RUNTIME_CLASS)
    if stack.create_runtime_class is True and stack.runtime_class_name is None:
        # Two settings: this one, and the one that leaves it nothing to do.
        yield Problem(named.of(CREATE_RUNTIME_CLASS), True, f'nothing to create: {runtime_class} is off ("" or false)')
    if stack.runtime_class_name is not None:
        return
    for index, group in enumerate(stack.node_groups):
        if group.gpu_access in ("runtimeClass", "cdi") and not group.uses_dra:
            # With cdi the plugin itself needs the class: without nvidia as the default it has no NVML otherwise.
            who = "tenants must name" if group.gpu_access == "runtimeClass" else "the device plugin runs under"
            yield Problem(
                named.group(index, "gpuAccess"),
                group.gpu_access,
                f"needs the RuntimeClass {who}, but {runtime_class} is off; set it, or use defaultRuntime",
            )
        elif group.uses_dra and group.metrics.enabled:
            # The exporter asks for no GPU: as the GPU Operator runs it, the nvidia runtime hands it every GPU.
            yield Problem(
                named.group(index, "metrics.enabled"),
                True,
                f"needs the RuntimeClass dcgm-exporter runs under (nvidia is not a DRA node's default runtime), but "
                f"{runtime_class} is off; set it",
            )


def _host_key_problems(stack: StackSpec) -> Iterator[Problem]:
    """Every machine preflight reaches, and its bastion, with a pinned host key, unless the stack
    accepts any."""
    if stack.insecure_skip_host_key_check:
        return
    for index, group in enumerate(stack.node_groups):
        if not group.preflight.enabled:
            continue
        # Two settings: the missing key, and the stack's setting that would let it go.
        missing = host_key_missing(stack.naming.of(INSECURE_SKIP_HOST_KEY_CHECK))
        for node_index, node in enumerate(group.nodes):
            if node.host_key is None:
                yield Problem(stack.naming.group(index, f"nodes[{node_index}].hostKey"), MISSING, missing)
        if group.preflight.proxy is not None and group.preflight.proxy.host_key is None:
            yield Problem(stack.naming.group(index, "preflight.proxy.hostKey"), MISSING, missing)
