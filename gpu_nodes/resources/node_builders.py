"""What a node group registers, part by part.

Each builder registers one part of a group below the group's `Children` and returns a frozen
record of what it registered: what the later parts wait for or read. `GpuNodeGroup`
(node_group.py) calls them in order, so the group's dependency graph is the records passed
from one builder to the next.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_nodes.config.metrics import EXPORTER_PORT
from gpu_nodes.config.node_group import NodeGroupSpec, NodeSpec
from gpu_nodes.kube.client import ClusterAccess
from gpu_nodes.manifests import compute_domains, dcgm_exporter, dra_driver, mps_control_daemon
from gpu_nodes.manifests.device_plugin import APP_NAME as PLUGIN_APP_NAME
from gpu_nodes.manifests.device_plugin import (
    config_map_manifest,
    daemonset_manifest,
    rollout_timeout,
    service_account_manifest,
)
from gpu_nodes.manifests.naming import selector_labels
from gpu_nodes.manifests.node_labels import label_patch
from gpu_nodes.manifests.priority_class import priority_class_manifest, verification_priority_class_manifest
from gpu_nodes.manifests.verification import (
    Role,
    VerificationJob,
    check_config_map_manifest,
    claim_templates,
    combined_round,
    manifest_of,
    mig_claim_templates,
    verification_jobs,
)
from gpu_nodes.preflight.command import node_preflight, waits_for
from gpu_nodes.preflight.facts import GpuFacts, annotation, facts_from_report
from gpu_nodes.preflight.remote import remote
from gpu_nodes.preflight.report import read_report
from gpu_nodes.proof.dra import ExpectedGpus
from gpu_nodes.proof.target import DeclaredGpus, NodeTarget
from gpu_nodes.providers.claims import CREATE, Claim
from gpu_nodes.providers.readiness import (
    NodeReadiness,
    ReadinessInputs,
    diagnostics_input,
    imex_input,
    metrics_input,
    performance_input,
)
from gpu_nodes.providers.taints import NodeTaints, TaintsInputs
from gpu_nodes.resources.child_names import (
    COMPUTE_DOMAIN_CHILD,
    DEVICE_PLUGIN_CHILD,
    DEVICE_PLUGIN_CONFIG_CHILD,
    DEVICE_PLUGIN_SERVICE_ACCOUNT_CHILD,
    DRA_CLIQUES_ROLE_BINDING_CHILD,
    DRA_CLIQUES_ROLE_CHILD,
    DRA_ROLE_BINDING_CHILD,
    DRA_ROLE_CHILD,
    DRA_SERVICE_ACCOUNT_CHILD,
    LABELS_CHILD,
    METRICS_EXPORTER_CHILD,
    METRICS_MONITOR_CHILD,
    METRICS_SERVICE_CHILD,
    MPS_CONTROL_DAEMON_CHILD,
    PREFLIGHT_CHILD,
    PRIORITY_CLASS_CHILD,
    READINESS_CHILD,
    TAINTS_CHILD,
    VERIFICATION_CHECK_CHILD,
    VERIFICATION_PRIORITY_CLASS_CHILD,
    claim_template_child,
    job_child,
    mig_claim_template_child,
    node_child,
)
from gpu_nodes.resources.children import Children
from gpu_nodes.resources.namespaces import SharedNamespace
from gpu_nodes.resources.registration import generic_object, register, register_claimed
from gpu_nodes.vocabulary import GPU_RESOURCE, GROUP_LABEL


@dataclass(frozen=True)
class GroupContext:
    """What every builder registers with: the group's children, its spec, and how our dynamic
    resources reach the API server."""

    children: Children
    spec: NodeGroupSpec
    cluster: ClusterAccess


@dataclass(frozen=True)
class Preflight:
    """One machine's preflight: the command (after its copy of the script) and the GPUs it reported."""

    name: str
    command: remote.Command
    # Its node's labels, readiness check and report all read them (gpu_nodes/preflight/facts.py).
    facts: pulumi.Output[GpuFacts | None]

    @property
    def devices(self) -> pulumi.Output[list[dict[str, str]]]:
        """The GPUs the machine reported, by UUID and model: a DRA node's ResourceSlices must list exactly these."""
        return self.command.stdout.apply(_reported_devices)


