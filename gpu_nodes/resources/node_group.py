"""`GpuNodeGroup`: brings one group of GPU machines into service and proves it works.

Per node: preflight over SSH; our taints with the readiness gate, then our labels (which bring
the device plugin); the verification Jobs; and the readiness check, which proves the node
and lifts its gate. Per group: PriorityClasses and the device plugin DaemonSet.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import remote

from gpu_nodes.config.specs import NodeGroupSpec
from gpu_nodes.constants import GPU_RESOURCE, GROUP_LABEL
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.kube.node_health import NodeTarget
from gpu_nodes.manifests.device_plugin import APP_NAME as PLUGIN_APP_NAME
from gpu_nodes.manifests.device_plugin import config_map_manifest, daemonset_manifest, rollout_timeout
from gpu_nodes.manifests.naming import selector_labels
from gpu_nodes.manifests.node_labels import label_patch, node_labels
from gpu_nodes.manifests.priority_class import priority_class_manifest, verification_priority_class_manifest
from gpu_nodes.manifests.verification import (
    VerificationJob,
    check_config_map_manifest,
    combined_round,
    job_manifest,
    verification_jobs,
)
from gpu_nodes.preflight.command import node_preflight, parse_report, waits_for
from gpu_nodes.preflight.facts import GpuFacts, annotation, facts_from_report
from gpu_nodes.providers.claims import CREATE, Claim, ObjectClaim, stack_label_value
from gpu_nodes.providers.readiness import NodeReadiness
from gpu_nodes.providers.taints import NodeTaints
from gpu_nodes.resources.child_names import (
    DEVICE_PLUGIN_CHILD,
    DEVICE_PLUGIN_CONFIG_CHILD,
    LABELS_CHILD,
    PREFLIGHT_CHILD,
    PRIORITY_CLASS_CHILD,
    READINESS_CHILD,
    TAINTS_CHILD,
    VERIFICATION_CHECK_CHILD,
    VERIFICATION_PRIORITY_CLASS_CHILD,
    claim_child,
    job_child,
    node_child,
)
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.namespaces import SharedNamespace
from gpu_nodes.resources.registration import register

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


def _preflight_key(name: str, args: GpuNodeGroupArgs) -> pulumi.Input[str] | None:
    """The SSH key preflight logs in with; None when the group runs no preflight."""
    if not args.spec.preflight.enabled:
        return None
    if args.ssh_private_key is None:
        raise ValueError(f"{name}: preflight is enabled but no SSH private key was given")
    return args.ssh_private_key


class GpuNodeGroup(pulumi.ComponentResource):
    nodes: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        spec = args.spec
        ssh_private_key = _preflight_key(name, args)
        # Named `<group>-<name>` and parented here, as the fleet's children are.
        children = Children(self, name)

        # Nothing of ours lands on a node before the shared objects are known to be ours (claims.py)
        # and no other device plugin is in the way (coexistence.py).
        shared_namespaces = [args.device_plugin_namespace.resource, args.verification_namespace.resource, *args.before_nodes]
        preflights: dict[str, remote.Command] = {}
        # Each machine's GPUs as its preflight reported them: its labels, its readiness check and
        # its report all read them (gpu_nodes/preflight/facts.py).
        facts: dict[str, pulumi.Output[GpuFacts | None]] = {}
        labels = {}
        taints = {}
        targets = {node.name: node_target(spec, node.name) for node in spec.nodes}
        for index, node in enumerate(spec.nodes):
            checked: list[pulumi.Resource] = []
            if ssh_private_key is not None:
                before = waits_for(index, spec.preflight.max_sessions)
                after = preflights[spec.nodes[before].name] if before is not None else None
                local = node_child(node.name, PREFLIGHT_CHILD)
                preflights[node.name] = node_preflight(
                    children.name(local), spec, node, ssh_private_key, children.opts(local), after=after
                )
                checked = [preflights[node.name]]
                facts[node.name] = preflights[node.name].stdout.apply(_reported_facts)
            # Taints and the readiness gate first: our labels are what bring the plugin.
            local = node_child(node.name, TAINTS_CHILD)
            taints[node.name] = NodeTaints(
                children.name(local),
                target=targets[node.name],
                cluster=args.cluster,
                opts=children.opts(local, depends_on=[*checked, *shared_namespaces]),
            )
            local = node_child(node.name, LABELS_CHILD)
            labels[node.name] = register(
                {"metadata": _label_patch(spec, node.name, facts.get(node.name))},
                k8s.core.v1.NodePatch,
                children.name(local),
                children.opts(local, depends_on=[taints[node.name]]),
            )

        _claimed_priority_class(children, priority_class_manifest(spec, args.stack_label), PRIORITY_CLASS_CHILD, args)
        verification_priority = _claimed_priority_class(
            children, verification_priority_class_manifest(spec, args.stack_label), VERIFICATION_PRIORITY_CLASS_CHILD, args
        )
        shared = [args.runtime_class] if args.runtime_class is not None else []
        plugin_namespace, verification_namespace = args.device_plugin_namespace, args.verification_namespace
        plugin_deps: list[pulumi.Resource] = [*plugin_namespace.ready, *shared]
        # Destroying the stack deletes the namespaces, and the cluster deletes what is in them:
        # the engine need not delete (and wait for) each object first. Removing only a group
        # still deletes its objects one by one.
        config_map = config_map_manifest(spec)
        if config_map is not None:
            plugin_deps.append(
                register(
                    config_map,
                    k8s.core.v1.ConfigMap,
                    children.name(DEVICE_PLUGIN_CONFIG_CHILD),
                    children.opts(DEVICE_PLUGIN_CONFIG_CHILD, deleted_with=plugin_namespace.deleted_with),
                )
            )
        rollout = rollout_timeout(spec)
        daemonset = register(
            daemonset_manifest(spec),
            k8s.apps.v1.DaemonSet,
            children.name(DEVICE_PLUGIN_CHILD),
            children.opts(
                DEVICE_PLUGIN_CHILD,
                depends_on=plugin_deps,
                deleted_with=plugin_namespace.deleted_with,
                custom_timeouts=pulumi.CustomTimeouts(create=rollout, update=rollout),
            ),
        )

        check = register(
            check_config_map_manifest(spec),
            k8s.core.v1.ConfigMap,
            children.name(VERIFICATION_CHECK_CHILD),
            children.opts(
                VERIFICATION_CHECK_CHILD,
                depends_on=verification_namespace.ready,
                deleted_with=verification_namespace.deleted_with,
            ),
        )
        jobs: dict[str | None, list[tuple[VerificationJob, k8s.batch.v1.Job]]] = {}
        for job in verification_jobs(spec):
            nodes = [job.node] if job.node else [node.name for node in spec.nodes]
            needs = [daemonset, verification_priority, *verification_namespace.ready, check, *shared]
            needs += [labels[n] for n in nodes] + [taints[n] for n in nodes]
            # A node gated again after it degraded starts a new round, and its Jobs run again.
            rounds: pulumi.Output[int] = pulumi.Output.all(*(taints[n].round for n in nodes)).apply(_combined)
            manifest = rounds.apply(functools.partial(_job_manifest, spec, job))
            # The round is known only once the taints are: the manifest is an Output, taken apart here.
            local = job_child(job.node, job.slug)
            resource = register(
                {"metadata": manifest.apply(lambda m: m["metadata"]), "spec": manifest.apply(lambda m: m["spec"])},
                k8s.batch.v1.Job,
                children.name(local),
                children.opts(local, depends_on=needs, deleted_with=verification_namespace.deleted_with),
            )
            jobs.setdefault(job.node, []).append((job, resource))

        compared = _compared_group(spec)
        readiness = {}
        for node in spec.nodes:
            mine = jobs.get(node.name, []) + jobs.get(None, [])
            local = node_child(node.name, READINESS_CHILD)
            readiness[node.name] = NodeReadiness(
                children.name(local),
                target=targets[node.name],
                namespace=spec.verification.namespace,
                jobs=[_job_name(resource) for _, resource in mine],
                timeout_seconds=spec.verification.timeout_seconds,
                gpus_per_node=spec.gpus_per_node,
                replicas=spec.device_plugin.time_slicing_replicas,
                cluster=args.cluster,
                group_label=compared,
                # New facts prove the node again.
                facts=facts[node.name].apply(_annotation_of) if compared else None,
                # A fresh preflight proves the node again, and only one may bring a GPU back (readiness.py).
                preflight=(children.name(node_child(node.name, PREFLIGHT_CHILD)), preflights[node.name].id)
                if node.name in preflights
                else None,
                opts=children.opts(local, depends_on=[daemonset, labels[node.name], taints[node.name], *(r for _, r in mine)]),
            )

        self.nodes = pulumi.Output.from_input(
            {
                node.name: self._node_report(
                    spec,
                    preflights.get(node.name),
                    facts.get(node.name),
                    taints[node.name],
                    readiness[node.name],
                    jobs.get(node.name, []) + jobs.get(None, []),
                )
                for node in spec.nodes
            }
        )
        self.register_outputs({"nodes": self.nodes})

    @staticmethod
    def _node_report(
        spec: NodeGroupSpec,
        preflight: remote.Command | None,
        facts: pulumi.Output[GpuFacts | None] | None,
        taints: NodeTaints,
        readiness: NodeReadiness,
        jobs: list[tuple[VerificationJob, k8s.batch.v1.Job]],
    ) -> dict[str, Any]:
        """What was checked, applied and verified on one node: the runbook's checklist and the gate."""
        return {
            "labels": spec.node_labels if facts is None else facts.apply(functools.partial(node_labels, spec)),
            "taints": taints.taints,
            "preflight": preflight.stdout.apply(parse_report) if preflight is not None else {"skipped": True},
            "isolation": spec.isolation,
            "expectedGpus": expected_allocatable(spec),
            **({"expectedMigDevices": mig} if (mig := expected_mig_devices(spec)) else {}),
            "verification": [{"job": _job_name(resource), "resource": job.resource, "gpus": job.gpus} for job, resource in jobs],
            "checklist": readiness.checklist,
            "gate": readiness.gate,
            "recovery": readiness.recovery,
        }


