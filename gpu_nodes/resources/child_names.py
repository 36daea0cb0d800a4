"""The names of what a fleet and its node groups register, and the check that no two of a
group's are the same.

A child's name joins the group's name, a node's name and a role with `-`, so group `a` with node
`b-c` and group `a-b` with node `c` both give `a-b-c-preflight`. The engine refuses the second
registration in the middle of `pulumi up`, after other machines' preflight may have run; here the
names are computed from the validated config and compared before anything is registered.
A resource's URN holds its type and its parent's type, not its parent's name: two children of
two groups collide when their type and name are the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import STACK_KEYS, Naming, StackSpec
from gpu_nodes.manifests.verification import claim_template_counts, proof_jobs_planned, request_slug, requests
from gpu_nodes.resources.children import child_name, claim_child

COMMAND = "command:remote:Command"
COPY = "command:remote:CopyToRemote"
# Our dynamic resources' own types (`pulumi-python:dynamic/<module>:<name>`, the classes in providers/).
TAINTS = "pulumi-python:dynamic/gpu-nodes:NodeTaints"
READINESS = "pulumi-python:dynamic/gpu-nodes:NodeReadiness"
CLAIM = "pulumi-python:dynamic/gpu-nodes:ObjectClaim"
DRA_FEATURES = "pulumi-python:dynamic/gpu-nodes:DraFeatures"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
SERVICE = "kubernetes:core/v1:Service"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
COMPUTE_DOMAIN = "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"

# What each node gets, by the role its name ends in (`<node>-<role>`). The preflight's copy of
# the script is named after the command, by gpu_nodes/preflight/command.py.
PREFLIGHT_CHILD = "preflight"
TAINTS_CHILD = "taints"
LABELS_CHILD = "labels"
READINESS_CHILD = "readiness"
NODE_CHILDREN = (
    (PREFLIGHT_CHILD, COMMAND),
    (f"{PREFLIGHT_CHILD}-script", COPY),
    (TAINTS_CHILD, TAINTS),
    (LABELS_CHILD, NODE_PATCH),
    (READINESS_CHILD, READINESS),
)

# The names of a group's own children, below the group (`Children.name` puts `<group>-` before each).
PRIORITY_CLASS_CHILD = "priority-class"
VERIFICATION_PRIORITY_CLASS_CHILD = "verification-priority-class"
DEVICE_PLUGIN_CONFIG_CHILD = "device-plugin-config"
DEVICE_PLUGIN_CHILD = "device-plugin"
DEVICE_PLUGIN_SERVICE_ACCOUNT_CHILD = "device-plugin-service-account"
# Under devicePlugin.sharing.strategy mps: the plugin's MPS control daemon (gpu_nodes/manifests/mps_control_daemon.py).
MPS_CONTROL_DAEMON_CHILD = "mps-control-daemon"
VERIFICATION_CHECK_CHILD = "verification-check"
# Under metrics.enabled: NVIDIA's dcgm-exporter, its Service and (metrics.serviceMonitor) its ServiceMonitor.
METRICS_EXPORTER_CHILD = "dcgm-exporter"
METRICS_SERVICE_CHILD = "dcgm-exporter-service"
METRICS_MONITOR_CHILD = "dcgm-exporter-monitor"
# Under allocator dra, in place of the device plugin's: NVIDIA's DRA driver's kubelet plugin, whose
# DaemonSet is the group's `device-plugin` child all the same (node_builders.py, `deploy_dra_driver`).
DRA_SERVICE_ACCOUNT_CHILD = "dra-kubelet-plugin-service-account"
DRA_ROLE_CHILD = "dra-kubelet-plugin-role"
DRA_ROLE_BINDING_CHILD = "dra-kubelet-plugin-role-binding"
# With dra.computeDomains: the kubelet plugin's Role on the ComputeDomains' cliques, and the group's ComputeDomain.
DRA_CLIQUES_ROLE_CHILD = "dra-kubelet-plugin-cliques-role"
DRA_CLIQUES_ROLE_BINDING_CHILD = "dra-kubelet-plugin-cliques-role-binding"
COMPUTE_DOMAIN_CHILD = "compute-domain"


# The fleet's own children, below the fleet (`Children.name` puts `<fleet>-` before each); a
# group is named after itself.
CLUSTER_ACCESS_CHILD = "cluster-access"
COEXISTENCE_CHILD = "device-plugin-coexistence"
DRA_FEATURES_CHILD = "dra-features"


def namespace_child(namespace: str) -> str:
    return f"namespace-{namespace}"


def pull_secret_child(namespace: str) -> str:
    return f"pull-secret-{namespace}"


def runtime_class_child(name: str) -> str:
    return f"runtime-class-{name}"


def device_class_child(name: str) -> str:
    return f"device-class-{name}"


def compute_domain_child(kind: str, name: str) -> str:
    """One of what runs the DRA driver's ComputeDomains (device_classes.py), by its kind and name."""
    return f"compute-domains-{kind.lower()}-{name}"


def claim_template_child(gpus: int) -> str:
    return f"verify-claim-{gpus}-gpus"


def mig_claim_template_child(profile: str) -> str:
    """Under dra.migProfiles: the template of one MIG device of `profile` (verification.mig_claim_template_manifest)."""
    return f"verify-claim-mig-{profile}"


