"""The device plugin release a group runs (gpu_nodes/config/node_group.py, `_device_plugin_release_problems`):
refused where NVIDIA's advisories name it for the strategy the group uses (bulletin 5659: up to
0.17.2 under cdi-annotations/cdi-cri), unless devicePlugin.acceptAdvisories names the CVEs; refused
where a setting needs a newer release; a tag that is no release named as a warning."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of
from tests.factories import group

PLUGIN = "nvcr.io/nvidia/k8s-device-plugin"
BOTH = ["CVE-2025-23266", "CVE-2025-23267"]


def plugin_group(image: str, **overrides: Any) -> dict[str, Any]:
    plugin = {"image": image, **overrides.pop("devicePlugin", {})}
    return group(devicePlugin=plugin, **overrides)


def warnings_of(raw: dict[str, Any]) -> list[str]:
    return list(parse_stack([raw]).warnings)


def test_a_cdi_group_below_the_fix_is_refused_naming_the_key_the_release_and_the_cves():
    problems = problems_of(plugin_group(f"{PLUGIN}:v0.17.2", gpuAccess="cdi"))
    assert_one_problem(
        problems,
        f"{KEY}.devicePlugin.image",
        "0.17.2 with the cdi-cri strategy",
        "CVE-2025-23266 (NVIDIA security bulletin 5659",
        "CVE-2025-23267",
        "fixed in 0.17.3",
        "devicePlugin.acceptAdvisories",
    )


@pytest.mark.parametrize("tag", ["v0.17.3", "v0.17.3-ubi9", "v0.20.1"])
def test_the_fix_and_later_pass_under_cdi(tag: str):
    assert parse_stack([plugin_group(f"{PLUGIN}:{tag}", gpuAccess="cdi")]).node_groups


@pytest.mark.parametrize(
    ("access", "isolation"), [("defaultRuntime", "default"), ("runtimeClass", "default"), ("defaultRuntime", "strict")]
)
def test_the_bulletin_names_only_the_cdi_strategies(access: str, isolation: str):
    """envvar and volume-mounts are not in 5659's condition: 0.17.2 passes there."""
    spec = parse_stack([plugin_group(f"{PLUGIN}:v0.17.2", gpuAccess=access, isolation=isolation)], runtime_class="nvidia")
    assert spec.warnings == (), spec.warnings


def test_the_cves_accepted_by_name_let_it_in_with_a_warning():
    raw = plugin_group(f"{PLUGIN}:v0.17.2", gpuAccess="cdi", devicePlugin={"acceptAdvisories": BOTH})
    [warning] = warnings_of(raw)
    assert warning.startswith(f"{KEY}.devicePlugin.image: '{PLUGIN}:v0.17.2' device plugin 0.17.2 is open to"), warning
    assert "accepted by devicePlugin.acceptAdvisories" in warning


def test_accepting_one_cve_of_two_still_refuses_the_other():
    raw = plugin_group(f"{PLUGIN}:v0.16.0", gpuAccess="cdi", devicePlugin={"acceptAdvisories": BOTH[:1]})
    [problem] = [p for p in problems_of(raw) if ".devicePlugin.image:" in p]
    assert "CVE-2025-23267" in problem and "CVE-2025-23266 (" not in problem, problem


def test_an_unknown_cve_is_refused_naming_the_allowed_ones():
    raw = plugin_group(f"{PLUGIN}:v0.20.1", devicePlugin={"acceptAdvisories": ["CVE-2024-0132"]})
    assert_one_problem(problems_of(raw), f"{KEY}.devicePlugin.acceptAdvisories[0]", "CVE-2025-23266, CVE-2025-23267")


@pytest.mark.parametrize(
    ("image", "why"),
    [
        (f"{PLUGIN}@sha256:{'a' * 64}", "it is pinned by digest only"),
        (f"{PLUGIN}:stable", "its tag 'stable' names no release"),
    ],
)
def test_an_image_whose_release_is_unknown_is_named_as_a_warning_under_cdi(image: str, why: str):
    [warning] = warnings_of(plugin_group(image, gpuAccess="cdi"))
    assert warning.startswith(f"{KEY}.devicePlugin.image:"), warning
    assert f"cannot be judged: {why}" in warning and "bulletin 5659" in warning and "gpuAccess: v0.15.0" in warning


