"""Tags each release of gpu-nodes in this clone, from the record in releases.txt: `v<version>`, an
annotated tag on the release's commit (`make release-tags`).

The published repository carries its main branch only, so a clone has no tags: this makes them from
what the repository itself records. Run it again and it changes nothing; it refuses, naming both
commits, a tag of that name that points elsewhere, and a recorded commit this clone lacks (a shallow
clone: `git fetch --unshallow`). The tag is the same object in every clone: its tagger and date are
the release commit's committer and date, not whoever runs this.

Standard library only: it runs from a fresh clone, before any virtualenv.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "releases.txt"
# A release whose commit the next commit has not written yet.
NOT_YET = "-"


@dataclass(frozen=True)
class Release:
    """One line of releases.txt."""

    version: str
    date: str  # YYYY-MM-DD, as its CHANGELOG.md heading says
    commit: str | None  # None: the release commit itself, whose hash the next commit writes
    golden: str | None  # the digest of tests/golden/*.json at the commit; None before the golden state

    @property
    def tag(self) -> str:
        return f"v{self.version}"


class RecordError(ValueError):
    """releases.txt cannot be read as a record of releases."""


def read_record(text: str) -> list[Release]:
    """The releases releases.txt records, oldest first."""
    releases = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 4:
            raise RecordError(f"releases.txt:{number}: got {line!r}; expected `<version> <date> <commit> <golden digest>`")
        version, date, commit, golden = fields
        releases.append(Release(version, date, None if commit == NOT_YET else commit, None if golden == NOT_YET else golden))
    return releases


def git(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=False)


def tag_target(tag: str, cwd: Path) -> str | None:
    """The commit a tag points to in this clone, or None when there is no such tag."""
    found = git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}", cwd=cwd)
    return found.stdout.strip() if found.returncode == 0 else None


def full_commit(commit: str, cwd: Path) -> str | None:
    found = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", cwd=cwd)
    return found.stdout.strip() if found.returncode == 0 else None


def tag_release(release: Release, cwd: Path) -> tuple[bool, str]:
    """Tag one release; (ok, what was done or why not)."""
    if release.commit is None:
        return True, f"{release.tag}: not tagged yet (its commit is written by the commit after it)"
    commit = full_commit(release.commit, cwd)
    if commit is None:
        return False, (
            f"{release.tag}: commit {release.commit} is not in this clone (a shallow clone? run `git fetch --unshallow`)"
        )
    existing = tag_target(release.tag, cwd)
    if existing == commit:
        return True, f"{release.tag}: already at {commit[:12]}"
    if existing is not None:
        return False, (
            f"{release.tag}: the tag points to {existing[:12]}, not to the release's commit {commit[:12]} (releases.txt); "
            f"left as it is: delete it (`git tag -d {release.tag}`) to tag the release"
        )
    # The tagger and date of the release commit's committer, so that every clone makes the same tag object.
    who = git("log", "-1", "--format=%cn%x00%ce%x00%cI", commit, cwd=cwd).stdout.strip().split("\0")
    env = {**os.environ, "GIT_COMMITTER_NAME": who[0], "GIT_COMMITTER_EMAIL": who[1], "GIT_COMMITTER_DATE": who[2]}
    made = git("tag", "-a", release.tag, commit, "-m", f"gpu-nodes {release.version} ({release.date})", cwd=cwd, env=env)
    if made.returncode != 0:
        return False, f"{release.tag}: git tag failed: {made.stderr.strip()}"
    return True, f"{release.tag}: tagged {commit[:12]}"


def main(argv: list[str]) -> int:
    cwd = Path(argv[0]) if argv else ROOT
    try:
        releases = read_record((cwd / "releases.txt").read_text())
    except (OSError, RecordError) as error:
        print(f"release-tags: {error}", file=sys.stderr)
        return 1
    ok = True
    for release in releases:
        done, said = tag_release(release, cwd)
        print(f"release-tags: {said}", file=sys.stdout if done else sys.stderr)
        ok = ok and done
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
