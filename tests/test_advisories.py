"""NVIDIA's advisories (gpu_nodes/advisories.py): which toolkit versions each leaves open and the floor
they set together; which drivers each display-driver bulletin leaves open, and the branches NVIDIA
still patches."""

from __future__ import annotations

import re

import pytest

from gpu_nodes.advisories import (
    DEVICE_PLUGIN_ADVISORIES,
    DRA_DRIVER_FLOOR,
    DRA_DRIVER_FLOOR_SOURCE,
    DRA_DRIVER_RELEASE,
    DRIVER_BRANCHES,
    DRIVER_BULLETINS,
    GPU_OPERATOR_ADVISORIES,
    MIG_MANAGER_ADVISORIES,
    PATCHED_DRIVER_BRANCHES,
    TOOLKIT_ADVISORIES,
    TOOLKIT_FLOOR,
    Advisory,
    DriverBranch,
    driver_fix,
    floor,
    open_advisories,
    open_component_advisories,
    patched_branches,
    release_of,
    version_key,
)
from gpu_nodes.manifests.dra_driver import RELEASE


def test_the_floor_is_the_first_release_with_the_fix_for_cve_2026_24260():
    """NVIDIA's June 2026 bulletin (5850) fixes CVE-2026-24260 in the 1.19 line only: 1.18.2, the
    last 1.18 release, is still open to it, so nothing below 1.19.1 passes by default."""
    assert TOOLKIT_FLOOR == "1.19.1"


# The CVEs of the bulletins from November 2024 on, oldest first: what 1.16.2, the fix of September
# 2024's, is still open to.
NOVEMBER_2024_ON = [
    "CVE-2024-0134",
    "CVE-2024-0135",
    "CVE-2024-0136",
    "CVE-2024-0137",
    "CVE-2025-23359",
    "CVE-2025-23266",
    "CVE-2025-23267",
    "CVE-2026-24260",
]


@pytest.mark.parametrize(
    ("version", "open_to"),
    [
        ("1.12.0", ["CVE-2024-0132", "CVE-2024-0133", *NOVEMBER_2024_ON]),
        ("1.16.2", NOVEMBER_2024_ON),
        ("1.17.0", NOVEMBER_2024_ON[1:]),  # 1.17.0 fixed CVE-2024-0134 only (bulletin 5585)
        ("1.17.1", NOVEMBER_2024_ON[4:]),  # and 1.17.1 the three of January 2025 (bulletin 5599)
        ("1.17.7", ["CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"]),
        ("1.17.8", ["CVE-2026-24260"]),
        ("1.18.2", ["CVE-2026-24260"]),
        ("1.19.0", ["CVE-2026-24260"]),
        ("1.19.1", []),
        ("1.20.0", []),
        ("2.0", []),
    ],
)
def test_a_toolkit_is_open_to_the_advisories_its_release_predates(version: str, open_to: list[str]):
    assert [a.cve for a in open_advisories(version)] == open_to, version


BACKPORTED = Advisory("CVE-0000-0001", "a test row", "no bulletin", ("1.16.3", "1.17.4"))


@pytest.mark.parametrize(
    ("version", "is_open"),
    [
        ("1.15.9", True),  # a line older than any fixed one
        ("1.16.2", True),
        ("1.16.3", False),  # the fix backported to its line
        ("1.17.3", True),
        ("1.17.4", False),
        ("1.18.0", False),  # every newer line has the fix from its first release
    ],
)
def test_a_fix_backported_to_an_older_line_counts_on_that_line(version: str, is_open: bool):
    assert BACKPORTED.is_open(version) is is_open, version


def test_a_line_between_two_fixed_lines_never_got_the_fix():
    skipped = Advisory("CVE-0000-0002", "a test row", "no bulletin", ("1.16.3", "1.18.1"))
    assert skipped.is_open("1.17.9") and not skipped.is_open("1.18.1"), skipped


def test_the_floor_is_open_to_no_advisory_and_the_release_before_it_is():
    assert open_advisories(TOOLKIT_FLOOR) == [], TOOLKIT_FLOOR
    assert open_advisories("1.19.0"), "1.19.0"


def test_the_floor_of_backported_fixes_is_the_oldest_release_fixed_for_all():
    assert floor([BACKPORTED, Advisory("CVE-0000-0003", "a test row", "no bulletin", ("1.16.1",))]) == "1.16.3"