def test_a_digest_beside_the_tag_is_judged_by_the_tag():
    problems = problems_of(plugin_group(f"{PLUGIN}:v0.17.2@sha256:{'b' * 64}", gpuAccess="cdi"))
    assert_one_problem(problems, f"{KEY}.devicePlugin.image", "0.17.2 with the cdi-cri strategy")


def test_an_unjudgeable_image_warns_only_where_something_would_be_judged():
    assert warnings_of(plugin_group(f"{PLUGIN}@sha256:{'c' * 64}")) == []


def test_enabled_xids_need_plugin_0_18_naming_the_release_and_the_pull_request():
    raw = plugin_group(f"{PLUGIN}:v0.17.4", devicePlugin={"enabledXids": [45]})
    assert_one_problem(
        problems_of(raw),
        f"{KEY}.devicePlugin.enabledXids",
        "needs device plugin v0.18.0 or later",
        "DP_ENABLE_HEALTHCHECKS",
        "PR 1443",
        "is 0.17.4, which does not read it",
    )
    assert parse_stack([plugin_group(f"{PLUGIN}:v0.18.0", devicePlugin={"enabledXids": "all"})]).node_groups


def test_cdi_needs_the_release_that_brought_cdi_cri():
    raw = plugin_group(f"{PLUGIN}:v0.14.5", gpuAccess="cdi", devicePlugin={"acceptAdvisories": BOTH})
    assert_one_problem(problems_of(raw), f"{KEY}.gpuAccess", "needs device plugin v0.15.0 or later", "cdi-cri", "PR 573")


def test_strict_isolation_needs_the_volume_mounts_strategy():
    raw = plugin_group(f"{PLUGIN}:v0.6.0", isolation="strict")
    assert_one_problem(problems_of(raw), f"{KEY}.isolation", "needs device plugin v0.7.0 or later", "volume-mounts")


def test_a_dra_group_runs_no_plugin_and_is_not_judged():
    raw = plugin_group(f"{PLUGIN}:v0.17.2", allocator="dra")
    assert parse_stack([raw]).node_groups


# --- the plugin's 2026 settings, each refused on a release that does not read it (their `needs`) -------------


@pytest.mark.parametrize(
    ("setting", "value", "access", "first", "older"),
    [
        ("allocationPolicy", "packed", "defaultRuntime", "0.20.0", "v0.19.3"),
        ("cdiDisableHooks", ["enable-cuda-compat"], "cdi", "0.20.0", "v0.19.3"),
        ("cdiFeatureFlags", ["disable-ipc-discoverer"], "cdi", "0.18.2", "v0.18.1"),
        ("deviceDiscoveryStrategy", "nvml", "defaultRuntime", "0.16.0", "v0.15.1"),
    ],
)
def test_a_2026_setting_needs_the_release_that_introduced_it(setting, value, access, first, older):
    # Time-slicing, so that the allocation policy has something to place.
    shared = {"sharing": {"replicas": 2}} if setting == "allocationPolicy" else {}
    raw = plugin_group(f"{PLUGIN}:{older}", gpuAccess=access, devicePlugin={setting: value, **shared})
    assert_one_problem(problems_of(raw), f"{KEY}.devicePlugin.{setting}", f"needs device plugin v{first} or later", older[1:])
    assert parse_stack([plugin_group(f"{PLUGIN}:v{first}", gpuAccess=access, devicePlugin={setting: value, **shared})])


def test_a_plugin_pinned_by_digest_with_a_2026_setting_is_named_as_unjudged():
    image = f"{PLUGIN}@sha256:" + "a" * 64
    [warning] = warnings_of(plugin_group(image, devicePlugin={"deviceDiscoveryStrategy": "nvml"}))
    assert "deviceDiscoveryStrategy: v0.16.0" in warning, warning
