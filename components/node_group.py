"""`GpuNodeGroup`: brings one group of GPU machines into service and proves it works.

Per node: preflight over SSH, then our labels and taints, and once the plugin is up a check of
the node's GPU count. Per group: PriorityClasses, the device plugin DaemonSet, and
verification Jobs that wait on the plugin and on their node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import remote

from components.device_plugin import config_map_manifest, daemonset_manifest, plugin_revision
from components.gpu_capacity import NodeGpuCapacity, expected_allocatable
from components.kube_client import ClusterAccess
from components.node_labels import label_patch
from components.preflight import node_preflight, parse_report
from components.priority_class import priority_class_manifest, verification_priority_class_manifest
from components.specs import NodeGroupSpec
from components.taints import NodeTaints
from components.verification import VerificationJob, verification_jobs
from components.verification_result import VerificationResult

TYPE = "gpu-nodes:index:GpuNodeGroup"


@dataclass
class GpuNodeGroupArgs:
    spec: NodeGroupSpec
    # The namespaces are shared between groups, so the program creates them once.
    device_plugin_namespace: k8s.core.v1.Namespace
    verification_namespace: k8s.core.v1.Namespace
    # The stack's RuntimeClass, when the stack creates it (shared by groups, created once):
    # the RuntimeClass admission plugin refuses a pod that names a class not there yet.
    runtime_class: k8s.node.v1.RuntimeClass | None = None
    # Used by preflight; required when `spec.preflight.enabled`.
    ssh_private_key: pulumi.Input[str] | None = None
    # How our dynamic resources reach the API server (the same as the Kubernetes provider's).
    cluster: ClusterAccess = ClusterAccess()


Registered = TypeVar("Registered", bound=pulumi.CustomResource)


def _register(manifest: dict[str, Any], cls: type[Registered], name: str, opts: pulumi.ResourceOptions) -> Registered:
    """Register a manifest dict as the typed resource `cls` (top-level fields become its arguments)."""
    fields = {_snake(k): v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    return cls(name, **fields, opts=opts)


def _preflight_key(name: str, args: GpuNodeGroupArgs) -> pulumi.Input[str] | None:
    """The SSH key preflight logs in with; None when the group runs no preflight."""
    if not args.spec.preflight.enabled:
        return None
    if args.ssh_private_key is None:
        raise ValueError(f"{name}: preflight is enabled but no SSH private key was given")
    return args.ssh_private_key


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


class GpuNodeGroup(pulumi.ComponentResource):
    nodes: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(TYPE, name, None, opts)
        spec = args.spec
        ssh_private_key = _preflight_key(name, args)
        child = pulumi.ResourceOptions(parent=self)

        preflights: dict[str, remote.Command] = {}
        labels = {}
        taints = {}
        for node in spec.nodes:
            gate: list[pulumi.Resource] = []
            if ssh_private_key is not None:
                preflights[node.name] = node_preflight(f"{name}-{node.name}-preflight", spec, node, ssh_private_key, child)
                gate = [preflights[node.name]]
            after_preflight = pulumi.ResourceOptions(parent=self, depends_on=gate)
            labels[node.name] = k8s.core.v1.NodePatch(
                f"{name}-{node.name}-labels", metadata=label_patch(spec, node.name), opts=after_preflight
            )
            taints[node.name] = NodeTaints(
                f"{name}-{node.name}-taints",
                node=node.name,
                taints=spec.taints,
                cluster=args.cluster,
                opts=after_preflight,
            )

        _register(priority_class_manifest(spec), k8s.scheduling.v1.PriorityClass, f"{name}-priority-class", child)
        verification_priority = _register(
            verification_priority_class_manifest(spec),
            k8s.scheduling.v1.PriorityClass,
            f"{name}-verification-priority-class",
            child,
        )
        shared = [args.runtime_class] if args.runtime_class is not None else []
        plugin_deps: list[pulumi.Resource] = [args.device_plugin_namespace, *shared]
        config_map = config_map_manifest(spec)
        if config_map is not None:
            plugin_deps.append(_register(config_map, k8s.core.v1.ConfigMap, f"{name}-device-plugin-config", child))
        daemonset = _register(
            daemonset_manifest(spec),
            k8s.apps.v1.DaemonSet,
            f"{name}-device-plugin",
            pulumi.ResourceOptions(parent=self, depends_on=plugin_deps),
        )

        # Beside the Jobs, not before them: a node short of a GPU still gets their verdict.
        capacity = {}
        expected = expected_allocatable(spec)
        if expected is not None:
            for node in spec.nodes:
                capacity[node.name] = NodeGpuCapacity(
                    f"{name}-{node.name}-gpu-capacity",
                    node=node.name,
                    expected=expected,
                    group=spec,
                    plugin_revision=plugin_revision(spec),
                    cluster=args.cluster,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[daemonset, labels[node.name], taints[node.name]]),
                )

        results: dict[str, tuple[VerificationJob, VerificationResult]] = {}
        for job in verification_jobs(spec):
            targets = [job.node] if job.node else [node.name for node in spec.nodes]
            needs = [daemonset, verification_priority, args.verification_namespace, *shared]
            needs += [labels[n] for n in targets] + [taints[n] for n in targets]
            resource_name = f"{name}-verify-{job.node or 'group'}-{job.slug}"
            resource = _register(
                job.manifest, k8s.batch.v1.Job, resource_name, pulumi.ResourceOptions(parent=self, depends_on=needs)
            )
            results[job.name] = (
                job,
                VerificationResult(
                    f"{resource_name}-result",
                    job=resource,
                    namespace=spec.verification.namespace,
                    job_name=job.name,
                    timeout_seconds=spec.verification.timeout_seconds,
                    cluster=args.cluster,
                    opts=child,
                ),
            )

        self.nodes = pulumi.Output.from_input(
            {
                node.name: self._node_report(
                    spec, node.name, preflights.get(node.name), taints[node.name], capacity.get(node.name), results
                )
                for node in spec.nodes
            }
        )
        self.register_outputs({"nodes": self.nodes})

    @staticmethod
    def _node_report(
        spec: NodeGroupSpec,
        node: str,
        preflight: remote.Command | None,
        taints: NodeTaints,
        capacity: NodeGpuCapacity | None,
        results: dict[str, tuple[VerificationJob, VerificationResult]],
    ) -> dict[str, Any]:
        """What was checked, applied and verified on one node."""
        mine = {job_name: entry for job_name, entry in results.items() if entry[0].node in (node, None)}
        return {
            "labels": spec.node_labels,
            "taints": taints.taints,
            "preflight": preflight.stdout.apply(parse_report) if preflight is not None else {"skipped": True},
            "gpuCapacity": (
                {"expected": expected_allocatable(spec), "allocatable": capacity.allocatable}
                if capacity is not None
                else {"skipped": True}
            ),
            "verification": {
                job_name: {"resource": job.resource, "gpus": job.gpus, "succeeded": result.succeeded}
                for job_name, (job, result) in mine.items()
            },
        }
