"""Verification Jobs: what they request, where they run, and that their check can fail."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.config.verification import DEFAULT_CUDA_IMAGE
from gpu_nodes.errors import ConfigError
from gpu_nodes.manifests.verification import (
    CHECK_DIR,
    CHECK_KEY,
    check_config_map_manifest,
    check_script,
    combined_round,
    job_manifest,
)
from gpu_nodes.vocabulary import CHECK_HASH_ANNOTATION, GROUP_LABEL, PLUGIN_REVISION_ANNOTATION, ROUND_ANNOTATION
from tests.factories import group, node
from tests.manifests.check_pod import pod, run_container, whole_gpus, workload_jobs
from tests.specs import group_spec


def test_one_job_per_node_and_gpu_count():
    jobs = workload_jobs(group_spec(verification={"gpusPerPod": [1, 2]}))
    assert [(j.node, j.gpus) for j in jobs] == [
        ("a100-node-1", 1),
        ("a100-node-1", 2),
        ("a100-node-2", 1),
        ("a100-node-2", 2),
    ], [j.name for j in jobs]


def test_mixed_mig_jobs_request_the_declared_mig_resources():
    spec = group_spec(
        nodes=1,
        devicePlugin={"migStrategy": "mixed"},
        verification={"gpusPerPod": [1], "migResources": {"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-3g.20gb": 1}},
    )
    jobs = workload_jobs(spec)
    assert [(j.resource, j.gpus) for j in jobs] == [
        ("nvidia.com/gpu", 1),
        ("nvidia.com/mig-1g.5gb", 2),
        ("nvidia.com/mig-3g.20gb", 1),
    ], [j.name for j in jobs]
    mig = jobs[1]
    container = pod(mig)["initContainers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/mig-1g.5gb": "2", "memory": "128Mi"}, mig.name
    assert {"name": "EXPECTED_GPUS", "value": "2"} in container["env"], mig.name
    assert mig.slug == "2x-mig-1g-5gb", mig.name
    assert "-2x-mig-1g-5gb-" in mig.name, mig.name


def test_per_node_jobs_are_pinned_by_node_name():
    job = workload_jobs(group_spec())[0]
    terms = pod(job)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a100-node-1"]}]}], job.name


def test_group_jobs_may_land_on_any_group_node():
    jobs = workload_jobs(group_spec(verification={"perNode": False, "gpusPerPod": [1, 2]}))
    assert [(j.node, j.gpus) for j in jobs] == [(None, 1), (None, 2)], [j.name for j in jobs]
    assert "affinity" not in pod(jobs[0]), jobs[0].name


def test_requests_gpus_as_limits_on_the_group_nodes():
    job = workload_jobs(group_spec(verification={"gpusPerPod": [2]}))[0]
    spec = pod(job)
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2", job.name
    assert spec["nodeSelector"] == {GROUP_LABEL: "a100"}, job.name
    assert spec["priorityClassName"] == "gpu-a100-verification", job.name
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in spec["tolerations"], (
        job.name
    )


def test_verification_never_evicts_running_work():
    """Re-running the Jobs after a plugin upgrade on a full node must not preempt GPU pods."""
    job = workload_jobs(group_spec())[0]
    spec = pod(job)
    assert spec["preemptionPolicy"] == "Never", job.name
    assert spec["priorityClassName"] == "gpu-a100-verification", f"{job.name}: its class must not preempt either"


@pytest.mark.parametrize("access", ["defaultRuntime", "cdi"])
def test_verification_pods_name_no_runtime_class_where_tenants_name_none(access: str):
    job = workload_jobs(group_spec(gpuAccess=access))[0]
    assert "runtimeClassName" not in pod(job), job.name


def test_verification_pods_name_the_class_tenants_must_name():
    job = workload_jobs(parse_stack([group(gpuAccess="runtimeClass")], runtime_class="nvidia-cdi").node_groups[0])[0]
    assert pod(job)["runtimeClassName"] == "nvidia-cdi", job.name


def test_no_runtime_class_for_verification_when_it_is_off():
    job = workload_jobs(parse_stack([group()], runtime_class="").node_groups[0])[0]
    assert "runtimeClassName" not in pod(job), job.name


def test_bounded_retries_and_deadline_and_no_ttl():
    job = workload_jobs(group_spec(verification={"timeoutSeconds": 300}))[0]
    spec = job.manifest["spec"]
    assert spec["backoffLimit"] <= 2, job.name
    assert spec["activeDeadlineSeconds"] == 300, job.name
    assert "ttlSecondsAfterFinished" not in spec, f"{job.name}: the cluster would delete it and refresh would show drift"


def test_security_context_meets_pod_security_restricted():
    job = workload_jobs(group_spec())[0]
    spec = pod(job)
    assert spec["securityContext"]["runAsNonRoot"] is True, job.name
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, job.name
    for container in spec["initContainers"] + spec["containers"]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False, f"{job.name}: {container['name']}"
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}, f"{job.name}: {container['name']}"


def test_a_cuda_kernel_runs_on_the_same_gpus_after_nvidia_smi():
    job = workload_jobs(group_spec(verification={"gpusPerPod": [2]}))[0]
    [smi], [cuda, _] = pod(job)["initContainers"], pod(job)["containers"]
    assert (smi["name"], cuda["name"]) == ("nvidia-smi", "cuda"), job.name
    assert cuda["image"] == DEFAULT_CUDA_IMAGE, job.name
    # The image's own command (vectorAdd), under the image's own CUDA requirement.
    assert "command" not in cuda and "env" not in cuda, f"{job.name}: {cuda}"
    assert smi["resources"]["limits"]["nvidia.com/gpu"] == cuda["resources"]["limits"]["nvidia.com/gpu"] == "2", job.name
    assert cuda["resources"]["limits"]["memory"] == "512Mi", f"{job.name}: CUDA needs more host memory than nvidia-smi"


def test_a_failing_container_leaves_its_logs_as_the_message_readiness_quotes():
    job = workload_jobs(group_spec())[0]
    for container in pod(job)["initContainers"] + pod(job)["containers"]:
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError", f"{job.name}: {container['name']}"


def test_the_cuda_image_is_configurable_and_must_be_pinned():
    mirrored = "registry.example.com/mirror/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
    job = workload_jobs(group_spec(verification={"cudaImage": mirrored}))[0]
    assert pod(job)["containers"][0]["image"] == mirrored, job.name
    with pytest.raises(
        ConfigError, match=r"verification\.cudaImage: got 'nvcr.io/nvidia/k8s/cuda-sample:latest'; expected an image pinned"
    ):
        group_spec(verification={"cudaImage": "nvcr.io/nvidia/k8s/cuda-sample:latest"})


def test_names_fit_a_label_and_stay_unique_for_long_node_names():
    long_a = "gpu-" + "a" * 120 + ".example.internal"
    long_b = "gpu-" + "a" * 120 + ".example.other"
    jobs = workload_jobs(group_spec(nodes=[node(long_a), node(long_b)]))
    names = [j.name for j in jobs]
    assert all(len(n) <= 63 for n in names), names
    assert len(set(names)) == 2, names


def test_the_check_script_is_mounted_from_the_groups_config_map_not_inlined():
    spec = group_spec()
    job = workload_jobs(spec)[0]
    container = pod(job)["initContainers"][0]
    assert container["command"] == ["/bin/sh", f"{CHECK_DIR}/{CHECK_KEY}"], job.name
    assert {"name": "check", "mountPath": CHECK_DIR, "readOnly": True} in container["volumeMounts"], job.name
    config_map = check_config_map_manifest(spec)
    assert pod(job)["volumes"] == [{"name": "check", "configMap": {"name": config_map["metadata"]["name"]}}], job.name
    assert config_map["metadata"]["namespace"] == job.manifest["metadata"]["namespace"], job.name
    assert check_script() not in str(job.manifest), f"{job.name} still carries the script"


def test_a_new_check_script_gives_new_jobs(monkeypatch):
    from gpu_nodes.manifests import verification

    old = workload_jobs(group_spec())[0]
    monkeypatch.setattr(verification, "_CHECK_SCRIPT", check_script() + "# changed\n")
    new = workload_jobs(group_spec())[0]
    hashes = [j.manifest["spec"]["template"]["metadata"]["annotations"][CHECK_HASH_ANNOTATION] for j in (old, new)]
    assert hashes[0] != hashes[1] and old.name != new.name, old.name


def test_jobs_tolerate_the_readiness_gate_they_lift():
    job = workload_jobs(group_spec())[0]
    gate = {"key": "gpu-nodes.dev/unverified", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    assert gate in pod(job)["tolerations"], job.name


def test_a_new_round_gives_new_jobs_and_the_first_round_adds_nothing():
    spec = group_spec()
    first = job_manifest(spec, "a100-node-1", 1)
    second = job_manifest(spec, "a100-node-1", 1, verification_round=2)
    assert ROUND_ANNOTATION not in first["spec"]["template"]["metadata"]["annotations"], first["metadata"]["name"]
    assert second["spec"]["template"]["metadata"]["annotations"][ROUND_ANNOTATION] == "2", second["metadata"]["name"]
    assert first["metadata"]["name"] != second["metadata"]["name"], "a new round must be a new Job object"


def test_a_group_wide_job_runs_again_when_any_node_starts_a_new_round():
    assert combined_round([1, 1, 1]) == 1
    assert combined_round([1, 2, 1]) == 2
    assert combined_round([2, 2]) == 3


def test_a_new_plugin_image_gives_a_new_job_template():
    old = workload_jobs(group_spec())[0]
    new = workload_jobs(group_spec(devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"}))[0]
    revision = lambda job: job.manifest["spec"]["template"]["metadata"]["annotations"][PLUGIN_REVISION_ANNOTATION]  # noqa: E731
    assert revision(old) != revision(new), old.name


# --- the check inside the pod, run with real sh and a stand-in nvidia-smi ----------------

# `nvidia-smi -L` as printed by real machines (copied verbatim from the threads named).
# NVIDIA/nvidia-container-toolkit#203: one A100 split into two MIG devices.
TWO_MIG_DEVICES_ON_ONE_GPU = """\
GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-932bfb2c-849a-2a22-1e84-9eff6bc02b39)
  MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)
  MIG 3g.40gb     Device  1: (UUID: MIG-3adbed3a-d03d-549f-a016-ba1fd7359f23)
