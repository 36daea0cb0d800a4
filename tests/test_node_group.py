"""The GpuNodeGroup component: children, their order, and its outputs."""

from __future__ import annotations

import json

from components.node_group import TYPE
from components.specs import GROUP_LABEL
from components.verification import verification_jobs
from tests.factories import group
from tests.pulumi_mocks import HEALTHY_REPORT, Recorder, Registered, run_component
from tests.specs import group_spec

JOB = "kubernetes:batch/v1:Job"
COMMAND = "command:remote:Command"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
DYNAMIC = "pulumi-python:dynamic:Resource"


def taint_resources(run) -> list[Registered]:
    return [r for r in run.of_type(DYNAMIC) if "taints" in r.inputs]


def verification_results(run) -> list[Registered]:
    return [r for r in run.of_type(DYNAMIC) if "timeoutSeconds" in r.inputs]


def names(resources: list[Registered]) -> list[str]:
    return sorted(r.name for r in resources)


def deps(run, resource: Registered) -> set[str]:
    """Names of the resources this one depends on."""
    by_urn = {r.urn: r.name for r in run.resources}
    return {by_urn[urn] for urn in resource.dependencies}


def capacity_checks(run) -> list[Registered]:
    return [r for r in run.of_type(DYNAMIC) if "waitSeconds" in r.inputs]


def test_children_are_named_after_the_group_and_parented_to_it():
    run = run_component(group("a100"))
    component = run.named("a100")
    assert component.type == TYPE, component.urn
    children = [r for r in run.resources if r.parent == component.urn]
    parts = ("preflight", "labels", "taints", "gpu-capacity")
    per_node = [f"a100-a100-node-{i}-{part}" for i in (1, 2) for part in parts]
    jobs = ["a100-verify-a100-node-1-1gpu", "a100-verify-a100-node-2-1gpu"]
    results = [f"{job}-result" for job in jobs]
    group_wide = ["a100-device-plugin", "a100-priority-class", "a100-verification-priority-class"]
    expected = sorted(per_node + jobs + results + group_wide)
    assert names(children) == expected, component.urn


def test_labels_are_patched_on_every_node_with_the_group_label():
    run = run_component(group("a100", labels={"accelerator": "nvidia", "team": "ml"}))
    patches = run.of_type(NODE_PATCH)
    assert names(patches) == ["a100-a100-node-1-labels", "a100-a100-node-2-labels"], names(patches)
    for patch in patches:
        labels = patch.inputs["metadata"]["labels"]
        assert labels == {"accelerator": "nvidia", "team": "ml", GROUP_LABEL: "a100"}, patch.urn


def test_labels_never_force_a_conflict():
    run = run_component(group("a100"))
    for patch in run.of_type(NODE_PATCH):
        annotations = patch.inputs["metadata"]["annotations"]
        assert "pulumi.com/patchForce" not in annotations, patch.urn
        assert annotations["pulumi.com/patchFieldManager"] == "gpu-nodes-a100", patch.urn


def test_taints_are_not_a_node_patch():
    run = run_component(group("a100"))
    for patch in run.of_type(NODE_PATCH):
        assert "spec" not in patch.inputs, f"{patch.urn} would take over the atomic taint list"
    taints = taint_resources(run)
    assert names(taints) == ["a100-a100-node-1-taints", "a100-a100-node-2-taints"], names(taints)
    for resource in taints:
        assert resource.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], resource.urn


def test_kubeconfig_of_the_taint_resource_stays_secret():
    run = run_component(group("a100"), kubeconfig="apiVersion: v1\nkind: Config\n")
    for resource in taint_resources(run):
        assert "kubeconfig" in resource.secret_inputs, resource.urn
        assert "kubeconfig" in resource.additional_secret_outputs, resource.urn


def test_each_node_is_marked_only_after_its_own_preflight():
    run = run_component(group("a100"))
    for node in ("a100-node-1", "a100-node-2"):
        for suffix in ("labels", "taints"):
            resource = run.named(f"a100-{node}-{suffix}")
            assert deps(run, resource) == {f"a100-{node}-preflight"}, resource.urn


def test_each_node_job_waits_for_the_plugin_and_its_own_node_only():
    run = run_component(group("a100", verification={"gpusPerPod": [1, 2]}))
    jobs = run.of_type(JOB)
    assert len(jobs) == 4, names(jobs)
    for node in ("a100-node-1", "a100-node-2"):
        other = "a100-node-2" if node == "a100-node-1" else "a100-node-1"
        for gpus in (1, 2):
            job = run.named(f"a100-verify-{node}-{gpus}gpu")
            needs = deps(run, job)
            wanted = {"a100-device-plugin", "a100-verification-priority-class", f"a100-{node}-labels", f"a100-{node}-taints"}
            assert wanted <= needs, job.urn
            assert not any(other in name for name in needs), f"{job.urn} waits for {other}: {needs}"


def test_mixed_mig_registers_a_job_per_mig_resource():
    mig = {"nvidia.com/mig-1g.5gb": 2}
    run = run_component(group("a100", nodes=1, devicePlugin={"migStrategy": "mixed"}, verification={"migResources": mig}))
    assert names(run.of_type(JOB)) == ["a100-verify-a100-node-1-1gpu", "a100-verify-a100-node-1-2x-mig-1g-5gb"]
    job = run.named("a100-verify-a100-node-1-2x-mig-1g-5gb")
    limits = job.inputs["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.5gb"] == "2", job.urn
    assert run.named(f"{job.name}-result").inputs["job"] == job.inputs["metadata"]["name"], job.urn