@dataclass(frozen=True)
class PreparedNode:
    """A node before it is proven: its target, its preflight (None when the group runs none),
    its taints with the readiness gate, and its labels."""

    name: str
    target: NodeTarget
    preflight: Preflight | None
    taints: NodeTaints
    labels: k8s.core.v1.NodePatch


@dataclass(frozen=True)
class PriorityClasses:
    """The group's two PriorityClasses, each created after its claim."""

    workloads: k8s.scheduling.v1.PriorityClass
    verification: k8s.scheduling.v1.PriorityClass


@dataclass(frozen=True)
class DevicePlugin:
    """The device plugin DaemonSet, which the Jobs and readiness checks wait for."""

    daemonset: k8s.apps.v1.DaemonSet


@dataclass(frozen=True)
class Metrics:
    """The group's dcgm-exporter DaemonSet, which each node's readiness check scrapes; None where it runs none."""

    daemonset: k8s.apps.v1.DaemonSet | None = None

    @property
    def ready(self) -> list[pulumi.Resource]:
        return [self.daemonset] if self.daemonset is not None else []


@dataclass(frozen=True)
class RegisteredJob:
    """A verification Job as planned (its node, GPUs and resource) and as registered."""

    job: VerificationJob
    resource: k8s.batch.v1.Job

    @property
    def name(self) -> pulumi.Output[str]:
        """The Job's name in the cluster (it carries the round, known once the taints are)."""
        return self.resource.metadata.apply(lambda m: (m.name or "") if m else "")


@dataclass(frozen=True)
class Verification:
    """The check script's ConfigMap and the verification Jobs, in config order."""

    check: k8s.core.v1.ConfigMap
    jobs: tuple[RegisteredJob, ...]

    def of_node(self, node: str, role: Role = Role.WORKLOAD) -> list[RegisteredJob]:
        """The Jobs of `role` that prove `node`: its own (`perNode`) or the group's, in config order."""
        return [j for j in self.jobs if j.job.node in (node, None) and j.job.role is role]

    def one_of(self, node: str, role: Role) -> RegisteredJob | None:
        """The node's one Job of a proof role (DCGM's, NCCL's), where the group runs it."""
        return next(iter(self.of_node(node, role)), None)


@dataclass(frozen=True)
class ProvenNode:
    """A node with its readiness check and the Jobs that check waits for: what its report shows."""

    node: PreparedNode
    readiness: NodeReadiness
    jobs: tuple[RegisteredJob, ...]


def prepare_nodes(
    group: GroupContext, ssh_key: pulumi.Input[str] | None, before: Sequence[pulumi.Resource]
) -> tuple[PreparedNode, ...]:
    """Per node in config order: its preflight when there is a key (each machine after the one
    before it in its lane, see `waits_for`), then its taints and labels (`mark_node`)."""
    nodes: list[PreparedNode] = []
    for index, node in enumerate(group.spec.nodes):
        preflight = None
        if ssh_key is not None:
            lane = waits_for(index, group.spec.preflight.max_sessions)
            after = nodes[lane].preflight if lane is not None else None
            preflight = check_machine(group, node, ssh_key, after)
        nodes.append(mark_node(group, node.name, preflight, before))
    return tuple(nodes)


def check_machine(group: GroupContext, node: NodeSpec, ssh_key: pulumi.Input[str], after: Preflight | None) -> Preflight:
    """The machine's preflight over SSH, and the GPU facts its report gives."""
    name = group.children.name(node_child(node.name, PREFLIGHT_CHILD))
    opts = group.children.opts(node_child(node.name, PREFLIGHT_CHILD))
    command = node_preflight(name, group.spec, node, ssh_key, opts, after=after.command if after else None)
    return Preflight(name, command, command.stdout.apply(_reported_facts))


def mark_node(group: GroupContext, node: str, preflight: Preflight | None, before: Sequence[pulumi.Resource]) -> PreparedNode:
    """Our taints with the readiness gate first, after `before` and the preflight; then our
    labels, which are what bring the device plugin to the node."""
    target = node_target(group.spec, node)
    taints_child, labels_child = node_child(node, TAINTS_CHILD), node_child(node, LABELS_CHILD)
    checked = [preflight.command] if preflight else []
    taints = NodeTaints(
        group.children.name(taints_child),
        TaintsInputs(target, gpu_devices=_dra_devices(group.spec, preflight)),
        group.cluster,
        opts=group.children.opts(taints_child, depends_on=[*checked, *before]),
    )
    labels = register(
        {"metadata": _label_patch(group.spec, node, preflight.facts if preflight else None)},
        k8s.core.v1.NodePatch,
        group.children.name(labels_child),
        group.children.opts(labels_child, depends_on=[taints]),
    )
    return PreparedNode(node, target, preflight, taints, labels)


