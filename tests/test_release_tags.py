"""What a team does with a fresh clone of the published repository (its main branch, no tags):
`make release-tags` tags each release on its recorded commit, and the install lines the docs give,
by tag and by commit, install that release (tools/release_tags.py, releases.txt)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pulumi_mocks import ROOT

# The docs' install lines: a release's tag (README.md) and a release's commit (docs/own-program.md).
BY_TAG = re.compile(r"gpu-nodes @ git\+https://<your git host>/<org>/gpu-nodes@(v\d+\.\d+\.\d+)")
BY_COMMIT = re.compile(r"gpu-nodes @ git\+https://<your git host>/<org>/gpu-nodes@([0-9a-f]{40})")
PLACEHOLDER = "https://<your git host>/<org>/gpu-nodes"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=False)


def fresh_clone(where: Path, *options: str) -> Path:
    """A clone as a team makes one: this repository's committed history, no tags."""
    clone = where / "gpu-nodes"
    made = run("git", "clone", "--quiet", "--no-tags", *options, f"file://{ROOT}", str(clone), cwd=where)
    assert made.returncode == 0, made.stderr
    return clone


def recorded() -> dict[str, str]:
    """Each release's tag and commit, as releases.txt records them."""
    lines = [line.split() for line in (ROOT / "releases.txt").read_text().splitlines() if line and not line.startswith("#")]
    return {f"v{version}": commit for version, _, commit, _ in lines if commit != "-"}


def tag_target(clone: Path, tag: str) -> str:
    return run("git", "rev-parse", f"{tag}^{{commit}}", cwd=clone).stdout.strip()


@pytest.fixture(scope="module")
def tagged(tmp_path_factory) -> Path:
    clone = fresh_clone(tmp_path_factory.mktemp("tagged"))
    assert run("git", "tag", cwd=clone).stdout == "", "a fresh clone has tags already"
    made = run("make", "release-tags", cwd=clone)
    assert made.returncode == 0, made.stdout + made.stderr
    return clone


def test_each_release_is_tagged_annotated_on_its_recorded_commit(tagged):
    for tag, commit in recorded().items():
        assert tag_target(tagged, tag) == commit, f"{tag}: {tag_target(tagged, tag)}, releases.txt says {commit}"
        assert run("git", "cat-file", "-t", tag, cwd=tagged).stdout.strip() == "tag", f"{tag} is not an annotated tag"


def test_tagging_again_changes_nothing(tagged):
    before = run("git", "show-ref", "--tags", cwd=tagged).stdout
    again = run("make", "release-tags", cwd=tagged)
    assert again.returncode == 0, again.stderr
    assert run("git", "show-ref", "--tags", cwd=tagged).stdout == before, "a second run moved or remade a tag"
    assert all(f"{tag}: already at {commit[:12]}" in again.stdout for tag, commit in recorded().items()), again.stdout


def test_every_clone_makes_the_same_tag_objects(tagged, tmp_path):
    other = fresh_clone(tmp_path)
    assert run("make", "release-tags", cwd=other).returncode == 0
    ours, theirs = (run("git", "show-ref", "--tags", cwd=c).stdout for c in (tagged, other))
    assert ours == theirs, f"the tags differ between two clones:\n{ours}\n{theirs}"


def test_a_tag_of_that_name_elsewhere_is_refused_not_moved(tmp_path):
    clone = fresh_clone(tmp_path)
    tag = next(iter(recorded()))
    run("git", "tag", tag, "HEAD", cwd=clone)
    head = run("git", "rev-parse", "HEAD", cwd=clone).stdout.strip()
    refused = run("make", "release-tags", cwd=clone)
    assert refused.returncode != 0, refused.stdout
    assert f"{tag}: the tag points to {head[:12]}, not to the release's commit" in refused.stderr, refused.stderr
    assert tag_target(clone, tag) == head, f"{tag} was moved"


def test_a_shallow_clone_is_told_to_fetch_the_history(tmp_path):
    clone = fresh_clone(tmp_path, "--depth", "1")
    refused = run("make", "release-tags", cwd=clone)
    assert refused.returncode != 0, refused.stdout
    assert "is not in this clone (a shallow clone? run `git fetch --unshallow`)" in refused.stderr, refused.stderr


def install_line(pattern: re.Pattern[str], page: str) -> tuple[str, str]:
    """The docs' install line and the reference it pins."""
    found = pattern.search((ROOT / page).read_text())
    assert found, f"{page}: no install line of the form {pattern.pattern}"
    return found[0], found[1]


@pytest.mark.parametrize(("pattern", "page"), [(BY_TAG, "README.md"), (BY_COMMIT, "docs/own-program.md")], ids=["tag", "commit"])
def test_the_docs_install_line_installs_that_release_from_the_clone(tagged, tmp_path, pattern, page):
    line, ref = install_line(pattern, page)
    version = next(tag for tag, commit in recorded().items() if ref in (tag, commit)).removeprefix("v")
    # The clone stands in for the team's git host (pip reads a local repository as file://localhost/...).
    requirement = line.replace(PLACEHOLDER, f"git+file://localhost{tagged}".removeprefix("git+")).replace("git+git+", "git+")
    (tmp_path / "requirements.txt").write_text(requirement + "\n")
    target = tmp_path / "site"
    pip = (sys.executable, "-m", "pip", "install", "--quiet", "--no-deps")
    installed = run(*pip, "--target", str(target), "-r", "requirements.txt", cwd=tmp_path)
    assert installed.returncode == 0, f"{requirement}: {installed.stderr}"
    metadata = next(target.glob("gpu_nodes-*.dist-info/METADATA")).read_text()
    assert f"\nVersion: {version}\n" in metadata, f"{requirement}: installed {re.search(r'Version: .*', metadata)}"
    assert sorted(p.name for p in (target / "gpu_nodes/scripts/preflight").glob("*.sh")), f"{requirement}: no preflight script"
