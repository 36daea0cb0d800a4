"""Day one with the real engine: `pulumi up` brings the simulated GPU nodes into service."""

from __future__ import annotations

import pytest

from gpu_nodes.config.verification import DEFAULT_CUDA_IMAGE, DEFAULT_PLAIN_IMAGE
from gpu_nodes.preflight.command import SCRIPT_DIR, remote_dir, script_parts
from tests.e2e.conftest import FOREIGN_LABEL, FOREIGN_TAINT, GATE, GROUP, NODES, OUR_TAINT, taints_of
from tests.sshd import fakehost

pytestmark = pytest.mark.cluster


def test_every_group_node_has_our_labels_and_taint(deployed):
    for name in NODES:
        node = deployed.node(name)
        labels = node["metadata"]["labels"]
        assert labels.get("accelerator") == "nvidia", deployed.explain(f"node {name}: labels {labels}")
        assert labels.get("gpu-nodes.dev/node-group") == GROUP, deployed.explain(f"node {name}: labels {labels}")
        assert OUR_TAINT in taints_of(node), deployed.explain(f"node {name}: taints {taints_of(node)}")


def test_someone_elses_taint_and_label_are_untouched(deployed):
    node = deployed.node("gpu-node-1")
    assert FOREIGN_TAINT in taints_of(node), deployed.explain(f"gpu-node-1 lost the foreign taint: {taints_of(node)}")
    key, value = FOREIGN_LABEL
    assert node["metadata"]["labels"].get(key) == value, deployed.explain(f"gpu-node-1 lost {key}")


def test_nodes_outside_the_group_are_not_touched(deployed):
    node = deployed.node("cpu-node-1")
    assert "gpu-nodes.dev/node-group" not in node["metadata"]["labels"], deployed.explain("cpu-node-1 was labelled")
    assert OUR_TAINT not in taints_of(node), deployed.explain("cpu-node-1 was tainted")


@pytest.mark.parametrize("app", ["nvidia-device-plugin", "dcgm-exporter"])
def test_the_groups_daemons_run_only_on_group_nodes(deployed, app):
    pods = deployed.kubectl_json("get", "pods", "-n", "nvidia-device-plugin", "-l", f"app.kubernetes.io/name={app}")["items"]
    placed = sorted(p["spec"].get("nodeName") for p in pods if p["status"].get("phase") == "Running")
    assert placed == sorted(NODES), deployed.explain(f"{app} pods on {placed}")


def test_gpus_are_registered_on_group_nodes(deployed):
    for name in NODES:
        allocatable = deployed.node(name)["status"]["allocatable"]
        assert allocatable.get("nvidia.com/gpu") == "4", deployed.explain(f"{name} allocatable {allocatable}")


def test_verification_pods_run_as_a_tenants_pod_without_a_runtime_class(deployed):
    """Issue 19: the default path (gpuAccess defaultRuntime) is the one a tenant's pod takes, so
    the verification pods that succeeded named no RuntimeClass; the plugin still runs under the
    stack's class nvidia, and hands out device specs so that running pods keep their GPUs."""
    runtime_class = deployed.kubectl_json("get", "runtimeclass", "nvidia")
    assert runtime_class["handler"] == "nvidia", deployed.explain(f"RuntimeClass nvidia: {runtime_class}")
    jobs = deployed.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]
    verification = deployed.kubectl_json("get", "pods", "-n", "gpu-verification")["items"]
    assert jobs and verification, deployed.explain("no verification Jobs or pods to look at")
    for job in jobs:
        template = job["spec"]["template"]["spec"]
        assert "runtimeClassName" not in template, job["metadata"]["name"]
        if job["metadata"]["labels"]["app.kubernetes.io/component"] == "verification":
            steps = [c["name"] for c in template["initContainers"]] + [c["image"] for c in template["containers"]]
            assert steps == ["nvidia-smi", DEFAULT_CUDA_IMAGE, DEFAULT_PLAIN_IMAGE], f"{job['metadata']['name']}: {steps}"
        assert job["status"].get("succeeded") == 1, deployed.explain(f"{job['metadata']['name']}: {job['status']}")
    for pod in verification:
        assert "runtimeClassName" not in pod["spec"], deployed.explain(f"{pod['metadata']['name']} names a RuntimeClass")
    plugin = "app.kubernetes.io/name=nvidia-device-plugin"
    for pod in deployed.kubectl_json("get", "pods", "-n", "nvidia-device-plugin", "-l", plugin)["items"]:
        name = pod["metadata"]["name"]
        assert pod["spec"].get("runtimeClassName") == "nvidia", deployed.explain(f"{name} names no RuntimeClass nvidia")
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env.get("PASS_DEVICE_SPECS") == "true", deployed.explain(f"{name}: env {env}")
    assert deployed.outputs()["tenantAccess"] == {
        GROUP: {"gpuAccess": "defaultRuntime", "runtimeClassName": None, "isolation": "default"}
    }, deployed.outputs()["tenantAccess"]


def test_verification_pods_never_preempt(deployed):
    """Issue 9, item 10: the API server resolved their class's policy onto the pods."""
    for pod in deployed.kubectl_json("get", "pods", "-n", "gpu-verification")["items"]:
        spec = pod["spec"]
        assert spec.get("preemptionPolicy") == "Never", f"{pod['metadata']['name']}: {spec.get('preemptionPolicy')}"
        assert spec.get("priorityClassName") == f"gpu-{GROUP}-verification", pod["metadata"]["name"]


