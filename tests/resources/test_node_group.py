"""The GpuNodeGroup component: children, their order, and its outputs."""

from __future__ import annotations

import dataclasses

import pytest

from gpu_nodes.errors import ConfigError
from gpu_nodes.manifests.verification import verification_jobs
from gpu_nodes.preflight.report import passing_report
from gpu_nodes.proof.checklist import CHECKLIST_ITEMS
from gpu_nodes.resources.arguments import STACK_LABEL_ALLOWED
from gpu_nodes.resources.namespaces import SharedNamespace
from gpu_nodes.resources.node_group import TYPE, GpuNodeGroup, GpuNodeGroupArgs
from gpu_nodes.vocabulary import FACTS_ANNOTATION, GATE, GFD_COUNT_LABEL, GFD_PRODUCT_LABEL, GROUP_LABEL
from tests.factories import group
from tests.pulumi_mocks import (
    DYNAMIC_PROVIDER_TYPE,
    READINESS_TYPE,
    TAINTS_TYPE,
    Recorder,
    Registered,
    run_component,
    run_inline,
)
from tests.specs import group_spec

JOB = "kubernetes:batch/v1:Job"
COMMAND = "command:remote:Command"
NODE_PATCH = "kubernetes:core/v1:NodePatch"


def taint_resources(run) -> list[Registered]:
    return [r for r in run.of_type(TAINTS_TYPE)]


def readiness_checks(run) -> list[Registered]:
    return [r for r in run.of_type(READINESS_TYPE)]


def names(resources: list[Registered]) -> list[str]:
    return sorted(r.name for r in resources)


def deps(run, resource: Registered) -> set[str]:
    """Names of the resources this one depends on."""
    by_urn = {r.urn: r.name for r in run.resources}
    return {by_urn[urn] for urn in resource.dependencies}


def test_children_are_named_after_the_group_and_parented_to_it():
    run = run_component(group("a100"))
    component = run.named("a100")
    assert component.type == TYPE, component.urn
    children = [r for r in run.resources if r.parent == component.urn]
    parts = ("preflight", "preflight-script", "taints", "labels", "readiness")
    per_node = [f"a100-a100-node-{i}-{part}" for i in (1, 2) for part in parts]
    jobs = [f"a100-verify-a100-node-{i}-{slug}" for i in (1, 2) for slug in ("1gpu", "access", "dcgm")]
    group_wide = ["a100-device-plugin", "a100-device-plugin-service-account", "a100-priority-class"]
    group_wide += ["a100-verification-priority-class", "a100-verification-check"]
    group_wide += ["a100-priority-class-claim", "a100-verification-priority-class-claim"]
    expected = sorted(per_node + jobs + group_wide)
    assert names(children) == expected, component.urn


def test_labels_are_patched_on_every_node_with_the_group_label():
    run = run_component(group("a100", labels={"accelerator": "nvidia", "team": "ml"}, gpuFeatureLabels=False))
    patches = run.of_type(NODE_PATCH)
    assert names(patches) == ["a100-a100-node-1-labels", "a100-a100-node-2-labels"], names(patches)
    for patch in patches:
        labels = patch.inputs["metadata"]["labels"]
        assert labels == {"accelerator": "nvidia", "team": "ml", GROUP_LABEL: "a100"}, patch.urn


def test_each_node_gets_gpu_feature_discoverys_labels_from_its_own_preflight():
    run = run_component(group("a100"))
    for patch in run.of_type(NODE_PATCH):
        labels = patch.inputs["metadata"]["labels"]
        found = {key: labels.get(key) for key in ("nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.count")}
        assert found == {
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.count": "1",
        }, patch.urn
        assert labels["nvidia.com/cuda.driver-version.full"] == "550.54.15", patch.urn
        assert labels[GROUP_LABEL] == "a100", patch.urn


def test_the_facts_annotation_is_written_even_without_the_labels():
    run = run_component(group("a100", gpuFeatureLabels=False))
    for patch in run.of_type(NODE_PATCH):
        value = patch.inputs["metadata"]["annotations"].get(FACTS_ANNOTATION)
        assert value == '{"count":1,"memoryMiB":[81559],"models":["NVIDIA H100 80GB HBM3"]}', patch.urn