def claim_priority_classes(group: GroupContext, stack_label: str) -> PriorityClasses:
    """The group's PriorityClass for its workloads and the one for its verification Jobs."""
    workloads = priority_class_manifest(group.spec, stack_label)
    verification = verification_priority_class_manifest(group.spec, stack_label)
    return PriorityClasses(
        workloads=_claimed_priority_class(group, workloads, PRIORITY_CLASS_CHILD, stack_label),
        verification=_claimed_priority_class(group, verification, VERIFICATION_PRIORITY_CLASS_CHILD, stack_label),
    )


def _claimed_priority_class(
    group: GroupContext, manifest: dict[str, Any], child: str, stack_label: str
) -> k8s.scheduling.v1.PriorityClass:
    """A PriorityClass, created once its claim finds the name free (or this stack's)."""
    setting = "Give the group another priorityClass.name"
    claim = Claim("PriorityClass", manifest["metadata"]["name"], CREATE, stack_label, setting)
    return register_claimed(manifest, k8s.scheduling.v1.PriorityClass, group.children, child, claim, group.cluster)


def deploy_device_plugin(
    group: GroupContext,
    namespace: SharedNamespace,
    runtime_class: pulumi.Resource | None,
    after: Sequence[pulumi.Resource] = (),
) -> DevicePlugin:
    """The device plugin DaemonSet, after its ServiceAccount, its ConfigMap (when its settings
    need one), its namespace, the RuntimeClass its pods name and `after`."""
    # Destroying the stack deletes the namespaces, and the cluster deletes what is in them: the
    # engine need not delete (and wait for) each object first. Removing only a group still
    # deletes its objects one by one.
    children, spec = group.children, group.spec
    needs: list[pulumi.Resource] = [*namespace.ready, *([runtime_class] if runtime_class is not None else []), *after]
    # The ServiceAccount admission plugin refuses a pod that names an account not there yet.
    needs.append(_plugin_service_account(group, namespace))
    config_map = config_map_manifest(spec)
    if config_map is not None:
        opts = children.opts(DEVICE_PLUGIN_CONFIG_CHILD, deleted_with=namespace.deleted_with)
        needs.append(register(config_map, k8s.core.v1.ConfigMap, children.name(DEVICE_PLUGIN_CONFIG_CHILD), opts))
    rollout = rollout_timeout(spec)
    # Under MPS the plugin serves only once its daemon is ready (internal/plugin/mps.go, waitForDaemon): the
    # daemon's rollout first.
    mps = _mps_control_daemon(group, namespace, needs, rollout)
    opts = children.opts(DEVICE_PLUGIN_CHILD, depends_on=[*needs, *mps], **_allocator_opts(namespace, rollout))
    daemonset = register(daemonset_manifest(spec), k8s.apps.v1.DaemonSet, children.name(DEVICE_PLUGIN_CHILD), opts)
    return DevicePlugin(daemonset)


def _mps_control_daemon(
    group: GroupContext, namespace: SharedNamespace, needs: Sequence[pulumi.Resource], rollout: str
) -> list[k8s.apps.v1.DaemonSet]:
    """Under devicePlugin.sharing.strategy mps, the plugin's MPS control daemon on the group's nodes, after
    what the plugin needs (its config, account, namespace, RuntimeClass); none otherwise."""
    if not group.spec.shares_through_mps:
        return []
    children = group.children
    opts = children.opts(
        MPS_CONTROL_DAEMON_CHILD,
        depends_on=list(needs),
        deleted_with=namespace.deleted_with,
        custom_timeouts=pulumi.CustomTimeouts(create=rollout, update=rollout),
    )
    manifest = mps_control_daemon.daemonset_manifest(group.spec)
    return [register(manifest, k8s.apps.v1.DaemonSet, children.name(MPS_CONTROL_DAEMON_CHILD), opts)]


