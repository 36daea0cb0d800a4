"""A release says what it changes: the version is written once (pyproject.toml), CHANGELOG.md has an
entry per version, and a change to what deployed stacks hold (tests/golden/*.json, which the golden
state test pins) is a new version whose entry says what a user sees on the next `pulumi up`.

tests/golden/releases.txt records the golden states' digest per version. When the golden files
change, this test fails until the version moves on, its CHANGELOG entry is written with an
"On a deployed stack" section, and the new digest is recorded (`GPU_NODES_UPDATE_GOLDEN=1` records
it for a version that has none yet; it never rewrites a released version's).
"""

from __future__ import annotations

import re
import tomllib

from tests.golden_state import RELEASES, golden_digest, recorded_releases, updating
from tests.pulumi_mocks import ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
# `## 0.3.0 (2026-12-06)`: a version's heading.
_ENTRY = re.compile(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2})\)$", re.M)
DEPLOYED = "### On a deployed stack"


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def entries() -> dict[str, str]:
    """Each version's CHANGELOG entry, newest first, by version."""
    text = CHANGELOG.read_text()
    found = list(_ENTRY.finditer(text))
    return {m[1]: text[m.end() : found[i + 1].start() if i + 1 < len(found) else len(text)] for i, m in enumerate(found)}


def as_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(part) for part in v.split("."))


def test_the_changelog_s_newest_entry_is_the_version():
    newest = next(iter(entries()), None)
    assert newest == version(), f"CHANGELOG.md: newest entry {newest}, pyproject.toml version {version()}"


def test_the_changelog_lists_its_versions_newest_first():
    versions = list(entries())
    assert versions == sorted(versions, key=as_tuple, reverse=True), f"CHANGELOG.md: versions out of order: {versions}"


def test_the_golden_state_is_the_one_this_version_recorded():
    """A new golden state is a new version: deployed stacks change on their next `pulumi up`."""
    releases, now, current = recorded_releases(), golden_digest(), version()
    if updating() and current not in releases and DEPLOYED in entries().get(current, ""):
        RELEASES.write_text(RELEASES.read_text() + f"{current} {now}\n")
        releases = recorded_releases()
    assert releases.get(current) == now, (
        f"tests/golden/*.json ({now}) are not the golden state version {current} recorded "
        f"({releases.get(current, 'none')}): deployed stacks change on their next `pulumi up`. Move the version on "
        f"in pyproject.toml, write its CHANGELOG.md entry with a {DEPLOYED!r} section saying what a user sees and "
        "what to do, then run GPU_NODES_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_release.py to record it"
    )


def test_each_version_that_changed_deployed_stacks_says_so():
    releases, written = list(recorded_releases().items()), entries()
    for (_, before), (version_, after) in zip(releases, releases[1:], strict=False):
        if before != after:
            assert DEPLOYED in written.get(version_, ""), f"CHANGELOG.md {version_}: no {DEPLOYED!r} section"
    assert all(v in written for v, _ in releases), f"CHANGELOG.md lacks an entry for one of {[v for v, _ in releases]}"


def test_recorded_versions_only_move_forward():
    versions = list(recorded_releases())
    assert versions == sorted(versions, key=as_tuple) and len(set(versions)) == len(versions), versions


def test_the_docs_pin_this_version_s_tag():
    """Install lines name a release's tag: the current one, so that a copied line installs what the docs describe."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    tags = {(page.name, tag) for page in pages for tag in re.findall(r"@(v\d+\.\d+\.\d+)\b", page.read_text())}
    assert tags, "no install line names a release's tag"
    assert {tag for _, tag in tags} == {f"v{version()}"}, f"tags other than v{version()}: {sorted(tags)}"