def test_without_preflight_no_facts_and_no_comparison():
    run = run_component(group("a100", preflight={"enabled": False}))
    for patch in run.of_type(NODE_PATCH):
        assert FACTS_ANNOTATION not in patch.inputs["metadata"]["annotations"], patch.urn
        assert "nvidia.com/gpu.product" not in patch.inputs["metadata"]["labels"], patch.urn
    for check in readiness_checks(run):
        assert "groupLabel" not in check.inputs, check.urn


def test_each_readiness_check_compares_its_gpus_with_the_nodes_labelled_as_its_group():
    run = run_component(group("a100", nodes=3))
    for check in readiness_checks(run):
        assert check.inputs["groupLabel"] == {"gpu-nodes.dev/node-group": "a100"}, check.urn
        assert "groupNodes" not in check.inputs, check.urn
        # Its own facts too: a re-check that finds other GPUs proves the node again.
        assert check.inputs["gpuFacts"] == '{"count":1,"memoryMiB":[81559],"models":["NVIDIA H100 80GB HBM3"]}', check.urn


def test_each_readiness_check_knows_its_machines_preflight_run():
    """Only a preflight run since the node's last proof may bring a GPU back (providers/readiness.py)."""
    run = run_component(group("a100"))
    commands = {c.name: c for c in run.of_type(COMMAND)}
    for check in readiness_checks(run):
        preflight = check.name.removesuffix("-readiness") + "-preflight"
        assert commands[preflight].urn.endswith(f"::{check.inputs['preflightResource']}"), check.inputs
        # The command's id (the mocks give "<name>-id"; pulumi-command a new one per run).
        assert check.inputs["preflightRun"].endswith(f"{commands[preflight].name}-id"), check.inputs["preflightRun"]


def test_without_preflight_the_readiness_check_has_no_run_to_go_by():
    run = run_component(group("a100", preflight={"enabled": False}))
    for check in readiness_checks(run):
        assert "preflightRun" not in check.inputs and "preflightResource" not in check.inputs, check.urn


def test_adding_a_node_changes_no_other_nodes_resources():
    """Issue 27: one node's change touches that node (with preflight on and no gpuModel)."""
    before, after = run_component(group("a100", nodes=2)), run_component(group("a100", nodes=3))
    inputs = lambda run: {r.urn: r.inputs for r in run.resources if "-a100-node-3-" not in r.urn}  # noqa: E731
    old, new = inputs(before), inputs(after)
    changed = sorted(urn.rsplit("::", 1)[1] for urn in old if old[urn] != new.get(urn))
    # The fleet's one coexistence check lists the fleet's nodes (another plugin on the new one stops the run).
    assert changed == ["gpu-nodes-device-plugin-coexistence"], changed


def test_a_declared_gpu_model_is_checked_by_preflight_not_compared():
    run = run_component(group("a100", gpuModel="NVIDIA H100 80GB HBM3"))
    for check in readiness_checks(run):
        assert "groupLabel" not in check.inputs, check.urn
    for command in run.of_type("command:remote:Command"):
        assert "--gpu-model 'NVIDIA H100 80GB HBM3'" in command.inputs["create"], command.urn
        assert "gpu-model=NVIDIA H100 80GB HBM3" in command.inputs["triggers"], command.urn


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


def test_every_node_is_gated_by_its_taint_resource():
    run = run_component(group("a100"))
    for resource in taint_resources(run):
        assert resource.inputs["gate"] == GATE.to_k8s(), resource.urn


def test_the_kubeconfig_is_kept_once_a_secret_and_in_no_nodes_state():
    run = run_component(group("a100"), kubeconfig="apiVersion: v1\nkind: Config\n")
    (access,) = run.of_type(DYNAMIC_PROVIDER_TYPE)
    assert "kubeconfig" in access.secret_inputs, access.urn
    for resource in [*taint_resources(run), *readiness_checks(run)]:
        assert "kubeconfig" not in resource.inputs, resource.urn