"""
# NVIDIA/go-dcgm#30: one A100 with a single MIG device.
ONE_MIG_DEVICE = """\
GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-41255406-c9af-f94b-4ebf-9d57ad1853da)
  MIG 2g.20gb     Device  0: (UUID: MIG-a65afc88-50b5-5ccf-b0a8-f93b3247ae9e)
"""
# influxdata/telegraf#5812: GPU 0 in MIG mode (four devices) beside three whole GPUs.
MIG_BESIDE_WHOLE_GPUS = """\
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)
  MIG 1g.20gb     Device  0: (UUID: MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a)
  MIG 1g.20gb     Device  1: (UUID: MIG-a45882f0-9215-5733-a0c1-49286ab31cb5)
  MIG 1g.20gb     Device  2: (UUID: MIG-f00d722c-f4e1-52c9-aa31-750441ae1bfe)
  MIG 1g.20gb     Device  3: (UUID: MIG-930574a9-d43a-5d2b-95da-3e68384c8d6b)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-d8594bd4-0fc3-8595-e355-7c98138f3b95)
GPU 2: NVIDIA A100-SXM4-80GB (UUID: GPU-5e375e7e-b41f-155b-dcdc-534524c356fc)
GPU 3: NVIDIA A100-SXM4-80GB (UUID: GPU-69ec2344-ebac-b028-f88f-452abb3d7f11)
"""
# Two whole GPUs: the last two lines of the telegraf#5812 listing.
TWO_WHOLE_GPUS = "".join(MIG_BESIDE_WHOLE_GPUS.splitlines(keepends=True)[-2:])
# One physical GPU handed out twice (time-slicing): the same UUID on two lines. Built from a
# real line of telegraf#5812; what matters is the repeated UUID.
ONE_GPU_TWICE = MIG_BESIDE_WHOLE_GPUS.splitlines(keepends=True)[-1] * 2


def run_check(tmp_path: Path, listing: str, expected: int) -> subprocess.CompletedProcess:
    job = workload_jobs(group_spec(gpusPerNode=max(expected, 4), verification={"gpusPerPod": [expected]}))[0]
    return run_container(tmp_path, pod(job)["initContainers"][0], listing)


@pytest.mark.parametrize("expected", [1, 2, 4])
def test_check_passes_when_exactly_the_given_gpus_are_visible(tmp_path, expected):
    result = run_check(tmp_path, whole_gpus(expected), expected)
    assert result.returncode == 0, result.stderr


def test_check_fails_when_fewer_gpus_are_visible(tmp_path):
    result = run_check(tmp_path, whole_gpus(1), expected=2)
    assert result.returncode == 1, result.stdout
    assert "lists 1 GPU(s); this pod was given 2" in result.stderr, result.stderr


def test_a_media_extension_profile_is_verified_under_the_name_the_plugin_registers():
    spec = group_spec(
        nodes=1,
        devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb+me": 1, "1g.10gb": 5}},
        verification={"gpusPerPod": [], "migResources": {"nvidia.com/mig-1g.10gb.me": 1}},
    )
    (job,) = workload_jobs(spec)
    assert pod(job)["initContainers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb.me"] == "1", job.name
    assert job.slug == "1x-mig-1g-10gb-me", job.name


def test_two_mig_devices_count_as_two(tmp_path):
    result = run_check(tmp_path, TWO_MIG_DEVICES_ON_ONE_GPU, expected=2)
    assert result.returncode == 0, result.stderr
    assert "ok: 2 distinct GPU(s)" in result.stdout, result.stdout


def test_a_gpu_in_mig_mode_is_its_mig_devices_not_one_more(tmp_path):
    result = run_check(tmp_path, ONE_MIG_DEVICE, expected=2)
    assert result.returncode == 1, f"the parent GPU line was counted as a device: {result.stdout}"
    assert "lists 1 GPU(s); this pod was given 2" in result.stderr, result.stderr


def test_mig_devices_and_whole_gpus_count_together(tmp_path):
    assert run_check(tmp_path, MIG_BESIDE_WHOLE_GPUS, expected=7).returncode == 0
    result = run_check(tmp_path, MIG_BESIDE_WHOLE_GPUS, expected=8)
    assert "lists 7 GPU(s); this pod was given 8" in result.stderr, result.stderr


def test_two_distinct_gpus_pass(tmp_path):
    result = run_check(tmp_path, TWO_WHOLE_GPUS, expected=2)
    assert result.returncode == 0, result.stderr


def test_one_gpu_seen_twice_is_not_two_gpus(tmp_path):
    result = run_check(tmp_path, ONE_GPU_TWICE, expected=2)
    assert result.returncode == 1, f"the same UUID was counted twice: {result.stdout}"
    assert "only 1 distinct" in result.stderr and "this pod was given 2" in result.stderr, result.stderr


def test_check_runs_under_posix_sh_not_only_bash(tmp_path):
    """The image's /bin/sh is dash on Ubuntu, busybox sh elsewhere: no bashisms."""
    dash = shutil.which("dash") or shutil.which("busybox")
    if dash is None:
        pytest.skip("neither dash nor busybox is installed")
    shell = [dash, "sh"] if dash.endswith("busybox") else [dash]
    for script in (check_script(), check_script(group_spec(devicePlugin={"sharing": {"strategy": "mps", "replicas": 2}}))):
        check = subprocess.run([*shell, "-n", "-c", script], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr


# --------------------------------------------------------------------------- a shared GPU: MPS and renamed replicas

MPS = {"sharing": {"strategy": "mps", "replicas": 4}}


def mps_check(tmp_path: Path, allocated: dict[str, str]) -> subprocess.CompletedProcess:
    spec = group_spec(devicePlugin=MPS)
    job = workload_jobs(spec)[0]
    return run_container(tmp_path, pod(job)["initContainers"][0], whole_gpus(1), spec, allocated)


def test_under_mps_a_pod_given_a_replica_is_an_mps_client(tmp_path):
    """internal/plugin/mps.go updateReponse: CUDA_MPS_PIPE_DIRECTORY, the daemon's pipe directory mounted there."""
    pipe = tmp_path / "mps/nvidia.com/gpu/pipe"
    pipe.mkdir(parents=True)
    (pipe / "control").write_text("")
    result = mps_check(tmp_path, {"CUDA_MPS_PIPE_DIRECTORY": str(pipe)})
    assert result.returncode == 0, result.stderr
    assert f"ok: an MPS client of the control daemon at {pipe}" in result.stdout, result.stdout


def test_under_mps_a_pod_the_plugin_gave_no_pipe_is_no_client(tmp_path):
    result = mps_check(tmp_path, {})
    assert result.returncode == 1, result.stdout
    assert "the device plugin set no CUDA_MPS_PIPE_DIRECTORY: this pod is no MPS client" in result.stderr, result.stderr


def test_under_mps_an_empty_pipe_directory_is_a_daemon_that_is_not_there(tmp_path):
    (tmp_path / "pipe").mkdir()
    result = mps_check(tmp_path, {"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "pipe")})
    assert result.returncode == 1, result.stdout
    assert "holds no pipe of an MPS control daemon" in result.stderr, result.stderr


def test_without_mps_the_check_script_is_as_it_was():
    """Every deployed group's ConfigMap and Jobs' check hash (tests/golden/*.json) hold it."""
    for spec in (group_spec(), group_spec(devicePlugin={"sharing": {"replicas": 4}})):
        assert check_config_map_manifest(spec)["data"]["check.sh"] == check_script(), spec.device_plugin.sharing
    assert check_script(group_spec(devicePlugin=MPS)) != check_script()


def test_renamed_replicas_are_what_the_jobs_ask_for():
    spec = group_spec(devicePlugin={"sharing": {**MPS["sharing"], "renameByDefault": True}})
    job = workload_jobs(spec)[0]
    assert job.resource == "nvidia.com/gpu.shared", job.name
    assert pod(job)["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"] == "1", job.name
    assert "nvidia.com/gpu" not in pod(job)["containers"][0]["resources"]["limits"], job.name