def test_group_wide_job_waits_for_every_node():
    run = run_component(group("a100", verification={"perNode": False}))
    job = run.named("a100-verify-group-1gpu")
    needs = deps(run, job)
    for node in ("a100-node-1", "a100-node-2"):
        assert {f"a100-{node}-labels", f"a100-{node}-taints"} <= needs, job.urn


def test_a_changed_job_gets_a_new_object_name():
    """So that Pulumi creates the new Job before deleting the old, without a name clash."""
    old = run_component(group("a100")).named("a100-verify-a100-node-1-1gpu")
    new = run_component(group("a100", verification={"timeoutSeconds": 120})).named("a100-verify-a100-node-1-1gpu")
    assert old.inputs["metadata"]["name"] != new.inputs["metadata"]["name"], old.urn
    assert not new.delete_before_replace, new.urn


def test_each_job_has_a_result_that_waits_for_it_with_the_configured_timeout():
    run = run_component(group("a100", verification={"timeoutSeconds": 120}))
    for job in run.of_type(JOB):
        assert job.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true", job.urn
        result = run.named(f"{job.name}-result")
        assert job.name in deps(run, result), result.urn
        assert result.inputs["timeoutSeconds"] == 120, result.urn
        assert result.inputs["job"] == job.inputs["metadata"]["name"], result.urn
        assert "kubeconfig" in result.additional_secret_outputs, result.urn


def test_each_node_gpu_count_is_checked_after_the_plugin_is_up():
    sliced = {"timeSlicingReplicas": 4}
    run = run_component(group("a100", gpusPerNode=2, devicePlugin=sliced, verification={"timeoutSeconds": 120}))
    checks = capacity_checks(run)
    assert names(checks) == ["a100-a100-node-1-gpu-capacity", "a100-a100-node-2-gpu-capacity"], names(checks)
    for node in ("a100-node-1", "a100-node-2"):
        check = run.named(f"a100-{node}-gpu-capacity")
        assert check.inputs["node"] == node, check.urn
        assert check.inputs["expected"] == 8, check.urn
        assert check.inputs["waitSeconds"] == 120, check.urn
        assert deps(run, check) >= {"a100-device-plugin", f"a100-{node}-labels", f"a100-{node}-taints"}, check.urn
        assert "kubeconfig" in check.additional_secret_outputs, check.urn


def test_jobs_do_not_wait_for_the_capacity_check():
    """A node short of one GPU still gets its Jobs' verdict on the GPUs it has."""
    run = run_component(group("a100"))
    for job in run.of_type(JOB):
        assert not any(name.endswith("-gpu-capacity") for name in deps(run, job)), job.urn


def test_no_capacity_check_under_mig():
    run = run_component(group("a100", devicePlugin={"migStrategy": "single"}))
    assert capacity_checks(run) == [], names(capacity_checks(run))
    report = run.resolve(run.globals["component"].nodes)
    assert report["a100-node-1"]["gpuCapacity"] == {"skipped": True}, report


def test_device_plugin_config_map_only_when_needed():
    plain = run_component(group("a100"))
    assert not plain.of_type("kubernetes:core/v1:ConfigMap"), names(plain.resources)
    sliced = run_component(group("a100", devicePlugin={"timeSlicingReplicas": 4}))
    config_map = sliced.named("a100-device-plugin-config")
    daemonset = sliced.named("a100-device-plugin")
    assert "a100-device-plugin-config" in deps(sliced, daemonset), daemonset.urn
    assert config_map.inputs["metadata"]["namespace"] == "nvidia-device-plugin", config_map.urn


def test_preflight_disabled_registers_no_commands_and_no_gate():
    run = run_component(group("a100", preflight={"enabled": False}))
    assert not run.of_type(COMMAND), names(run.resources)
    for patch in run.of_type(NODE_PATCH):
        assert deps(run, patch) == set(), patch.urn
    report = run.resolve(run.globals["component"].nodes)
    assert report["a100-node-1"]["preflight"] == {"skipped": True}, report


def test_outputs_report_each_node():
    run = run_component(group("a100", verification={"gpusPerPod": [1, 2]}))
    report = run.resolve(run.globals["component"].nodes)
    node = report["a100-node-1"]
    assert node["labels"][GROUP_LABEL] == "a100", node
    assert node["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], node
    assert node["preflight"]["passed"] is True, node
    assert node["preflight"]["driverVersion"] == HEALTHY_REPORT["driverVersion"], node
    assert node["preflight"]["gpuModels"] == ["NVIDIA H100 80GB HBM3"], node
    jobs = {job.name: job.gpus for job in verification_jobs(group_spec("a100", verification={"gpusPerPod": [1, 2]}))}
    expected = {
        name: {"resource": "nvidia.com/gpu", "gpus": gpus, "succeeded": True}
        for name, gpus in jobs.items()
        if "a100-node-1" in name
    }
    assert node["verification"] == expected, node
    assert node["gpuCapacity"] == {"expected": 4, "allocatable": 4}, node


def test_outputs_show_failed_checks_from_the_report():
    failed = {**HEALTHY_REPORT, "ok": False, "checks": [{"name": "driver", "ok": False, "detail": "no driver"}]}
    run = run_component(group("a100"), recorder=Recorder(preflight_stdout=lambda _inputs: json.dumps(failed)))
    report = run.resolve(run.globals["component"].nodes)
    assert report["a100-node-1"]["preflight"]["passed"] is False, report
    assert report["a100-node-1"]["preflight"]["failedChecks"] == ["driver"], report