def test_each_node_is_tainted_and_gated_only_after_its_own_preflight_and_the_shared_namespaces():
    """The namespaces come after their claims, the coexistence check looks for other device plugins:
    nothing lands on a node when a namespace is someone else's or another plugin is in the way."""
    run = run_component(group("a100"))
    # k8s: the provider whose kubeconfig the taints use.
    namespaces = {"namespace-nvidia-device-plugin", "namespace-gpu-verification", "device-plugin-coexistence"}
    for node in ("a100-node-1", "a100-node-2"):
        resource = run.named(f"a100-{node}-taints")
        assert deps(run, resource) == {f"a100-{node}-preflight", *namespaces}, resource.urn


def test_labels_come_after_the_gate_so_the_plugin_lands_on_a_gated_node():
    run = run_component(group("a100"))
    for node in ("a100-node-1", "a100-node-2"):
        labels = run.named(f"a100-{node}-labels")
        # Its own preflight too: the labels carry the GPU facts it read.
        assert deps(run, labels) == {f"a100-{node}-taints", f"a100-{node}-preflight"}, labels.urn


def test_each_node_job_waits_for_the_plugin_and_its_own_node_only():
    run = run_component(group("a100", verification={"gpusPerPod": [1, 2]}))
    jobs = run.of_type(JOB)
    assert len(jobs) == 8, names(jobs)
    for node in ("a100-node-1", "a100-node-2"):
        other = "a100-node-2" if node == "a100-node-1" else "a100-node-1"
        for slug in ("1gpu", "2gpu", "access", "dcgm"):
            job = run.named(f"a100-verify-{node}-{slug}")
            needs = deps(run, job)
            wanted = {"a100-device-plugin", "a100-verification-priority-class", f"a100-{node}-labels", f"a100-{node}-taints"}
            assert wanted <= needs, job.urn
            assert not any(other in name for name in needs), f"{job.urn} waits for {other}: {needs}"


def test_mixed_mig_registers_a_job_per_mig_resource():
    mig = {"nvidia.com/mig-1g.5gb": 2}
    run = run_component(group("a100", nodes=1, devicePlugin={"migStrategy": "mixed"}, verification={"migResources": mig}))
    # No DCGM diagnostic on MIG GPUs: DCGM refuses a GPU whose MIG instances do not span it.
    expected = ["a100-verify-a100-node-1-1gpu", "a100-verify-a100-node-1-2x-mig-1g-5gb", "a100-verify-a100-node-1-access"]
    assert names(run.of_type(JOB)) == expected, names(run.of_type(JOB))
    job = run.named("a100-verify-a100-node-1-2x-mig-1g-5gb")
    limits = job.inputs["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.5gb"] == "2", job.urn
    assert job.inputs["metadata"]["name"] in run.named("a100-a100-node-1-readiness").inputs["jobs"], job.urn


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


def test_namespaced_objects_go_with_their_namespace_when_the_stack_is_destroyed():
    run = run_component(group("a100", devicePlugin={"timeSlicingReplicas": 2}))
    plugin_namespace = run.named("namespace-nvidia-device-plugin").urn
    verification_namespace = run.named("namespace-gpu-verification").urn
    for resource in (run.named("a100-device-plugin"), run.named("a100-device-plugin-config")):
        assert resource.deleted_with == plugin_namespace, resource.urn
    for job in run.of_type(JOB):
        assert job.deleted_with == verification_namespace, job.urn


def test_jobs_wait_for_the_groups_check_script():
    run = run_component(group("a100"))
    check = run.named("a100-verification-check")
    assert check.inputs["metadata"]["namespace"] == "gpu-verification", check.urn
    for job in run.of_type(JOB):
        assert "a100-verification-check" in deps(run, job), job.urn


def test_jobs_are_not_awaited_by_the_kubernetes_provider():
    run = run_component(group("a100"))
    for job in run.of_type(JOB):
        assert job.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true", job.urn


