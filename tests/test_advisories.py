"""NVIDIA's toolkit advisories (gpu_nodes/advisories.py): which toolkit versions each leaves open,
and the floor they set together."""

from __future__ import annotations

import pytest

from gpu_nodes.advisories import TOOLKIT_ADVISORIES, TOOLKIT_FLOOR, Advisory, floor, open_advisories


def test_the_floor_is_the_first_release_with_the_fix_for_cve_2026_24260():
    """NVIDIA's June 2026 bulletin (5850) fixes CVE-2026-24260 in the 1.19 line only: 1.18.2, the
    last 1.18 release, is still open to it, so nothing below 1.19.1 passes by default."""
    assert TOOLKIT_FLOOR == "1.19.1"


@pytest.mark.parametrize(
    ("version", "open_to"),
    [
        ("1.12.0", ["CVE-2024-0132", "CVE-2024-0133", "CVE-2025-23359", "CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"]),
        ("1.16.2", ["CVE-2025-23359", "CVE-2025-23266", "CVE-2025-23267", "CVE-2026-24260"]),
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
