"""The releases of the GPU Operator and its MIG manager on the cluster, against NVIDIA's bulletins, and the
Operator's own age against NVIDIA's life-cycle table (gpu_nodes/advisories.py, OPERATOR_LINES).

gpu-nodes meets them where it hands a cluster's GPUs over (`gpu-nodes:handOver: ClusterPolicy/<name>`
or `GPUCluster/<name>`) or runs beside them (the Operator's toolkit in NRI mode, say). It does not run them, so an
affected release is named, per cluster, as a warning of the allocator check's resource (coexistence.py), not a
failure; an Operator past its end of support is refused where the stack refuses what NVIDIA no longer patches.

Where the release is read (gpu-operator `deployments/gpu-operator/templates/`): the chart writes
its ClusterPolicy and GPUCluster with the `gpu-operator.labels` of `_helpers.tpl`, among them
`app.kubernetes.io/version: <appVersion>` (quoted, `v26.3.1`) and `helm.sh/chart:
gpu-operator-<version>`; `clusterpolicy.yaml` sets `spec.migManager.version` (and `.image`,
`.repository`) from its values and `spec.cdi.enabled` from `cdi.enabled`. An object applied by hand
may carry none of these: its release is then said to be unknown (the check's `unchecked`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpu_nodes.advisories import (
    DCGM_ADVISORIES,
    DCGM_EXPORTER_ADVISORIES,
    DEPRECATED,
    END_OF_SUPPORT,
    GPU_OPERATOR_ADVISORIES,
    MIG_MANAGER_ADVISORIES,
    OPERATOR_LIFECYCLE_SOURCE,
    ComponentAdvisory,
    exporter_release,
    open_component_advisories,
    operator_support,
    release_of,
)
from gpu_nodes.vocabulary import VERSION_LABEL

CHART_LABEL = "helm.sh/chart"
_CHART_PREFIX = "gpu-operator-"


def operator_release(obj: Mapping[str, Any]) -> str | None:
    """The GPU Operator release that made a ClusterPolicy or GPUCluster: its version label, else its chart label."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    version = str(labels.get(VERSION_LABEL) or "")
    chart = str(labels.get(CHART_LABEL) or "")
    if version and release_of(version):
        return release_of(version)
    if chart.startswith(_CHART_PREFIX):
        return release_of(chart.removeprefix(_CHART_PREFIX))
    return None


def mig_manager_release(policy: Mapping[str, Any]) -> str | None:
    """The MIG manager release a ClusterPolicy runs: `spec.migManager.version`, else its image's tag."""
    mig = (policy.get("spec") or {}).get("migManager") or {}
    version = str(mig.get("version") or "")
    if not version and ":" in str(mig.get("image") or ""):
        version = str(mig["image"]).rsplit(":", 1)[1]
    return release_of(version) if version else None


def cdi_enabled(obj: Mapping[str, Any]) -> bool | None:
    """`spec.cdi.enabled` of a ClusterPolicy; None when it does not say."""
    value = ((obj.get("spec") or {}).get("cdi") or {}).get("enabled")
    return value if isinstance(value, bool) else None


def _line(what: str, release: str, rows: list[ComponentAdvisory]) -> str:
    by_bulletin: dict[str, list[ComponentAdvisory]] = {}
    for row in rows:
        by_bulletin.setdefault(row.bulletin, []).append(row)
    parts = [
        f"{', '.join(r.cve for r in found)} ({bulletin}; fixed in {found[0].fixed[-1]})"
        for bulletin, found in by_bulletin.items()
    ]
    return f"{what} is {release}, open to {'; '.join(parts)}: upgrade it (gpu-nodes does not run it)"