@pytest.mark.parametrize("advisory", TOOLKIT_ADVISORIES, ids=[a.cve for a in TOOLKIT_ADVISORIES])
def test_every_advisory_names_its_bulletin_and_lists_its_fixes_oldest_line_first(advisory: Advisory):
    assert advisory.bulletin.startswith("NVIDIA security bulletin "), advisory
    lines = [tuple(int(p) for p in fix.split(".")[:2]) for fix in advisory.fixed]
    assert lines == sorted(set(lines)), advisory


def test_the_patched_branches_are_those_of_nvidias_lifecycle_table_or_of_the_newest_bulletin():
    """Read in December 2026: R535 (LTSB) ended in June 2026, R570 (PB) in February; R580 and R620
    are long-term support, R595 production to March 2027. R610, a new feature branch the R615 table
    ends in August 2026, and R615, without a date, are both fixed by the September 2026 bulletin
    (5861: 610.57.04 and 615.71.09 in its Tesla Linux rows): NVIDIA still patches them."""
    assert PATCHED_DRIVER_BRANCHES == (580, 595, 610, 615, 620)


def test_a_branch_drops_out_in_the_month_after_its_end_of_life():
    branch = DriverBranch(595, "production", "2027-03", "a test row")
    assert patched_branches([branch], on="2027-03", newest=None) == (595,)
    assert patched_branches([branch], on="2027-04", newest=None) == ()


def test_a_branch_past_its_date_that_the_newest_bulletin_fixes_is_still_patched():
    branch = DriverBranch(610, "new feature", "2026-08", "a test row")
    assert patched_branches([branch], on="2026-12") == (610,)
    assert patched_branches([branch], on="2026-12", newest=DRIVER_BULLETINS[0]) == ()


def test_bulletin_5821_names_no_cve_its_tesla_linux_rows_do_not_list():
    """CVE-2026-24195 is listed for the vGPU guest drivers and Cloud Gaming only (5821.md, its
    "Guest driver | Linux(R595 vGPU 20)" rows); -24191 for Windows, -24200 and -24201 for the vGPU
    manager."""
    [may] = [b for b in DRIVER_BULLETINS if b.bulletin == "5821"]
    assert not {"CVE-2026-24195", "CVE-2026-24191", "CVE-2026-24200", "CVE-2026-24201"} & set(may.cves), may.cves
    assert len(may.cves) == 11 and may.more_cves == 0, may


@pytest.mark.parametrize(
    ("driver", "open_to"),
    [
        ("550.54.15", ["5747", "5821", "5861"]),  # R550: no bulletin of 2026 fixed it
        ("535.288.01", ["5821", "5861"]),
        ("535.309.01", ["5861"]),  # R535 ended before September's bulletin
        ("570.211.01", ["5821", "5861"]),  # R570 had ended by May
        ("580.126.09", ["5821", "5861"]),
        ("580.159.03", ["5861"]),
        ("580.178.04", []),
        ("590.48.01", ["5821", "5861"]),  # a new feature branch neither later bulletin fixed
        ("595.71.05", ["5861"]),
        ("595.91.07", []),
        ("615.71.09", []),
        ("620.20.01", []),  # a branch newer than every bulletin has their fixes from its first release
    ],
)
def test_a_driver_is_open_to_the_bulletins_its_release_predates(driver: str, open_to: list[str]):
    assert [b.bulletin for b in DRIVER_BULLETINS if b.is_open(driver)] == open_to, driver


@pytest.mark.parametrize("bulletin", DRIVER_BULLETINS, ids=[b.bulletin for b in DRIVER_BULLETINS])
def test_every_driver_bulletin_names_its_cves_and_lists_its_fixes_oldest_branch_first(bulletin):
    assert bulletin.cves and all(cve.startswith("CVE-") for cve in bulletin.cves), bulletin
    branches = [int(fix.split(".")[0]) for fix in bulletin.fixed]
    assert branches == sorted(set(branches)), bulletin


def test_every_branch_has_its_source():
    assert all(branch.source for branch in DRIVER_BRANCHES), DRIVER_BRANCHES


# ------------------------------------------------------------------ NVIDIA's other parts


@pytest.mark.parametrize(
    ("release", "strategy", "open_to"),
    [
        ("0.17.2", "cdi-cri", ["CVE-2025-23266", "CVE-2025-23267"]),
        ("0.17.2", "cdi-annotations", ["CVE-2025-23266", "CVE-2025-23267"]),
        ("0.14.5", "cdi-cri", ["CVE-2025-23266", "CVE-2025-23267"]),
        ("0.17.2", "envvar", []),  # 5659: "only when device-list-strategy is cdi-annotations and/or cdi-cri"
        ("0.17.2", "volume-mounts", []),
        ("0.17.3", "cdi-cri", []),
        ("0.20.1", "cdi-cri", []),
    ],
)
def test_the_device_plugin_is_open_to_5659_below_0_17_3_under_its_cdi_strategies(release, strategy, open_to):
    assert [a.cve for a in open_component_advisories(DEVICE_PLUGIN_ADVISORIES, release, (strategy,))] == open_to


