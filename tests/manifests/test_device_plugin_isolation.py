"""The device plugin under each isolation: how it hands pods their GPUs, and how it gets its own."""

from __future__ import annotations

import pytest

from gpu_nodes.manifests.device_plugin import daemonset_manifest, plugin_revision
from tests.manifests.daemonset_parts import container, env, pod_spec
from tests.specs import group_spec

# Where the toolkit reads a device list from volume mounts (nvidia-container-toolkit
# cmd/nvidia-container-runtime-hook/container_config.go, deviceListAsVolumeMountsRoot), and where
# the plugin's volume-mounts strategy mounts /dev/null per device (k8s-device-plugin
# internal/plugin/server.go, deviceListAsVolumeMountsContainerPathRoot).
DEVICE_MOUNT_ROOT = "/var/run/nvidia-container-devices"


@pytest.mark.parametrize(
    ("access", "isolation", "strategy"),
    [
        ("defaultRuntime", "default", None),  # the plugin's own default: envvar
        ("runtimeClass", "default", None),
        ("defaultRuntime", "strict", "volume-mounts"),
        ("runtimeClass", "strict", "volume-mounts"),
        ("cdi", "default", "cdi-cri"),
        ("cdi", "strict", "cdi-cri"),
    ],
)
def test_the_device_list_strategy_follows_access_and_isolation(access, isolation, strategy):
    ds = daemonset_manifest(group_spec(gpuAccess=access, isolation=isolation))
    assert env(ds).get("DEVICE_LIST_STRATEGY") == strategy, f"{ds['metadata']['name']} ({access}, {isolation}): {env(ds)}"


def test_strict_keeps_device_specs_for_the_cgroup_resets():
    ds = daemonset_manifest(group_spec(isolation="strict"))
    assert env(ds)["PASS_DEVICE_SPECS"] == "true", ds["metadata"]["name"]


@pytest.mark.parametrize("access", ["defaultRuntime", "runtimeClass", "cdi"])
def test_strict_gives_the_plugin_every_gpu_by_volume_mount(access):
    ds = daemonset_manifest(group_spec(gpuAccess=access, isolation="strict"))
    name = ds["metadata"]["name"]
    mounts = {m["mountPath"]: m for m in container(ds)["volumeMounts"]}
    mount = mounts.get(f"{DEVICE_MOUNT_ROOT}/all")
    assert mount is not None and mount.get("readOnly") is True, f"{name}: {mounts}"
    volume = next(v for v in pod_spec(ds)["volumes"] if v["name"] == mount["name"])
    assert volume["hostPath"] == {"path": "/dev/null", "type": "CharDevice"}, f"{name}: {volume}"
    # Privileged or not (it is with PASS_DEVICE_SPECS, as upstream runs it), the mount is the list
    # the hardened toolkit reads for the plugin itself.
    assert (container(ds)["securityContext"].get("privileged") is True) == (access != "cdi"), name


def test_default_isolation_mounts_no_device_list():
    ds = daemonset_manifest(group_spec())
    paths = [m["mountPath"] for m in container(ds)["volumeMounts"]]
    assert not any(p.startswith(DEVICE_MOUNT_ROOT) for p in paths), f"{ds['metadata']['name']}: {paths}"


def test_a_new_isolation_is_a_new_plugin_revision_and_default_keeps_the_old_one():
    assert plugin_revision(group_spec(isolation="strict")) != plugin_revision(group_spec())
    assert plugin_revision(group_spec(isolation="default")) == plugin_revision(group_spec())