def operator_age(policies: Iterable[Mapping[str, Any]], clusters: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(lines for a GPU Operator past its end of support, lines for one deprecated), one per ClusterPolicy or
    GPUCluster whose release NVIDIA's life-cycle table puts there (gpu_nodes/advisories.py, OPERATOR_LINES). A
    release that cannot be read is said by `operator_advisories`."""
    ended: list[str] = []
    deprecated: list[str] = []
    for kind, objects in (("ClusterPolicy", policies), ("GPUCluster", clusters)):
        for obj in objects:
            release = operator_release(obj)
            if release is None:
                continue
            what = f"the GPU Operator of {kind}/{(obj.get('metadata') or {}).get('name')} is {release}"
            status = operator_support(release)
            if status == END_OF_SUPPORT:
                ended.append(
                    f"{what}, past its end of support: NVIDIA no longer patches it, not even for a CVE "
                    f"({OPERATOR_LIFECYCLE_SOURCE}); upgrade it, one major version at a time (gpu-nodes does not run it)"
                )
            elif status == DEPRECATED:
                deprecated.append(
                    f"{what}, deprecated: NVIDIA patches it only for critical bugs and CVEs until its next major version "
                    f"({OPERATOR_LIFECYCLE_SOURCE}); plan its upgrade (gpu-nodes does not run it)"
                )
    return ended, deprecated


def operator_advisories(
    policies: Iterable[Mapping[str, Any]], clusters: Iterable[Mapping[str, Any]]
) -> tuple[list[str], list[str]]:
    """(warnings, releases that could not be read): one line per ClusterPolicy, GPUCluster or MIG
    manager whose release NVIDIA's bulletins name."""
    warnings: list[str] = []
    unknown: list[str] = []
    for kind, objects in (("ClusterPolicy", policies), ("GPUCluster", clusters)):
        for obj in objects:
            name = (obj.get("metadata") or {}).get("name")
            what = f"the GPU Operator of {kind}/{name}"
            # A GPUCluster hands out GPUs through the DRA driver, whose devices are CDI devices.
            cdi = cdi_enabled(obj) if kind == "ClusterPolicy" else True
            release = operator_release(obj)
            if release is None:
                unknown.append(
                    f"{what}: its release is not on it ({VERSION_LABEL} or {CHART_LABEL}), so NVIDIA's bulletins were not checked"
                )
            elif rows := open_component_advisories(GPU_OPERATOR_ADVISORIES, release, cdi=cdi):
                warnings.append(_line(what, release, rows))
            if kind == "ClusterPolicy":
                warnings += _mig_manager_lines(obj, str(name), cdi, unknown)
                warnings += _dcgm_lines(obj, str(name), unknown)
    return warnings, unknown


def _dcgm_lines(policy: Mapping[str, Any], name: str, unknown: list[str]) -> list[str]:
    """The Operator's dcgm-exporter (on unless `spec.dcgmExporter.enabled` is false) and its DCGM (off unless
    `spec.dcgm.enabled`), judged against the bulletins gpu-nodes' own proof images are held to. The image is
    `repository/image:version` (gpu-operator api/nvidia/v1/clusterpolicy_types.go, imagePath); a version that is a
    digest cannot be judged."""
    spec = policy.get("spec") or {}
    lines = []
    for field, what, advisories, enabled_by_default in (
        ("dcgmExporter", "dcgm-exporter", DCGM_EXPORTER_ADVISORIES, True),
        ("dcgm", "DCGM", DCGM_ADVISORIES, False),
    ):
        # A ClusterPolicy that does not name the part (one applied by hand) leaves it to the Operator's defaults,
        # which its own release is judged by above.
        part = spec.get(field) or {}
        if not part or not part.get("enabled", enabled_by_default):
            continue
        where = f"the {what} of ClusterPolicy/{name}"
        version = str(part.get("version") or "")
        release = exporter_release(version) if advisories is DCGM_EXPORTER_ADVISORIES else release_of(version)
        if release is None:
            unknown.append(
                f"{where}: spec.{field}.version {version or '(none)'} names no release, so NVIDIA's bulletins were not checked"
            )
        elif rows := open_component_advisories(advisories, release):
            lines.append(_line(f"{where} (spec.{field}.version {version})", release, rows))
    return lines


def _mig_manager_lines(policy: Mapping[str, Any], name: str, cdi: bool | None, unknown: list[str]) -> list[str]:
    mig = (policy.get("spec") or {}).get("migManager") or {}
    if mig.get("enabled") is False or not mig:
        return []
    what = f"the MIG manager of ClusterPolicy/{name}"
    release = mig_manager_release(policy)
    if release is None:
        unknown.append(f"{what}: spec.migManager names no release, so NVIDIA's bulletins were not checked")
        return []
    rows = open_component_advisories(MIG_MANAGER_ADVISORIES, release, cdi=cdi)
    return [_line(f"{what} (CDI {'on' if cdi else 'not said off'})", release, rows)] if rows else []