def test_each_node_readiness_check_waits_for_its_own_jobs_and_the_plugin():
    run = run_component(group("a100", gpusPerNode=2, verification={"gpusPerPod": [1, 2], "timeoutSeconds": 120}))
    checks = readiness_checks(run)
    assert names(checks) == ["a100-a100-node-1-readiness", "a100-a100-node-2-readiness"], names(checks)
    for node in ("a100-node-1", "a100-node-2"):
        check = run.named(f"a100-{node}-readiness")
        own_jobs = [run.named(f"a100-verify-{node}-{gpus}gpu") for gpus in (1, 2)]
        assert check.inputs["jobs"] == [job.inputs["metadata"]["name"] for job in own_jobs], check.urn
        assert (check.inputs["node"], check.inputs["expectedGpus"], check.inputs["timeoutSeconds"]) == (node, 2, 120), check.urn
        wanted = {"a100-device-plugin", f"a100-{node}-labels", f"a100-{node}-taints", *(job.name for job in own_jobs)}
        assert deps(run, check) >= wanted, check.urn
        assert "kubeconfig" in check.additional_secret_outputs, check.urn


def test_a_group_wide_job_is_waited_for_by_every_node():
    run = run_component(group("a100", verification={"perNode": False}))
    job = run.named("a100-verify-group-1gpu")
    for check in readiness_checks(run):
        assert check.inputs["jobs"] == [job.inputs["metadata"]["name"]], check.urn


def test_under_mig_any_gpu_resource_will_do():
    run = run_component(group("a100", devicePlugin={"migStrategy": "single"}))
    for check in readiness_checks(run):
        assert check.inputs.get("expectedGpus") is None, check.urn


def test_a_declared_mig_layout_reaches_each_readiness_check_and_taints_check():
    layout = {"migStrategy": "mixed", "migDevices": {"1g.10gb": 7}}
    run = run_component(group("a100", devicePlugin=layout, verification={"migResources": {"nvidia.com/mig-1g.10gb": 1}}))
    checks = [*run.of_type(READINESS_TYPE), *run.of_type(TAINTS_TYPE)]
    assert len(checks) == 4, names(checks)  # two nodes
    for check in checks:
        assert check.inputs["expectedMigDevices"] == {"nvidia.com/mig-1g.10gb": 28}, check.urn


def test_device_plugin_config_map_only_when_needed():
    plain = run_component(group("a100"))
    assert "a100-device-plugin-config" not in names(plain.resources), names(plain.resources)
    sliced = run_component(group("a100", devicePlugin={"timeSlicingReplicas": 4}))
    config_map = sliced.named("a100-device-plugin-config")
    daemonset = sliced.named("a100-device-plugin")
    assert "a100-device-plugin-config" in deps(sliced, daemonset), daemonset.urn
    assert config_map.inputs["metadata"]["namespace"] == "nvidia-device-plugin", config_map.urn


def test_preflight_disabled_registers_no_commands_and_no_gate():
    run = run_component(group("a100", preflight={"enabled": False}))
    assert not run.of_type(COMMAND), names(run.resources)
    for resource in taint_resources(run):
        expected = {"namespace-nvidia-device-plugin", "namespace-gpu-verification", "device-plugin-coexistence"}
        assert deps(run, resource) == expected, resource.urn
    report = run.resolve(run.globals["component"].nodes)
    assert report["a100-node-1"]["preflight"] == {"skipped": True}, report