def node_child(node: str, role: str) -> str:
    return f"{node}-{role}"


def job_child(node: str | None, slug: str) -> str:
    return f"verify-{node or 'group'}-{slug}"


@dataclass(frozen=True)
class Child:
    type: str
    name: str  # below the fleet, without its `<fleet>-` prefix
    source: str  # the config key whose value made the name
    value: str  # and that value


def group_children(index: int, group: NodeGroupSpec, naming: Naming = STACK_KEYS) -> Iterator[Child]:
    """Every resource the group registers below it (gpu_nodes/resources/node_group.py), each with the setting that
    names it, as `naming` says."""

    def at(rest: str) -> str:
        return naming.group(index, rest)

    g = group.name
    for n, node in enumerate(group.nodes):
        for role, kind in NODE_CHILDREN:
            if role.startswith(PREFLIGHT_CHILD) and not group.preflight.enabled:
                continue
            yield Child(kind, child_name(g, node_child(node.name, role)), at(f"nodes[{n}].name"), node.name)
    for pc in (PRIORITY_CLASS_CHILD, VERIFICATION_PRIORITY_CLASS_CHILD):
        yield Child(PRIORITY_CLASS, child_name(g, pc), at("name"), g)
        yield Child(CLAIM, child_name(g, claim_child(pc)), at("name"), g)
    if group.uses_dra:
        yield Child(SERVICE_ACCOUNT, child_name(g, DRA_SERVICE_ACCOUNT_CHILD), at("name"), g)
        yield Child(CLUSTER_ROLE, child_name(g, DRA_ROLE_CHILD), at("name"), g)
        yield Child(CLUSTER_ROLE_BINDING, child_name(g, DRA_ROLE_BINDING_CHILD), at("name"), g)
        yield Child(DAEMON_SET, child_name(g, DEVICE_PLUGIN_CHILD), at("name"), g)
        for gpus in sorted(claim_template_counts(group)):
            yield Child(CLAIM_TEMPLATE, child_name(g, claim_template_child(gpus)), at("name"), g)
        for profile in group.dra.mig_profiles:
            yield Child(CLAIM_TEMPLATE, child_name(g, mig_claim_template_child(profile)), at("dra.migProfiles"), profile)
        if group.dra.compute_domains:
            yield Child(ROLE, child_name(g, DRA_CLIQUES_ROLE_CHILD), at("name"), g)
            yield Child(ROLE_BINDING, child_name(g, DRA_CLIQUES_ROLE_BINDING_CHILD), at("name"), g)
            yield Child(COMPUTE_DOMAIN, child_name(g, COMPUTE_DOMAIN_CHILD), at("name"), g)
    else:
        if group.device_plugin.needs_config_file:
            yield Child(CONFIG_MAP, child_name(g, DEVICE_PLUGIN_CONFIG_CHILD), at("name"), g)
        yield Child(SERVICE_ACCOUNT, child_name(g, DEVICE_PLUGIN_SERVICE_ACCOUNT_CHILD), at("name"), g)
        yield Child(DAEMON_SET, child_name(g, DEVICE_PLUGIN_CHILD), at("name"), g)
        if group.shares_through_mps:
            yield Child(DAEMON_SET, child_name(g, MPS_CONTROL_DAEMON_CHILD), at("name"), g)
    if group.metrics.enabled:
        yield Child(DAEMON_SET, child_name(g, METRICS_EXPORTER_CHILD), at("name"), g)
        yield Child(SERVICE, child_name(g, METRICS_SERVICE_CHILD), at("name"), g)
        if group.metrics.service_monitor:
            yield Child(SERVICE_MONITOR, child_name(g, METRICS_MONITOR_CHILD), at("name"), g)
    yield Child(CONFIG_MAP, child_name(g, VERIFICATION_CHECK_CHILD), at("name"), g)
    for resource, count in requests(group):
        slug = request_slug(resource, count)
        if group.verification.per_node:
            for n, node in enumerate(group.nodes):
                yield Child(JOB, child_name(g, job_child(node.name, slug)), at(f"nodes[{n}].name"), node.name)
        else:
            yield Child(JOB, child_name(g, job_child(None, slug)), at("name"), g)
    for n, node in enumerate(group.nodes):
        for slug in proof_jobs_planned(group):
            yield Child(JOB, child_name(g, job_child(node.name, slug)), at(f"nodes[{n}].name"), node.name)


def name_collisions(stack: StackSpec) -> list[str]:
    """One line per two parts of the config that would give a resource the same name (the first such name)."""
    first: dict[tuple[str, str], Child] = {}
    reported: set[tuple[str, str]] = set()
    problems = []
    for index, group in enumerate(stack.node_groups):
        for child in group_children(index, group, stack.naming):
            other = first.setdefault((child.type, child.name), child)
            if other is not child and (child.source, other.source) not in reported:
                reported.add((child.source, other.source))
                problems.append(
                    f"{child.source}: got {child.value!r}; gives the resource name {child.name!r} ({child.type}), as "
                    f"{other.source} ({other.value!r}) does: names join the group's and the node's with '-'; rename one"
                )
    return problems