def test_verification_jobs_completed(deployed):
    jobs = deployed.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]
    # Per node: the workload's 1 and 2 GPUs, the access check, DCGM's diagnostics and NCCL's all-reduce.
    assert len(jobs) == len(NODES) * 5, deployed.explain(f"jobs: {[j['metadata']['name'] for j in jobs]}")
    for job in jobs:
        assert job["status"].get("succeeded") == 1, deployed.explain(f"job {job['metadata']['name']}: {job['status']}")


def test_outputs_hold_the_per_node_report(deployed):
    report = deployed.outputs()["nodeGroups"][GROUP]
    assert sorted(report) == sorted(NODES), report
    for name in NODES:
        node = report[name]
        roles = [(v["role"], v["gpus"]) for v in node["verification"]]
        assert roles == [("verification", 1), ("verification", 2), ("access", 0), ("diagnostics", 4), ("performance", 4)], (
            f"{name}: {node['verification']}"
        )
        assert node["taints"] == [OUR_TAINT], f"{name}: {node['taints']}"
        assert node["labels"]["gpu-nodes.dev/node-group"] == GROUP, f"{name}: {node['labels']}"
        assert node["expectedGpus"] == 4, f"{name}: {node}"


def test_outputs_hold_the_runbooks_checklist_all_passed_and_the_gate_lifted(deployed):
    report = deployed.outputs()["nodeGroups"][GROUP]
    # The runbook's five, the proof beyond it (the local stack runs every item), and the group's GPU comparison
    # (preflight is on, no gpuModel declared).
    items = ["labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded"]
    items += ["secureAccess", "diagnosticsPassed", "bandwidthMet", "metricsExported", "gpuFactsAgree"]
    for name in NODES:
        assert report[name]["checklist"] == dict.fromkeys(items, "pass"), f"{name}: {report[name]['checklist']}"
        assert report[name]["gate"] == "lifted", f"{name}: {report[name]['gate']}"


def test_each_node_carries_gfds_labels_from_its_own_preflight(deployed):
    """What a workload selects on without GFD or NFD, from what the fake machines' nvidia-smi says."""
    expected = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.memory": "81920",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/cuda.driver-version.full": fakehost.MachineSpec().driver,
        "nvidia.com/cuda.runtime-version.full": fakehost.MachineSpec().cuda_version,
        # GFD's without time-slicing (internal/lm/resource.go), and MIG Disabled means MIG-capable.
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        # The fake machines' compute_cap: the A100's 8.0.
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "0",
    }
    report = deployed.outputs()["nodeGroups"][GROUP]
    for name in NODES:
        labels = deployed.node(name)["metadata"]["labels"]
        assert {k: labels.get(k) for k in expected} == expected, deployed.explain(f"{name}: {labels}")
        assert {k: report[name]["labels"].get(k) for k in expected} == expected, f"{name}: {report[name]['labels']}"


def test_every_proven_node_is_open(deployed):
    for name in NODES:
        assert GATE not in taints_of(deployed.node(name)), deployed.explain(f"node {name} is still gated")


def test_outputs_hold_what_preflight_found(deployed):
    report = deployed.outputs()["nodeGroups"][GROUP]
    for name in NODES:
        preflight = report[name]["preflight"]
        assert preflight["passed"] is True, f"{name}: {preflight}"
        assert preflight["gpuCount"] == 4, f"{name}: {preflight}"
        assert preflight["driverVersion"] == fakehost.MachineSpec().driver, f"{name}: {preflight}"
        assert preflight["cudaVersion"] == fakehost.MachineSpec().cuda_version, f"{name}: {preflight}"
        # A driver NVIDIA patches, clear of its bulletins: a first run shows no security warning.
        assert preflight["driverAdvisories"]["openBulletins"] == [], f"{name}: {preflight}"
        assert "driver-advisories" not in preflight["warnedChecks"], f"{name}: {preflight}"
        assert preflight["kubelet"] == {"cgroupDriver": "systemd", "cpuManagerPolicy": "none"}, f"{name}: {preflight}"
        assert preflight["gpuModels"] == ["NVIDIA A100-SXM4-80GB"], f"{name}: {preflight}"
        assert preflight["runtime"]["name"] == "containerd", f"{name}: {preflight}"
        assert preflight["failedChecks"] == [], f"{name}: {preflight}"


def test_each_machine_holds_one_copy_of_the_script(deployed):
    """Issue 10: the script travels by SFTP, not in the state."""
    for name in NODES:
        copied = fakehost._e2e_host(name).machine_path(remote_dir())
        parts = sorted(p.name for p in (copied / SCRIPT_DIR.name).iterdir())
        assert parts == [p.name for p in script_parts()], f"{GROUP}-{name}-preflight-script: {parts}"


def test_preview_right_after_up_shows_no_changes(deployed):
    result = deployed.pulumi("preview", "--expect-no-changes", check=False)
    assert result.returncode == 0, deployed.explain("pulumi preview --expect-no-changes failed", result)


def test_refresh_right_after_up_finds_no_drift(deployed):
    result = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert result.returncode == 0, deployed.explain("pulumi refresh --preview-only --expect-no-changes failed", result)


def test_the_policy_pack_runs_and_passes(deployed):
    result = deployed.pulumi("preview", "--policy-pack", "policy", "--expect-no-changes", check=False)
    assert result.returncode == 0, deployed.explain("pulumi preview --policy-pack policy failed", result)
    assert "gpu-nodes-policy" in result.stdout, deployed.explain("the preview does not report the policy pack", result)