def test_outputs_report_each_node():
    run = run_component(group("a100", verification={"gpusPerPod": [1, 2]}))
    report = run.resolve(run.globals["component"].nodes)
    node = report["a100-node-1"]
    assert node["labels"][GROUP_LABEL] == "a100", node
    assert node["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], node
    assert node["preflight"]["passed"] is True, node
    assert node["preflight"]["driverVersion"] == passing_report()["driverVersion"], node
    assert node["preflight"]["gpuModels"] == ["NVIDIA H100 80GB HBM3"], node
    jobs = verification_jobs(group_spec("a100", verification={"gpusPerPod": [1, 2]}))
    mine = [job for job in jobs if job.node == "a100-node-1"]
    expected = [{"job": job.name, "role": job.role.value, "resource": job.resource, "gpus": job.gpus} for job in mine]
    assert node["verification"] == expected, node
    assert [job["role"] for job in node["verification"]] == ["verification", "verification", "access", "diagnostics"], node
    assert node["expectedGpus"] == 4, node
    assert node["checklist"] == dict.fromkeys([*CHECKLIST_ITEMS, "diagnosticsPassed"], "pass"), node
    assert node["gate"] == "lifted", node


def test_outputs_show_failed_checks_from_the_report():
    run = run_component(group("a100"), recorder=Recorder(failing={"a100-node-1": "driver"}))
    report = run.resolve(run.globals["component"].nodes)
    assert report["a100-node-1"]["preflight"]["passed"] is False, report
    assert report["a100-node-1"]["preflight"]["failedChecks"] == ["driver"], report
    assert report["a100-node-2"]["preflight"]["passed"] is True, report


def test_a_machine_not_yet_checked_has_no_gpu_facts_and_its_report_says_so():
    """Its preflight's stdout holds no report (Pulumi's mocks answer None): the node is marked and
    proven as one whose facts are not known, and its machine beside it is read as before."""
    run = run_component(group("a100"), recorder=Recorder(unchecked={"a100-node-1"}))
    patches = {p.name: p.inputs["metadata"] for p in run.of_type(NODE_PATCH)}
    unchecked, checked = patches["a100-a100-node-1-labels"], patches["a100-a100-node-2-labels"]
    assert unchecked["labels"][GROUP_LABEL] == "a100", unchecked
    assert not {GFD_PRODUCT_LABEL, GFD_COUNT_LABEL} & set(unchecked["labels"]), unchecked
    assert FACTS_ANNOTATION not in (unchecked.get("annotations") or {}), unchecked
    assert FACTS_ANNOTATION in checked["annotations"] and {GFD_PRODUCT_LABEL, GFD_COUNT_LABEL} <= set(checked["labels"]), checked
    facts = {c.name: c.inputs.get("gpuFacts") for c in readiness_checks(run)}
    assert facts["a100-a100-node-1-readiness"] is None and facts["a100-a100-node-2-readiness"], facts
    report = run.resolve(run.globals["component"].nodes)
    assert report["a100-node-1"]["preflight"] == {"checked": False}, report
    assert report["a100-node-2"]["preflight"]["passed"] is True, report


def test_the_device_plugin_waits_for_its_service_account_in_its_namespace():
    """The ServiceAccount admission plugin refuses a pod that names an account not there yet."""
    run = run_component(group("a100"))
    account = run.named("a100-device-plugin-service-account")
    assert account.type == "kubernetes:core/v1:ServiceAccount", account.urn
    assert account.inputs["metadata"]["namespace"] == "nvidia-device-plugin", account.urn
    assert account.inputs["automountServiceAccountToken"] is False, account.urn
    plugin = run.named("a100-device-plugin")
    assert "a100-device-plugin-service-account" in deps(run, plugin), plugin.urn


def test_arguments_the_cluster_or_the_machines_would_refuse_fail_before_anything_is_registered():
    def program() -> list[str]:
        # Never reached: the arguments are checked first.
        namespace = SharedNamespace("gpu-nodes", resource=None, owned=True)  # type: ignore[arg-type]
        args = GpuNodeGroupArgs(group_spec(), namespace, namespace, ssh_private_key=42, stack_label="rack-a!")  # type: ignore[arg-type]
        with pytest.raises(ConfigError) as caught:
            GpuNodeGroup("a100", args)
        return caught.value.problems

    run = run_inline(program)
    assert run.globals["result"] == [
        "ssh_private_key: got a value of type int; expected the text as a string, best as a secret (pulumi.Output.secret)",
        f"stack_label: got 'rack-a!'; {STACK_LABEL_ALLOWED}",
    ], run.globals["result"]
    registered = [r.urn for r in run.resources if r.type != "pulumi:pulumi:Stack"]
    assert registered == [], registered


def test_a_spec_with_a_machine_preflight_cannot_reach_fails_as_a_config_mistake():
    """A spec built without parse_stack may lack a node's sshHost; the group says which, before anything is registered."""

    def program() -> list[str]:
        spec = group_spec()
        spec = dataclasses.replace(spec, nodes=(dataclasses.replace(spec.nodes[0], ssh_host=None), *spec.nodes[1:]))
        namespace = SharedNamespace("gpu-nodes", resource=None, owned=True)  # type: ignore[arg-type]
        with pytest.raises(ConfigError) as caught:
            GpuNodeGroup("a100", GpuNodeGroupArgs(spec, namespace, namespace, ssh_private_key="key"))
        return caught.value.problems

    run = run_inline(program)
    (problem,) = run.globals["result"]
    assert problem.startswith("spec.nodes[0].ssh_host: got None; preflight logs in to the machine there"), problem
    registered = [r.urn for r in run.resources if r.type != "pulumi:pulumi:Stack"]
    assert registered == [], registered


# --------------------------------------------------------------------------- MPS


def mps(**sharing) -> dict:
    return {"sharing": {"strategy": "mps", "replicas": 4, **sharing}}


def test_an_mps_group_runs_its_daemon_before_its_plugin():
    """internal/plugin/mps.go waitForDaemon: the plugin serves once its MPS control daemon is ready."""
    run = run_component(group("a100", devicePlugin=mps()))
    daemon, plugin = run.named("a100-mps-control-daemon"), run.named("a100-device-plugin")
    assert daemon.type == "kubernetes:apps/v1:DaemonSet", daemon.urn
    assert "a100-mps-control-daemon" in deps(run, plugin), plugin.urn
    assert {"a100-device-plugin-config", "a100-device-plugin-service-account"} <= deps(run, daemon), daemon.urn
    assert daemon.deleted_with == run.named("namespace-nvidia-device-plugin").urn, daemon.urn
    assert daemon.inputs["spec"]["template"]["spec"]["nodeSelector"] == {GROUP_LABEL: "a100"}, daemon.urn


def test_a_group_without_mps_runs_no_daemon():
    for plugin in ({}, {"timeSlicingReplicas": 4}, {"sharing": {"replicas": 4}}):
        run = run_component(group("a100", devicePlugin=plugin))
        assert "a100-mps-control-daemon" not in names(run.resources), plugin


def test_readiness_counts_replicas_times_gpus_and_names_mps():
    run = run_component(group("a100", gpusPerNode=2, devicePlugin=mps()))
    for check in readiness_checks(run):
        assert (check.inputs["expectedGpus"], check.inputs["replicas"], check.inputs["sharing"]) == (8, 4, "mps"), check.urn
        assert "gpuResource" not in check.inputs, check.urn


def test_renamed_replicas_are_what_readiness_counts_and_the_report_names():
    run = run_component(group("a100", gpusPerNode=2, devicePlugin=mps(renameByDefault=True)))
    for check in readiness_checks(run):
        assert (check.inputs["expectedGpus"], check.inputs["gpuResource"]) == (8, "nvidia.com/gpu.shared"), check.urn
    report = run.resolve(run.globals["component"].nodes)
    assert (report["a100-node-1"]["expectedGpus"], report["a100-node-1"]["gpuResource"]) == (8, "nvidia.com/gpu.shared")


def test_a_group_time_sliced_by_the_older_spelling_keeps_the_readiness_inputs_it_had():
    run = run_component(group("a100", gpusPerNode=2, devicePlugin={"timeSlicingReplicas": 4}))
    for check in readiness_checks(run):
        assert (check.inputs["expectedGpus"], check.inputs["replicas"]) == (8, 4), check.urn
        assert "sharing" not in check.inputs and "gpuResource" not in check.inputs, check.urn


def test_a_group_time_sliced_by_sharing_says_so_to_its_readiness_check():
    """Its message then names sharing.replicas, the setting the group used (gpu_nodes/proof/judgement.py)."""
    run = run_component(group("a100", gpusPerNode=2, devicePlugin={"sharing": {"strategy": "timeSlicing", "replicas": 4}}))
    for check in readiness_checks(run):
        assert (check.inputs["expectedGpus"], check.inputs["replicas"], check.inputs["sharing"]) == (8, 4, "timeSlicing")


def test_an_mps_node_is_labelled_mps_capable_as_gfd_would():
    run = run_component(group("a100", devicePlugin=mps()))
    labels = run.named("a100-a100-node-1-labels").inputs["metadata"]["labels"]
    assert labels["nvidia.com/mps.capable"] == "true", labels
    assert (labels["nvidia.com/gpu.sharing-strategy"], labels["nvidia.com/gpu.replicas"]) == ("mps", "4"), labels
    assert labels[GFD_PRODUCT_LABEL].endswith("-SHARED"), labels
