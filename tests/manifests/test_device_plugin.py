"""The device plugin DaemonSet and its config file."""

from __future__ import annotations

import json

import pytest

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.manifests.device_plugin import (
    config_map_manifest,
    daemonset_manifest,
    plugin_revision,
    service_account_manifest,
)
from gpu_nodes.vocabulary import (
    CONFIG_HASH_ANNOTATION,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    GROUP_LABEL,
    MIG_DEVICES_ANNOTATION,
    PAUSED_FOR_MIG_CHANGE,
)
from tests.factories import group
from tests.manifests.daemonset_parts import container, env, pod_spec
from tests.providers.allocator_fixtures import chart
from tests.specs import group_spec


def test_upstream_defaults_are_kept():
    """The static manifest's security context where, as there, no PASS_DEVICE_SPECS is set (cdi)."""
    ds = daemonset_manifest(group_spec())
    name = ds["metadata"]["name"]
    assert pod_spec(ds)["priorityClassName"] == "system-node-critical", name
    cdi = container(daemonset_manifest(group_spec(gpuAccess="cdi")))
    assert cdi["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}, name
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate"}, name
    assert container(ds)["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.1", name
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod_spec(ds)["volumes"] if "hostPath" in v}
    assert host_paths == {"device-plugin": "/var/lib/kubelet/device-plugins", "cdi-root": "/var/run/cdi"}, name


@pytest.mark.parametrize(("volume", "kind"), [("device-plugin", "Directory"), ("cdi-root", "DirectoryOrCreate")])
def test_host_paths_carry_the_charts_types(volume: str, kind: str):
    """The chart's daemonset-device-plugin.yml: the kubelet's device-plugins directory must be there
    (`Directory`: no plugin on a machine whose kubelet has none), /var/run/cdi is made when missing."""
    ds = daemonset_manifest(group_spec())
    found = {v["name"]: v["hostPath"] for v in pod_spec(ds)["volumes"] if "hostPath" in v}
    assert found[volume].get("type") == kind, f"{ds['metadata']['name']}: {volume} {found[volume]}"


@pytest.mark.parametrize(
    "shape",
    [
        {},
        {"gpuAccess": "cdi"},
        {"gpuAccess": "cdi", "devicePlugin": {"driverRoot": "/run/nvidia/driver"}},
        {"isolation": "strict"},
    ],
)
def test_every_host_path_says_what_it_expects_there(shape: dict):
    """A hostPath without a type mounts whatever is at the path, or an empty directory kubelet makes."""
    ds = daemonset_manifest(group_spec(**shape))
    untyped = [v["name"] for v in pod_spec(ds)["volumes"] if "hostPath" in v and "type" not in v["hostPath"]]
    assert untyped == [], f"{ds['metadata']['name']} ({shape}): {untyped}"


# --------------------------------------------------------------------------- its own ServiceAccount, without a token


def test_the_plugin_runs_under_a_service_account_of_its_own():
    """Not the namespace's `default`, which other pods there may use and be granted for."""
    spec = group_spec("h100")
    account, ds = service_account_manifest(spec), daemonset_manifest(spec)
    assert pod_spec(ds)["serviceAccountName"] == account["metadata"]["name"] == "nvidia-device-plugin-h100", ds["metadata"]
    assert account["metadata"]["namespace"] == ds["metadata"]["namespace"], account["metadata"]
    version = "app.kubernetes.io/version"
    unversioned = {k: v for k, v in ds["metadata"]["labels"].items() if k != version}
    assert account["metadata"]["labels"] == unversioned, account["metadata"]


def test_a_new_plugin_image_leaves_the_service_account_as_it_is():
    """It runs no image: an upgrade rolls the DaemonSet, not the account."""
    old = service_account_manifest(group_spec("h100"))
    new = service_account_manifest(group_spec("h100", devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"}))
    assert new == old, new["metadata"]


@pytest.mark.parametrize(
    "shape", [{}, {"devicePlugin": {"migStrategy": "single"}}, {"devicePlugin": {"timeSlicingReplicas": 2}}, {"gpuAccess": "cdi"}]
)
def test_the_plugin_gets_no_api_token(shape: dict):
    """The plugin talks to kubelet only; the chart makes a ServiceAccount (and a ClusterRole on nodes)
    only for its config-manager sidecar or GFD (templates/service-account.yml, role.yml: `if or
    hasConfigMap gfd.enabled`). Our config file is a mounted ConfigMap, read by no sidecar."""
    spec = group_spec(**shape)
    ds = daemonset_manifest(spec)
    assert pod_spec(ds)["automountServiceAccountToken"] is False, f"{ds['metadata']['name']} ({shape})"
    assert service_account_manifest(spec)["automountServiceAccountToken"] is False, f"{ds['metadata']['name']} ({shape})"


def test_runs_only_on_the_group_nodes():
    ds = daemonset_manifest(group_spec("h100"))
    assert pod_spec(ds)["nodeSelector"] == {GROUP_LABEL: "h100"}, ds["metadata"]["name"]
    assert ds["metadata"]["name"] == "nvidia-device-plugin-h100", ds["metadata"]
    assert ds["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": "h100",
    }, ds["metadata"]["name"]


def test_the_plugin_steps_off_a_node_the_mig_manager_pauses_only_when_asked():
    """The GPU Operator's plugin leaves while its nodeSelector `nvidia.com/gpu.deploy.device-plugin: "true"` does not
    match; ours, with pauseForMigManager, while that label is `paused-for-mig-change`, the value NVIDIA's MIG manager
    writes (mig-parted pkg/mig/reconfigure/reconfigure.go), so that a node without the label, or with `false`, keeps
    it. Without the setting the DaemonSet is as deployed stacks have it: no affinity."""
    paused = daemonset_manifest(group_spec("h100", devicePlugin={"pauseForMigManager": True}))
    off_paused = {"key": DEVICE_PLUGIN_DEPLOY_LABEL, "operator": "NotIn", "values": [PAUSED_FOR_MIG_CHANGE]}
    terms = {"nodeSelectorTerms": [{"matchExpressions": [off_paused]}]}
    assert pod_spec(paused)["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    assert pod_spec(paused)["nodeSelector"] == {GROUP_LABEL: "h100"}, "still the group's nodes only"
    assert "affinity" not in pod_spec(daemonset_manifest(group_spec("h100"))), "no change without the setting"


def test_tolerates_every_configured_taint_and_the_readiness_gate():
    ds = daemonset_manifest(group_spec(taints=["nvidia.com/gpu=present:NoSchedule", "dedicated:NoExecute"]))
    assert pod_spec(ds)["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        {"key": "gpu-nodes.dev/unverified", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ], ds["metadata"]["name"]


def test_standard_labels_with_the_plugin_version():
    labels = daemonset_manifest(group_spec())["metadata"]["labels"]
    assert labels["app.kubernetes.io/version"] == "v0.20.1", labels
    assert labels["app.kubernetes.io/part-of"] == "gpu-nodes", labels


def test_no_config_file_by_default():
    spec = group_spec()
    ds = daemonset_manifest(spec)
    assert config_map_manifest(spec) is None, ds["metadata"]["name"]
    assert env(ds) == {"FAIL_ON_INIT_ERROR": "true", "PASS_DEVICE_SPECS": "true", "MIG_STRATEGY": "none"}, ds["metadata"]["name"]
    assert all("configMap" not in v for v in pod_spec(ds)["volumes"]), ds["metadata"]["name"]


@pytest.mark.parametrize("access", ["defaultRuntime", "runtimeClass"])
def test_envvar_groups_pass_device_specs_so_running_pods_keep_their_gpus(access: str):
    """Without the device nodes in the pod's spec a daemon-reload under systemd takes the GPUs away."""
    ds = daemonset_manifest(group_spec(gpuAccess=access))
    assert env(ds)["PASS_DEVICE_SPECS"] == "true", ds["metadata"]["name"]
    assert "DEVICE_LIST_STRATEGY" not in env(ds), f"{ds['metadata']['name']}: not the upstream envvar default"


def test_cdi_groups_hand_out_gpus_as_cdi_devices_under_the_runtime_class():
    ds = daemonset_manifest(group_spec(gpuAccess="cdi"))
    assert env(ds)["DEVICE_LIST_STRATEGY"] == "cdi-cri", ds["metadata"]["name"]
    assert "PASS_DEVICE_SPECS" not in env(ds), f"{ds['metadata']['name']}: CDI specs list the device nodes already"
    assert pod_spec(ds)["runtimeClassName"] == "nvidia", f"{ds['metadata']['name']}: the plugin needs NVML"
    mounts = {m["name"]: m["mountPath"] for m in pod_spec(ds)["containers"][0]["volumeMounts"]}
    assert mounts["cdi-root"] == "/var/run/cdi", f"{ds['metadata']['name']}: nowhere to write the CDI specs"


def test_fail_on_init_error_can_be_turned_off():
    ds = daemonset_manifest(group_spec(devicePlugin={"failOnInitError": False}))
    assert env(ds)["FAIL_ON_INIT_ERROR"] == "false", ds["metadata"]["name"]


def test_time_slicing_writes_a_config_file_and_mounts_it():
    spec = group_spec(devicePlugin={"timeSlicingReplicas": 4})
    config_map = config_map_manifest(spec)
    config = json.loads(config_map["data"]["config.yaml"])
    assert config == {
        "version": "v1",
        "flags": {"migStrategy": "none", "failOnInitError": True},
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }, config_map["metadata"]["name"]
    ds = daemonset_manifest(spec)
    assert env(ds)["CONFIG_FILE"] == "/config/config.yaml", ds["metadata"]["name"]
    volumes = {v["name"]: v for v in pod_spec(ds)["volumes"]}
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"], ds["metadata"]["name"]


def test_mig_strategy_goes_into_the_config_file():
    spec = group_spec(devicePlugin={"migStrategy": "mixed"}, verification={"migResources": {"nvidia.com/mig-1g.5gb": 1}})
    config = json.loads(config_map_manifest(spec)["data"]["config.yaml"])
    assert config["flags"]["migStrategy"] == "mixed", config
    assert "sharing" not in config, config


def test_a_config_change_rolls_the_pods():
    one = daemonset_manifest(group_spec(devicePlugin={"timeSlicingReplicas": 2}))
    two = daemonset_manifest(group_spec(devicePlugin={"timeSlicingReplicas": 4}))
    annotation = lambda ds: ds["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]  # noqa: E731
    assert annotation(one) != annotation(two), one["metadata"]["name"]


def pod_annotations(ds: dict) -> dict:
    return ds["spec"]["template"]["metadata"]["annotations"]


def single_mig(layout: dict[str, int]) -> dict:
    return {"migStrategy": "single", "migDevices": layout}


def test_a_new_mig_layout_rolls_the_plugin_pods():
    """The plugin reads the MIG devices once, when it starts: a new layout needs new pods."""
    one = daemonset_manifest(group_spec(devicePlugin=single_mig({"1g.10gb": 7})))
    two = daemonset_manifest(group_spec(devicePlugin=single_mig({"2g.20gb": 3})))
    assert pod_annotations(one)[MIG_DEVICES_ANNOTATION] == "1g.10gb=7", one["metadata"]["name"]
    assert pod_annotations(two)[MIG_DEVICES_ANNOTATION] == "2g.20gb=3", two["metadata"]["name"]


def test_without_a_mig_layout_the_plugin_pods_carry_no_layout():
    for spec in (group_spec(), group_spec(devicePlugin={"migStrategy": "single"})):
        ds = daemonset_manifest(spec)
        assert set(pod_annotations(ds)) == {CONFIG_HASH_ANNOTATION}, ds["metadata"]["name"]


def test_a_new_mig_layout_is_a_new_plugin_revision_and_no_layout_keeps_the_old_one():
    """A new revision runs the verification Jobs again, on the MIG devices the new layout offers."""
    strategy = plugin_revision(group_spec(devicePlugin={"migStrategy": "single"}))
    one = plugin_revision(group_spec(devicePlugin=single_mig({"1g.10gb": 7})))
    two = plugin_revision(group_spec(devicePlugin=single_mig({"1g.10gb": 3})))
    assert len({strategy, one, two}) == 3, (strategy, one, two)
    assert plugin_revision(group_spec(devicePlugin={"migStrategy": "single"})) == strategy


def test_plugin_revision_follows_image_and_config_only():
    base = plugin_revision(group_spec())
    assert plugin_revision(group_spec(devicePlugin={"image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"})) != base
    assert plugin_revision(group_spec(devicePlugin={"migStrategy": "single"})) != base
    assert plugin_revision(group_spec(verification={"timeoutSeconds": 60})) == base
    assert plugin_revision(group_spec(labels={"team": "ml"})) == base


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_mig_lets_the_plugin_monitor_mig_devices(strategy):
    """As the upstream chart does for single/mixed: NVML enumerates MIG devices only through
    the mig monitor capability, which the toolkit injects for this variable and which needs
    CAP_SYS_ADMIN."""
    mig = {"migResources": {"nvidia.com/mig-1g.5gb": 1}} if strategy == "mixed" else {}
    # cdi: unprivileged (a group passing device specs runs privileged, which has SYS_ADMIN anyway).
    ds = daemonset_manifest(group_spec(gpuAccess="cdi", devicePlugin={"migStrategy": strategy}, verification=mig))
    name = ds["metadata"]["name"]
    assert env(ds)["NVIDIA_MIG_MONITOR_DEVICES"] == "all", name
    assert container(ds)["securityContext"] == {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}, name


def test_without_mig_no_capability_is_added():
    ds = daemonset_manifest(group_spec(gpuAccess="cdi", devicePlugin={"migStrategy": "none", "timeSlicingReplicas": 2}))
    assert "NVIDIA_MIG_MONITOR_DEVICES" not in env(ds), ds["metadata"]["name"]
    assert "add" not in container(ds)["securityContext"]["capabilities"], ds["metadata"]["name"]


def test_plugin_pods_run_under_the_stacks_runtime_class():
    """Without a default nvidia runtime, the plugin under runc cannot load NVML and exits."""
    ds = daemonset_manifest(group_spec())
    assert pod_spec(ds)["runtimeClassName"] == "nvidia", ds["metadata"]["name"]


def test_no_runtime_class_when_it_is_off():
    spec = parse_stack([group()], runtime_class="false").node_groups[0]
    ds = daemonset_manifest(spec)
    assert "runtimeClassName" not in pod_spec(ds), ds["metadata"]["name"]


def test_extra_tolerations_follow_ours():
    extra = [{"key": "example.com/dedicated", "operator": "Exists"}]
    ds = daemonset_manifest(group_spec(devicePlugin={"tolerations": extra}))
    assert pod_spec(ds)["tolerations"][-1] == extra[0], ds["metadata"]["name"]
    assert len(pod_spec(ds)["tolerations"]) == 4, pod_spec(ds)["tolerations"]


def test_resources_reach_the_plugin_container_and_none_by_default():
    resources = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}}
    ds = daemonset_manifest(group_spec(devicePlugin={"resources": resources}))
    assert container(ds)["resources"] == resources, ds["metadata"]["name"]
    assert "resources" not in container(daemonset_manifest(group_spec())), "upstream sets no resources"


def test_health_checks_off_disables_every_xid_check():
    ds = daemonset_manifest(group_spec(devicePlugin={"healthChecks": False}))
    assert env(ds)["DP_DISABLE_HEALTHCHECKS"] == "all", env(ds)


def test_ignored_xids_are_a_comma_separated_list():
    ds = daemonset_manifest(group_spec(devicePlugin={"ignoredXids": [109, 13]}))
    assert env(ds)["DP_DISABLE_HEALTHCHECKS"] == "13,109", env(ds)


@pytest.mark.parametrize("strategy", ["uuid", "index"])
def test_a_device_id_strategy_reaches_the_plugin_as_it_reads_it(strategy):
    """DEVICE_ID_STRATEGY, `uuid | index` (cmd/nvidia-device-plugin/main.go)."""
    assert env(daemonset_manifest(group_spec(devicePlugin={"deviceIdStrategy": strategy})))["DEVICE_ID_STRATEGY"] == strategy


def test_without_a_device_id_strategy_the_plugin_keeps_its_own():
    assert "DEVICE_ID_STRATEGY" not in env(daemonset_manifest(group_spec()))


def test_the_plugins_health_checks_stand_by_default():
    assert "DP_DISABLE_HEALTHCHECKS" not in env(daemonset_manifest(group_spec()))
    assert "DP_ENABLE_HEALTHCHECKS" not in env(daemonset_manifest(group_spec()))


@pytest.mark.parametrize(("enabled", "value"), [([45, 31], "31,45"), ("all", "all")])
def test_enabled_xids_reach_the_plugin_as_it_reads_them(enabled, value):
    """DP_ENABLE_HEALTHCHECKS: a comma-separated list, or `all` (internal/rm/health.go)."""
    ds = daemonset_manifest(group_spec(devicePlugin={"enabledXids": enabled}))
    assert env(ds)["DP_ENABLE_HEALTHCHECKS"] == value, f"{ds['metadata']['name']}: {env(ds)}"


def test_enabled_and_ignored_xids_go_side_by_side():
    ds = daemonset_manifest(group_spec(devicePlugin={"ignoredXids": [79], "enabledXids": [45]}))
    found = {k: v for k, v in env(ds).items() if k.startswith("DP_")}
    assert found == {"DP_DISABLE_HEALTHCHECKS": "79", "DP_ENABLE_HEALTHCHECKS": "45"}, ds["metadata"]["name"]


@pytest.mark.parametrize(("value", "steps"), [(None, 5), (2, 3), ("40%", 3), ("100%", 1)])
def test_the_rollout_pace_follows_max_unavailable(value, steps):
    from gpu_nodes.manifests.device_plugin import rollout_steps

    spec = group_spec(nodes=5, devicePlugin={} if value is None else {"maxUnavailable": value})
    strategy = daemonset_manifest(spec)["spec"]["updateStrategy"]
    expected = (
        {"type": "RollingUpdate"} if value is None else {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": value}}
    )
    assert strategy == expected, strategy
    assert rollout_steps(spec) == steps, (value, rollout_steps(spec))


def test_the_engines_wait_for_a_rollout_grows_with_the_group():
    from gpu_nodes.manifests.device_plugin import rollout_timeout

    assert rollout_timeout(group_spec(nodes=3)) == "10m"
    assert rollout_timeout(group_spec(nodes=500)) == "1000m"
    assert rollout_timeout(group_spec(nodes=500, devicePlugin={"maxUnavailable": "10%"})) == "20m"


# --------------------------------------------------------------------------- CDI: the driver root and the hooks


def mounts(manifest: dict) -> dict[str, dict]:
    return {m["name"]: m for m in container(manifest)["volumeMounts"]}


def volumes(manifest: dict) -> dict[str, dict]:
    return {v["name"]: v for v in pod_spec(manifest)["volumes"]}


@pytest.mark.parametrize(
    ("root", "why"), [(None, "a host driver: upstream docs/cdi.md says /"), ("/run/nvidia/driver", "a driver container")]
)
def test_cdi_groups_mount_the_driver_root_as_the_chart_does(root: str | None, why: str):
    """The plugin writes its CDI spec from the driver files at /driver-root (api/config/v1 consts.go,
    DefaultContainerDriverRoot) and exits when it cannot (cmd/nvidia-device-plugin/plugin-manager.go:
    "unable to create cdi spec file"); the chart mounts nvidiaDriverRoot there, read-only."""
    plugin = {"driverRoot": root} if root else {}
    ds = daemonset_manifest(group_spec(gpuAccess="cdi", devicePlugin=plugin))
    name, host = ds["metadata"]["name"], root or "/"
    mount = {key: value for key, value in mounts(ds)["driver-root"].items() if key != "mountPropagation"}
    assert mount == {"name": "driver-root", "mountPath": "/driver-root", "readOnly": True}, f"{name}: {why}"
    assert volumes(ds)["driver-root"] == {"name": "driver-root", "hostPath": {"path": host, "type": "Directory"}}, (
        f"{name}: {why}"
    )
    assert env(ds)["NVIDIA_DRIVER_ROOT"] == host, f"{name}: {why}"


def test_a_driver_containers_root_is_mounted_so_that_its_next_mount_is_seen():
    """The driver container mounts its root at /run/nvidia/driver on the host; a restarted one
    mounts a new one there. A mount without propagation keeps the old (empty) one, so the GPU
    Operator mounts it `HostToContainer` (gpu-operator assets/state-device-plugin/0500_daemonset.yaml,
    driver-install-dir at /driver-root); Kubernetes refuses only `Bidirectional` in an unprivileged
    container (pkg/apis/core/validation/validation.go, validateMountPropagation)."""
    ds = daemonset_manifest(group_spec(gpuAccess="cdi", devicePlugin={"driverRoot": "/run/nvidia/driver"}))
    assert mounts(ds)["driver-root"]["mountPropagation"] == "HostToContainer", ds["metadata"]["name"]


def test_a_host_drivers_root_keeps_its_mount_as_the_chart_writes_it():
    """The host's `/` is not replaced while the plugin runs: its pods keep the template they had."""
    ds = daemonset_manifest(group_spec(gpuAccess="cdi"))
    assert "mountPropagation" not in mounts(ds)["driver-root"], ds["metadata"]["name"]


def test_cdi_hooks_point_at_the_groups_hook_path():
    default = daemonset_manifest(group_spec(gpuAccess="cdi"))
    assert env(default)["NVIDIA_CDI_HOOK_PATH"] == "/usr/bin/nvidia-ctk", f"{default['metadata']['name']}: upstream's default"
    moved = daemonset_manifest(
        group_spec(gpuAccess="cdi", devicePlugin={"cdiHookPath": "/usr/local/nvidia/toolkit/nvidia-cdi-hook"})
    )
    assert env(moved)["NVIDIA_CDI_HOOK_PATH"] == "/usr/local/nvidia/toolkit/nvidia-cdi-hook", moved["metadata"]["name"]


@pytest.mark.parametrize("access", ["defaultRuntime", "runtimeClass"])
def test_groups_without_cdi_keep_their_pod_template_without_the_driver_root(access: str):
    """Only the CDI handler reads /driver-root: a mount elsewhere would roll every plugin pod for nothing."""
    ds = daemonset_manifest(group_spec(gpuAccess=access))
    name = ds["metadata"]["name"]
    assert "driver-root" not in mounts(ds) and "driver-root" not in volumes(ds), name
    assert "NVIDIA_DRIVER_ROOT" not in env(ds) and "NVIDIA_CDI_HOOK_PATH" not in env(ds), f"{name}: {env(ds)}"


def test_a_driver_container_root_reaches_the_device_specs_of_groups_without_cdi():
    """With PASS_DEVICE_SPECS the plugin joins NVIDIA_DRIVER_ROOT to each device node's host path
    (internal/plugin/server.go, apiDeviceSpecs); it reads no file there, so no mount."""
    ds = daemonset_manifest(group_spec(devicePlugin={"driverRoot": "/run/nvidia/driver"}))
    assert env(ds)["NVIDIA_DRIVER_ROOT"] == "/run/nvidia/driver", ds["metadata"]["name"]
    assert "driver-root" not in volumes(ds), ds["metadata"]["name"]


# --------------------------------------------------------------------------- privileges with PASS_DEVICE_SPECS


@pytest.mark.parametrize(
    ("access", "plugin"),
    [("defaultRuntime", {}), ("runtimeClass", {}), ("defaultRuntime", {"migStrategy": "single"})],
)
def test_passing_device_specs_runs_the_plugin_privileged_as_the_chart_does(access: str, plugin: dict):
    """The chart's securityContext helper (templates/_helpers.tpl) is `privileged: true` whenever
    compatWithCPUManager sets PASS_DEVICE_SPECS: the plugin stats /dev/nvidiactl, /dev/nvidia-uvm,
    ... in its own container and passes only those it sees (internal/plugin/server.go,
    apiDeviceSpecs); privileged, it sees the host's /dev."""
    ds = daemonset_manifest(group_spec(gpuAccess=access, devicePlugin=plugin))
    assert env(ds)["PASS_DEVICE_SPECS"] == "true", ds["metadata"]["name"]
    assert container(ds)["securityContext"] == {"privileged": True}, ds["metadata"]["name"]


def test_cdi_groups_pass_no_device_specs_and_stay_unprivileged():
    ds = daemonset_manifest(group_spec(gpuAccess="cdi"))
    assert container(ds)["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}, ds[
        "metadata"
    ]["name"]


# --------------------------------------------------------------------------- sharing: time-slicing and MPS

TIME_SLICED_FILE = (
    '{\n  "flags": {\n    "failOnInitError": true,\n    "migStrategy": "none"\n  },\n  "sharing": {\n    "timeSlicing": {\n'
    '      "resources": [\n        {\n          "name": "nvidia.com/gpu",\n          "replicas": 4\n        }\n      ]\n'
    '    }\n  },\n  "version": "v1"\n}\n'
)


@pytest.mark.parametrize("device_plugin", [{"timeSlicingReplicas": 4}, {"sharing": {"replicas": 4}}])
def test_a_time_sliced_config_file_is_byte_for_byte_what_it_was(device_plugin):
    """What a deployed time-sliced group's plugin mounts (tests/golden/staging.json holds it), in either spelling."""
    config_map = config_map_manifest(group_spec(devicePlugin=device_plugin))
    assert config_map["data"]["config.yaml"] == TIME_SLICED_FILE, config_map["data"]


def sharing_of(**sharing) -> dict:
    config = json.loads(config_map_manifest(group_spec(devicePlugin={"sharing": sharing}))["data"]["config.yaml"])
    return config["sharing"]


def test_mps_is_written_as_the_plugins_config_takes_it():
    """api/config/v1/sharing.go (`mps`, ReplicatedResources: renameByDefault, failRequestsGreaterThanOne,
    resources), as the README's "With CUDA MPS" writes it; failRequestsGreaterThanOne always, true by default."""
    assert sharing_of(strategy="mps", replicas=4) == {
        "mps": {"failRequestsGreaterThanOne": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    }
    assert sharing_of(strategy="mps", replicas=8, renameByDefault=True, failRequestsGreaterThanOne=False) == {
        "mps": {
            "renameByDefault": True,
            "failRequestsGreaterThanOne": False,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 8}],
        }
    }


def test_time_slicing_writes_what_differs_from_the_plugins_defaults():
    assert sharing_of(replicas=2, renameByDefault=True, failRequestsGreaterThanOne=True) == {
        "timeSlicing": {
            "renameByDefault": True,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 2}],
        }
    }


MPS = {"sharing": {"strategy": "mps", "replicas": 4}}


def test_under_mps_the_plugin_meets_its_daemon_as_the_chart_lays_it_out():
    """The chart's daemonset-device-plugin.yml: MPS_ROOT, the MPS root at /mps and its shm at /dev/shm, the
    volumes the MPS control daemon mounts too (tests/providers/fixtures, the chart's plugin rendered)."""
    ds, chart_plugin = daemonset_manifest(group_spec(devicePlugin=MPS)), chart("plugin")
    name = ds["metadata"]["name"]
    assert env(ds)["MPS_ROOT"] == env(chart_plugin)["MPS_ROOT"] == "/run/nvidia/mps", name
    for volume in ("mps-root", "mps-shm"):
        ours = next(v for v in pod_spec(ds)["volumes"] if v["name"] == volume)
        assert ours == next(v for v in pod_spec(chart_plugin)["volumes"] if v["name"] == volume), f"{name}: {ours}"
        mount = next(m for m in container(ds)["volumeMounts"] if m["name"] == volume)
        assert mount == next(m for m in container(chart_plugin)["volumeMounts"] if m["name"] == volume), f"{name}: {mount}"


@pytest.mark.parametrize("device_plugin", [{}, {"timeSlicingReplicas": 4}, {"sharing": {"replicas": 4}}])
def test_without_mps_the_plugin_has_no_mps_mounts(device_plugin):
    """Unlike the chart, which mounts them everywhere: a group that does not use MPS keeps its pods."""
    ds = daemonset_manifest(group_spec(devicePlugin=device_plugin))
    assert "MPS_ROOT" not in env(ds), ds["metadata"]["name"]
    assert not {"mps-root", "mps-shm"} & {v["name"] for v in pod_spec(ds)["volumes"]}, ds["metadata"]["name"]


# --- the plugin's 2026 settings and IMEX channels: each as its environment variable, only where set ---------------

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


def test_the_2026_settings_are_set_as_the_plugins_variables():
    """k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go: each flag's EnvVars; a list comma-separated."""
    spec = group_spec(
        gpuAccess="cdi",
        devicePlugin={
            "allocationPolicy": "packed",
            "sharing": {"replicas": 2},
            "cdiFeatureFlags": ["disable-ipc-discoverer", "no-additional-gids-for-device-nodes"],
            "cdiDisableHooks": ["enable-cuda-compat", "update-ldcache"],
            "deviceDiscoveryStrategy": "nvml",
        },
    )
    found = env(daemonset_manifest(spec))
    assert found["SHARED_DEVICES_ALLOCATION_POLICY"] == "packed"
    assert found["CDI_FEATURE_FLAGS"] == "disable-ipc-discoverer,no-additional-gids-for-device-nodes"
    assert found["CDI_DISABLE_HOOKS"] == "enable-cuda-compat,update-ldcache"
    assert found["DEVICE_DISCOVERY_STRATEGY"] == "nvml"


def test_a_group_that_sets_none_of_them_keeps_its_plugin_as_it_was():
    names = set(env(daemonset_manifest(group_spec())))
    assert not names & {"SHARED_DEVICES_ALLOCATION_POLICY", "CDI_FEATURE_FLAGS", "CDI_DISABLE_HOOKS", "IMEX_CHANNEL_IDS"}


def test_an_imex_group_injects_channel_0_and_its_revision_says_so():
    """IMEX_CHANNEL_IDS and IMEX_REQUIRED (the plugin's --imex-channel-ids, --imex-required)."""
    domain = {"clique": CLIQUE, "imexPeers": ["10.0.0.1"]}
    imex = group_spec(devicePlugin={"imex": {"channelIds": [0], "required": True}}, nvlinkDomain=domain)
    found = env(daemonset_manifest(imex))
    assert (found["IMEX_CHANNEL_IDS"], found["IMEX_REQUIRED"]) == ("0", "true"), found
    assert plugin_revision(imex) != plugin_revision(group_spec(nvlinkDomain=domain))


def test_on_nri_nodes_the_plugin_names_no_runtime_class_and_asks_the_toolkits_nri_plugin_for_its_gpus():
    """gpu-operator controllers/object_controls.go: setRuntimeClassName returns early and setNRIPluginAnnotation
    annotates `nvidia.cdi.k8s.io/container.<name>: management.nvidia.com/gpu=all` when nriPluginEnabled."""
    spec = parse_stack([group(gpuAccess="cdi", containerToolkit="nri")], runtime_class="nvidia").node_groups[0]
    ds = daemonset_manifest(spec)
    assert "runtimeClassName" not in pod_spec(ds), pod_spec(ds)
    annotations = ds["spec"]["template"]["metadata"]["annotations"]
    assert annotations["nvidia.cdi.k8s.io/container.nvidia-device-plugin-ctr"] == "management.nvidia.com/gpu=all"
    runtime = parse_stack([group(gpuAccess="cdi")], runtime_class="nvidia").node_groups[0]
    assert pod_spec(daemonset_manifest(runtime))["runtimeClassName"] == "nvidia"
    assert not any(
        k.startswith("nvidia.cdi.k8s.io/") for k in daemonset_manifest(runtime)["spec"]["template"]["metadata"]["annotations"]
    )
