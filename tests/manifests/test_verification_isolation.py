"""Isolation in the verification: a pod must see no more GPUs than it was given, and under
`isolation: strict` a pod given none must see none."""

from __future__ import annotations

import pytest

from gpu_nodes.manifests.verification import NO_DEVICE_KEY, Role, check_scripts, verification_jobs
from gpu_nodes.vocabulary import GPU_RESOURCE, ISOLATION_CONTAINER
from tests.manifests.check_pod import jobs_of, pod, run_container, run_in_own_dev, whole_gpus, workload_jobs
from tests.specs import group_spec

# `nvidia-smi -L` of one A100 split into two MIG devices (NVIDIA/nvidia-container-toolkit#203).
TWO_MIG_DEVICES_ON_ONE_GPU = """\
GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39)
  MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)
  MIG 3g.40gb     Device  1: (UUID: MIG-3adbed3a-d03d-549f-a016-ba1fd7359f23)
"""
# What nvidia-smi prints, with exit 6, where the driver is there but the container has no GPU.
NO_DEVICES = "No devices were found\n"


def gpu_check(tmp_path, listing: str | None, given: int, **config):
    spec = group_spec(gpusPerNode=8, verification={"gpusPerPod": [given]}, **config)
    job = next(j for j in verification_jobs(spec) if j.gpus == given)
    return run_container(tmp_path, pod(job)["initContainers"][0], listing)


@pytest.mark.parametrize(("given", "seen"), [(1, 2), (1, 8), (2, 4)])
def test_a_pod_that_sees_more_gpus_than_it_was_given_fails(tmp_path, given, seen):
    result = gpu_check(tmp_path, whole_gpus(seen), given)
    assert result.returncode == 1, f"given {given}, saw {seen}: {result.stdout}"
    assert f"nvidia-smi lists {seen} distinct GPU(s); this pod was given {given}" in result.stderr, result.stderr
    assert "GPUs it was not given" in result.stderr, result.stderr


# The config allows only one-GPU pods on a time-sliced group (a multi-GPU pod may get one GPU twice),
# so a time-sliced pod is given one replica: one physical GPU at most.
def test_a_time_sliced_replica_may_be_one_gpu(tmp_path):
    result = gpu_check(tmp_path, whole_gpus(1), 1, devicePlugin={"timeSlicingReplicas": 4})
    assert result.returncode == 0, result.stderr


def test_a_time_sliced_replica_never_allows_a_second_gpu(tmp_path):
    result = gpu_check(tmp_path, whole_gpus(2), 1, devicePlugin={"timeSlicingReplicas": 4})
    assert result.returncode == 1, result.stdout
    assert "this pod was given 1" in result.stderr, result.stderr


def test_a_pod_given_one_mig_device_that_sees_two_fails(tmp_path):
    result = gpu_check(tmp_path, TWO_MIG_DEVICES_ON_ONE_GPU, 1)
    assert result.returncode == 1, result.stdout
    assert "nvidia-smi lists 2 distinct GPU(s); this pod was given 1" in result.stderr, result.stderr


# --- the pod that requests no GPU: every group, and under strict also in the CUDA image -----------


def access_jobs(**config):
    return jobs_of(group_spec(**config), Role.ACCESS)


def test_every_group_has_one_access_job_per_node():
    jobs = access_jobs()
    assert [job.node for job in jobs] == [node.name for node in group_spec().nodes], [job.name for job in jobs]
    assert all("-access-" in job.name for job in jobs), [job.name for job in jobs]


def test_a_group_wide_verification_still_checks_access_on_each_node():
    jobs = access_jobs(verification={"perNode": False})
    assert [job.node for job in jobs] == [node.name for node in group_spec().nodes], [job.name for job in jobs]


def test_the_access_pod_asks_for_no_gpu_in_a_plain_image():
    job = access_jobs()[0]
    (plain,) = pod(job)["containers"]
    assert (plain["name"], plain["image"]) == ("plain", group_spec().verification.plain_image), job.name
    assert not any(key.startswith("nvidia.com/") for key in plain["resources"]["limits"]), f"{job.name}: {plain}"
    assert "env" not in plain, f"{job.name}: a plain image's container sets no NVIDIA variable"


def test_under_strict_the_access_pod_also_asks_for_every_gpu_by_env_in_the_cuda_image():
    job = access_jobs(isolation="strict")[0]
    plain, cuda_image = pod(job)["containers"]
    assert plain["name"] == "plain", job.name
    limits = cuda_image["resources"]["limits"]
    assert not any(key.startswith("nvidia.com/") for key in limits), f"{job.name}: {limits}"
    env = {e["name"]: e["value"] for e in cuda_image["env"]}
    # What a CUDA image carries, said outright: the runtime must not honour it here.
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all", job.name
    assert env["EXPECTED_GPUS"] == "0", job.name
    assert cuda_image["image"] == group_spec().verification.image, job.name


def test_the_access_pod_runs_as_a_tenants_pod_runs():
    job = access_jobs(isolation="strict", gpuAccess="runtimeClass")[0]
    assert pod(job)["runtimeClassName"] == "nvidia", job.name
    assert "runtimeClassName" not in pod(access_jobs(isolation="strict")[0]), job.name


def test_a_gpu_pods_second_container_asks_for_no_gpu():
    (job, *_) = workload_jobs(group_spec())
    cuda, isolation = pod(job)["containers"]
    assert isolation["name"] == ISOLATION_CONTAINER, job.name
    assert "nvidia.com/gpu" in cuda["resources"]["limits"], job.name
    assert not any(key.startswith("nvidia.com/") for key in isolation["resources"]["limits"]), f"{job.name}: {isolation}"


def no_gpu_check(tmp_path, listing):
    return run_container(tmp_path, pod(access_jobs(isolation="strict")[0])["containers"][1], listing)


def test_a_no_gpu_container_without_nvidia_smi_sees_no_gpu(tmp_path):
    result = no_gpu_check(tmp_path, None)
    assert result.returncode == 0, result.stderr
    assert "ok: no GPU visible, none requested" in result.stdout, result.stdout


def test_a_no_gpu_container_where_nvidia_smi_finds_no_device_sees_no_gpu(tmp_path):
    result = no_gpu_check(tmp_path, NO_DEVICES)
    assert result.returncode == 0, result.stderr


def test_a_no_gpu_container_that_sees_gpus_fails(tmp_path):
    result = no_gpu_check(tmp_path, whole_gpus(4))
    assert result.returncode == 1, result.stdout
    assert "nvidia-smi lists 4 distinct GPU(s); this pod was given 0" in result.stderr, result.stderr


def test_gpu_jobs_still_request_their_gpus_under_strict():
    jobs = workload_jobs(group_spec(isolation="strict"))
    assert jobs and all(pod(job)["containers"][0]["resources"]["limits"][GPU_RESOURCE] == "1" for job in jobs)


# --- the plain image's check, run as its container runs it: real sh, its own /dev -----------------


@pytest.mark.parametrize("devices", [(), ("nvidiactl",), ("nvidia0", "nvidiactl", "nvidia-uvm")], ids=["none", "ctl", "gpu"])
def test_the_no_device_check_fails_exactly_where_an_nvidia_device_node_is_there(tmp_path, devices):
    result = run_in_own_dev(tmp_path, check_scripts(group_spec())[NO_DEVICE_KEY], devices)
    assert (result.returncode == 0) == (not devices), f"/dev with {devices}: {result.stdout}{result.stderr}"
    for device in devices:
        assert f"/dev/{device}" in result.stderr, f"{device}: {result.stderr}"
