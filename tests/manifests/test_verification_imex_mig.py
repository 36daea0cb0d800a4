"""The proof's IMEX Job under the device plugin (its channels come with a GPU of the plugin's) and MIG under NVIDIA's
DRA driver's dynamic MIG (a claim per profile, a Job that sees its MIG device, the driver's gates)."""

from __future__ import annotations

from gpu_nodes.manifests.dra_driver import daemonset_manifest, feature_gates, plugin_revision
from gpu_nodes.manifests.verification import (
    Role,
    imex_channels,
    job_manifest,
    mig_claim_template_manifest,
    mig_claim_templates,
    proof_job,
    proof_roles,
    requests,
    verification_jobs,
)
from tests.manifests.daemonset_parts import container, pod_spec
from tests.specs import group_spec

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
DOMAIN = {"clique": CLIQUE, "imexPeers": ["10.0.0.1", "10.0.0.2"]}


def imex_group(**plugin):
    return group_spec("gb200", devicePlugin={"imex": {"channelIds": [0]}, **plugin}, nvlinkDomain=DOMAIN)


def mig_group(**overrides):
    return group_spec("a100", allocator="dra", dra={"migProfiles": ["1g.10gb", "3g.40gb"]}, **overrides)


def test_a_device_plugin_group_with_channels_proves_each_node_with_an_imex_job_holding_one_gpu():
    group = imex_group()
    assert proof_roles(group)[-1] is Role.IMEX and imex_channels(group) == (0,)
    job = proof_job(group, "gb200-node-2", Role.IMEX)
    assert (job.resource, job.gpus, job.node) == ("nvidia.com/gpu", 1, "gb200-node-2"), job
    spec = job.manifest["spec"]["template"]["spec"]
    (imex,) = spec["containers"]
    assert imex["command"] == ["ls", "/dev/nvidia-caps-imex-channels/channel0"], imex
    assert imex["resources"]["limits"]["nvidia.com/gpu"] == "1", imex["resources"]
    assert "resourceClaims" not in spec, spec


def test_the_imex_job_is_one_per_node_and_none_without_channels():
    planned = [(j.node, j.role) for j in verification_jobs(imex_group()) if j.role is Role.IMEX]
    assert planned == [("gb200-node-1", Role.IMEX), ("gb200-node-2", Role.IMEX)], planned
    plain = group_spec("gb200", nvlinkDomain=DOMAIN)
    assert Role.IMEX not in proof_roles(plain), "a domain's machines without channels: no IMEX Job"


def test_the_plugin_is_given_its_channels_in_its_own_words_and_a_new_channel_is_a_new_revision():
    from gpu_nodes.manifests.device_plugin import daemonset_manifest as plugin_daemonset
    from gpu_nodes.manifests.device_plugin import plugin_revision as device_plugin_revision

    env = {
        e["name"]: e.get("value")
        for e in container(plugin_daemonset(imex_group(imex={"channelIds": [0], "required": True})))["env"]
    }
    assert (env["IMEX_CHANNEL_IDS"], env["IMEX_REQUIRED"]) == ("0", "true"), env
    assert device_plugin_revision(imex_group()) != device_plugin_revision(group_spec("gb200", nvlinkDomain=DOMAIN))


def test_a_dra_group_with_mig_profiles_asks_one_device_of_each_through_its_own_template():
    group = mig_group(verification={"gpusPerPod": [1]})
    assert requests(group) == [("gpu.nvidia.com", 1), ("mig.nvidia.com/1g.10gb", 1), ("mig.nvidia.com/3g.40gb", 1)]
    templates = dict(mig_claim_templates(group))
    assert list(templates) == ["1g.10gb", "3g.40gb"], templates
    (request,) = templates["1g.10gb"]["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com" and request["exactly"]["count"] == 1, request
    assert request["exactly"]["selectors"] == [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}
    ]
    assert templates["1g.10gb"]["metadata"]["name"] == "gpu-verify-a100-mig-1g-10gb", templates["1g.10gb"]["metadata"]


def test_the_mig_job_takes_its_profiles_claim_in_both_gpu_containers_and_expects_one_device():
    group = mig_group()
    job = job_manifest(group, "a100-node-1", 1, "mig.nvidia.com/3g.40gb")
    spec = job["spec"]["template"]["spec"]
    assert spec["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "gpu-verify-a100-mig-3g-40gb"}], spec
    smi, cuda = spec["initContainers"][0], spec["containers"][0]
    for one in (smi, cuda):
        assert one["resources"]["claims"] == [{"name": "gpus"}], one["name"]
        assert "nvidia.com/gpu" not in str(one["resources"].get("limits")), one["name"]
    assert {"name": "EXPECTED_GPUS", "value": "1"} in smi["env"], smi["env"]
    assert "1x-mig-3g-40gb" in job["metadata"]["name"], job["metadata"]["name"]


def test_a_device_plugin_group_has_no_dra_mig_templates():
    assert mig_claim_template_manifest(mig_group(), "1g.10gb")["kind"] == "ResourceClaimTemplate"
    assert mig_claim_templates(group_spec("a100")) == []


def test_dynamic_mig_turns_the_drivers_gate_on_and_its_health_check_off():
    """site/content/docs/reference/feature-gates.md: DynamicMIG excludes NVMLDeviceHealthCheck."""
    assert feature_gates(True, dynamic_mig=True) == "DynamicMIG=true,NVMLDeviceHealthCheck=false,"
    gates = feature_gates(False, dynamic_mig=True)
    ds = daemonset_manifest(mig_group(), gates=gates)
    env = {e["name"]: e.get("value") for e in pod_spec(ds)["containers"][0]["env"]}
    assert env["FEATURE_GATES"] == gates, env


def test_mig_profiles_are_a_new_revision_of_the_kubelet_plugin():
    assert plugin_revision(mig_group()) != plugin_revision(group_spec("a100", allocator="dra"))