def deploy_dra_driver(
    group: GroupContext,
    namespace: SharedNamespace,
    device_classes: Sequence[pulumi.Resource],
    device_taints: pulumi.Input[bool] = False,
    after: Sequence[pulumi.Resource] = (),
) -> DevicePlugin:
    """Under allocator dra, in place of the device plugin: NVIDIA's DRA driver's kubelet plugin on
    the group's nodes (gpu_nodes/manifests/dra_driver.py), after its ServiceAccount, the RBAC it
    publishes ResourceSlices with, its namespace, the stack's DeviceClasses and `after`. Its GPU health
    check is on where the cluster keeps device taints (`device_taints`), unless the group turns health
    checks off (`devicePlugin.healthChecks`)."""
    children, spec = group.children, group.spec
    account_opts = children.opts(DRA_SERVICE_ACCOUNT_CHILD, depends_on=namespace.ready, deleted_with=namespace.deleted_with)
    account = register(
        dra_driver.service_account_manifest(spec),
        k8s.core.v1.ServiceAccount,
        children.name(DRA_SERVICE_ACCOUNT_CHILD),
        account_opts,
    )
    role = register(
        dra_driver.cluster_role_manifest(spec),
        k8s.rbac.v1.ClusterRole,
        children.name(DRA_ROLE_CHILD),
        children.opts(DRA_ROLE_CHILD),
    )
    binding = register(
        dra_driver.cluster_role_binding_manifest(spec),
        k8s.rbac.v1.ClusterRoleBinding,
        children.name(DRA_ROLE_BINDING_CHILD),
        children.opts(DRA_ROLE_BINDING_CHILD, depends_on=[role, account]),
    )
    # With ComputeDomains, the compute-domains container reads the cliques in its namespace.
    cliques = _cliques_role(group, namespace, account) if spec.dra.compute_domains else []
    # The group's one GPU allocator DaemonSet is the device plugin's child: a group that changes
    # allocator replaces it, the old one deleted first (`_allocator_opts`).
    needs = [*namespace.ready, account, binding, *cliques, *device_classes, *after]
    opts = children.opts(DEVICE_PLUGIN_CHILD, depends_on=needs, **_allocator_opts(namespace, rollout_timeout(spec)))
    health_check, dynamic_mig = spec.device_plugin.health_checks, bool(spec.dra.mig_profiles)
    gates = pulumi.Output.from_input(device_taints).apply(
        lambda kept: dra_driver.feature_gates(health_check and bool(kept), dynamic_mig)
    )
    manifest = dra_driver.daemonset_manifest(spec, gates=gates)
    return DevicePlugin(register(manifest, k8s.apps.v1.DaemonSet, children.name(DEVICE_PLUGIN_CHILD), opts))


def _cliques_role(group: GroupContext, namespace: SharedNamespace, account: pulumi.Resource) -> list[pulumi.Resource]:
    """The kubelet plugin's Role on the ComputeDomains' cliques in its namespace, and its binding."""
    children, spec = group.children, group.spec
    role = register(
        compute_domains.plugin_role(spec),
        k8s.rbac.v1.Role,
        children.name(DRA_CLIQUES_ROLE_CHILD),
        children.opts(DRA_CLIQUES_ROLE_CHILD, depends_on=namespace.ready, deleted_with=namespace.deleted_with),
    )
    binding = register(
        compute_domains.plugin_role_binding(spec, dra_driver.service_account_name(spec)),
        k8s.rbac.v1.RoleBinding,
        children.name(DRA_CLIQUES_ROLE_BINDING_CHILD),
        children.opts(DRA_CLIQUES_ROLE_BINDING_CHILD, depends_on=[role, account], deleted_with=namespace.deleted_with),
    )
    return [role, binding]


def _allocator_opts(namespace: SharedNamespace, rollout: str) -> dict[str, Any]:
    """The options of a group's GPU allocator DaemonSet, the device plugin's or the DRA driver's
    kubelet plugin: one child, replaced when the group changes allocator and deleted before its
    replacement, since NVIDIA refuses both allocators on one node (and two device plugins take
    turns on one socket)."""
    return {
        "deleted_with": namespace.deleted_with,
        "custom_timeouts": pulumi.CustomTimeouts(create=rollout, update=rollout),
        "delete_before_replace": True,
    }


