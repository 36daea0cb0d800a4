"""A release is what a team pins, and the repository says which commit each one is.

- The version is written once (pyproject.toml). CHANGELOG.md has an entry per version, newest first;
  only the newest may be unreleased (`## 0.5.0 (unreleased)`), and it is the version main carries
  until a release commit dates it (`## 0.5.0 (2027-01-12)`).
- releases.txt records each release: its date, its commit and its golden state's digest. Each recorded
  commit is held to git's history: its tree has that version, that dated entry (unchanged since), and
  that golden state. So these tests need the full history (CI clones main whole) and fail, saying so,
  without it.
- A change to gpu_nodes/ after the last release is the next version's: the newest entry is a version
  after it. A change to the golden state (tests/golden/*.json, what deployed stacks hold) is accepted
  under an unreleased entry that says what a deployed stack sees ("On a deployed stack"); its digest is
  recorded by the release commit (`GPU_NODES_UPDATE_GOLDEN=1`, below), and a released version's golden
  state never changes.

docs/testing.md, "Releases", says how a release is made.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from types import ModuleType

import pytest

from tests.golden_state import digest_of, golden_digest, updating
from tests.pulumi_mocks import ROOT

CHANGELOG = "CHANGELOG.md"
# `## 0.3.0 (2026-12-06)` or `## 0.5.0 (unreleased)`: a version's heading.
_ENTRY = re.compile(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d{2}-\d{2}|unreleased)\)$", re.M)
UNRELEASED = "unreleased"
DEPLOYED = "### On a deployed stack"
PACKAGE = "gpu_nodes/"


@cache
def release_tags() -> ModuleType:
    """tools/release_tags.py, loaded by path: tools/ is not a package."""
    spec = importlib.util.spec_from_file_location("release_tags", ROOT / "tools/release_tags.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Entry:
    version: str
    date: str  # YYYY-MM-DD, or UNRELEASED
    text: str


def entries(text: str) -> list[Entry]:
    """Each version's CHANGELOG.md entry, in the file's order."""
    found = list(_ENTRY.finditer(text))
    return [
        Entry(m[1], m[2], text[m.end() : found[i + 1].start() if i + 1 < len(found) else len(text)]) for i, m in enumerate(found)
    ]


def version_of(pyproject: str) -> str:
    return str(tomllib.loads(pyproject)["project"]["version"])


def as_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(part) for part in v.split("."))


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def at(commit: str, path: str) -> str | None:
    """The file at `commit`, or None where it did not exist."""
    shown = git("show", f"{commit}:{path}")
    return shown.stdout if shown.returncode == 0 else None


def golden_at(commit: str) -> str | None:
    """The golden digest of the tree at `commit` (None: no golden state then)."""
    names = [n for n in git("ls-tree", "--name-only", f"{commit}:tests/golden").stdout.split() if n.endswith(".json")]
    if not names:
        return None
    def content(name: str) -> bytes:
        return subprocess.run(["git", "show", f"{commit}:tests/golden/{name}"], cwd=ROOT, capture_output=True).stdout

    files = [(name, content(name)) for name in names]
    return digest_of(files)


def record() -> list:
    return release_tags().read_record((ROOT / "releases.txt").read_text())


def changelog() -> list[Entry]:
    return entries((ROOT / CHANGELOG).read_text())


def version() -> str:
    return version_of((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def history() -> None:
    """Every recorded commit is in this clone: a shallow clone fails here, not later with a riddle."""
    shallow = git("rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    missing = [r.commit for r in record() if r.commit and git("cat-file", "-e", f"{r.commit}^{{commit}}").returncode != 0]
    assert not shallow and not missing, (
        f"the release tests read git's history, and this clone {'is shallow' if shallow else 'lacks'} "
        f"{', '.join(missing) or ''}: clone the repository whole (or `git fetch --unshallow`)"
    )


def test_the_changelog_s_newest_entry_is_the_version():
    newest = changelog()[0]
    assert newest.version == version(), f"CHANGELOG.md: newest entry {newest.version}, pyproject.toml version {version()}"


def test_the_changelog_lists_its_versions_newest_first_and_only_the_newest_unreleased():
    found = changelog()
    versions = [e.version for e in found]
    assert versions == sorted(versions, key=as_tuple, reverse=True), f"CHANGELOG.md: versions out of order: {versions}"
    late = [e.version for e in found[1:] if e.date == UNRELEASED]
    assert not late, f"CHANGELOG.md: {late} unreleased below the newest entry: only the next version may be"


def test_the_record_lists_every_dated_entry_with_its_date():
    dated = {e.version: e.date for e in changelog() if e.date != UNRELEASED}
    recorded = {r.version: r.date for r in record()}
    assert recorded == dated, f"releases.txt {recorded} and CHANGELOG.md's dated entries {dated} differ"
    versions = [r.version for r in record()]
    assert versions == sorted(versions, key=as_tuple) and len(set(versions)) == len(versions), versions


def test_only_the_newest_release_may_wait_for_its_commit():
    """The release commit cannot name itself; the next commit, which opens the next version, does."""
    waiting = [r.version for r in record() if r.commit is None]
    assert waiting in ([], [record()[-1].version]), f"releases.txt: no commit for {waiting}"
    if waiting:
        assert version() == waiting[0], f"releases.txt: {waiting[0]} has no commit, yet main has moved on to {version()}"


def test_each_recorded_commit_is_its_release(history):
    """At its commit: the version, the dated entry as CHANGELOG.md has it today, and the golden state recorded."""
    problems = []
    today = {e.version: e.text for e in changelog()}
    for r in (r for r in record() if r.commit):
        pyproject = at(r.commit, "pyproject.toml") or ""
        if version_of(pyproject) != r.version:
            problems.append(f"{r.version}: {r.commit[:12]} has version {version_of(pyproject)}")
        then = entries(at(r.commit, CHANGELOG) or "")
        if then:  # CHANGELOG.md begins at 0.3.0: 0.2.0's entry was written after its release
            top = then[0]
            if (top.version, top.date) != (r.version, r.date):
                problems.append(f"{r.version}: {r.commit[:12]}'s newest entry is {top.version} ({top.date})")
            # An entry does not change after its release: what was released is what the entry says.
            problems += [
                f"{e.version}: its CHANGELOG.md entry changed since {r.version} was released ({r.commit[:12]})"
                for e in then
                if today.get(e.version) != e.text
            ]
        if r.golden and golden_at(r.commit) != r.golden:
            problems.append(f"{r.version}: the golden state at {r.commit[:12]} is {golden_at(r.commit)}, not {r.golden}")
    assert not problems, "releases.txt against git's history:\n" + "\n".join(problems)


def last_release_commit() -> tuple[str, str]:
    released = [r for r in record() if r.commit]
    return released[-1].version, released[-1].commit


def test_a_change_to_the_package_after_a_release_is_under_the_next_version(history):
    last, commit = last_release_commit()
    changed = git("diff", "--stat", commit, "--", PACKAGE).stdout.strip()
    if not changed:
        assert version() == last, f"nothing changed in {PACKAGE} since {last}, yet the version is {version()}"
        return
    newest = changelog()[0]
    assert as_tuple(newest.version) > as_tuple(last), (
        f"{PACKAGE} changed since {last} ({commit[:12]}), and CHANGELOG.md's newest entry is still {newest.version}: "
        f"open the next version's entry (## <next> (unreleased)) and say there what a user sees:\n{changed}"
    )
    said = re.search(r"^- ", newest.text, re.M)
    assert said, f"CHANGELOG.md {newest.version}: {PACKAGE} changed since {last}; the entry says nothing"


def test_the_golden_state_is_the_released_one_or_the_next_version_says_what_changes():
    """A new golden state is a change to deployed stacks on their next `pulumi up`: under an unreleased
    entry it needs an "On a deployed stack" section; a release records its digest, once."""
    releases, now, newest = record(), golden_digest(), changelog()[0]
    released = [r for r in releases if r.golden]
    if newest.date == UNRELEASED:
        if now != released[-1].golden:
            assert DEPLOYED in newest.text, (
                f"tests/golden/*.json changed since {released[-1].version}: deployed stacks change on their next `pulumi up`. "
                f"Say what a user sees and what to do in CHANGELOG.md {newest.version}, under {DEPLOYED!r}"
            )
        return
    line = next((r for r in releases if r.version == newest.version), None)
    if updating() and line is not None and line.golden is None:
        path = ROOT / "releases.txt"
        old = f"{line.version} {line.date} - -"
        path.write_text(path.read_text().replace(old, f"{line.version} {line.date} - {now}"))
        line = next(r for r in record() if r.version == newest.version)
    assert line is not None and line.golden == now, (
        f"CHANGELOG.md dates {newest.version}: releases.txt must record it with the golden state's digest {now} "
        "(add `<version> <date> - -`, then GPU_NODES_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_release.py)"
    )


def test_each_version_that_changed_deployed_stacks_says_so():
    written = {e.version: e.text for e in changelog()}
    goldens = [r for r in record() if r.golden]
    for before, after in zip(goldens, goldens[1:], strict=False):
        if before.golden != after.golden:
            assert DEPLOYED in written.get(after.version, ""), f"CHANGELOG.md {after.version}: no {DEPLOYED!r} section"


def newest_release() -> str:
    return record()[-1].version


def test_the_docs_pin_the_newest_release_by_tag_and_by_commit():
    """Install lines name the newest release: its tag where a clone has tags (`make release-tags`),
    its commit where it does not; a copied line installs what the docs describe."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = {page.name: page.read_text() for page in pages}
    tags = {(name, tag) for name, t in text.items() for tag in re.findall(r"@(v\d+\.\d+\.\d+)\b", t)}
    assert tags, "no install line names a release's tag"
    assert {tag for _, tag in tags} == {f"v{newest_release()}"}, f"tags other than v{newest_release()}: {sorted(tags)}"
    commits = {(name, c) for name, t in text.items() for c in re.findall(r"gpu-nodes(?:\.git)?(?:/package)?@([0-9a-f]{40})\b", t)}
    recorded = {r.commit for r in record()}
    assert commits, "no install line pins a release by its commit"
    assert {c for _, c in commits} <= recorded, f"pinned commits that are no release's: {sorted(commits)}"
    assert record()[-1].commit in {c for _, c in commits}, f"no install line pins {newest_release()} by its commit"
