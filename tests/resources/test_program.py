"""The whole program (`__main__.py`) under mocks, with stack config."""

from __future__ import annotations

import json

import kubernetes_validate
import pulumi
import pytest

from gpu_nodes.vocabulary import GROUP_LABEL, STACK_LABEL
from tests.factories import REGISTRY_LOGIN, SECRET_KEYS, SSH_KEY, group, stack_config, two_groups
from tests.pulumi_mocks import CLAIM_TYPE, DYNAMIC_PROVIDER_TYPE, ProgramRun, run_program

KUBERNETES_VERSIONS = [f"1.{minor}" for minor in range(29, 36)]
# NodePatch carries only the node's metadata: validated as the Node it patches.
SCHEMA_KIND = {"kubernetes:core/v1:NodePatch": ("v1", "Node")}


def kubernetes_objects(run) -> list:
    return [r for r in run.resources if r.type.startswith("kubernetes:") and not r.type.startswith("pulumi:providers")]


def every_feature() -> dict:
    """MIG (single and mixed), time-slicing, group-wide Jobs, the plugin's knobs: every optional object and field."""
    mixed = {
        "migStrategy": "mixed",
        "timeSlicingReplicas": 2,
        "tolerations": [{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "ignoredXids": [109],
        "enabledXids": [45],
    }
    return stack_config(
        group("a100", nodes=1, devicePlugin=mixed, verification={"migResources": {"nvidia.com/mig-1g.5gb": 2}}),
        group("h100", nodes=1, devicePlugin={"migStrategy": "single"}, verification={"gpusPerPod": [1, 7], "perNode": False}),
    )


@pytest.mark.parametrize("config", [two_groups, every_feature])
def test_every_kubernetes_object_validates_against_strict_schemas(config):
    run = run_program(config(), SECRET_KEYS)
    objects = kubernetes_objects(run)
    assert len(objects) > 10, [r.urn for r in objects]
    for resource in objects:
        manifest = dict(resource.inputs)
        if resource.type in SCHEMA_KIND:
            manifest["apiVersion"], manifest["kind"] = SCHEMA_KIND[resource.type]
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                pytest.fail(f"{resource.urn} is not a valid {manifest['kind']} for Kubernetes {version}: {error.message}")


def test_the_same_config_registers_the_same_resources_twice():
    first = run_program(two_groups(), SECRET_KEYS)
    second = run_program(two_groups(), SECRET_KEYS)
    as_data = lambda run: {r.urn: (r.inputs, sorted(r.dependencies)) for r in run.resources}  # noqa: E731
    assert json.dumps(as_data(first), sort_keys=True) == json.dumps(as_data(second), sort_keys=True)


def test_one_kubernetes_provider_for_every_object():
    run = run_program(two_groups(), SECRET_KEYS)
    providers = {r.provider.split("::")[-2] for r in kubernetes_objects(run)}
    assert providers == {"k8s"}, providers


def test_shared_namespaces_are_created_once_with_pod_security_levels():
    run = run_program(two_groups(), SECRET_KEYS)
    namespaces = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in run.of_type("kubernetes:core/v1:Namespace")
    }
    assert sorted(namespaces) == ["gpu-verification", "nvidia-device-plugin"], namespaces
    assert namespaces["nvidia-device-plugin"]["pod-security.kubernetes.io/enforce"] == "privileged", namespaces
    assert namespaces["gpu-verification"]["pod-security.kubernetes.io/enforce"] == "restricted", namespaces


def claims(run) -> dict[str, dict]:
    return {r.name: r for r in run.of_type(CLAIM_TYPE) if r.name.endswith("-claim")}


def test_each_shared_object_waits_for_its_claim():
    run = run_program(two_groups(), SECRET_KEYS)
    found = claims(run)
    for name in ("namespace-nvidia-device-plugin", "namespace-gpu-verification", "runtime-class-nvidia"):
        claim = found[f"{name}-claim"]
        assert claim.inputs["mode"] == "create", claim.urn
        assert claim.urn in run.named(name).dependencies, run.named(name).urn
    for group_name in ("a100", "h100"):
        for part in ("priority-class", "verification-priority-class"):
            resource = run.named(f"{group_name}-{part}")
            assert found[f"{group_name}-{part}-claim"].urn in resource.dependencies, resource.urn


def test_the_shared_objects_carry_this_stacks_label():
    run = run_program(two_groups(), SECRET_KEYS)
    for resource in [*run.of_type("kubernetes:core/v1:Namespace"), *run.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")]:
        assert resource.inputs["metadata"]["labels"][STACK_LABEL] == "gpu-nodes.test", resource.urn


def test_the_stacks_kubeconfig_is_held_once_a_secret_by_the_provider_of_our_checks():
    config = {**two_groups(), "kubernetes:kubeconfig": "apiVersion: v1\nkind: Config\n"}
    run = run_program(config, [*SECRET_KEYS, "kubernetes:kubeconfig"])
    (access,) = run.of_type(DYNAMIC_PROVIDER_TYPE)
    assert access.inputs["kubeconfig"] == config["kubernetes:kubeconfig"], access.inputs
    assert "kubeconfig" in access.secret_inputs, access.urn
    for claim in claims(run).values():
        assert "kubeconfig" not in claim.inputs and claim.provider.startswith(access.urn + "::"), claim.urn


def test_an_existing_namespace_is_referenced_never_created_and_nothing_goes_with_it():
    config = two_groups() | {"gpu-nodes:existingNamespaces": ["gpu-verification"]}
    run = run_program(config, SECRET_KEYS)
    created = [r.inputs["metadata"]["name"] for r in run.of_type("kubernetes:core/v1:Namespace")]
    assert created == ["nvidia-device-plugin"], created
    claim = claims(run)["namespace-gpu-verification-claim"]
    assert (claim.inputs["mode"], claim.inputs.get("needsLevel")) == ("reference", None), claim.urn
    for job in run.of_type("kubernetes:batch/v1:Job"):
        assert claim.urn in job.dependencies, job.urn
        assert not job.deleted_with, f"{job.urn} would be left behind on destroy: deleted with {job.deleted_with}"


def test_a_referenced_plugin_namespace_must_admit_privileged_pods():
    config = two_groups() | {"gpu-nodes:existingNamespaces": ["nvidia-device-plugin"]}
    claim = claims(run_program(config, SECRET_KEYS))["namespace-nvidia-device-plugin-claim"]
    assert claim.inputs["needsLevel"] == "privileged", claim.urn


def with_pull_secret(config: dict) -> ProgramRun:
    return run_program({**config, "gpu-nodes:imagePullSecret": REGISTRY_LOGIN}, [*SECRET_KEYS, "gpu-nodes:imagePullSecret"])


def test_a_pull_secret_lands_in_each_namespace_before_the_pods_that_name_it():
    run = with_pull_secret(two_groups())
    secrets = {r.inputs["metadata"]["namespace"]: r for r in run.of_type("kubernetes:core/v1:Secret")}
    assert sorted(secrets) == ["gpu-verification", "nvidia-device-plugin"], secrets
    for namespace, secret in secrets.items():
        assert secret.inputs["type"] == "kubernetes.io/dockerconfigjson", secret.urn
        assert secret.inputs["metadata"]["name"] == "gpu-nodes-pull", secret.urn
        assert "stringData" in secret.secret_inputs, f"{secret.urn}: the login is not a secret"
        assert run.named(f"pull-secret-{namespace}-claim").urn in secret.dependencies, secret.urn
    for plugin in run.of_type("kubernetes:apps/v1:DaemonSet"):
        assert plugin.inputs["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "gpu-nodes-pull"}], plugin.urn
        assert secrets["nvidia-device-plugin"].urn in plugin.dependencies, plugin.urn
    for job in run.of_type("kubernetes:batch/v1:Job"):
        assert job.inputs["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "gpu-nodes-pull"}], job.urn
        assert secrets["gpu-verification"].urn in job.dependencies, job.urn


def test_the_login_never_reaches_the_outputs():
    run = with_pull_secret(two_groups())
    assert "dXNlcjpwYXNz" not in json.dumps(run.resolve(run.globals["fleet"].node_groups), default=str)


def test_without_a_pull_secret_the_pods_name_none():
    run = run_program(two_groups(), SECRET_KEYS)
    assert not run.of_type("kubernetes:core/v1:Secret")
    for job in run.of_type("kubernetes:batch/v1:Job"):
        assert "imagePullSecrets" not in job.inputs["spec"]["template"]["spec"], job.urn


def test_pull_policies_reach_every_container():
    config = stack_config(group(devicePlugin={"imagePullPolicy": "Never"}, verification={"imagePullPolicy": "IfNotPresent"}))
    run = run_program(config, SECRET_KEYS)
    for plugin in run.of_type("kubernetes:apps/v1:DaemonSet"):
        assert plugin.inputs["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never", plugin.urn
    for job in run.of_type("kubernetes:batch/v1:Job"):
        pod = job.inputs["spec"]["template"]["spec"]
        policies = {c["imagePullPolicy"] for c in [*pod.get("initContainers", []), *pod["containers"]]}
        assert policies == {"IfNotPresent"}, job.urn


def test_priority_class_is_not_the_global_default():
    run = run_program(two_groups(), SECRET_KEYS)
    for resource in run.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass"):
        assert resource.inputs["globalDefault"] is False, resource.urn
        assert resource.inputs["value"] == 1_000_000, resource.urn


def test_exports_a_report_per_group_and_node():
    run = run_program(two_groups(), SECRET_KEYS)
    report = run.resolve(run.globals["fleet"].node_groups)
    assert sorted(report) == ["a100", "h100"], report
    assert sorted(report["a100"]) == ["a100-node-1", "a100-node-2"], report
    assert report["h100"]["h100-node-1"]["labels"][GROUP_LABEL] == "h100", report


def test_the_ssh_key_never_reaches_the_outputs():
    run = run_program(two_groups(), SECRET_KEYS)
    report = run.resolve(run.globals["fleet"].node_groups)
    assert SSH_KEY not in json.dumps(report), "the private key leaked into the stack outputs"


def test_kubeconfig_from_stack_config_reaches_the_provider_as_a_secret():
    config = {**two_groups(), "kubernetes:kubeconfig": "apiVersion: v1\nkind: Config\n", "kubernetes:context": "prod"}
    run = run_program(config, [*SECRET_KEYS, "kubernetes:kubeconfig"])
    provider = run.named("k8s")
    assert provider.inputs["context"] == "prod", provider.urn
    assert "kubeconfig" in provider.secret_inputs, provider.urn


def test_bad_config_fails_cleanly_before_anything_is_registered():
    with pytest.raises(pulumi.RunError) as caught:
        run_program(stack_config(group(gpusPerNode=0)), SECRET_KEYS)
    message = str(caught.value)
    assert "gpu-nodes:nodeGroups[0].gpusPerNode: got 0; expected at least 1" in message, message
    assert "Traceback" not in message, message


def test_nothing_is_registered_when_config_is_bad():
    from tests.pulumi_mocks import Recorder

    recorder = Recorder()
    with pytest.raises(pulumi.RunError):
        run_program(stack_config(group(taints=["oops"])), SECRET_KEYS, recorder=recorder)
    registered = [r.urn for r in recorder.resources.values() if r.type != "pulumi:pulumi:Stack"]
    assert registered == [], registered


def test_missing_ssh_key_names_the_key():
    config = stack_config(group())
    del config["gpu-nodes:sshPrivateKey"]
    with pytest.raises(pulumi.RunError, match="gpu-nodes:sshPrivateKey"):
        run_program(config)


def test_no_ssh_key_needed_when_preflight_is_off_everywhere():
    raw = group(preflight={"enabled": False})
    config = stack_config(raw)
    del config["gpu-nodes:sshPrivateKey"]
    run = run_program(config)
    assert not run.of_type("command:remote:Command"), [r.urn for r in run.resources]


RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"


def pod_specs(run) -> dict[str, dict]:
    """Pod templates of every DaemonSet and Job, by resource name."""
    kinds = ("kubernetes:apps/v1:DaemonSet", "kubernetes:batch/v1:Job")
    return {r.name: r.inputs["spec"]["template"]["spec"] for r in run.resources if r.type in kinds}


PLUGIN = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"


def pod_specs_of(run, kind: str) -> dict[str, dict]:
    return {r.name: r.inputs["spec"]["template"]["spec"] for r in run.resources if r.type == kind}


def test_one_runtime_class_per_stack_named_by_the_device_plugins():
    run = run_program(two_groups(), SECRET_KEYS)
    classes = run.of_type(RUNTIME_CLASS)
    assert [(r.name, r.inputs["metadata"]["name"], r.inputs["handler"]) for r in classes] == [
        ("runtime-class-nvidia", "nvidia", "nvidia")
    ], [r.urn for r in classes]
    plugins = pod_specs_of(run, PLUGIN)
    assert len(plugins) == 2, sorted(plugins)
    for name, spec in plugins.items():
        assert spec.get("runtimeClassName") == "nvidia", name


def test_verification_pods_run_as_a_tenants_pod_by_default_naming_no_runtime_class():
    run = run_program(two_groups(), SECRET_KEYS)
    jobs = pod_specs_of(run, JOB)
    # Per group: its workload Jobs, and per node the access check and DCGM's diagnostics.
    assert len(jobs) == 11, sorted(jobs)
    for name, spec in jobs.items():
        assert "runtimeClassName" not in spec, name


def test_tenant_access_is_exported_per_group():
    config = stack_config(group("a100"), group("h100", gpuAccess="runtimeClass"), group("b200", gpuAccess="cdi"))
    run = run_program(config, SECRET_KEYS)
    assert run.globals["fleet"].tenant_access == {
        "a100": {"gpuAccess": "defaultRuntime", "runtimeClassName": None, "isolation": "default"},
        "h100": {"gpuAccess": "runtimeClass", "runtimeClassName": "nvidia", "isolation": "default"},
        "b200": {"gpuAccess": "cdi", "runtimeClassName": None, "isolation": "default"},
    }, run.globals["fleet"].tenant_access


def test_gpu_pods_wait_for_the_runtime_class():
    """The RuntimeClass admission plugin refuses a pod whose class does not exist yet."""
    run = run_program(two_groups(), SECRET_KEYS)
    runtime_class = run.named("runtime-class-nvidia").urn
    for resource in run.resources:
        if resource.type in ("kubernetes:apps/v1:DaemonSet", "kubernetes:batch/v1:Job"):
            assert runtime_class in resource.dependencies, resource.urn


def test_a_referenced_runtime_class_is_named_not_created():
    run = run_program(stack_config(group("a100"), runtimeClass="nvidia-cdi"), SECRET_KEYS)
    assert not run.of_type(RUNTIME_CLASS), [r.urn for r in run.of_type(RUNTIME_CLASS)]
    for name, spec in pod_specs_of(run, PLUGIN).items():
        assert spec.get("runtimeClassName") == "nvidia-cdi", name


def test_runtime_class_off_requires_nvidia_as_the_default_runtime():
    run = run_program(stack_config(group("a100"), runtimeClass=False), SECRET_KEYS)
    assert not run.of_type(RUNTIME_CLASS), [r.urn for r in run.of_type(RUNTIME_CLASS)]
    for name, spec in pod_specs(run).items():
        assert "runtimeClassName" not in spec, name
    for command in run.of_type("command:remote:Command"):
        assert " --require-default-runtime" in command.inputs["create"], command.urn


def test_bad_runtime_class_fails_before_anything_is_registered():
    from tests.pulumi_mocks import Recorder

    recorder = Recorder()
    with pytest.raises(pulumi.RunError, match=r"gpu-nodes:runtimeClass: got 'Bad_Class'"):
        run_program(stack_config(group("a100"), runtimeClass="Bad_Class"), SECRET_KEYS, recorder=recorder)
    registered = [r.urn for r in recorder.resources.values() if r.type != "pulumi:pulumi:Stack"]
    assert registered == [], registered


def test_an_existing_nvidia_class_is_named_not_adopted():
    run = run_program(stack_config(group("a100"), createRuntimeClass=False), SECRET_KEYS)
    assert not run.of_type(RUNTIME_CLASS), [r.urn for r in run.of_type(RUNTIME_CLASS)]
    for name, spec in pod_specs_of(run, PLUGIN).items():
        assert spec.get("runtimeClassName") == "nvidia", name
