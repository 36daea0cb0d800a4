"""The device plugin's MPS control daemon for a group that shares its GPUs through MPS: the chart's
DaemonSet (tests/providers/fixtures/nvidia-device-plugin-chart-daemonsets.yaml, rendered from its
templates/daemonset-mps-control-daemon.yml) on exactly the group's nodes."""

from __future__ import annotations

import pytest

from gpu_nodes.manifests import device_plugin
from gpu_nodes.manifests.mps_control_daemon import daemonset_manifest
from gpu_nodes.manifests.naming import selector_labels
from gpu_nodes.vocabulary import CONFIG_HASH_ANNOTATION, GATE, GROUP_LABEL
from tests.manifests.daemonset_parts import container, pod_spec
from tests.providers.allocator_fixtures import chart
from tests.specs import group_spec

MPS = {"sharing": {"strategy": "mps", "replicas": 4}}


def mps_group(name: str = "a100", **overrides):
    return group_spec(name, devicePlugin={**MPS, **overrides.pop("devicePlugin", {})}, **overrides)


def by_name(items: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in items}


def test_only_an_mps_group_runs_a_daemon():
    assert mps_group().shares_through_mps
    for spec in (
        group_spec(),
        group_spec(devicePlugin={"timeSlicingReplicas": 4}),
        group_spec(devicePlugin={"sharing": {"replicas": 4}}),
    ):
        assert not spec.shares_through_mps, spec.device_plugin.sharing


def test_it_runs_the_charts_containers():
    """The plugin's own image and program: the init container mounts the shm with Bidirectional propagation,
    then the daemon runs, both privileged, with the chart's env and mounts."""
    ours, theirs = pod_spec(daemonset_manifest(mps_group())), pod_spec(chart("mps"))
    (init,), (upstream_init,) = ours["initContainers"], theirs["initContainers"]
    for key in ("name", "command", "securityContext", "volumeMounts"):
        assert init[key] == upstream_init[key], key
    daemon, upstream = ours["containers"][0], theirs["containers"][0]
    for key in ("name", "command", "securityContext"):
        assert daemon[key] == upstream[key], key
    assert by_name(daemon["volumeMounts"]) == {
        **by_name(upstream["volumeMounts"]),
        "config": {"name": "config", "mountPath": "/config", "readOnly": True},
    }, daemon["volumeMounts"]
    # The chart's env, and the config file its config-manager would write, as our ConfigMap mounted.
    assert [e for e in daemon["env"] if e["name"] != "CONFIG_FILE"] == upstream["env"], daemon["env"]
    assert {"name": "CONFIG_FILE", "value": "/config/config.yaml"} in daemon["env"], daemon["env"]
    assert daemon["image"] == init["image"] == mps_group().device_plugin.image, daemon["image"]


def test_its_host_paths_are_the_plugins_and_the_charts():
    """The MPS root (made when missing) and its shm: the chart leaves the shm untyped, since the daemon's init
    container makes it (mount-shm) after kubelet has set up the pod's volumes."""
    ours = by_name(pod_spec(daemonset_manifest(mps_group()))["volumes"])
    theirs = by_name(pod_spec(chart("mps"))["volumes"])
    plugin = by_name(pod_spec(device_plugin.daemonset_manifest(mps_group()))["volumes"])
    for volume in ("mps-root", "mps-shm"):
        assert ours[volume] == theirs[volume] == plugin[volume], volume
    assert ours["config"] == {"name": "config", "configMap": {"name": device_plugin.config_map_name(mps_group())}}


def test_it_lands_on_exactly_the_groups_nodes_past_their_taints_and_the_gate():
    spec = mps_group("h100", taints=["nvidia.com/gpu=present:NoSchedule", "dedicated=ml:NoExecute"])
    ours, plugin = pod_spec(daemonset_manifest(spec)), pod_spec(device_plugin.daemonset_manifest(spec))
    assert ours["nodeSelector"] == {GROUP_LABEL: "h100"}, ours["nodeSelector"]
    assert ours["tolerations"] == plugin["tolerations"], ours["tolerations"]
    assert {"key": GATE.key, "operator": "Equal", "value": GATE.value, "effect": GATE.effect} in ours["tolerations"]
    assert ours["priorityClassName"] == "system-node-critical"
    assert ours.get("runtimeClassName") == plugin.get("runtimeClassName") == "nvidia"


def test_its_pods_are_not_the_plugins():
    """The chart gives both DaemonSets one selector; here a look for the group's plugin pods must not find the daemon's."""
    spec = mps_group()
    ours, plugin = daemonset_manifest(spec), device_plugin.daemonset_manifest(spec)
    assert ours["spec"]["selector"]["matchLabels"] == selector_labels("nvidia-device-plugin-mps-control-daemon", "a100")
    assert ours["spec"]["selector"] != plugin["spec"]["selector"], ours["spec"]["selector"]
    assert ours["metadata"]["name"] == "nvidia-device-plugin-mps-control-daemon-a100"
    assert ours["metadata"]["namespace"] == plugin["metadata"]["namespace"]


def test_it_shares_the_host_pid_namespace_as_the_chart_does_since_0_19():
    """values.yaml mps.enableHostPID (true; pull request 1045): the MPS server finds its own PID through /proc/self."""
    assert pod_spec(daemonset_manifest(mps_group()))["hostPID"] is True


def test_a_new_config_rolls_the_daemon_as_it_rolls_the_plugin():
    one, two = (
        daemonset_manifest(mps_group()),
        daemonset_manifest(mps_group(devicePlugin={"sharing": {"strategy": "mps", "replicas": 8}})),
    )
    hashes = [ds["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] for ds in (one, two)]
    assert hashes[0] != hashes[1], hashes
    plugin = device_plugin.daemonset_manifest(mps_group())
    assert hashes[0] == plugin["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION]


@pytest.mark.parametrize("policy", [None, "Never"])
def test_the_plugins_pod_settings_carry_over(policy):
    extra = {"imagePullPolicy": policy} if policy else {}
    spec = mps_group(devicePlugin={"resources": {"requests": {"cpu": "50m"}}, **extra})
    pod = pod_spec(daemonset_manifest(spec))
    for c in (*pod["initContainers"], container(daemonset_manifest(spec))):
        assert c["resources"] == {"requests": {"cpu": "50m"}}, c["name"]
        assert c.get("imagePullPolicy") == policy, c["name"]