def _claimed_priority_class(
    children: Children, manifest: dict[str, Any], name: str, args: GpuNodeGroupArgs
) -> k8s.scheduling.v1.PriorityClass:
    """A PriorityClass, created once its claim finds the name free (or this stack's)."""
    setting = "Give the group another priorityClass.name"
    claim = Claim("PriorityClass", manifest["metadata"]["name"], CREATE, args.stack_label, setting)
    checked = ObjectClaim(children.name(claim_child(name)), claim, args.cluster, opts=children.opts(claim_child(name)))
    return register(manifest, k8s.scheduling.v1.PriorityClass, children.name(name), children.opts(name, depends_on=[checked]))


def _compared_group(spec: NodeGroupSpec) -> dict[str, str] | None:
    """The label of the nodes whose GPU facts each readiness check compares (read from the
    cluster when it proves): with preflight and no declared gpuModel (preflight checks that
    on each machine)."""
    if not spec.preflight.enabled or spec.gpu_model is not None:
        return None
    return {GROUP_LABEL: spec.name}


def _reported_facts(stdout: str) -> GpuFacts | None:
    return facts_from_report(json.loads(stdout))


def _annotation_of(facts: GpuFacts | None) -> str | None:
    return annotation(facts) if facts is not None else None


def _label_patch(spec: NodeGroupSpec, node: str, facts: pulumi.Output[GpuFacts | None] | None) -> dict[str, Any]:
    """The node's labels, with its GPU facts once its preflight has read them. The name stays
    known in a preview (the Kubernetes provider needs it to plan a patch); the rest may wait."""
    if facts is None:
        return label_patch(spec, node)
    patch = facts.apply(lambda found: label_patch(spec, node, found))
    return {"name": node, "labels": patch.apply(lambda p: p["labels"]), "annotations": patch.apply(lambda p: p["annotations"])}


