"""NVIDIA's security advisories that decide which container toolkits and drivers preflight lets through.

Data, not constants: each toolkit row is one CVE with the bulletin that published it and the first
fixed release of each release line; each driver row is one display-driver bulletin with the first
fixed driver of each branch; the driver branches NVIDIA still patches come from its lifecycle
table. When NVIDIA publishes a fix, a row is added or its versions move, and
tests/test_advisories.py, which pins the floor and the patched branches, says why.

The preflight script gets the rows as arguments and judges the machine against them: the
toolkit's `nvidia-ctk --version` (`--toolkit-advisory CVE=FIXED,...`, 40-check-toolkit.sh), and
the driver nvidia-smi reports (`--driver-advisory BULLETIN:CVES=FIXED,...` and
`--patched-driver-branches`, 30-check-driver.sh). The config reader refuses a
`preflight.minToolkit` below the toolkit floor unless the group names the CVEs it accepts; a
driver open to a bulletin, or on a branch past its end of life, is a warning unless the group sets
`preflight.driverAdvisories: refuse`.
"""

from __future__ import annotations

import re
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


def is_open(version: str, fixed: tuple[str, ...], line_parts: int) -> bool:
    """Open to a fix released as `fixed`: on a listed release line, below that line's fix; on any
    other line, below the newest fix (an older line, or one between listed lines, never got it)."""
    for fix in fixed:
        if release_line(fix, line_parts) == release_line(version, line_parts):
            return not _at_least(version, fix)
    return not _at_least(version, fixed[-1])


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
        return is_open(version, self.fixed, self.line_parts)

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
        "CVE-2024-0134",
        "a crafted image creates files on the host (their name and place not its choice)",
        "NVIDIA security bulletin 5585 (November 2024)",
        ("1.17.0",),
    ),
    Advisory(
        "CVE-2024-0135",
        "improper isolation: a crafted image modifies a host binary",
        "NVIDIA security bulletin 5599 (January 2025)",
        ("1.17.1",),
    ),
    Advisory(
        "CVE-2024-0136",
        "improper isolation, in a configuration not the default: a crafted image reads and writes host devices",
        "NVIDIA security bulletin 5599 (January 2025)",
        ("1.17.1",),
    ),
    Advisory(
        "CVE-2024-0137",
        "improper isolation, in a configuration not the default: a crafted image runs code in the host's network namespace",
        "NVIDIA security bulletin 5599 (January 2025)",
        ("1.17.1",),
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


@dataclass(frozen=True)
class DriverBulletin:
    """One NVIDIA GPU display driver security bulletin and the first fixed driver of each branch.

    A bulletin fixes many CVEs at once, each branch in one release, so the bulletin is the row.
    `cves` are those of its CVEs that concern the Linux driver as far as they are named here;
    `more_cves` counts the bulletin's others, so that a report never claims the list is whole."""

    bulletin: str  # the answer id of nvidia.custhelp.com, as NVIDIA/product-security files it
    published: str
    cves: tuple[str, ...]
    fixed: tuple[str, ...]  # oldest branch first
    more_cves: int = 0

    def is_open(self, version: str) -> bool:
        return is_open(version, self.fixed, DRIVER_LINE_PARTS)

    def script_argument(self) -> str:
        more = (f"+{self.more_cves}",) if self.more_cves else ()
        return f"{self.bulletin}:{','.join(self.cves + more)}={','.join(self.fixed)}"


# A driver's branch is its first part: 580.126.09 is on R580.
DRIVER_LINE_PARTS = 1

# NVIDIA's GPU display driver bulletins of 2026, from NVIDIA/product-security (2026/<id>/<id>.md):
# the "Tesla" rows of each bulletin's Linux driver table give the first fixed driver per branch.
DRIVER_BULLETINS: tuple[DriverBulletin, ...] = (
    DriverBulletin(
        "5747",
        "January 2026",
        ("CVE-2025-33219", "CVE-2025-33220"),
        ("535.288.01", "570.211.01", "580.126.09", "590.48.01"),
    ),
    DriverBulletin(
        # Revision 3.0.0 (2026-05-21). R570 has no row: past its end of life, it got no fix. Named
        # are the CVEs of its Tesla Linux rows: CVE-2026-24195 (UVM) is listed for the vGPU guest
        # drivers and Cloud Gaming only (its rows: "Guest driver | Linux(R595 vGPU 20)", "(R580 vGPU
        # 19)", "(Cloud Gaming)"), CVE-2026-24191 for Windows, CVE-2026-24200 and -24201 for the
        # Virtual GPU Manager: none concerns the data center driver preflight reads.
        "5821",
        "May 2026",
        (
            "CVE-2026-24182",
            "CVE-2026-24187",
            "CVE-2026-24190",
            "CVE-2026-24192",
            "CVE-2026-24193",
            "CVE-2026-24194",
            "CVE-2026-24196",
            "CVE-2026-24197",
            "CVE-2026-24198",
            "CVE-2026-24199",
            "CVE-2025-33221",
        ),
        ("535.309.01", "580.159.03", "595.71.05"),
    ),
    DriverBulletin(
        # 114 CVEs, Windows and Linux: named here are the high-severity ones its table gives for
        # the Linux driver (kernel module use-after-free, out-of-bounds, read-only memory written).
        "5861",
        "September 2026",
        (
            "CVE-2026-47572",
            "CVE-2026-47587",
            "CVE-2026-47588",
            "CVE-2026-47589",
            "CVE-2026-47590",
            "CVE-2026-47591",
            "CVE-2026-47592",
            "CVE-2026-47594",
            "CVE-2026-47595",
            "CVE-2026-47597",
            "CVE-2026-47599",
            "CVE-2026-47600",
            "CVE-2026-47601",
        ),
        ("580.178.04", "595.91.07", "610.57.04", "615.71.09"),
        more_cves=101,
    ),
)


@dataclass(frozen=True)
class DriverBranch:
    """A driver branch as NVIDIA's data center driver lifecycle table lists it."""

    branch: int
    kind: str  # long-term support, production, new feature
    end_of_life: str | None  # "2028-06"; None for a new feature branch, which has no date
    source: str


# NVIDIA Data Center Drivers, "Supported Drivers and CUDA Toolkit Versions", read on LIFECYCLE_READ
# in the R615 and R620 documentation (docs.nvidia.com/datacenter/tesla/drivers/615 and /620). A
# branch counts as patched while it is not past its end of life, or while the newest bulletin still
# fixes it (`patched_branches`): NVIDIA's fix outranks the table's date. So R610, whose new-feature
# life the R615 table ends in August 2026, is patched: bulletin 5861 (September 2026) fixes it in
# 610.57.04 (its "Tesla | Linux(R610)" rows). New feature branches may have no date at all (R615).
# A branch not listed here, older than the newest one listed, is not patched.
LIFECYCLE_READ = "2026-12"
DRIVER_BRANCHES: tuple[DriverBranch, ...] = (
    DriverBranch(535, "long-term support", "2026-06", "R615 lifecycle table"),
    DriverBranch(570, "production", "2026-02", "R580 lifecycle table"),
    DriverBranch(580, "long-term support", "2028-06", "R620 lifecycle table"),
    DriverBranch(595, "production", "2027-03", "R620 lifecycle table"),
    DriverBranch(610, "new feature", "2026-08", "R615 lifecycle table; still fixed by bulletin 5861 (September 2026)"),
    DriverBranch(615, "new feature", None, "fixed by bulletin 5861 (September 2026)"),
    DriverBranch(620, "long-term support", "2029-09", "R620 lifecycle table"),
)


def patched_branches(
    branches: Iterable[DriverBranch] = DRIVER_BRANCHES,
    on: str = LIFECYCLE_READ,
    newest: DriverBulletin | None = DRIVER_BULLETINS[-1],
) -> tuple[int, ...]:
    """The branches NVIDIA still patches on that month ("YYYY-MM"): not past their end of life, or
    fixed by the newest bulletin (`newest`) whatever the table's date."""
    fixed = {release_line(fix, DRIVER_LINE_PARTS)[0] for fix in newest.fixed} if newest else set()
    return tuple(b.branch for b in branches if b.end_of_life is None or b.end_of_life >= on or b.branch in fixed)


PATCHED_DRIVER_BRANCHES = patched_branches()


def driver_fix(version: str, bulletins: Iterable[DriverBulletin] = DRIVER_BULLETINS) -> str:
    """What clears a driver of every bulletin, in a few words for a one-line warning: the first
    release of its own branch that every bulletin's fix reaches, when NVIDIA still patches the branch
    and some bulletin fixed it there; else a move to the long-term support branches NVIDIA patches,
    at their first release clear of every bulletin (the script's check names each bulletin's fix)."""
    rows = tuple(bulletins)
    branch = release_line(version, DRIVER_LINE_PARTS)[0]
    own = _clear_release(branch, rows)
    if branch in PATCHED_DRIVER_BRANCHES and own:
        return f"upgrade to {own} or later (R{branch})"
    supported = [b.branch for b in DRIVER_BRANCHES if b.kind == "long-term support" and b.branch in PATCHED_DRIVER_BRANCHES]
    targets = [
        f"R{branch} from {release}" if release else f"R{branch}"
        for branch in supported
        if (release := _clear_release(branch, rows)) != ""
    ]
    return f"move to a long-term support branch NVIDIA patches ({', '.join(targets)})"


def _clear_release(branch: int, bulletins: tuple[DriverBulletin, ...]) -> str | None:
    """The first release of `branch` that no bulletin leaves open: the newest of their fixes on it;
    None for a branch newer than every one a bulletin lists (any release of it is clear, `is_open`);
    "" for one no bulletin fixed (none of its releases is clear)."""
    fixes = [fix for b in bulletins for fix in b.fixed if release_line(fix, DRIVER_LINE_PARTS)[0] == branch]
    if fixes:
        return max(fixes, key=version_key)
    newest = max(release_line(fix, DRIVER_LINE_PARTS)[0] for b in bulletins for fix in b.fixed)
    return None if branch > newest else ""


# ------------------------------------------------------------------ NVIDIA's other parts
#
# NVIDIA's bulletins name more than the toolkit and the driver: the device plugin we deploy, and
# the GPU Operator and MIG manager we may hand a cluster's GPUs over to. Each row is one CVE as
# one bulletin's "Affected Products" table gives it for that product, with the first fixed release
# and the condition under which the bulletin calls a release affected.

# The device plugin's ways of handing a container its GPUs (its DEVICE_LIST_STRATEGY, k8s-device-plugin
# api/config/v1/strategy.go): gpu-nodes uses `cdi-cri` under gpuAccess cdi, `volume-mounts` under
# isolation strict and `envvar` (the plugin's default) otherwise (manifests/device_plugin.py, device_list_env).
CDI_STRATEGIES = ("cdi-annotations", "cdi-cri")


@dataclass(frozen=True)
class ComponentAdvisory(Advisory):
    """One CVE of an NVIDIA bulletin as it names a part other than the toolkit and the driver."""

    # The product as the bulletin's table names it.
    product: str = ""
    # The bulletin's condition, in its words ("only when device-list-strategy is cdi-annotations and/or cdi-cri").
    condition: str = ""
    # The device plugin's strategies the CVE needs (none: every strategy).
    strategies: tuple[str, ...] = ()
    # Releases below this one are affected only with CDI on (the bulletin's "CDI mode only for
    # versions prior to ..."); "*": every release only with CDI on; "": CDI or not.
    cdi_only_below: str = ""

    def applies(self, version: str, strategies: Iterable[str] = (), cdi: bool | None = None) -> bool:
        """Whether this release, used so (the plugin's strategies, CDI on or off), is open to the CVE.
        `cdi` None: unknown, taken as on (the side that warns)."""
        if not self.is_open(version):
            return False
        if self.strategies and not set(self.strategies) & set(strategies):
            return False
        below = self.cdi_only_below
        only_with_cdi = below == "*" or (below != "" and not _at_least(version, below))
        return not only_with_cdi or cdi is not False


_BULLETIN_5659 = "NVIDIA security bulletin 5659 (July 2025, revision 2.0.0 of 2025-08-12)"
_BULLETIN_5850 = "NVIDIA security bulletin 5850 (June 2026)"
_NVIDIASCAPE = "an image sets LD_PRELOAD for the createContainer hook and runs code as root on the host (NVIDIAScape)"
_LDCACHE = "the update-ldcache hook follows links out of the container (data tampering, denial of service)"
_TOCTOU = "a time-of-check time-of-use race in the hooks: code execution, escalation of privileges, data tampering"

# NVIDIA/product-security 2025/5659/5659.md: "NVIDIA Kubernetes Device Plugin | Linux | All versions up
# to and including 0.17.2 (only when device-list-strategy is cdi-annotations and/or cdi-cri) | 0.17.3",
# for both CVEs. The plugin's specs run the toolkit's hooks (its vendored nvidia-container-toolkit).
DEVICE_PLUGIN_ADVISORIES: tuple[ComponentAdvisory, ...] = tuple(
    ComponentAdvisory(
        cve,
        what,
        _BULLETIN_5659,
        ("0.17.3",),
        product="NVIDIA Kubernetes Device Plugin",
        condition="only when device-list-strategy is cdi-annotations and/or cdi-cri",
        strategies=CDI_STRATEGIES,
    )
    for cve, what in (("CVE-2025-23266", _NVIDIASCAPE), ("CVE-2025-23267", _LDCACHE))
)
DEVICE_PLUGIN_CVES = tuple(a.cve for a in DEVICE_PLUGIN_ADVISORIES)

# The GPU Operator (calendar versions, YY.MM.PP: a line is YY.MM). 5659: "All versions up to and
# including 25.3.1 (CDI mode only for versions prior to 25.3.1) | 25.3.2"; 5850 (NVIDIA/product-security
# 2026/5850/5850.md): "All versions up to and including 26.3.1 | 26.3.2".
GPU_OPERATOR_ADVISORIES: tuple[ComponentAdvisory, ...] = (
    *(
        ComponentAdvisory(
            cve,
            what,
            _BULLETIN_5659,
            ("25.3.2",),
            product="NVIDIA GPU Operator",
            condition="CDI mode only for versions prior to 25.3.1",
            cdi_only_below="25.3.1",
        )
        for cve, what in (("CVE-2025-23266", _NVIDIASCAPE), ("CVE-2025-23267", _LDCACHE))
    ),
    ComponentAdvisory("CVE-2026-24260", _TOCTOU, _BULLETIN_5850, ("26.3.2",), product="NVIDIA GPU Operator"),
)

# The GPU Operator's own age. NVIDIA's platform-support page for the Operator, "NVIDIA GPU Operator Life Cycle"
# (docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/platform-support.html, built from
# NVIDIA/cloud-native-docs gpu-operator/life-cycle-policy.rst; read 2026-12): "When a new major version of NVIDIA
# GPU Operator is released, the previous major version enters deprecated support and only receives patch release
# updates for critical bug and CVE fixes. All prior major versions reach end of support and no longer receive patch
# release updates." Its table: 26.7.x Supported, 26.3.x Deprecated, 25.10.x and lower End of Support. A major
# version is YY.MM (the page's "NVIDIA GPU Operator Versioning"). A line newer than the newest listed was released
# after the page was read: it is taken as supported.
OPERATOR_LIFECYCLE_READ = "2026-12"
OPERATOR_LIFECYCLE_SOURCE = (
    'NVIDIA GPU Operator platform-support page, "NVIDIA GPU Operator Life Cycle" (read 2026-12): 26.7.x Supported, '
    "26.3.x Deprecated, 25.10.x and lower End of Support"
)
SUPPORTED, DEPRECATED, END_OF_SUPPORT = "supported", "deprecated", "end of support"


@dataclass(frozen=True)
class OperatorLine:
    """A major version of the GPU Operator (YY.MM) and its status in NVIDIA's life-cycle table."""

    line: str
    status: str


OPERATOR_LINES: tuple[OperatorLine, ...] = (OperatorLine("26.7", SUPPORTED), OperatorLine("26.3", DEPRECATED))


def operator_support(release: str, lines: Iterable[OperatorLine] = OPERATOR_LINES) -> str:
    """The life-cycle status of a GPU Operator release (`26.3.1`): its line's, end of support below the oldest line
    listed, supported above the newest."""
    rows = sorted(lines, key=lambda row: version_key(row.line))
    mine = release_line(release)
    for row in rows:
        if version_key(row.line) == mine:
            return row.status
    if mine < version_key(rows[0].line):
        return END_OF_SUPPORT
    return SUPPORTED if mine > version_key(rows[-1].line) else END_OF_SUPPORT


# 5659: "NVIDIA MIG Manager | Linux | All versions up to and including 0.12.1 (only when CDI is enabled) | 0.12.2".
MIG_MANAGER_ADVISORIES: tuple[ComponentAdvisory, ...] = tuple(
    ComponentAdvisory(
        cve,
        what,
        _BULLETIN_5659,
        ("0.12.2",),
        product="NVIDIA MIG Manager",
        condition="only when CDI is enabled",
        cdi_only_below="*",
    )
    for cve, what in (("CVE-2025-23266", _NVIDIASCAPE), ("CVE-2025-23267", _LDCACHE))
)


def open_component_advisories(
    advisories: Iterable[ComponentAdvisory], version: str, strategies: Iterable[str] = (), cdi: bool | None = None
) -> list[ComponentAdvisory]:
    """The rows this release, used so, is open to."""
    used = tuple(strategies)
    return [a for a in advisories if a.applies(version, used, cdi)]


_RELEASE = re.compile(r"v?(?P<version>[0-9]+\.[0-9]+(?:\.[0-9]+)?)(?:[-+][0-9A-Za-z.-]*)?")


def release_of(tag: str) -> str | None:
    """The release a tag or a version label names: `v0.20.1`, `v0.17.3-ubi9`, `26.3.1` -> the version;
    None for a tag that is no version (`latest`, `main`, a digest)."""
    found = _RELEASE.fullmatch(tag.strip())
    return found["version"] if found else None


# ------------------------------------------------------------------ NVIDIA's DRA driver
#
# No NVIDIA bulletin names the DRA driver (NVIDIA/product-security read to 5861, September 2026).
# Its floor is therefore the release from which what we render exists: v0.4.0 (May 2026) moved the
# driver to kubernetes-sigs/dra-driver-nvidia-gpu, renamed its chart `dra-driver-nvidia-gpu` and its
# image to registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu, and allows no downgrade to the
# v25.12.0 before it (site/content/docs/upgrade.md, "Upgrade from v25.12.0 to v0.4.0"). Its
# prerequisites for GPU allocation (site/content/docs/prerequisites.md): Kubernetes 1.34.2, a driver
# of R565 or later, the container toolkit 1.18.0 or later (below the toolkit floor above), CDI on
# in the runtime.
DRA_DRIVER_FLOOR = "0.4.0"
# The release gpu-nodes deploys (gpu_nodes/manifests/dra_driver.py, RELEASE, where it is cited): the settings of a
# DRA group are held to the releases they need against it (gpu_nodes/config/releases.py).
DRA_DRIVER_RELEASE = "0.5.0"
DRA_DRIVER_FLOOR_SOURCE = (
    "kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/upgrade.md: v0.4.0 is the first release of its chart and "
    "image under their present names; no NVIDIA security bulletin names the DRA driver"
)


# ------------------------------------------------------------------ DCGM and its exporter
#
# The node's proof runs NVIDIA's DCGM diagnostics (`dcgmi diag`) in a Job and, where a group asks for
# metrics, NVIDIA's dcgm-exporter on its nodes: both images are judged against DCGM's bulletins, as
# the device plugin's is, before anything registers.

_BULLETIN_5328 = "NVIDIA security bulletin 5328 (March 2022)"
_BULLETIN_5453 = "NVIDIA security bulletin 5453 (March 2023)"
_BULLETIN_5857 = "NVIDIA security bulletin 5857 (July 2026, updated 2026-07-28)"
_PPROF = (
    "the /debug/pprof endpoints take unauthenticated, concurrent profiling requests: denial of service and "
    "information disclosure"
)

# NVIDIA/product-security 2022/CVE_index.csv and 2023/CVE_index.csv: 5328 (CVE-2022-21820, "All versions
# prior to 2.3.4") and 5453 (CVE-2023-0208, "All versions prior to 3.1.7"); 2026/5857/5857.md: "DCGM |
# All(4.5) | 0.0 to 4.5.2 | 4.5.3". Tags are `<dcgm version>-<build>-<os>` (nvcr.io/nvidia/cloud-native/dcgm:
# 4.6.0-1-ubuntu24.04): `release_of` reads the version.
DCGM_ADVISORIES: tuple[ComponentAdvisory, ...] = (
    ComponentAdvisory(
        "CVE-2022-21820",
        "nv-hostengine detects error conditions without acting on them, from the network: code execution, denial of "
        "service, escalation of privileges",
        _BULLETIN_5328,
        ("2.3.4",),
        product="NVIDIA Data Center GPU Manager (DCGM)",
    ),
    ComponentAdvisory(
        "CVE-2023-0208",
        "a heap-based buffer overflow in the host engine through its bound socket: denial of service, data tampering",
        _BULLETIN_5453,
        ("3.1.7",),
        product="NVIDIA Data Center GPU Manager (DCGM)",
    ),
    ComponentAdvisory("CVE-2026-47483", _PPROF, _BULLETIN_5857, ("4.5.3",), product="NVIDIA Data Center GPU Manager (DCGM)"),
)

# 5857's table: "DCGM Exporter | All(4.8) | 0.0 to 4.8.2 | 4.8.2", whose row names 4.8.2 both affected and
# fixed; its CSAF document (2026/5857/5857.json) marks `all4_8_dcgm_exporter_4_8_2` fixed, and the exporter's
# code agrees: 4.5.1-4.8.0 registered the pprof endpoints unconditionally, 4.5.3-4.8.2 made them opt-in
# (NVIDIA/dcgm-exporter internal/pkg/server/server.go, `EnablePprof`; pkg/cmd/app.go `--enable-pprof`,
# default false). An exporter tag is `<dcgm version>-<exporter version>[-<variant>]`: `exporter_release`.
DCGM_EXPORTER_ADVISORIES: tuple[ComponentAdvisory, ...] = (
    ComponentAdvisory("CVE-2026-47483", _PPROF, _BULLETIN_5857, ("4.8.2",), product="NVIDIA DCGM Exporter"),
)

_EXPORTER_TAG = re.compile(r"(?P<dcgm>[0-9]+\.[0-9]+\.[0-9]+)-(?P<exporter>[0-9]+\.[0-9]+\.[0-9]+)(?:-[0-9A-Za-z.-]+)?")


def exporter_release(tag: str) -> str | None:
    """The exporter release a dcgm-exporter tag names: `4.6.0-4.8.3-distroless` -> 4.8.3 (NVIDIA's DCGM
    release notes, "A DCGM Exporter release tag has the form <dcgm-version>-<dcgm-exporter-version>");
    None for a tag of another shape (a digest, `latest`)."""
    found = _EXPORTER_TAG.fullmatch(tag.strip())
    return found["exporter"] if found else None
