"""A group's devicePlugin: the MIG layout, tolerations, resources, XIDs, the rollout and the
driver paths."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of, refused
from tests.factories import group

REFUSED = [
    (
        "unknown_mig_strategy",
        group(devicePlugin={"migStrategy": "all"}),
        f"{KEY}.devicePlugin.migStrategy",
        ("'all'", "none, single, mixed"),
    ),
    (
        "mig_devices_only_with_a_mig_strategy",
        group(devicePlugin={"migDevices": {"1g.10gb": 7}}),
        f"{KEY}.devicePlugin.migDevices",
        ("only with devicePlugin.migStrategy 'single' or 'mixed'",),
    ),
    (
        "mig_devices_fit_one_gpu",
        group(devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb": 4, "2g.20gb": 4}}),
        f"{KEY}.devicePlugin.migDevices",
        ("at most 7 MIG devices per GPU in all",),
    ),
    (
        "single_mig_has_one_profile",
        group(devicePlugin={"migStrategy": "single", "migDevices": {"1g.10gb": 3, "2g.20gb": 2}}),
        f"{KEY}.devicePlugin.migDevices",
        ("'single' needs one profile on every GPU",),
    ),
    (
        "ignored_xids_mean_nothing_with_health_checks_off",
        group(devicePlugin={"healthChecks": False, "ignoredXids": [109]}),
        f"{KEY}.devicePlugin.ignoredXids",
        ("no effect with healthChecks false",),
    ),
    (
        "an_xid_is_a_number",
        group(devicePlugin={"ignoredXids": ["109"]}),
        f"{KEY}.devicePlugin.ignoredXids[0]",
        ("an XID number",),
    ),
    (
        "a_pull_policy_is_one_kubernetes_knows",
        group(devicePlugin={"imagePullPolicy": "Sometimes"}),
        f"{KEY}.devicePlugin.imagePullPolicy",
        ("'Sometimes'", "Always, IfNotPresent, Never"),
    ),
    (
        "time_slicing_replicas_below_one",
        group(devicePlugin={"timeSlicingReplicas": 0}),
        f"{KEY}.devicePlugin.timeSlicingReplicas",
        ("1 (time-slicing off)",),
    ),
]


@refused(REFUSED)
def test_a_bad_plugin_setting_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def test_mig_devices_are_read_per_gpu_in_mig_parteds_format():
    raw = group(
        devicePlugin={"migStrategy": "mixed", "migDevices": {"2g.20gb": 2, "1g.10gb": 3}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb": 1}},
    )
    spec = parse_stack([raw]).node_groups[0]
    assert spec.device_plugin.mig_devices == (("1g.10gb", 3), ("2g.20gb", 2)), spec.device_plugin


def test_media_extension_profiles_are_accepted_and_named_as_the_plugin_registers_them():
    """mig-parted takes `1g.10gb+me` (pkg/types/mig_profile.go); the plugin registers it as
    nvidia.com/mig-1g.10gb.me (a resource name cannot hold '+')."""
    raw = group(
        devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb+me": 1, "1g.10gb": 5}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb.me": 1}},
    )
    spec = parse_stack([raw]).node_groups[0]
    assert spec.device_plugin.mig_devices == (("1g.10gb", 5), ("1g.10gb+me", 1)), spec.device_plugin
    assert spec.device_plugin.mig_allocatable(2) == {"nvidia.com/mig-1g.10gb": 10, "nvidia.com/mig-1g.10gb.me": 2}


@pytest.mark.parametrize("profile", ["1g.10gb+gfx", "1g.10gb+me+me", "1g.10gb.me"])
def test_an_unknown_profile_attribute_is_refused(profile):
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed", "migDevices": {profile: 1}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.{profile}", f"'{profile}'", "1g.10gb+me")


def test_mig_devices_names_a_bad_profile_and_a_bad_count():
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed", "migDevices": {"big": 1, "1g.10gb": 8}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.big", "'big'", "a MIG profile such as 1g.10gb")
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.1g.10gb", "8", "1 to 7 devices per GPU")


@pytest.mark.parametrize(
    ("toleration", "fragment"),
    [
        ({"key": "a", "operator": "Maybe"}, "operator Equal or Exists"),
        ({"operator": "Equal", "value": "x"}, "without a key must have operator Exists"),
        ({"key": "a", "operator": "Exists", "value": "x"}, "Exists takes no value"),
        ({"key": "a", "effect": "NoRun"}, "expected effect NoSchedule, PreferNoSchedule, NoExecute"),
        ({"key": "a", "effect": "NoSchedule", "tolerationSeconds": 30}, "only with effect NoExecute"),
        ({"key": "a", "colour": "red"}, "expected an object with key, operator"),
    ],
)
def test_a_bad_plugin_toleration_is_named(toleration, fragment):
    problems = problems_of(group(devicePlugin={"tolerations": [toleration]}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.tolerations[0]", fragment)


def test_plugin_resources_are_quantities_of_known_resources():
    raw = {"requests": {"cpu": "fast", "gpu": "1"}, "limits": {"memory": 128}}
    problems = problems_of(group(devicePlugin={"resources": raw}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.resources.requests.cpu", "'fast'", "a Kubernetes quantity")
    assert_one_problem(problems, f"{KEY}.devicePlugin.resources.requests.gpu", "one of cpu, memory")
    spec = parse_stack([group(devicePlugin={"resources": {"limits": {"memory": 128, "cpu": "0.5"}}})]).node_groups[0]
    assert spec.device_plugin.resources == {"limits": {"cpu": "0.5", "memory": "128"}}, spec.device_plugin


@pytest.mark.parametrize("value", [0, "0%", "150%", "ten", True])
def test_max_unavailable_is_a_count_or_a_percentage(value):
    problems = problems_of(group(devicePlugin={"maxUnavailable": value}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.maxUnavailable", "at least 1, or a percentage from 1% to 100%")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("driverRoot", "run/nvidia/driver", "absolute directory path"),
        ("driverRoot", "/run/../driver", "absolute directory path"),
        ("driverRoot", "/run/nvidia driver", "absolute directory path"),
        ("driverRoot", 1, "expected a string"),
        ("cdiHookPath", "nvidia-ctk", "absolute path of nvidia-ctk or nvidia-cdi-hook"),
        ("cdiHookPath", "/usr/bin/ctk", "absolute path of nvidia-ctk or nvidia-cdi-hook"),
        ("cdiHookPath", "/usr/bin/", "absolute path of nvidia-ctk or nvidia-cdi-hook"),
    ],
)
def test_bad_driver_root_or_cdi_hook_path(key, value, expected):
    """The hook's program decides its arguments (`nvidia-ctk hook X`, or `nvidia-cdi-hook X`:
    nvidia-container-toolkit internal/discover/hooks.go), so no other name can run the hooks."""
    problems = problems_of(group(gpuAccess="cdi", devicePlugin={key: value}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.{key}", expected)


@pytest.mark.parametrize(
    ("key", "value"), [("driverRoot", "/run/nvidia/driver"), ("cdiHookPath", "/usr/local/nvidia/toolkit/nvidia-cdi-hook")]
)
def test_driver_root_and_cdi_hook_path_accept_absolute_paths(key, value):
    spec = parse_stack([group(gpuAccess="cdi", devicePlugin={key: value})]).node_groups[0]
    assert getattr(spec.device_plugin, "driver_root" if key == "driverRoot" else "cdi_hook_path") == value, spec.device_plugin
