"""Groups of NVLink-domain machines and MIG under DRA, as the program registers them: the device plugin's IMEX
channels and each node's IMEX Job; a DRA group's ComputeDomains (what runs them once per stack, each after its claim,
the group's ComputeDomain before its Jobs); the driver's dynamic MIG (its gate asked of the cluster, a template per
profile)."""

from __future__ import annotations

from tests.factories import group, stack_config
from tests.pulumi_mocks import READINESS_TYPE, run_component, run_program

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
JOB = "kubernetes:batch/v1:Job"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
COMPUTE_DOMAIN = "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"
DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
CLAIM = "pulumi-python:dynamic/gpu-nodes:ObjectClaim"
DRA_FEATURES = "pulumi-python:dynamic/gpu-nodes:DraFeatures"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


def imex_group(name: str = "gb200") -> dict:
    return group(
        name, devicePlugin={"imex": {"channelIds": [0]}}, nvlinkDomain={"clique": CLIQUE, "imexPeers": ["10.0.0.1", "10.0.0.2"]}
    )


def domain_group(name: str = "gb200", **overrides: object) -> dict:
    return group(name, allocator="dra", nvlinkDomain={"clique": CLIQUE}, dra={"computeDomains": True}, **overrides)


def component(job) -> str:
    return job.inputs["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]


def test_a_device_plugin_group_of_a_domain_proves_each_node_with_an_imex_job_its_readiness_waits_for():
    run = run_component(imex_group())
    imex = {j.urn: j for j in run.of_type(JOB) if component(j) == "imex"}
    assert len(imex) == 2, list(imex)
    for check in run.of_type(READINESS_TYPE):
        node = check.inputs["node"]
        assert check.inputs["imex"]["clique"] == CLIQUE, check.urn
        (job,) = [j for j in imex.values() if f"-{node}-imex" in j.name]
        assert job.urn in check.dependencies, f"{check.urn} does not wait for {job.urn}"


def test_a_group_outside_a_domain_has_no_imex_input():
    run = run_component(group("a100"))
    assert all("imex" not in c.inputs for c in run.of_type(READINESS_TYPE)), "no such input (tests/golden/*.json)"


def test_compute_domains_run_once_per_stack_each_cluster_wide_object_after_its_claim():
    run = run_program(stack_config(domain_group(), domain_group("gb300")), secret_keys=["gpu-nodes:sshPrivateKey"])
    crds = sorted(r.inputs["metadata"]["name"] for r in run.of_type(CRD))
    assert crds == ["computedomaincliques.resource.nvidia.com", "computedomains.resource.nvidia.com"], crds
    (controller,) = run.of_type(DEPLOYMENT)
    assert controller.inputs["metadata"]["namespace"] == "nvidia-device-plugin", controller.inputs["metadata"]
    claimed = {(r.inputs["kind"], r.inputs["name"]) for r in run.of_type(CLAIM)}
    for kind, name in [
        ("CustomResourceDefinition", "computedomains.resource.nvidia.com"),
        ("ClusterRole", "compute-domain-daemon-role"),
        ("ClusterRoleBinding", "compute-domain-daemon-role-binding"),
        ("DeviceClass", "compute-domain-default-channel.nvidia.com"),
    ]:
        assert (kind, name) in claimed, (kind, name)
    classes = {r.inputs["metadata"]["name"] for r in run.of_type(DEVICE_CLASS)}
    assert {"compute-domain-default-channel.nvidia.com", "compute-domain-daemon.nvidia.com"} <= classes, classes


def test_each_groups_kubelet_plugin_waits_for_the_controller_and_reads_the_cliques():
    run = run_program(stack_config(domain_group()), secret_keys=["gpu-nodes:sshPrivateKey"])
    (controller,) = run.of_type(DEPLOYMENT)
    (plugin,) = run.of_type(DAEMON_SET)
    assert controller.urn in plugin.dependencies, plugin.dependencies
    names = [c["name"] for c in plugin.inputs["spec"]["template"]["spec"]["containers"]]
    assert names == ["compute-domains", "gpus"], names
    roles = [r.inputs["metadata"]["name"] for r in run.of_type(ROLE)]
    assert "dra-driver-nvidia-gpu-kubelet-plugin-cliques-gb200" in roles, roles


def test_the_groups_compute_domain_comes_after_its_plugin_and_before_its_imex_jobs_and_not_with_its_namespace():
    run = run_component(domain_group())
    (domain,) = run.of_type(COMPUTE_DOMAIN)
    (plugin,) = run.of_type(DAEMON_SET)
    assert plugin.urn in domain.dependencies, domain.dependencies
    assert not domain.deleted_with, "deleted before the controller, which removes its finalizer"
    assert domain.delete_before_replace, "its spec is immutable: a new one replaces it, under the same name"
    imex = [j for j in run.of_type(JOB) if component(j) == "imex"]
    assert len(imex) == 2, [j.urn for j in imex]
    for job in imex:
        assert domain.urn in job.dependencies, job.urn
        claims = job.inputs["spec"]["template"]["spec"]["resourceClaims"]
        assert claims[0]["resourceClaimTemplateName"] == domain.inputs["spec"]["channel"]["resourceClaimTemplate"]["name"]


def test_a_stack_without_compute_domains_runs_no_controller():
    run = run_component(group("h100", allocator="dra"))
    assert not run.of_type(DEPLOYMENT) and not run.of_type(CRD) and not run.of_type(COMPUTE_DOMAIN)


def test_mig_under_dra_asks_the_cluster_for_partitionable_devices_and_claims_each_profile():
    raw = group("a100", allocator="dra", dra={"migProfiles": ["1g.10gb"]})
    run = run_component(raw)
    (features,) = run.of_type(DRA_FEATURES)
    assert features.inputs["migGroups"] == ["a100"], features.inputs
    templates = {r.inputs["metadata"]["name"]: r for r in run.of_type(CLAIM_TEMPLATE)}
    assert "gpu-verify-a100-mig-1g-10gb" in templates, list(templates)
    mig_jobs = [j for j in run.of_type(JOB) if j.name.endswith("-1x-mig-1g-10gb")]
    assert len(mig_jobs) == 2, [j.urn for j in run.of_type(JOB)]
    for check in run.of_type(READINESS_TYPE):
        assert check.inputs["draGpus"] == {"count": 4, "migProfiles": ["1g.10gb"]}, check.inputs["draGpus"]
    (plugin,) = run.of_type(DAEMON_SET)
    (gpus,) = plugin.inputs["spec"]["template"]["spec"]["containers"]
    gates = next(e["value"] for e in gpus["env"] if e["name"] == "FEATURE_GATES")
    assert gates.startswith("DynamicMIG=true,"), gates