def _combined(rounds: list[Any]) -> int:
    # Numbers come back from the engine as floats.
    return combined_round([int(r or 1) for r in rounds])


def _job_manifest(spec: NodeGroupSpec, job: VerificationJob, verification_round: int) -> dict[str, Any]:
    return job_manifest(spec, job.node, job.gpus, job.resource, verification_round)


def _job_name(job: k8s.batch.v1.Job) -> pulumi.Output[str]:
    return job.metadata.apply(lambda m: (m.name or "") if m else "")


def expected_allocatable(group: NodeGroupSpec) -> int | None:
    """The nvidia.com/gpu each node of the group must offer; None when MIG devices decide and none are declared."""
    plugin = group.device_plugin
    if plugin.mig_strategy == "none":
        return group.gpus_per_node * plugin.time_slicing_replicas
    return (plugin.mig_allocatable(group.gpus_per_node) or {}).get(GPU_RESOURCE)


def expected_mig_devices(group: NodeGroupSpec) -> dict[str, int] | None:
    """Under mixed MIG with a declared layout, each nvidia.com/mig-<profile> each node must offer."""
    if group.device_plugin.mig_strategy != "mixed":
        return None
    return group.device_plugin.mig_allocatable(group.gpus_per_node)


def node_target(group: NodeGroupSpec, node: str) -> NodeTarget:
    """What a healthy node of the group looks like (see gpu_nodes/kube/node_health.py)."""
    return NodeTarget(
        node=node,
        labels=group.node_labels,
        taints=[t.to_k8s() for t in group.taints],
        plugin_namespace=group.device_plugin.namespace,
        plugin_selector=selector_labels(PLUGIN_APP_NAME, group.name),
        expected_gpus=expected_allocatable(group),
        expected_mig_devices=expected_mig_devices(group),
    )
