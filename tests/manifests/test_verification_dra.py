"""Verification Jobs of a DRA group: GPUs through a ResourceClaimTemplate, the same check."""

from __future__ import annotations

from pathlib import Path

from gpu_nodes.manifests.verification import (
    claim_template_manifest,
    claim_template_name,
    claim_templates,
    job_manifest,
    manifest_of,
    verification_jobs,
)
from gpu_nodes.vocabulary import GROUP_LABEL, ISOLATION_CONTAINER
from tests.manifests.check_pod import pod, run_container, whole_gpus, workload_jobs
from tests.specs import group_spec


def dra_group(**overrides):
    return group_spec("h100", allocator="dra", **overrides)


def test_the_pod_names_the_template_of_its_count():
    job = verification_jobs(dra_group(verification={"gpusPerPod": [2]}))[0]
    claims = pod(job)["resourceClaims"]
    assert claims == [{"name": "gpus", "resourceClaimTemplateName": claim_template_name(dra_group(), 2)}], job.name


def test_each_gpu_container_takes_the_claim_and_no_gpu_limit():
    job = verification_jobs(dra_group(verification={"gpusPerPod": [2]}))[0]
    for container in [*pod(job)["initContainers"], *pod(job)["containers"]]:
        takes = [] if container["name"] == ISOLATION_CONTAINER else [{"name": "gpus"}]
        assert container["resources"].get("claims", []) == takes, (job.name, container["name"])
        assert not any(k.startswith("nvidia.com/") for k in container["resources"]["limits"]), (job.name, container["name"])


def test_the_check_expects_the_claimed_count():
    job = verification_jobs(dra_group(verification={"gpusPerPod": [2]}))[0]
    assert {"name": "EXPECTED_GPUS", "value": "2"} in pod(job)["initContainers"][0]["env"], job.name


def test_the_check_fails_when_the_pod_sees_more_than_it_claimed(tmp_path: Path):
    job = verification_jobs(dra_group(verification={"gpusPerPod": [1]}))[0]
    result = run_container(tmp_path, pod(job)["initContainers"][0], whole_gpus(4))
    assert result.returncode == 1 and "sees GPUs it was not given" in result.stderr, job.name


def test_the_jobs_stay_pinned_to_their_node_and_group():
    job = verification_jobs(dra_group())[0]
    spec = pod(job)
    assert spec["nodeSelector"] == {GROUP_LABEL: "h100"}, job.name
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["h100-node-1"]}]}], job.name


def test_the_template_asks_for_exactly_that_many_gpus_of_the_gpu_class():
    template = claim_template_manifest(dra_group(), 2)
    assert template["apiVersion"] == "resource.k8s.io/v1", template["metadata"]["name"]
    assert template["metadata"]["namespace"] == dra_group().verification.namespace, template["metadata"]["name"]
    assert template["spec"] == {
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}
                ]
            }
        }
    }, template["metadata"]["name"]


def test_one_template_per_count_and_one_for_all_the_nodes_gpus_where_diagnostics_hold_them():
    templates = claim_templates(dra_group(verification={"gpusPerPod": [1, 2]}))
    counts = [t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for t in templates]
    assert counts == [1, 2, 4], [t["metadata"]["name"] for t in templates]


def test_without_diagnostics_only_the_workloads_counts_have_templates():
    templates = claim_templates(dra_group(verification={"gpusPerPod": [1, 2], "diagnostics": "off"}))
    counts = [t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] for t in templates]
    assert counts == [1, 2], [t["metadata"]["name"] for t in templates]


def test_a_device_plugin_group_has_no_template_and_no_claim():
    group = group_spec(verification={"gpusPerPod": [2]})
    assert claim_templates(group) == [], group.name
    job = verification_jobs(group)[0]
    assert "resourceClaims" not in pod(job), job.name
    assert pod(job)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2", job.name


def test_mig_resources_are_the_device_plugins_and_not_asked_for_under_dra():
    jobs = workload_jobs(dra_group(verification={"gpusPerPod": [1, 2]}))
    assert {(j.resource, j.gpus) for j in jobs} == {("gpu.nvidia.com", 1), ("gpu.nvidia.com", 2)}, [j.name for j in jobs]


def test_the_pod_that_asks_for_no_gpu_names_no_claim():
    jobs = verification_jobs(dra_group(nodes=1, isolation="strict"))
    no_gpu = [j for j in jobs if j.gpus == 0]
    assert no_gpu and "resourceClaims" not in pod(no_gpu[0]), [j.name for j in jobs]


def test_dcgms_pod_claims_all_the_nodes_gpus():
    (job,) = [j for j in verification_jobs(dra_group(nodes=1)) if j.slug == "dcgm"]
    claims = pod(job)["resourceClaims"]
    assert claims == [{"name": "gpus", "resourceClaimTemplateName": claim_template_name(dra_group(), 4)}], job.name


def test_each_job_as_the_builders_render_it_again_is_the_same():
    """gpu_nodes/resources/node_builders.py renders each Job again for its round (`manifest_of`)."""
    group = dra_group()
    for job in verification_jobs(group):
        assert manifest_of(group, job, 1) == job.manifest, job.name
    first = verification_jobs(group)[0]
    assert job_manifest(group, first.node, first.gpus, first.resource) == first.manifest, first.name


def test_where_the_device_class_serves_plain_requests_the_jobs_ask_as_a_plain_pod():
    """dra.extendedResourceName: nvidia.com/gpu limits, no claim of its own, no template to name."""
    group = dra_group(dra={"extendedResourceName": True}, verification={"gpusPerPod": [1, 2]})
    assert claim_templates(group) == [], group.name
    for job in workload_jobs(group):
        assert "resourceClaims" not in pod(job), job.name
        for container in [*pod(job)["initContainers"], *pod(job)["containers"]]:
            given = "0" if container["name"] == ISOLATION_CONTAINER else str(job.gpus)
            assert container["resources"]["limits"].get("nvidia.com/gpu", "0") == given, (job.name, container["name"])
            assert "claims" not in container["resources"], (job.name, container["name"])
    assert {j.resource for j in verification_jobs(group)} == {"nvidia.com/gpu"}, group.name
