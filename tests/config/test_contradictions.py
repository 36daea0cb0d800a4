"""Settings of a group that contradict each other, within a section or across its sections:
refused naming both; preflight settings with no effect: warned about."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.errors import ConfigError
from tests.config.problems import KEY
from tests.factories import HOST_KEY, group

SINGLE = {"migStrategy": "single", "migDevices": {"3g.40gb": 2}}

CONTRADICTIONS = [
    (
        "DRA with nvidia as the default runtime",
        group(allocator="dra", gpuAccess="defaultRuntime"),
        f"{KEY}.gpuAccess",
        "only as CDI devices",
    ),
    (
        "DRA with the device plugin's MIG",
        group(allocator="dra", gpuAccess="cdi", devicePlugin=SINGLE),
        f"{KEY}.devicePlugin.migStrategy",
        "mig.nvidia.com",
    ),
    (
        "DRA with time-slicing",
        group(allocator="dra", gpuAccess="cdi", devicePlugin={"timeSlicingReplicas": 2}),
        f"{KEY}.devicePlugin.timeSlicingReplicas",
        "allocator dra",
    ),
    (
        "DRA stepping off for the MIG manager",
        group(allocator="dra", gpuAccess="cdi", devicePlugin={"pauseForMigManager": True}),
        f"{KEY}.devicePlugin.pauseForMigManager",
        "allocator dra",
    ),
    (
        "time-slicing with a multi-GPU Job",
        group(devicePlugin={"timeSlicingReplicas": 4}, verification={"gpusPerPod": [1, 2]}),
        f"{KEY}.verification.gpusPerPod[1]",
        "devicePlugin.timeSlicingReplicas",
    ),
    (
        "DRA with MPS",
        group(allocator="dra", gpuAccess="cdi", devicePlugin={"sharing": {"strategy": "mps", "replicas": 2}}),
        f"{KEY}.devicePlugin.sharing.strategy",
        "allocator dra",
    ),
    (
        "DRA with the new spelling of time-slicing",
        group(allocator="dra", gpuAccess="cdi", devicePlugin={"sharing": {"replicas": 2}}),
        f"{KEY}.devicePlugin.sharing.replicas",
        "allocator dra",
    ),
    (
        "MPS with a multi-GPU Job the plugin refuses",
        group(devicePlugin={"sharing": {"strategy": "mps", "replicas": 4}}, verification={"gpusPerPod": [1, 2]}),
        f"{KEY}.verification.gpusPerPod[1]",
        "devicePlugin.sharing.failRequestsGreaterThanOne true",
    ),
    (
        "MPS letting a multi-GPU Job through, with one GPU twice",
        group(
            devicePlugin={"sharing": {"strategy": "mps", "replicas": 4, "failRequestsGreaterThanOne": False}},
            verification={"gpusPerPod": [2]},
        ),
        f"{KEY}.verification.gpusPerPod[0]",
        "may get one GPU twice",
    ),
    (
        "MPS with MIG resources",
        group(
            devicePlugin={"migStrategy": "mixed", "sharing": {"strategy": "mps", "replicas": 2}},
            verification={"migResources": {"nvidia.com/mig-1g.5gb": 1}},
        ),
        f"{KEY}.devicePlugin.sharing.strategy",
        "devicePlugin.migStrategy 'mixed'",
    ),
    (
        "single MIG layout smaller than a Job",
        group(gpusPerNode=1, devicePlugin=SINGLE, verification={"gpusPerPod": [3]}),
        f"{KEY}.verification.gpusPerPod[0]",
        "devicePlugin.migDevices",
    ),
    (
        "cdi with docker",
        group(gpuAccess="cdi", preflight={"containerRuntime": "docker"}),
        f"{KEY}.gpuAccess",
        "preflight.containerRuntime",
    ),
    (
        "a request above its limit",
        group(devicePlugin={"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}}}),
        f"{KEY}.devicePlugin.resources.requests.memory",
        "limits.memory",
    ),
    (
        "cpu request above its limit",
        group(devicePlugin={"resources": {"requests": {"cpu": "1.5"}, "limits": {"cpu": "500m"}}}),
        f"{KEY}.devicePlugin.resources.requests.cpu",
        "limits.cpu",
    ),
    (
        "a toleration value that is no string",
        group(devicePlugin={"tolerations": [{"key": "k", "operator": "Equal", "value": 1}]}),
        f"{KEY}.devicePlugin.tolerations[0]",
        "value",
    ),
    (
        "two GPU models",
        group(gpuModel="NVIDIA H100 80GB HBM3,NVIDIA A100-SXM4-80GB"),
        f"{KEY}.gpuModel",
        "one GPU model",
    ),
]


@pytest.mark.parametrize(("raw", "key", "other"), [r[1:] for r in CONTRADICTIONS], ids=[r[0] for r in CONTRADICTIONS])
def test_a_contradiction_is_refused_naming_both_settings(raw, key, other):
    with pytest.raises(ConfigError) as caught:
        parse_stack([raw], runtime_class="nvidia")
    found = [p for p in caught.value.problems if p.startswith(f"{key}:")]
    assert len(found) == 1 and other in found[0], caught.value.problems


ACCEPTED = [
    ("time-slicing with one-GPU Jobs", group(devicePlugin={"timeSlicingReplicas": 4}, verification={"gpusPerPod": [1]})),
    ("single MIG layout as big as the Job", group(gpusPerNode=1, devicePlugin=SINGLE, verification={"gpusPerPod": [2]})),
    (
        "request equal to limit",
        group(devicePlugin={"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "1024Mi"}}}),
    ),
    ("cdi with containerd", group(gpuAccess="cdi")),
    (
        "MPS with one-GPU Jobs",
        group(devicePlugin={"sharing": {"strategy": "mps", "replicas": 4}}, verification={"gpusPerPod": [1]}),
    ),
    (
        "MPS renamed, under cdi",
        group(gpuAccess="cdi", devicePlugin={"sharing": {"strategy": "mps", "replicas": 48, "renameByDefault": True}}),
    ),
]


@pytest.mark.parametrize("raw", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_settings_that_agree_are_accepted(raw):
    assert parse_stack([raw], runtime_class="nvidia").node_groups


NO_EFFECT = [
    ("minDriver", {"enabled": False, "minDriver": "550"}, f"{KEY}.preflight.minDriver"),
    ("containerRuntime", {"enabled": False, "containerRuntime": "docker"}, f"{KEY}.preflight.containerRuntime"),
    ("proxy", {"enabled": False, "proxy": {"host": "b", "user": "ops", "hostKey": HOST_KEY}}, f"{KEY}.preflight.proxy"),
]


@pytest.mark.parametrize(("preflight", "key"), [r[1:] for r in NO_EFFECT], ids=[r[0] for r in NO_EFFECT])
def test_a_preflight_setting_with_preflight_off_is_warned_about(preflight, key):
    raw = group(nodes=[{"name": "n1"}], preflight=preflight)
    warnings = parse_stack([raw]).warnings
    assert [w for w in warnings if w.startswith(f"{key}:") and "preflight.enabled is false" in w], warnings


def test_preflight_settings_with_preflight_on_give_no_warning():
    assert parse_stack([group(preflight={"minDriver": "550"})]).warnings == ()
