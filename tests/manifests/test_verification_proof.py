"""Each node's proof Jobs beyond the workload: DCGM's diagnostics and NCCL's all-reduce hold every GPU of the node
and write their reports to their logs."""

from __future__ import annotations

import pytest

from gpu_nodes.config.verification import DEFAULT_DIAGNOSTICS_IMAGE, DEFAULT_PERFORMANCE_IMAGE
from gpu_nodes.manifests.verification import Role, proof_roles, whole_node_request
from gpu_nodes.vocabulary import DCGM_CONTAINER, NCCL_CONTAINER
from tests.manifests.check_pod import jobs_of, pod
from tests.specs import group_spec

PERFORMANCE = {"performance": {"enabled": True, "minBusBandwidth": 200}}


def one_container(job) -> dict:
    (container,) = pod(job)["containers"]
    return container


def test_a_group_runs_the_access_check_and_dcgms_diagnostics_by_default():
    assert proof_roles(group_spec()) == [Role.ACCESS, Role.DIAGNOSTICS]


def test_the_all_reduce_runs_only_where_the_group_asks():
    assert proof_roles(group_spec(verification=PERFORMANCE)) == [Role.ACCESS, Role.DIAGNOSTICS, Role.PERFORMANCE]


def test_diagnostics_off_run_no_dcgm_job():
    assert jobs_of(group_spec(verification={"diagnostics": "off"}), Role.DIAGNOSTICS) == []


@pytest.mark.parametrize("level", [1, 2, 3])
def test_dcgm_runs_the_groups_level_as_json_on_every_gpu_of_its_node(level):
    spec = group_spec(verification={"diagnostics": level, "timeoutSeconds": 1800})
    job = jobs_of(spec, Role.DIAGNOSTICS)[0]
    container = one_container(job)
    assert container["name"] == DCGM_CONTAINER and container["image"] == DEFAULT_DIAGNOSTICS_IMAGE, job.name
    assert container["command"] == ["dcgmi", "diag", "-r", str(level), "-j"], job.name
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4", f"{job.name}: every GPU of the node"


def test_one_dcgm_job_per_node_pinned_to_it_even_with_group_wide_workload_jobs():
    spec = group_spec(verification={"perNode": False})
    jobs = jobs_of(spec, Role.DIAGNOSTICS)
    assert [job.node for job in jobs] == [n.name for n in spec.nodes], [job.name for job in jobs]
    for job in jobs:
        terms = pod(job)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms[0]["matchFields"][0]["values"] == [job.node], job.name


def test_a_time_sliced_nodes_diagnostic_holds_every_replica_so_each_gpu_alone():
    spec = group_spec(devicePlugin={"sharing": {"strategy": "timeSlicing", "replicas": 3}})
    assert whole_node_request(spec) == ("nvidia.com/gpu", 12), spec.name
    job = jobs_of(spec, Role.DIAGNOSTICS)[0]
    assert one_container(job)["resources"]["limits"]["nvidia.com/gpu"] == "12", job.name


def test_renamed_replicas_are_what_the_diagnostic_asks_for():
    spec = group_spec(devicePlugin={"sharing": {"strategy": "timeSlicing", "replicas": 2, "renameByDefault": True}})
    limits = one_container(jobs_of(spec, Role.DIAGNOSTICS)[0])["resources"]["limits"]
    assert limits.get("nvidia.com/gpu.shared") == "8" and "nvidia.com/gpu" not in limits, limits


def test_nccl_runs_one_all_reduce_across_every_gpu_of_its_node():
    job = jobs_of(group_spec(verification=PERFORMANCE), Role.PERFORMANCE)[0]
    container = one_container(job)
    assert container["name"] == NCCL_CONTAINER and container["image"] == DEFAULT_PERFORMANCE_IMAGE, job.name
    command = container["command"]
    assert command[:4] == ["/usr/local/mpi/bin/mpirun", "-np", "1", "/usr/local/bin/all_reduce_perf_mpi"], command
    assert command[command.index("-g") + 1] == "4", f"{job.name}: one process, every GPU"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "4", job.name


@pytest.mark.parametrize("role", [Role.DIAGNOSTICS, Role.PERFORMANCE])
def test_the_tools_run_unprivileged_with_a_scratch_directory(role):
    job = jobs_of(group_spec(verification=PERFORMANCE), role)[0]
    spec = pod(job)
    assert spec["securityContext"]["runAsNonRoot"] is True, job.name
    container = one_container(job)
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}, job.name
    assert {"name": "scratch", "mountPath": "/tmp"} in container["volumeMounts"], job.name
    assert {"name": "scratch", "emptyDir": {}} in spec["volumes"], job.name


@pytest.mark.parametrize("role", [Role.DIAGNOSTICS, Role.PERFORMANCE])
def test_a_tools_verdict_is_not_tried_twice(role):
    """A DCGM or NCCL failure is the machine's: a second run would only make the node wait longer."""
    job = jobs_of(group_spec(verification=PERFORMANCE), role)[0]
    assert job.manifest["spec"]["backoffLimit"] == 0, job.name


@pytest.mark.parametrize("role", [Role.ACCESS, Role.DIAGNOSTICS, Role.PERFORMANCE])
def test_each_proof_job_is_labelled_with_its_role(role):
    job = jobs_of(group_spec(verification=PERFORMANCE), role)[0]
    labels = job.manifest["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == role.value, job.name
    assert labels["app.kubernetes.io/part-of"] == "gpu-nodes", job.name
