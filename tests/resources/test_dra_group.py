"""A group whose GPUs NVIDIA's DRA driver allocates (`allocator: dra`): what it registers in place of
the device plugin, what its Jobs and readiness checks take, and what its tenants are told."""

from __future__ import annotations

from gpu_nodes.manifests.dra_driver import APP_NAME as DRA_APP_NAME
from gpu_nodes.preflight.report import passing_report
from tests.factories import group, stack_config
from tests.pulumi_mocks import READINESS_TYPE, TAINTS_TYPE, Recorder, run_component, run_program

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"
GENERIC_DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
GENERIC_CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
CLAIM = "pulumi-python:dynamic/gpu-nodes:ObjectClaim"
COEXISTENCE = "pulumi-python:dynamic/gpu-nodes:DevicePluginCoexistence"
DRA_FEATURES = "pulumi-python:dynamic/gpu-nodes:DraFeatures"


def env_of(daemonset) -> dict[str, str]:
    (gpus,) = daemonset.inputs["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in gpus["env"] if "value" in e}


def dra_group(name: str = "h100", **overrides: object) -> dict:
    return group(name, allocator="dra", verification={"gpusPerPod": [1, 2]}, **overrides)


def test_a_dra_group_runs_the_drivers_kubelet_plugin_and_no_device_plugin():
    run = run_component(dra_group())
    daemonsets = {r.name: r for r in run.of_type(DAEMON_SET)}
    assert list(daemonsets) == ["h100-device-plugin"], list(daemonsets)
    labels = daemonsets["h100-device-plugin"].inputs["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == DRA_APP_NAME, labels


def test_the_stack_creates_the_drivers_device_classes_once_each_after_its_claim():
    run = run_component(dra_group())
    classes = sorted(r.inputs["metadata"]["name"] for r in run.of_type(GENERIC_DEVICE_CLASS))
    assert classes == ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"], classes
    claims = {r.inputs["name"] for r in run.of_type(CLAIM) if r.inputs["kind"] == "DeviceClass"}
    assert claims == {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"}, claims


def test_the_device_classes_and_kubelet_plugins_wait_for_what_the_cluster_keeps():
    run = run_program(stack_config(dra_group(), dra_group("b200")), secret_keys=["gpu-nodes:sshPrivateKey"])
    (features,) = run.of_type(DRA_FEATURES)
    assert "extendedResourceGroups" not in features.inputs, features.inputs
    for resource in [*run.of_type(GENERIC_DEVICE_CLASS), *run.of_type(DAEMON_SET)]:
        assert features.urn in resource.dependencies, f"{resource.urn} does not wait for {features.urn}"


def test_the_kubelet_plugin_runs_the_health_check_where_the_cluster_keeps_device_taints():
    """The mocks answer as a Kubernetes 1.36 cluster: device taints kept."""
    plain = group("a100", allocator="dra", devicePlugin={"healthChecks": False})
    run = run_program(stack_config(dra_group(), plain), secret_keys=["gpu-nodes:sshPrivateKey"])
    gates = {ds.name: env_of(ds)["FEATURE_GATES"] for ds in run.of_type(DAEMON_SET)}
    assert gates == {"h100-device-plugin": "NVMLDeviceHealthCheck=true,", "a100-device-plugin": "NVMLDeviceHealthCheck=false,"}, (
        gates
    )


def test_a_group_that_serves_plain_requests_asks_the_cluster_and_its_jobs_ask_for_nvidia_gpu():
    run = run_component(dra_group(dra={"extendedResourceName": True}))
    (features,) = run.of_type(DRA_FEATURES)
    assert features.inputs["extendedResourceGroups"] == ["h100"], features.inputs
    gpu_class = next(r for r in run.of_type(GENERIC_DEVICE_CLASS) if r.inputs["metadata"]["name"] == "gpu.nvidia.com")
    assert gpu_class.inputs["spec"]["extendedResourceName"] == "nvidia.com/gpu", gpu_class.inputs
    assert not run.of_type(GENERIC_CLAIM_TEMPLATE), [r.urn for r in run.of_type(GENERIC_CLAIM_TEMPLATE)]
    for job in run.of_type(JOB):
        pod = job.inputs["spec"]["template"]["spec"]
        assert "resourceClaims" not in pod, job.urn
        # The workload's 1 and 2 GPUs, DCGM's all 4; the containers that must see none ask for none.
        limits = [c["resources"]["limits"] for c in [*pod.get("initContainers", []), *pod["containers"]]]
        assert all(int(lim.get("nvidia.com/gpu", 0)) in (0, 1, 2, 4) for lim in limits), f"{job.urn}: {limits}"


def test_a_device_plugin_stack_has_no_device_class():
    run = run_component(group("a100"))
    assert not run.of_type(GENERIC_DEVICE_CLASS), [r.urn for r in run.of_type(GENERIC_DEVICE_CLASS)]


def test_the_jobs_take_their_gpus_through_a_template_registered_before_them():
    run = run_component(dra_group())
    templates = {r.inputs["metadata"]["name"]: r for r in run.of_type(GENERIC_CLAIM_TEMPLATE)}
    # The workload's counts, and all the node's GPUs for DCGM's diagnostics.
    assert len(templates) == 3, list(templates)
    by_urn = {r.urn: r for r in run.resources}
    for job in run.of_type(JOB):
        pod = job.inputs["spec"]["template"]["spec"]
        if job.inputs["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == "access":
            assert "resourceClaims" not in pod, job.urn
            continue
        (claim,) = pod["resourceClaims"]
        assert claim["resourceClaimTemplateName"] in templates, f"{job.urn}: {claim}"
        before = {by_urn[u].type for u in job.dependencies}
        assert GENERIC_CLAIM_TEMPLATE in before, f"{job.urn} does not wait for its template"


def test_each_readiness_check_asks_the_slices_for_the_gpus_preflight_found():
    run = run_component(dra_group())
    expected = [{"uuid": g["uuid"], "model": g["name"]} for g in passing_report()["gpus"]]
    for check in run.of_type(READINESS_TYPE):
        assert check.inputs["draGpus"] == {"count": 4}, check.urn
        assert check.inputs["gpuDevices"] == expected, check.urn
        assert check.inputs.get("expectedGpus") is None, check.urn
    for taints in run.of_type(TAINTS_TYPE):
        assert taints.inputs["gpuDevices"] == expected, taints.urn


def test_a_machine_not_yet_checked_has_reported_no_gpu_for_the_slices_to_list():
    run = run_component(dra_group(), recorder=Recorder(unchecked={"h100-node-1"}))
    expected = [{"uuid": g["uuid"], "model": g["name"]} for g in passing_report()["gpus"]]
    for resource in [*run.of_type(READINESS_TYPE), *run.of_type(TAINTS_TYPE)]:
        devices = [] if "-h100-node-1-" in resource.name else expected
        assert resource.inputs["gpuDevices"] == devices, resource.urn


def test_the_coexistence_check_expects_the_drivers_slices_on_dra_nodes_only():
    run = run_component(dra_group(nodes=1))
    (check,) = run.of_type(COEXISTENCE)
    assert check.inputs["draNodes"] == ["h100-node-1"], check.urn


def test_tenant_access_gives_a_dra_groups_device_class_and_a_template_to_copy():
    run = run_program(stack_config(dra_group(), group("a100")), secret_keys=["gpu-nodes:sshPrivateKey"])
    access = run.resolve(run.globals["fleet"].tenant_access)
    assert access["h100"]["deviceClassName"] == "gpu.nvidia.com", access
    request = access["h100"]["resourceClaimTemplate"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}, access
    assert "deviceClassName" not in access["a100"], access
    assert "extendedResourceName" not in access["h100"], access


def test_tenant_access_says_a_plain_request_works_where_the_group_serves_one():
    run = run_program(stack_config(dra_group(dra={"extendedResourceName": True})), secret_keys=["gpu-nodes:sshPrivateKey"])
    access = run.resolve(run.globals["fleet"].tenant_access)
    assert access["h100"]["extendedResourceName"] == "nvidia.com/gpu", access
