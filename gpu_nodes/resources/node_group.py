"""`GpuNodeGroup`: brings one group of GPU machines into service and proves it works.

Per node: preflight over SSH; our taints with the readiness gate, then our labels (which bring
the device plugin); the verification Jobs (the workload's, the access check's, DCGM's diagnostics and
NCCL's all-reduce); and the readiness check, which proves the node and lifts its gate. Per group:
PriorityClasses, the device plugin DaemonSet (with its ServiceAccount) and, where asked, NVIDIA's
dcgm-exporter. Each part is registered by a builder of node_builders.py; the component calls
them in order and reports.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.errors import ConfigError
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests.node_labels import node_labels
from gpu_nodes.preflight.command import parse_report, ssh_host_problem
from gpu_nodes.providers.claims import stack_label_value
from gpu_nodes.pulumi_internals import keep_program_frames
from gpu_nodes.resources.arguments import secret_argument_problem, stack_label_problem
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.namespaces import SharedNamespace
from gpu_nodes.resources.node_builders import (
    GroupContext,
    ProvenNode,
    claim_priority_classes,
    deploy_device_plugin,
    deploy_dra_driver,
    deploy_metrics,
    expected_allocatable,
    expected_mig_devices,
    offered_resource,
    prepare_nodes,
    prove_nodes,
    run_verification,
)

TYPE = "gpu-nodes:index:GpuNodeGroup"


@dataclass
class GpuNodeGroupArgs:
    spec: NodeGroupSpec
    # The namespaces are shared between groups, so the program declares them once.
    device_plugin_namespace: SharedNamespace
    verification_namespace: SharedNamespace
    # The stack's RuntimeClass, when the stack creates it (shared by groups, created once):
    # the RuntimeClass admission plugin refuses a pod that names a class not there yet.
    runtime_class: k8s.node.v1.RuntimeClass | None = None
    # Used by preflight; required when `spec.preflight.enabled`.
    ssh_private_key: pulumi.Input[str] | None = None
    # How our dynamic resources reach the API server (the same as the Kubernetes provider's).
    cluster: ClusterAccess = ClusterAccess()
    # This stack, as the claims and the PriorityClasses' STACK_LABEL write it.
    stack_label: str = field(default_factory=stack_label_value)
    # What must pass before anything of ours lands on a node (the coexistence check).
    before_nodes: Sequence[pulumi.Resource] = ()
    # The stack's DeviceClasses, which a DRA group's kubelet plugin and claims name (created once).
    device_classes: Sequence[pulumi.Resource] = ()
    # Whether the cluster keeps device taints (the fleet's DRA features check): a DRA group's kubelet plugin
    # runs NVIDIA's GPU health check only then. A group on its own, without that check, runs none.
    device_taints: pulumi.Input[bool] = False


def preflight_key(name: str, args: GpuNodeGroupArgs) -> pulumi.Input[str] | None:
    """The SSH key preflight logs in with; None when the group runs no preflight. A ConfigError,
    before anything is registered, for arguments the API server or the machines would refuse."""
    problems = [
        p for p in (secret_argument_problem("ssh_private_key", args.ssh_private_key), stack_label_problem(args.stack_label)) if p
    ]
    if args.spec.preflight.enabled and args.ssh_private_key is None:
        problems.append("ssh_private_key: not given; the group runs preflight, which logs in with it")
    if args.spec.preflight.enabled:
        unreachable = [i for i, node in enumerate(args.spec.nodes) if node.ssh_host is None]
        problems += [ssh_host_problem(f"spec.nodes[{i}].ssh_host") for i in unreachable]
    if problems:
        raise ConfigError(problems, f"GpuNodeGroupArgs of {name}")
    return args.ssh_private_key if args.spec.preflight.enabled else None


class GpuNodeGroup(pulumi.ComponentResource):
    nodes: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        ssh_key = preflight_key(name, args)
        # Each resource's stack trace, kept in the state, holds where it was made and the program's own frames only.
        keep_program_frames(os.getcwd())
        super().__init__(TYPE, name, None, opts)
        self.declare_parts(name, args, ssh_key)
        # The report is the stack's output (`nodeGroups`); a copy here would be one more per node in the state.
        self.register_outputs({})

    def declare_parts(self, name: str, args: GpuNodeGroupArgs, ssh_key: pulumi.Input[str] | None) -> None:
        """Register the group's parts, in order, as children of this component; `self.nodes` their report."""
        # Named `<group>-<name>` and parented here, as the fleet's children are (node_builders.py).
        group = GroupContext(Children(self, name), args.spec, args.cluster)
        plugin_namespace, verification_namespace = args.device_plugin_namespace, args.verification_namespace
        # Nothing of ours lands on a node before the shared objects are known to be ours (claims.py)
        # and no other device plugin is in the way (coexistence.py).
        before_nodes = [plugin_namespace.resource, verification_namespace.resource, *args.before_nodes]
        nodes = prepare_nodes(group, ssh_key, before_nodes)
        priority = claim_priority_classes(group, args.stack_label)
        # The allocator comes after the coexistence check too: a group that changes allocator has its old
        # plugin deleted first, and the check must find the node's GPUs still explained by it.
        if args.spec.uses_dra:
            plugin = deploy_dra_driver(group, plugin_namespace, args.device_classes, args.device_taints, args.before_nodes)
        else:
            plugin = deploy_device_plugin(group, plugin_namespace, args.runtime_class, args.before_nodes)
        metrics = deploy_metrics(group, plugin_namespace, args.runtime_class, args.before_nodes)
        verification = run_verification(group, verification_namespace, args.runtime_class, nodes, plugin, priority)
        proven = prove_nodes(group, nodes, plugin, verification, metrics)
        self.nodes = pulumi.Output.from_input({p.node.name: node_report(args.spec, p) for p in proven})


def node_report(spec: NodeGroupSpec, proven: ProvenNode) -> dict[str, Any]:
    """What was checked, applied and verified on one node: the runbook's checklist and the gate."""
    preflight, readiness = proven.node.preflight, proven.readiness
    return {
        "labels": spec.node_labels if preflight is None else preflight.facts.apply(functools.partial(node_labels, spec)),
        "taints": proven.node.taints.taints,
        "preflight": preflight.command.stdout.apply(parse_report) if preflight is not None else {"skipped": True},
        "isolation": spec.isolation,
        "expectedGpus": expected_allocatable(spec),
        **({"gpuResource": resource} if (resource := offered_resource(spec)) else {}),
        **({"expectedMigDevices": mig} if (mig := expected_mig_devices(spec)) else {}),
        "verification": [
            {"job": j.name, "role": j.job.role.value, "resource": j.job.resource, "gpus": j.job.gpus} for j in proven.jobs
        ],
        "checklist": readiness.checklist,
        "measured": readiness.measured,
        "gate": readiness.gate,
        "recovery": readiness.recovery,
        "quarantine": readiness.quarantine,
    }
