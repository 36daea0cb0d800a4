"""NVIDIA's DRA driver's ComputeDomains for a DRA group that turns them on (`dra.computeDomains`): what the driver's
chart renders with them (kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu, cited in
gpu_nodes/manifests/compute_domains.py), the group's kubelet plugin with its compute-domains container, and the
ComputeDomain and IMEX Jobs of its proof."""

from __future__ import annotations

import pytest

from gpu_nodes.manifests import compute_domains as cd
from gpu_nodes.manifests.dra_driver import RELEASE, daemonset_manifest, device_classes, feature_gates, plugin_revision
from gpu_nodes.manifests.verification import IMEX_CLAIM_NAME, Role, imex_channels, proof_job, proof_roles
from gpu_nodes.providers.gpu_allocators import runs_dra_gpu_plugin
from tests.manifests.daemonset_parts import pod_spec
from tests.specs import group_spec

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


def domain_group(name: str = "gb200", **overrides):
    return group_spec(name, allocator="dra", nvlinkDomain={"clique": CLIQUE}, dra={"computeDomains": True}, **overrides)


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def test_the_crds_are_the_charts_two_namespaced_with_the_domains_status_as_a_subresource():
    found = {c["metadata"]["name"]: c for c in cd.crds("gpu-nodes.test")}
    assert list(found) == ["computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com"], list(found)
    domain = found["computedomains.resource.nvidia.com"]["spec"]
    assert (domain["group"], domain["scope"], domain["names"]["kind"]) == ("resource.nvidia.com", "Namespaced", "ComputeDomain")
    (version,) = domain["versions"]
    assert version["name"] == "v1beta1" and version["subresources"] == {"status": {}}, version
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["channel"] and spec["x-kubernetes-validations"][0]["rule"] == "self == oldSelf", spec
    modes = spec["properties"]["channel"]["properties"]["allocationMode"]
    assert modes == {"default": "Single", "enum": ["All", "Single"], "type": "string"}, modes
    (clique_version,) = found["computedomaincliques.resource.nvidia.com"]["spec"]["versions"]
    assert "subresources" not in clique_version, clique_version


def test_the_cluster_wide_objects_carry_the_stacks_label_for_their_claims():
    stack = "gpu-nodes.test"
    objects = [
        *cd.crds(stack),
        *cd.device_classes(stack),
        cd.controller_cluster_role(stack),
        cd.daemon_cluster_role(stack),
        cd.controller_cluster_role_binding("nvidia-device-plugin", stack),
        cd.daemon_cluster_role_binding("nvidia-device-plugin", stack),
    ]
    for manifest in objects:
        assert manifest["metadata"]["labels"]["gpu-nodes.dev/stack"] == stack, manifest["metadata"]["name"]
        assert "namespace" not in manifest["metadata"], manifest["metadata"]["name"]


def test_the_device_classes_select_channel_0_and_the_daemons_of_the_compute_domain_driver():
    found = {c["metadata"]["name"]: c["spec"]["selectors"][0]["cel"]["expression"] for c in cd.device_classes("s")}
    channel = found["compute-domain-default-channel.nvidia.com"]
    assert "device.driver == 'compute-domain.nvidia.com'" in channel and "type == 'channel'" in channel, channel
    assert channel.endswith("id == 0"), channel
    assert "type == 'daemon'" in found["compute-domain-daemon.nvidia.com"], found


def test_the_stacks_device_classes_include_the_compute_domains_only_where_a_group_turns_them_on():
    names = [c["metadata"]["name"] for c in device_classes("s")]
    assert names == ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"], names
    names = [c["metadata"]["name"] for c in device_classes("s", with_compute_domains=True)]
    assert names[3:] == ["compute-domain-default-channel.nvidia.com", "compute-domain-daemon.nvidia.com"], names


