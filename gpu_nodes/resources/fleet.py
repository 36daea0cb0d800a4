"""`GpuFleet`: the node groups of one cluster and what they share.

The fleet owns (or only references) the namespaces and the RuntimeClass its groups share, runs
the coexistence check, and builds one `GpuNodeGroup` per group. It reaches the cluster only
through the Kubernetes provider it is given: our dynamic resources read that provider's own
kubeconfig and context.

Its children are named `<fleet>-...`. With `legacy_root_names`, each is also aliased to its bare
name at the stack's root, where the stacks of this repository's program (`__main__.py`) may hold
it: found there, it moves under the fleet with no replacement (the aliases are pinned by
tests/golden/*.json; docs/own-program.md, "In Python").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes.config.args import NodeGroupArgs
from gpu_nodes.config.fields import Setting
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.preflight import DRIVER_ADVISORIES_REFUSE
from gpu_nodes.config.problems import Problems
from gpu_nodes.config.stack import (
    OWN_SETTINGS,
    PROGRAM_ARGUMENTS,
    STACK_KEYS,
    Naming,
    StackSpec,
    add_secret_problems,
    read_stack,
)
from gpu_nodes.config.stack_config import StackConfig
from gpu_nodes.errors import ConfigError
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests.tenant_access import dra_tenant_access
from gpu_nodes.providers.claims import stack_label_value
from gpu_nodes.providers.coexistence import CoexistenceInputs, DevicePluginCoexistence
from gpu_nodes.pulumi_internals import keep_program_frames
from gpu_nodes.resources.arguments import secret_argument_problem, stack_label_problem
from gpu_nodes.resources.child_names import CLUSTER_ACCESS_CHILD, COEXISTENCE_CHILD, name_collisions
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.device_classes import SharedDra, declare_shared_dra
from gpu_nodes.resources.namespaces import SharedNamespace, declare_namespaces
from gpu_nodes.resources.node_group import GpuNodeGroup, GpuNodeGroupArgs
from gpu_nodes.resources.program_objects import check_program_objects
from gpu_nodes.resources.runtime_class import declare_runtime_class

TYPE = "gpu-nodes:index:GpuFleet"


@dataclass
class GpuFleetArgs:
    """What a fleet asks for; each field is the stack setting of the same name (docs/configuration.md), its
    name in snake case as Pulumi's Python SDKs name a property (`Setting.argument`). The maps inside
    (`node_groups`' entries and their sections) are keyed as the stack config spells them (`gpusPerNode`),
    typed by the generated inputs (gpu_nodes/config/inputs.py), as every language's SDK and the schema have them.

    The arguments are read once, by the first `validate` (or by the fleet, which validates them): change them
    before that, not after."""

    # gpu-nodes:nodeGroups: one entry per group.
    node_groups: Sequence[NodeGroupArgs]
    # gpu-nodes:sshPrivateKey: required when a group runs preflight. Pass a secret.
    ssh_private_key: pulumi.Input[str] | None = None
    # gpu-nodes:imagePullSecret: a registry login (.dockerconfigjson). Pass a secret.
    image_pull_secret: pulumi.Input[str] | None = None
    # gpu-nodes:runtimeClass: a name; "" or False for none; None for `nvidia`.
    runtime_class: str | bool | None = None
    # gpu-nodes:createRuntimeClass: None for `true` with `nvidia`, `false` with another name
    # (stack config passes it as the text "true" or "false").
    create_runtime_class: bool | str | None = None
    # gpu-nodes:existingNamespaces: referenced, never created or deleted (another stack's, say).
    existing_namespaces: Sequence[str] = ()
    # gpu-nodes:handOver: other device plugin installs allowed on the cluster.
    hand_over: Sequence[str] = ()
    # gpu-nodes:insecureSkipHostKeyCheck.
    insecure_skip_host_key_check: bool = False
    # Alias the children to their bare names at the stack's root, where the stacks of this
    # repository's program may hold them (its stacks only; two fleets in one program must leave it off).
    legacy_root_names: bool = False
    # This stack, as the claims' label writes it; the default is `<project>.<stack>`.
    stack_label: str = field(default_factory=stack_label_value)
    # Set by `from_stack_config`: the stack config these arguments came from. Its own problems
    # (unknown keys, secrets that are no key) are reported with the others, in its words.
    stack_config: StackConfig | None = field(default=None, repr=False)
    # How the program is told of a mistake in a value another resource gives, found when it resolves
    # (`refuse_later`): the component package refuses it as it refuses its inputs (components.py).
    refusal: Callable[[list[str]], Exception] | None = field(default=None, repr=False)
    # How messages name the settings: by default as this program gave them (stack config's keys, or these
    # arguments); the component package names them as its inputs.
    naming: Naming | None = field(default=None, repr=False)
    # The one reading of these arguments (`read`).
    _read: tuple[StackSpec | None, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_stack_config(cls, stack_config: StackConfig | None = None, **extra: Any) -> GpuFleetArgs:
        """The arguments as this stack's `gpu-nodes:*` config gives them (docs/configuration.md).

        Secrets given in plain config are warned about here; mistakes are reported by `validate`."""
        config = stack_config or StackConfig.of_this_run()
        for warning in config.warnings():
            pulumi.log.warn(warning)

        def value_of(s: Setting) -> object:
            text = config.text(s)
            return pulumi.Output.secret(text) if s.secret and text is not None else config.value(s)

        # Only the settings given: the others keep this class's defaults.
        settings = {s.argument: value_of(s) for s in OWN_SETTINGS if config.text(s) is not None}
        return cls(**{"node_groups": None, **settings, "stack_config": config, **extra})

    @property
    def names(self) -> Naming:
        """How this program's settings are named in messages."""
        if self.naming is not None:
            return self.naming
        return STACK_KEYS if self.stack_config is not None else PROGRAM_ARGUMENTS

    def validate(self) -> StackSpec:
        """The validated stack; raises one ConfigError naming every mistake as the program wrote it (from
        stack config, by its key; from Python, by its argument). The fleet calls it first; a program may call it
        earlier, before it registers anything of its own: the arguments are read once."""
        stack, problems = self.read()
        if problems:
            if self.stack_config is not None:
                raise ConfigError(problems)
            raise ConfigError(problems, "GpuFleetArgs")
        assert stack is not None
        return stack

    def refuse_later(self, problems: list[str]) -> Exception:
        """The error for mistakes in values other resources give, found when they resolve: a
        ConfigError naming each as `validate` names them, or the program's own `refusal`."""
        if self.refusal is not None:
            return self.refusal(problems)
        return ConfigError(problems, "value from another resource")

    def read(self) -> tuple[StackSpec | None, list[str]]:
        """The stack (None when it cannot be read) and every problem, each named as the program wrote it
        (`gpu-nodes:nodeGroups[0].gpusPerNode: got 0; ...`, `node_groups[0].gpusPerNode: ...`); read once."""
        if self._read is None:
            self._read = self._read_once()
        return self._read

    def _read_once(self) -> tuple[StackSpec | None, list[str]]:
        problems = self.stack_config.problems() if self.stack_config is not None else self._secret_problems()
        problems += filter(None, [stack_label_problem(self.stack_label)])
        stack: StackSpec | None = None
        try:
            values = {s.key: getattr(self, s.argument) for s in OWN_SETTINGS}
            stack = read_stack(values, self.refuse_later, self.names)
        except ConfigError as error:
            problems += error.problems
        if stack is not None:
            problems += name_collisions(stack)
        if stack is not None and stack.missing_ssh_key:
            problems.append(stack.missing_ssh_key)
        return stack, problems

    def _secret_problems(self) -> list[str]:
        """A key or login given as plain text, or as no text at all: what it must be."""
        problems = Problems()
        add_secret_problems(problems, lambda s: getattr(self, s.argument), self.names)
        wrong_types = (secret_argument_problem(self.names.of(s), getattr(self, s.argument)) for s in SECRET_SETTINGS)
        return [*problems.problems, *filter(None, wrong_types)]


# The secret settings: given as text or a secret Output.
SECRET_SETTINGS = [s for s in OWN_SETTINGS if s.secret]


class GpuFleet(pulumi.ComponentResource):
    """The node groups of one cluster. Pass the Kubernetes provider in `opts` (`provider=` or
    `providers=`); without one, the default provider and `kubernetes:*` stack config are used."""

    # The outputs; the package's GpuFleet types them for the schema (gpu_nodes/package/components.py).
    node_groups: pulumi.Output[dict[str, Any]]
    tenant_access: dict[str, dict[str, str | None]]

    def __init__(self, name: str, args: GpuFleetArgs, opts: pulumi.ResourceOptions | None = None):
        # A mistake fails here, before the fleet or anything in it is registered.
        stack = args.validate()
        for warning in stack.warnings:
            pulumi.log.warn(warning)
        check_program_objects(name, stack)
        # Each resource's stack trace, kept in the state, holds where it was made and the program's own frames only.
        keep_program_frames(os.getcwd())
        super().__init__(TYPE, name, None, opts)
        shared = declare_shared(self, name, stack, args, opts)
        # Not an output: the schema the SDK infers from class annotations has no type for a component.
        self.groups: dict[str, GpuNodeGroup] = {
            spec.name: GpuNodeGroup(
                shared.children.name(spec.name), group_args(spec, shared, args), opts=shared.children.opts(spec.name)
            )
            for spec in stack.node_groups
        }
        self.node_groups = pulumi.Output.from_input({group: built.nodes for group, built in self.groups.items()})
        # What a tenant's GPU pod must say to get its GPUs on each group (docs/tenants.md).
        self.tenant_access = {spec.name: tenant_access(spec) for spec in stack.node_groups}
        # The report is the stack's output (`nodeGroups`, __main__.py); a copy here would be one more per node in the state.
        self.register_outputs({"tenantAccess": self.tenant_access})


@dataclass(frozen=True)
class Shared:
    """What a fleet's groups share, registered once under the component that holds them."""

    children: Children
    cluster: ClusterAccess
    namespaces: dict[str, SharedNamespace]
    coexistence: DevicePluginCoexistence
    runtime_class: k8s.node.v1.RuntimeClass | None
    # What the DRA groups share (what the cluster keeps, the DeviceClasses), when a group uses NVIDIA's DRA driver.
    dra: SharedDra | None = None


def declare_shared(
    component: pulumi.ComponentResource,
    name: str,
    stack: StackSpec,
    args: GpuFleetArgs,
    opts: pulumi.ResourceOptions | None,
) -> Shared:
    """Register, as children of `component` named `<name>-...`, what its groups share: the cluster's
    access, the namespaces, the coexistence check and the RuntimeClass."""
    provider = component.get_provider("kubernetes::")
    cluster = ClusterAccess.of_provider(provider) if provider is not None else ClusterAccess.from_stack_config()
    # The component's own depends_on holds back what it checks first (another fleet's namespaces, say).
    depends_on = opts.depends_on if opts else None
    before: list[pulumi.Resource] = []
    if isinstance(depends_on, pulumi.Resource):
        before = [depends_on]
    elif isinstance(depends_on, (list, tuple)):
        before = [d for d in depends_on if isinstance(d, pulumi.Resource)]
    children = Children(component, name, args.legacy_root_names, before)
    # One copy of the credentials per fleet, current at every refresh and destroy (docs/operations.md, "State that stays true").
    cluster = cluster.served(children.name(CLUSTER_ACCESS_CHILD), pulumi.ResourceOptions(parent=component))
    namespaces = declare_namespaces(stack, children, cluster, args.stack_label, args.image_pull_secret)
    nodes = [node.name for group in stack.node_groups for node in group.nodes]
    dra_nodes = [node.name for group in stack.node_groups if group.uses_dra for node in group.nodes]
    coexistence = DevicePluginCoexistence(
        children.name(COEXISTENCE_CHILD),
        CoexistenceInputs(nodes, stack.hand_over, dra_nodes, refuse_unsupported=_refuses_advisories(stack)),
        cluster,
        opts=children.opts(COEXISTENCE_CHILD),
    )
    runtime_class = declare_runtime_class(stack, children, cluster, args.stack_label)
    dra = declare_shared_dra(stack, children, cluster, args.stack_label, namespaces, stack.pull_secret)
    return Shared(children, cluster, namespaces, coexistence, runtime_class, dra)


def _refuses_advisories(stack: StackSpec) -> bool:
    """Whether a group of the stack refuses what NVIDIA no longer patches (its preflight.driverAdvisories: refuse):
    then a GPU Operator past its end of support on the cluster stops the run too, rather than being a warning."""
    return any(group.preflight.driver_advisories == DRIVER_ADVISORIES_REFUSE for group in stack.node_groups)


def group_args(spec: NodeGroupSpec, shared: Shared, args: GpuFleetArgs) -> GpuNodeGroupArgs:
    """A group's arguments: its spec, and what it shares with the fleet's other groups."""
    return GpuNodeGroupArgs(
        spec=spec,
        device_plugin_namespace=shared.namespaces[spec.device_plugin.namespace],
        verification_namespace=shared.namespaces[spec.verification.namespace],
        runtime_class=shared.runtime_class,
        ssh_private_key=args.ssh_private_key,
        cluster=shared.cluster,
        stack_label=args.stack_label,
        before_nodes=[shared.coexistence],
        device_classes=shared.dra.device_classes if shared.dra else (),
        device_taints=shared.dra.device_taints if shared.dra else False,
    )


def tenant_access(group: NodeGroupSpec) -> dict[str, Any]:
    """How a tenant's GPU pod gets its GPUs on this group: the path, the RuntimeClass it must name,
    and whether a pod can see GPUs it was not given (`default`) or cannot (`strict`); for a DRA
    group also the DeviceClass and a ResourceClaimTemplate to copy (docs/dra.md); for a group whose
    `devicePlugin.sharing` shares its GPUs the resource one replica is asked for by, and the sharing
    (docs/tenants.md, "Sharing a GPU"). A group that shares nothing, or by the older
    `timeSlicingReplicas`, keeps the entry it had."""
    if group.uses_dra:
        return dra_tenant_access(group)
    access: dict[str, Any] = {
        "gpuAccess": group.gpu_access,
        "runtimeClassName": group.tenant_runtime_class,
        "isolation": group.isolation,
    }
    sharing = group.device_plugin.sharing
    if sharing.shares and not sharing.legacy:
        access |= {"resource": sharing.resource, "sharing": {"strategy": sharing.strategy, "replicas": sharing.replicas}}
    return access
