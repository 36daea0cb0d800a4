"""NVIDIA's security advisories that decide which container toolkits preflight lets through.

Data, not constants: each row is one CVE with the bulletin that published it and the first fixed
release of each release line. When NVIDIA publishes a fix, a row is added or its versions move,
and tests/test_advisories.py, which pins the floor, says why. The preflight script gets the rows
as arguments (`--toolkit-advisory CVE=FIXED,...`, 40-check-toolkit.sh) and judges the machine's
`nvidia-ctk --version` against them; the config reader refuses a `preflight.minToolkit` below the
floor unless the group names the CVEs it accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def version_key(version: str) -> tuple[int, ...]:
    """`1.17.8` -> (1, 17, 8): compared part by part as numbers, missing parts as 0."""
    return tuple(int(part) for part in version.split("."))


def release_line(version: str, parts: int = 2) -> tuple[int, ...]:
    """The release line a version belongs to: `1.19.1` -> (1, 19); a driver's branch with parts=1: `580.105.08` -> (580,)."""
    key = version_key(version) + (0,) * parts
    return key[:parts]


def _at_least(version: str, minimum: str) -> bool:
    a, b = version_key(version), version_key(minimum)
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)) >= b + (0,) * (width - len(b))


@dataclass(frozen=True)
class Advisory:
    """One CVE of an NVIDIA security bulletin and the releases that fix it."""

    cve: str
    what: str
    bulletin: str
    # The first fixed release of each release line that has one, oldest line first. A release
    # line newer than the last one listed is fixed from its first release; an older line, or one
    # between listed lines, never got the fix.
    fixed: tuple[str, ...]
    # How many leading parts of a version name its line: 2 for the toolkit (1.19), 1 for a driver's branch (580).
    line_parts: int = 2

    def is_open(self, version: str) -> bool:
        """Whether this version is open to the CVE (the script's `advisory_open` agrees)."""
        for fix in self.fixed:
            if release_line(fix, self.line_parts) == release_line(version, self.line_parts):
                return not _at_least(version, fix)
        return not _at_least(version, self.fixed[-1])

    def script_argument(self) -> str:
        return f"{self.cve}={','.join(self.fixed)}"


# NVIDIA Container Toolkit advisories: the bulletin (nvidia.custhelp.com answer id), what the CVE
# lets a container do, and the fixed releases as the bulletin and the toolkit's release tags give them.
TOOLKIT_ADVISORIES: tuple[Advisory, ...] = (
    Advisory(
        "CVE-2024-0132",
        "a time-of-check time-of-use race: a crafted image reaches the host's file system",
        "NVIDIA security bulletin 5582 (September 2024)",
        ("1.16.2",),
    ),
    Advisory(
        "CVE-2024-0133",
        "a crafted image creates empty files or directories on the host's file system",
        "NVIDIA security bulletin 5582 (September 2024)",
        ("1.16.2",),
    ),
    Advisory(
        "CVE-2025-23359",
        "a time-of-check time-of-use race (a bypass of the fix for CVE-2024-0132): the host's file system",
        "NVIDIA security bulletin 5616 (February 2025)",
        ("1.17.4",),
    ),
    Advisory(
        "CVE-2025-23266",
        "an image sets LD_PRELOAD for the createContainer hook and runs code as root on the host (NVIDIAScape)",
        "NVIDIA security bulletin 5659 (July 2025)",
        ("1.17.8",),
    ),
    Advisory(
        "CVE-2025-23267",
        "the update-ldcache hook follows links out of the container (data tampering, denial of service)",
        "NVIDIA security bulletin 5659 (July 2025)",
        ("1.17.8",),
    ),
    Advisory(
        "CVE-2026-24260",
        "a time-of-check time-of-use race in the hooks: code execution, escalation of privileges, data tampering",
        "NVIDIA security bulletin 5850 (June 2026)",
        ("1.19.1",),
    ),
)

TOOLKIT_CVES = tuple(advisory.cve for advisory in TOOLKIT_ADVISORIES)


def open_advisories(version: str, advisories: Iterable[Advisory] = TOOLKIT_ADVISORIES) -> list[Advisory]:
    """The advisories a toolkit of this version is open to."""
    return [advisory for advisory in advisories if advisory.is_open(version)]


def floor(advisories: Iterable[Advisory] = TOOLKIT_ADVISORIES) -> str:
    """The lowest release open to none of the advisories (of those that fix one)."""
    rows = tuple(advisories)
    candidates = sorted({fix for advisory in rows for fix in advisory.fixed}, key=version_key)
    return next(version for version in candidates if not open_advisories(version, rows))


TOOLKIT_FLOOR = floor()