def test_the_controller_runs_the_drivers_image_in_the_namespace_it_makes_daemons_in():
    deployment = cd.controller_deployment("nvidia-device-plugin", RELEASE.image, "IfNotPresent", "gpu-nodes-pull")
    (container,) = pod_spec(deployment)["containers"]
    assert container["image"] == RELEASE.image and container["command"][0] == "compute-domain-controller", container
    env = env_of(container)
    assert (env["IMEX_MODE"], env["IMEX_ISOLATION"], env["NVIDIA_VISIBLE_DEVICES"]) == ("driverManaged", "domain", "void"), env
    assert env["CD_DAEMON_IMAGE_PULL_SECRET_NAMES"] == "gpu-nodes-pull", env
    assert pod_spec(deployment)["imagePullSecrets"] == [{"name": "gpu-nodes-pull"}], pod_spec(deployment)
    namespace = next(e for e in container["env"] if e["name"] == "NAMESPACE")
    assert namespace["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace", namespace
    assert pod_spec(deployment)["serviceAccountName"] == cd.controller_name(), pod_spec(deployment)


def test_without_a_pull_secret_the_controller_names_none():
    deployment = cd.controller_deployment("ns", RELEASE.image, "IfNotPresent", None)
    assert "imagePullSecrets" not in pod_spec(deployment)
    assert "CD_DAEMON_IMAGE_PULL_SECRET_NAMES" not in env_of(pod_spec(deployment)["containers"][0])


def test_the_controllers_rights_are_the_charts():
    verbs = {tuple(r["resources"]): r["verbs"] for r in cd.controller_cluster_role("s")["rules"]}
    assert verbs[("resourceclaimtemplates",)] == ["get", "list", "watch", "create", "update", "delete"], verbs
    assert verbs[("computedomains/status",)] == ["update"], verbs
    local = {tuple(r["resources"]): r["verbs"] for r in cd.controller_role("ns")["rules"]}
    assert "create" in local[("daemonsets",)] and local[("computedomaincliques",)] == ["get", "list", "watch", "update"]


def test_the_daemons_rights_are_bound_to_the_account_the_controller_names():
    binding = cd.daemon_cluster_role_binding("nvidia-device-plugin", "s")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "compute-domain-daemon-service-account", "namespace": "nvidia-device-plugin"}
    ], binding
    assert binding["roleRef"]["name"] == cd.daemon_cluster_role("s")["metadata"]["name"], binding


def test_a_group_with_compute_domains_runs_the_compute_domains_container_first():
    ds = daemonset_manifest(domain_group(), gates=feature_gates(False))
    names = [c["name"] for c in pod_spec(ds)["containers"]]
    assert names == ["compute-domains", "gpus"], names
    domains, gpus = pod_spec(ds)["containers"]
    assert not runs_dra_gpu_plugin(domains) and runs_dra_gpu_plugin(gpus), names
    assert domains["args"] == ["compute-domain-kubelet-plugin -v $(LOG_VERBOSITY)"], domains
    env = env_of(domains)
    assert env["IMEX_MODE"] == "driverManaged" and env["FEATURE_GATES"] == "NVMLDeviceHealthCheck=false,", env
    assert env["GPU_CLIQUE_LABEL_ENABLED"] == "false", "gpu-nodes writes nvidia.com/gpu.clique from preflight"


def test_turning_compute_domains_on_is_a_new_revision_and_off_keeps_the_old_one():
    plain = group_spec("gb200", allocator="dra", nvlinkDomain={"clique": CLIQUE})
    assert plugin_revision(domain_group()) != plugin_revision(plain)
    assert plugin_revision(plain) == plugin_revision(group_spec("gb200", allocator="dra"))


def test_the_plugins_role_reads_the_cliques_in_its_namespace():
    group = domain_group()
    role, binding = cd.plugin_role(group), cd.plugin_role_binding(group, "sa")
    assert role["metadata"]["namespace"] == group.device_plugin.namespace, role
    assert role["rules"] == [{"apiGroups": ["resource.nvidia.com"], "resources": ["computedomaincliques"], "verbs": ["get"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] and binding["subjects"][0]["name"] == "sa", binding


def test_the_groups_compute_domain_lives_in_the_verification_namespace_and_names_its_channels_template():
    group = domain_group()
    domain = cd.compute_domain_manifest(group)
    assert (domain["apiVersion"], domain["kind"]) == ("resource.nvidia.com/v1beta1", "ComputeDomain"), domain
    assert domain["metadata"]["namespace"] == group.verification.namespace, domain
    assert domain["spec"] == {
        "numNodes": 0,
        "channel": {"resourceClaimTemplate": {"name": "gpu-verify-gb200-imex-channel"}, "allocationMode": "Single"},
    }, domain


def test_each_node_of_a_compute_domain_group_claims_the_domains_channel_in_an_imex_job():
    group = domain_group()
    assert Role.IMEX in proof_roles(group) and imex_channels(group) == (0,)
    job = proof_job(group, "gb200-node-1", Role.IMEX)
    spec = job.manifest["spec"]["template"]["spec"]
    assert spec["resourceClaims"] == [{"name": IMEX_CLAIM_NAME, "resourceClaimTemplateName": "gpu-verify-gb200-imex-channel"}]
    (container,) = spec["containers"]
    assert container["command"] == ["ls", "/dev/nvidia-caps-imex-channels/channel0"], container
    assert container["resources"]["claims"] == [{"name": IMEX_CLAIM_NAME}], container
    assert "nvidia.com/gpu" not in str(container["resources"]), "the channel comes with no GPU"
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchFields"][0]["values"] == ["gb200-node-1"], term
    assert job.manifest["metadata"]["labels"]["app.kubernetes.io/component"] == "imex", job.manifest["metadata"]
    assert (job.gpus, job.role) == (0, Role.IMEX), job


@pytest.mark.parametrize("overrides", [{}, {"nvlinkDomain": {"clique": CLIQUE}}])
def test_a_dra_group_without_compute_domains_has_no_imex_job(overrides):
    group = group_spec("h100", allocator="dra", **overrides)
    assert Role.IMEX not in proof_roles(group) and imex_channels(group) == ()
