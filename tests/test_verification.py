"""Verification Jobs: what they request, where they run, and that their check can fail."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.config import GROUP_LABEL
from components.verification import PLUGIN_REVISION_ANNOTATION, verification_jobs
from tests.factories import node
from tests.specs import group_spec


def pod(job) -> dict:
    return job.manifest["spec"]["template"]["spec"]


def test_one_job_per_node_and_gpu_count():
    jobs = verification_jobs(group_spec(verification={"gpusPerPod": [1, 2]}))
    assert [(j.node, j.gpus) for j in jobs] == [
        ("a100-node-1", 1),
        ("a100-node-1", 2),
        ("a100-node-2", 1),
        ("a100-node-2", 2),
    ], [j.name for j in jobs]


def test_per_node_jobs_are_pinned_by_node_name():
    job = verification_jobs(group_spec())[0]
    terms = pod(job)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a100-node-1"]}]}], job.name


def test_group_jobs_may_land_on_any_group_node():
    jobs = verification_jobs(group_spec(verification={"perNode": False, "gpusPerPod": [1, 2]}))
    assert [(j.node, j.gpus) for j in jobs] == [(None, 1), (None, 2)], [j.name for j in jobs]
    assert "affinity" not in pod(jobs[0]), jobs[0].name


def test_requests_gpus_as_limits_on_the_group_nodes():
    job = verification_jobs(group_spec(verification={"gpusPerPod": [2]}))[0]
    spec = pod(job)
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2", job.name
    assert spec["nodeSelector"] == {GROUP_LABEL: "a100"}, job.name
    assert spec["priorityClassName"] == "gpu-a100", job.name
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in spec["tolerations"], (
        job.name
    )


def test_bounded_retries_and_deadline_and_no_ttl():
    job = verification_jobs(group_spec(verification={"timeoutSeconds": 300}))[0]
    spec = job.manifest["spec"]
    assert spec["backoffLimit"] <= 2, job.name
    assert spec["activeDeadlineSeconds"] == 300, job.name
    assert "ttlSecondsAfterFinished" not in spec, f"{job.name}: the cluster would delete it and refresh would show drift"


def test_security_context_meets_pod_security_restricted():
    job = verification_jobs(group_spec())[0]
    spec = pod(job)
    assert spec["securityContext"]["runAsNonRoot"] is True, job.name
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, job.name
    container = spec["containers"][0]["securityContext"]
    assert container["allowPrivilegeEscalation"] is False, job.name
    assert container["capabilities"] == {"drop": ["ALL"]}, job.name


def test_names_fit_a_label_and_stay_unique_for_long_node_names():
    long_a = "gpu-" + "a" * 120 + ".example.internal"
    long_b = "gpu-" + "a" * 120 + ".example.other"
    jobs = verification_jobs(group_spec(nodes=[node(long_a), node(long_b)]))
    names = [j.name for j in jobs]
    assert all(len(n) <= 63 for n in names), names
    assert len(set(names)) == 2, names


def test_a_new_plugin_image_gives_a_new_job_template():
    old = verification_jobs(group_spec())[0]
    new = verification_jobs(group_spec(devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"}))[0]
    revision = lambda job: job.manifest["spec"]["template"]["metadata"]["annotations"][PLUGIN_REVISION_ANNOTATION]  # noqa: E731
    assert revision(old) != revision(new), old.name


# --- the check inside the pod, run with real sh and a stand-in nvidia-smi ----------------


def run_check(tmp_path: Path, gpus_listed: int, expected: int) -> subprocess.CompletedProcess:
    job = verification_jobs(group_spec(verification={"gpusPerPod": [expected]}))[0]
    container = pod(job)["containers"][0]
    listing = "".join(f"echo 'GPU {i}: NVIDIA H100 (UUID: GPU-{i})'\n" for i in range(gpus_listed))
    stub = tmp_path / "nvidia-smi"
    stub.write_text(f'#!/bin/sh\nif [ "${{1:-}}" = "-L" ]; then\n{listing}fi\nexit 0\n')
    stub.chmod(0o755)
    environment = {e["name"]: e["value"] for e in container["env"]}
    environment["PATH"] = f"{tmp_path}:{os.environ['PATH']}"
    return subprocess.run(container["command"], env=environment, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("listed, expected", [(2, 2), (4, 2)])
def test_check_passes_when_enough_gpus_are_visible(tmp_path, listed, expected):
    result = run_check(tmp_path, listed, expected)
    assert result.returncode == 0, result.stderr


def test_check_fails_when_fewer_gpus_are_visible(tmp_path):
    result = run_check(tmp_path, gpus_listed=1, expected=2)
    assert result.returncode == 1, result.stdout
    assert "lists 1 GPU(s); this pod was given 2" in result.stderr, result.stderr