def _plugin_service_account(group: GroupContext, namespace: SharedNamespace) -> k8s.core.v1.ServiceAccount:
    children, child = group.children, DEVICE_PLUGIN_SERVICE_ACCOUNT_CHILD
    opts = children.opts(child, depends_on=namespace.ready, deleted_with=namespace.deleted_with)
    return register(service_account_manifest(group.spec), k8s.core.v1.ServiceAccount, children.name(child), opts)


def deploy_metrics(
    group: GroupContext, namespace: SharedNamespace, runtime_class: pulumi.Resource | None, after: Sequence[pulumi.Resource] = ()
) -> Metrics:
    """Under metrics.enabled: NVIDIA's dcgm-exporter on the group's nodes with its Service, and a ServiceMonitor where
    the group asks for one (gpu_nodes/manifests/dcgm_exporter.py); nothing otherwise."""
    children, spec = group.children, group.spec
    if not spec.metrics.enabled:
        return Metrics()
    needs = [*namespace.ready, *([runtime_class] if runtime_class is not None else []), *after]
    opts = children.opts(METRICS_EXPORTER_CHILD, depends_on=needs, deleted_with=namespace.deleted_with)
    daemonset = register(
        dcgm_exporter.daemonset_manifest(spec), k8s.apps.v1.DaemonSet, children.name(METRICS_EXPORTER_CHILD), opts
    )
    opts = children.opts(METRICS_SERVICE_CHILD, depends_on=namespace.ready, deleted_with=namespace.deleted_with)
    service = register(dcgm_exporter.service_manifest(spec), k8s.core.v1.Service, children.name(METRICS_SERVICE_CHILD), opts)
    if spec.metrics.service_monitor:
        opts = children.opts(METRICS_MONITOR_CHILD, depends_on=[service], deleted_with=namespace.deleted_with)
        generic_object(dcgm_exporter.service_monitor_manifest(spec), children.name(METRICS_MONITOR_CHILD), opts)
    return Metrics(daemonset)


def run_verification(
    group: GroupContext,
    namespace: SharedNamespace,
    runtime_class: pulumi.Resource | None,
    nodes: Sequence[PreparedNode],
    plugin: DevicePlugin,
    priority: PriorityClasses,
) -> Verification:
    """The check script's ConfigMap, then each verification Job: after the device plugin, the
    verification PriorityClass, the namespace, the check, and the labels and taints of the
    nodes it runs on."""
    children, spec = group.children, group.spec
    opts = children.opts(VERIFICATION_CHECK_CHILD, depends_on=namespace.ready, deleted_with=namespace.deleted_with)
    check = register(check_config_map_manifest(spec), k8s.core.v1.ConfigMap, children.name(VERIFICATION_CHECK_CHILD), opts)
    shared = [plugin.daemonset, priority.verification, *namespace.ready, check]
    shared += [runtime_class] if runtime_class is not None else []
    shared += _claim_templates(group, namespace)
    shared += _compute_domain(group, namespace, plugin)
    jobs = []
    for job in verification_jobs(spec):
        runs_on = [n for n in nodes if job.node in (None, n.name)]
        # A node gated again after it degraded starts a new round, and its Jobs run again.
        rounds: pulumi.Output[int] = pulumi.Output.all(*(n.taints.round for n in runs_on)).apply(_combined)
        manifest = rounds.apply(functools.partial(manifest_of, spec, job))
        child = job_child(job.node, job.slug)
        # The round is known only once the taints are: the manifest is an Output, taken apart here.
        resource = register(
            {"metadata": manifest.apply(lambda m: m["metadata"]), "spec": manifest.apply(lambda m: m["spec"])},
            k8s.batch.v1.Job,
            children.name(child),
            children.opts(
                child,
                depends_on=[*shared, *(n.labels for n in runs_on), *(n.taints for n in runs_on)],
                deleted_with=namespace.deleted_with,
            ),
        )
        jobs.append(RegisteredJob(job, resource))
    return Verification(check, tuple(jobs))


