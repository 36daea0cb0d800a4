"""A group's devicePlugin: the MIG layout, tolerations, resources, XIDs, the rollout and the
driver paths."""

from __future__ import annotations

import pytest

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, MIG_1G, assert_one_problem, problems_of, refused
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
        "an_xid_fits_the_plugins_64_bits",
        group(devicePlugin={"ignoredXids": [2**64]}),
        f"{KEY}.devicePlugin.ignoredXids[0]",
        ("an XID number",),
    ),
    (
        "enabled_xids_mean_nothing_with_health_checks_off",
        group(devicePlugin={"healthChecks": False, "enabledXids": [45]}),
        f"{KEY}.devicePlugin.enabledXids",
        ("no effect with healthChecks false", "checks no XID"),
    ),
    (
        "enabling_every_xid_undoes_health_checks_off",
        group(devicePlugin={"healthChecks": False, "enabledXids": "all"}),
        f"{KEY}.devicePlugin.enabledXids",
        ("contradicts healthChecks false", "every XID"),
    ),
    (
        "an_xid_is_ignored_or_enabled_not_both",
        group(devicePlugin={"ignoredXids": [45, 79], "enabledXids": [45]}),
        f"{KEY}.devicePlugin.enabledXids",
        ("45", "also in ignoredXids"),
    ),
    (
        "enabling_every_xid_leaves_nothing_to_ignore",
        group(devicePlugin={"ignoredXids": [79], "enabledXids": "all"}),
        f"{KEY}.devicePlugin.enabledXids",
        ("ignoredXids", "no effect"),
    ),
    (
        "an_enabled_xid_is_a_number",
        group(devicePlugin={"enabledXids": ["45"]}),
        f"{KEY}.devicePlugin.enabledXids[0]",
        ("an XID number",),
    ),
    (
        "xid_zero_is_the_plugins_word_for_all",
        group(devicePlugin={"enabledXids": [0]}),
        f"{KEY}.devicePlugin.enabledXids[0]",
        ("an XID number",),
    ),
    (
        "enabled_xids_are_a_list_or_all",
        group(devicePlugin={"enabledXids": "xids"}),
        f"{KEY}.devicePlugin.enabledXids",
        ("a list of XID numbers", "all"),
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


@pytest.mark.parametrize(("raw", "read"), [([45, 31, 45], (31, 45)), ("all", "all"), (None, ())])
def test_enabled_xids_are_read_as_the_plugin_takes_them(raw, read):
    """DP_ENABLE_HEALTHCHECKS (k8s-device-plugin internal/rm/health.go, newHealthCheckXIDs): XID
    numbers, or `all`."""
    spec = parse_stack([group(devicePlugin={} if raw is None else {"enabledXids": raw})]).node_groups[0]
    assert spec.device_plugin.enabled_xids == read, spec.device_plugin


def test_mig_devices_are_read_per_gpu_in_mig_parteds_format():
    raw = group(
        devicePlugin={"migStrategy": "mixed", "migDevices": {"2g.20gb": 2, "1g.10gb": 3}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb": 1}},
    )
    spec = parse_stack([raw]).node_groups[0]
    assert spec.device_plugin.mig_devices == (("1g.10gb", 3), ("2g.20gb", 2)), spec.device_plugin


# Every profile name the plugin (v0.20.0) can meet, as go-nvlib's MigProfileInfo.String writes it, and the
# resource it registers for it under mixed (k8s-device-plugin internal/rm/rm.go: '+' becomes '.').
PROFILE_FORMS = [
    ("1g.10gb", "nvidia.com/mig-1g.10gb"),
    ("7g.80gb", "nvidia.com/mig-7g.80gb"),
    ("1g.10gb+me", "nvidia.com/mig-1g.10gb.me"),
    ("1g.24gb-me", "nvidia.com/mig-1g.24gb-me"),
    ("1g.24gb+me.all", "nvidia.com/mig-1g.24gb.me.all"),
    ("1g.24gb+gfx", "nvidia.com/mig-1g.24gb.gfx"),
    ("4g.96gb+gfx", "nvidia.com/mig-4g.96gb.gfx"),
]


@pytest.mark.parametrize(("profile", "resource"), PROFILE_FORMS)
def test_each_profile_form_of_the_plugin_is_accepted_under_the_resource_it_registers(profile, resource):
    raw = group(
        devicePlugin={"migStrategy": "mixed", "migDevices": {profile: 1}},
        verification={"migResources": {resource: 1}},
    )
    spec = parse_stack([raw]).node_groups[0]
    assert spec.device_plugin.mig_devices == ((profile, 1),), spec.device_plugin
    assert spec.device_plugin.mig_allocatable(2) == {resource: 2}


@pytest.mark.parametrize("profile", ["1c.2g.20gb", "2c.3g.40gb+me", "1c.7g.80gb"])
def test_a_compute_instance_profile_is_accepted_under_single(profile):
    """Under single every MIG device is an nvidia.com/gpu, whatever its profile (rm.go AddMIGResource("*"))."""
    spec = parse_stack([group(devicePlugin={"migStrategy": "single", "migDevices": {profile: 3}})]).node_groups[0]
    assert spec.device_plugin.mig_devices == ((profile, 3),), spec.device_plugin
    assert spec.device_plugin.mig_allocatable(2) == {"nvidia.com/gpu": 6}


def test_a_compute_instance_profile_is_refused_under_mixed_naming_why():
    """The plugin registers no resource for it under mixed and stops on a GPU that has one."""
    problems = problems_of(
        group(devicePlugin={"migStrategy": "mixed", "migDevices": {"1c.3g.40gb": 2}}, verification={"migResources": {MIG_1G: 1}})
    )
    assert_one_problem(
        problems,
        f"{KEY}.devicePlugin.migDevices.1c.3g.40gb",
        "'1c.3g.40gb'",
        "registers no resource for a compute-instance profile",
        "migStrategy single",
        "such as 3g.40gb",
    )


@pytest.mark.parametrize(
    "profile",
    [
        "1g.10gb.me",  # the resource's spelling, not the profile's
        "1g.10gb+me+me",
        "1g.10gb+me-me",
        "1g.10gb+xyz",
        "1g.10gb-gfx",
        "5g.50gb",  # no GPU instance has 5 slices
        "0g.10gb",
        "1g.010gb",
        "1g.10GB",
        "3c.3g.40gb",  # a compute instance as big as its GPU instance is written 3g.40gb
        "4c.3g.40gb",
        "1c.1c.3g.40gb",
        " 1g.10gb",
    ],
)
def test_a_malformed_profile_is_refused_naming_the_key_the_value_and_the_forms(profile):
    problems = problems_of(group(devicePlugin={"migStrategy": "single", "migDevices": {profile: 1}}))
    assert_one_problem(
        problems, f"{KEY}.devicePlugin.migDevices.{profile}", f"'{profile}'", "<g>g.<memory>gb", "+me", "-me", "+me.all", "+gfx"
    )


def test_mig_devices_names_a_bad_profile_and_a_bad_count():
    problems = problems_of(group(devicePlugin={"migStrategy": "mixed", "migDevices": {"big": 1, "1g.10gb": 8}}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.migDevices.big", "'big'", "a MIG profile as the device plugin names it")
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


# --------------------------------------------------------------------------- sharing: time-slicing and MPS

MPS4 = {"strategy": "mps", "replicas": 4}

SHARING_REFUSED = [
    (
        "both spellings of the sharing",
        group(devicePlugin={"timeSlicingReplicas": 2, "sharing": {"replicas": 2}}),
        f"{KEY}.devicePlugin.timeSlicingReplicas",
        ("the older spelling of devicePlugin.sharing, which is given too", "{strategy: timeSlicing, replicas: 2}"),
    ),
    (
        "time-slicing and MPS both",
        group(devicePlugin={"timeSlicingReplicas": 4, "sharing": MPS4}),
        f"{KEY}.devicePlugin.timeSlicingReplicas",
        ("the older spelling of devicePlugin.sharing",),
    ),
    (
        "an unknown strategy",
        group(devicePlugin={"sharing": {"strategy": "vgpu", "replicas": 2}}),
        f"{KEY}.devicePlugin.sharing.strategy",
        ("'vgpu'", "timeSlicing, mps"),
    ),
    (
        "replicas are required where sharing is given",
        group(devicePlugin={"sharing": {"strategy": "mps"}}),
        f"{KEY}.devicePlugin.sharing.replicas",
        ("nothing (the key is required)",),
    ),
    (
        "one MPS replica: the plugin takes 2 or more",
        group(devicePlugin={"sharing": {"strategy": "mps", "replicas": 1}}),
        f"{KEY}.devicePlugin.sharing.replicas",
        ("expected 2 to 48 with strategy mps",),
    ),
    (
        "more MPS clients than a server takes",
        group(devicePlugin={"sharing": {"strategy": "mps", "replicas": 49}}),
        f"{KEY}.devicePlugin.sharing.replicas",
        ("expected 2 to 48 with strategy mps", "at most 48 clients per GPU"),
    ),
    (
        "time-slicing replicas past ours",
        group(devicePlugin={"sharing": {"replicas": 65}}),
        f"{KEY}.devicePlugin.sharing.replicas",
        ("expected 1 (off) to 64",),
    ),
    (
        "a replica count that is no number",
        group(devicePlugin={"sharing": {"replicas": "4"}}),
        f"{KEY}.devicePlugin.sharing.replicas",
        ("a whole number",),
    ),
    (
        "MPS on MIG devices",
        group(devicePlugin={"migStrategy": "single", "sharing": MPS4}),
        f"{KEY}.devicePlugin.sharing.strategy",
        ("devicePlugin.migStrategy 'single'", "does not share MIG devices through MPS"),
    ),
    (
        "an unknown sharing key",
        group(devicePlugin={"sharing": {"replicas": 2, "renameByDefualt": True}}),
        f"{KEY}.devicePlugin.sharing.renameByDefualt",
        ("did you mean renameByDefault?",),
    ),
]


@refused(SHARING_REFUSED)
def test_a_bad_sharing_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)


def plugin_of(**device_plugin):
    return parse_stack([group(devicePlugin=device_plugin)]).node_groups[0].device_plugin


def test_the_older_spelling_is_time_slicing_and_none_is_off():
    """timeSlicingReplicas N keeps meaning {strategy: timeSlicing, replicas: N}; without either nothing is shared."""
    legacy, spelled = plugin_of(timeSlicingReplicas=4).sharing, plugin_of(sharing={"replicas": 4}).sharing
    assert (legacy.strategy, legacy.replicas, legacy.rename_by_default, legacy.refuses_more_than_one) == (
        "timeSlicing",
        4,
        False,
        False,
    ), legacy
    assert legacy.legacy and not spelled.legacy, (legacy, spelled)
    assert (spelled.strategy, spelled.replicas, spelled.refuses_more_than_one) == ("timeSlicing", 4, False), spelled
    off = plugin_of().sharing
    assert (off.replicas, off.shares, off.resource) == (1, False, "nvidia.com/gpu"), off


@pytest.mark.parametrize(("strategy", "default"), [("timeSlicing", False), ("mps", True)])
def test_fail_requests_greater_than_one_defaults_as_the_plugin_does(strategy, default):
    """README "With CUDA Time-Slicing": false by default for time-slicing; api/config/v1/config.go NewConfig: an MPS
    config that leaves it out is true (pull request 1762)."""
    assert plugin_of(sharing={"strategy": strategy, "replicas": 4}).sharing.refuses_more_than_one is default
    relaxed = plugin_of(sharing={"strategy": strategy, "replicas": 4, "failRequestsGreaterThanOne": not default})
    assert relaxed.sharing.refuses_more_than_one is (not default), relaxed.sharing


def test_renamed_replicas_are_offered_as_the_shared_resource():
    """api/config/v1/replicas.go: renameByDefault gives the resource its DefaultSharedRename, `<name>.shared`."""
    assert plugin_of(sharing={**MPS4, "renameByDefault": True}).sharing.resource == "nvidia.com/gpu.shared"


@pytest.mark.parametrize("key", ["renameByDefault", "failRequestsGreaterThanOne"])
def test_a_sharing_setting_with_nothing_shared_is_a_warning(key):
    spec = parse_stack([group(devicePlugin={"sharing": {"replicas": 1, key: True}})])
    assert list(spec.warnings) == [
        f"{KEY}.devicePlugin.sharing.{key}: True has no effect: replicas 1 shares nothing (time-slicing is off)"
    ], spec.warnings


def test_a_device_id_strategy_the_plugin_does_not_have_is_refused_naming_its_words():
    problems = problems_of(group(devicePlugin={"deviceIdStrategy": "serial"}))
    assert_one_problem(problems, f"{KEY}.devicePlugin.deviceIdStrategy", "expected one of uuid, index")


# --- the plugin's 2026 settings: the words each takes, and where the plugin ignores them ------------------------


def test_the_2026_settings_are_read_as_given():
    raw = group(
        gpuAccess="cdi",
        devicePlugin={
            "allocationPolicy": "packed",
            "sharing": {"replicas": 4},
            "cdiFeatureFlags": ["disable-ipc-discoverer", "disable-ipc-discoverer"],
            "cdiDisableHooks": ["enable-cuda-compat", "update-ldcache"],
            "deviceDiscoveryStrategy": "nvml",
        },
    )
    spec = parse_stack([raw]).node_groups[0].device_plugin
    assert (spec.allocation_policy, spec.device_discovery_strategy) == ("packed", "nvml")
    assert spec.cdi_feature_flags == ("disable-ipc-discoverer",)
    assert spec.cdi_disable_hooks == ("enable-cuda-compat", "update-ldcache")


@pytest.mark.parametrize(
    ("setting", "value", "key", "fragment"),
    [
        ("allocationPolicy", "spread", "allocationPolicy", "distributed, packed"),
        ("deviceDiscoveryStrategy", "wsl", "deviceDiscoveryStrategy", "auto, nvml, tegra"),
        ("cdiFeatureFlags", ["no-such-flag"], "cdiFeatureFlags[0]", "enable-explicit-driver-libraries"),
        ("cdiDisableHooks", ["prestart"], "cdiDisableHooks[0]", "create-symlinks"),
        ("cdiDisableHooks", "all", "cdiDisableHooks", "expected a list"),
    ],
)
def test_a_word_the_plugin_does_not_know_is_refused(setting, value, key, fragment):
    assert_one_problem(problems_of(group(gpuAccess="cdi", devicePlugin={setting: value})), f"{KEY}.devicePlugin.{key}", fragment)


def test_where_the_plugin_ignores_them_they_have_no_effect():
    raw = group(devicePlugin={"allocationPolicy": "packed", "cdiFeatureFlags": ["disable-ipc-discoverer"]})
    warnings = parse_stack([raw]).warnings
    assert [w.split(":")[1] for w in warnings] == [
        "nodeGroups[0].devicePlugin.allocationPolicy",
        "nodeGroups[0].devicePlugin.cdiFeatureFlags",
    ]
    assert "shares no GPU and runs no MIG" in warnings[0] and "CDI strategy" in warnings[1]


def test_a_dra_group_may_not_set_the_plugins_settings():
    raw = group(allocator="dra", devicePlugin={"deviceDiscoveryStrategy": "nvml"})
    assert_one_problem(problems_of(raw), f"{KEY}.devicePlugin.deviceDiscoveryStrategy", "a dra group runs none")