@pytest.mark.parametrize(
    ("release", "cdi", "open_to"),
    [
        ("25.3.0", False, ["CVE-2026-24260"]),  # 5659: "CDI mode only for versions prior to 25.3.1"
        ("25.3.0", True, ["CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"]),
        ("25.3.1", False, ["CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"]),
        ("25.3.2", False, ["CVE-2026-24260"]),
        ("25.10.1", None, ["CVE-2026-24260"]),  # 5850: every release up to 26.3.1
        ("26.3.1", None, ["CVE-2026-24260"]),
        ("26.3.2", None, []),
        ("26.7.0", None, []),
    ],
)
def test_the_gpu_operator_is_open_to_5659_and_5850(release, cdi, open_to):
    assert [a.cve for a in open_component_advisories(GPU_OPERATOR_ADVISORIES, release, cdi=cdi)] == open_to


@pytest.mark.parametrize(
    ("release", "cdi", "open_to"),
    [("0.12.1", True, 2), ("0.12.1", None, 2), ("0.12.1", False, 0), ("0.12.2", True, 0), ("0.13.0", True, 0)],
)
def test_the_mig_manager_is_open_to_5659_up_to_0_12_1_only_with_cdi(release, cdi, open_to):
    assert len(open_component_advisories(MIG_MANAGER_ADVISORIES, release, cdi=cdi)) == open_to


@pytest.mark.parametrize(
    ("tag", "release"),
    [
        ("v0.20.1", "0.20.1"),
        ("v0.17.3-ubi9", "0.17.3"),
        ("26.3.1", "26.3.1"),
        ("v26.7.0", "26.7.0"),
        ("latest", None),
        ("digest", None),
    ],
)
def test_a_release_is_read_from_a_tag_or_a_version_label(tag, release):
    assert release_of(tag) == release


def test_the_dra_driver_we_render_is_not_below_its_floor():
    """No bulletin names the DRA driver: its floor is its first release under kubernetes-sigs (v0.4.0)."""
    assert version_key(RELEASE.version) >= version_key(DRA_DRIVER_FLOOR), (RELEASE, DRA_DRIVER_FLOOR_SOURCE)
    assert RELEASE.version == DRA_DRIVER_RELEASE, "the release the settings are held to is the one rendered"


def test_nvidias_operator_life_cycle_table_as_read():
    """26.7.x Supported, 26.3.x Deprecated, 25.10.x and lower End of Support (OPERATOR_LIFECYCLE_SOURCE)."""
    from gpu_nodes.advisories import DEPRECATED, END_OF_SUPPORT, SUPPORTED, operator_support

    assert [operator_support(v) for v in ("26.7.0", "26.7.1", "26.3.3", "26.3.0")] == [
        SUPPORTED,
        SUPPORTED,
        DEPRECATED,
        DEPRECATED,
    ]
    assert {operator_support(v) for v in ("25.10.1", "25.10.0", "25.3.4", "24.9.2")} == {END_OF_SUPPORT}
    # Released after the page was read: not judged past its end.
    assert operator_support("26.11.0") == SUPPORTED


@pytest.mark.parametrize(
    ("version", "fix"),
    [
        # A branch NVIDIA patches: its own release that every bulletin's fix reaches (5861's for R580 and R595).
        ("580.105.08", "upgrade to 580.178.04 or later (R580)"),
        ("595.71.05", "upgrade to 595.91.07 or later (R595)"),
        # Past its end of life, or never fixed: the long-term support branches NVIDIA patches, R620 from its first
        # release (newer than every branch a bulletin lists, so open to none of them).
        ("550.54.15", "move to a long-term support branch NVIDIA patches (R580 from 580.178.04, R620)"),
        ("570.211.01", "move to a long-term support branch NVIDIA patches (R580 from 580.178.04, R620)"),
    ],
)
def test_the_fix_a_warning_names_clears_every_bulletin(version, fix):
    assert driver_fix(version) == fix
    named = re.search(r"\d+\.\d+\.\d+", fix)[0]  # type: ignore[index]
    assert not [b.bulletin for b in DRIVER_BULLETINS if b.is_open(named)], f"{named} is still open to a bulletin"