def _claim_templates(group: GroupContext, namespace: SharedNamespace) -> list[pulumi.Resource]:
    """Under allocator dra, the ResourceClaimTemplates the verification Jobs' pods take their GPUs
    through, one per count. pulumi-kubernetes 4.25 has no typed resource.k8s.io/v1 classes (its
    newest is v1beta2), so each is a generic object of that apiVersion and kind."""
    children = group.children
    templates: list[pulumi.Resource] = []
    for manifest in claim_templates(group.spec):
        gpus = manifest["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        child = claim_template_child(gpus)
        opts = children.opts(child, depends_on=namespace.ready, deleted_with=namespace.deleted_with)
        templates.append(generic_object(manifest, children.name(child), opts))
    for profile, manifest in mig_claim_templates(group.spec):
        child = mig_claim_template_child(profile)
        opts = children.opts(child, depends_on=namespace.ready, deleted_with=namespace.deleted_with)
        templates.append(generic_object(manifest, children.name(child), opts))
    return templates


def _compute_domain(group: GroupContext, namespace: SharedNamespace, plugin: DevicePlugin) -> list[pulumi.Resource]:
    """With dra.computeDomains, the group's ComputeDomain, whose channel its IMEX Jobs claim (its controller makes the
    template). It goes before what runs it (the kubelet plugin, and through it the controller): not with its namespace,
    since the controller must remove its finalizer, and the template's, first."""
    if not (group.spec.uses_dra and group.spec.dra.compute_domains):
        return []
    children = group.children
    # Its spec is immutable (the CRD's `self == oldSelf`): a new one replaces it, the old one deleted first (one name).
    opts = children.opts(
        COMPUTE_DOMAIN_CHILD,
        depends_on=[*namespace.ready, plugin.daemonset],
        replace_on_changes=["spec"],
        delete_before_replace=True,
    )
    return [generic_object(compute_domains.compute_domain_manifest(group.spec), children.name(COMPUTE_DOMAIN_CHILD), opts)]


def prove_nodes(
    group: GroupContext,
    nodes: Sequence[PreparedNode],
    plugin: DevicePlugin,
    verification: Verification,
    metrics: Metrics = Metrics(),
) -> tuple[ProvenNode, ...]:
    """Each node's readiness check, after its Jobs (and the group's exporter): it proves the node and lifts its gate."""
    spec, compared = group.spec, _compared_group(group.spec)
    proven = []
    for node in nodes:
        jobs = verification.of_node(node.name)
        proof_jobs = [j for role in Role if role is not Role.WORKLOAD for j in verification.of_node(node.name, role)]
        child = node_child(node.name, READINESS_CHILD)
        preflight = node.preflight
        inputs = ReadinessInputs[pulumi.Output[Any]](
            node.target,
            namespace=spec.verification.namespace,
            jobs=[job.name for job in jobs],
            timeout_seconds=spec.verification.timeout_seconds,
            declared_gpus=DeclaredGpus.of(spec.gpus_per_node, spec.device_plugin.sharing.as_shared),
            group_label=compared,
            # New facts prove the node again.
            gpu_facts=preflight.facts.apply(_annotation_of) if compared and preflight else None,
            # A fresh preflight proves the node again, and only one may bring a GPU back (readiness.py).
            preflight_resource=preflight.name if preflight else None,
            preflight_run=preflight.command.id if preflight else None,
            gpu_devices=_dra_devices(spec, preflight),
            access_jobs=[job.name for job in verification.of_node(node.name, Role.ACCESS)],
            **_proof_checks(spec, verification, node.name),
        )
        readiness = NodeReadiness(
            group.children.name(child),
            inputs,
            group.cluster,
            opts=group.children.opts(
                child,
                depends_on=[
                    plugin.daemonset,
                    node.labels,
                    node.taints,
                    *(job.resource for job in (*jobs, *proof_jobs)),
                    *metrics.ready,
                ],
            ),
        )
        proven.append(ProvenNode(node, readiness, (*jobs, *proof_jobs)))
    return tuple(proven)


def _proof_checks(spec: NodeGroupSpec, verification: Verification, node: str) -> dict[str, Any]:
    """The readiness inputs of the node's proof items beyond the runbook's, where the group runs them."""
    checks: dict[str, Any] = {}
    if (diagnostics := verification.one_of(node, Role.DIAGNOSTICS)) is not None:
        checks["diagnostics"] = diagnostics_input(diagnostics.name, spec.diagnostics_level)
    if (performance := verification.one_of(node, Role.PERFORMANCE)) is not None:
        floor = spec.verification.performance.min_bus_bandwidth
        checks["performance"] = performance_input(performance.name, spec.gpus_per_node, floor)
    if spec.metrics.enabled:
        selector = dcgm_exporter.exporter_selector(spec)
        checks["metrics"] = metrics_input(spec.device_plugin.namespace, selector, EXPORTER_PORT, spec.gpus_per_node)
    if (imex := verification.one_of(node, Role.IMEX)) is not None and spec.nvlink_domain is not None:
        checks["imex"] = imex_input(imex.name, spec.nvlink_domain.clique)
    return checks


def _compared_group(spec: NodeGroupSpec) -> dict[str, str] | None:
    """The label of the nodes whose GPU facts each readiness check compares (read from the
    cluster when it proves): with preflight and no declared gpuModel (preflight checks that
    on each machine)."""
    if not spec.preflight.enabled or spec.gpu_model is not None:
        return None
    return {GROUP_LABEL: spec.name}


def _reported_facts(stdout: object) -> GpuFacts | None:
    """None when stdout holds no report: a machine not yet checked has no facts (preflight/report.py)."""
    report = read_report(stdout)
    return facts_from_report(report) if report is not None else None


def _reported_devices(stdout: object) -> list[dict[str, str]]:
    """None of them when stdout holds no report: a machine not yet checked has reported no GPU."""
    report = read_report(stdout)
    gpus = ExpectedGpus.from_report(report).gpus if report is not None else ()
    return [{"uuid": uuid, "model": model} for uuid, model in gpus]


def _dra_devices(spec: NodeGroupSpec, preflight: Preflight | None) -> pulumi.Output[list[dict[str, str]]] | None:
    """Under allocator dra with preflight, the GPUs the machine reported; else None (no such input)."""
    return preflight.devices if spec.uses_dra and preflight is not None else None


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


def expected_allocatable(group: NodeGroupSpec) -> int | None:
    """The nvidia.com/gpu each node of the group must offer; None when MIG devices decide and none are declared."""
    plugin = group.device_plugin
    if plugin.mig_strategy == "none":
        return group.gpus_per_node * plugin.sharing.replicas
    return (plugin.mig_allocatable(group.gpus_per_node) or {}).get(GPU_RESOURCE)


def offered_resource(group: NodeGroupSpec) -> str | None:
    """The resource each node offers its GPUs as where it is not nvidia.com/gpu: a shared GPU's replicas
    renamed (devicePlugin.sharing.renameByDefault); None elsewhere."""
    resource = group.device_plugin.sharing.resource
    return resource if resource != GPU_RESOURCE else None


def expected_mig_devices(group: NodeGroupSpec) -> dict[str, int] | None:
    """Under mixed MIG with a declared layout, each nvidia.com/mig-<profile> each node must offer."""
    if group.device_plugin.mig_strategy != "mixed":
        return None
    return group.device_plugin.mig_allocatable(group.gpus_per_node)


def node_target(group: NodeGroupSpec, node: str) -> NodeTarget:
    """What a healthy node of the group looks like (see gpu_nodes/proof/target.py)."""
    if group.uses_dra:
        return NodeTarget(
            node=node,
            labels=group.node_labels,
            taints=[t.to_k8s() for t in group.taints],
            plugin_namespace=group.device_plugin.namespace,
            plugin_selector=selector_labels(dra_driver.APP_NAME, group.name),
            expected_gpus=None,
            dra_gpus={
                "count": group.gpus_per_node,
                **({"model": group.gpu_model} if group.gpu_model else {}),
                # Under the driver's dynamic MIG: the profiles its slices must offer a MIG device of.
                **({"migProfiles": list(group.dra.mig_profiles)} if group.dra.mig_profiles else {}),
            },
        )
    return NodeTarget(
        node=node,
        labels=group.node_labels,
        taints=[t.to_k8s() for t in group.taints],
        plugin_namespace=group.device_plugin.namespace,
        plugin_selector=selector_labels(PLUGIN_APP_NAME, group.name),
        expected_gpus=expected_allocatable(group),
        gpu_resource=offered_resource(group),
        expected_mig_devices=expected_mig_devices(group),
        mig_devices=dict(group.device_plugin.mig_devices) or None,
    )
