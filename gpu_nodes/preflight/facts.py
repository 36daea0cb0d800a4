"""What preflight found on a machine's GPUs: NVIDIA's node labels for it, and whether it agrees with its group.

Workloads select nodes on GPU Feature Discovery's labels (`nvidia.com/gpu.product`, ...), but GFD
publishes only through NFD. Preflight already reads the same facts with `nvidia-smi`, so the
program writes those labels itself, in GFD's keys and formats (k8s-device-plugin
`internal/lm/nvml.go` and `resource.go`; `docs/gpu-feature-discovery/README.md`).

The facts also go on the node as our annotation, so that each node's readiness check can compare
its GPUs with those of the other nodes of its group, read from the cluster, without waiting for
every machine's preflight.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_nodes.vocabulary import (
    FACTS_ANNOTATION,
    GFD_CLIQUE_LABEL,
    GFD_COMPUTE_MAJOR_LABEL,
    GFD_COMPUTE_MINOR_LABEL,
    GFD_COUNT_LABEL,
    GFD_FAMILY_LABEL,
    GFD_LABEL_PREFIX,
    GFD_MACHINE_LABEL,
    GFD_MEMORY_LABEL,
    GFD_MIG_CAPABLE_LABEL,
    GFD_MPS_CAPABLE_LABEL,
    GFD_PRODUCT_LABEL,
    GFD_REPLICAS_LABEL,
    GFD_SHARING_LABEL,
    MPS,
    TIME_SLICING,
    GpuSharing,
    MigStrategy,
    SharingStrategy,
)

# GFD's `nvidia.com/gpu.sharing-strategy` for each way the plugin's config shares a GPU (its keys
# `timeSlicing` and `mps`: api/config/v1/sharing.go, SharingStrategyTimeSlicing and SharingStrategyMPS).
SHARING_LABEL_VALUES: dict[SharingStrategy, str] = {TIME_SLICING: "time-slicing", MPS: "mps"}
# A group whose plugin shares nothing: each GPU one replica.
NOT_SHARED = GpuSharing(TIME_SLICING, 1)
# A Kubernetes label value: what a clique read from the machine must be to be written.
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class GpuFacts:
    """One machine's GPUs as preflight saw them."""

    models: tuple[str, ...]  # distinct, sorted
    memory_mib: tuple[int, ...]  # distinct, sorted
    count: int
    driver_version: str | None = None
    cuda_version: str | None = None
    # From the report's gpuFeatures (None: a report without them, as the state may keep from a
    # script that did not report them, until the machine is checked again).
    machine: str | None = None
    mig_capable: bool | None = None
    clique: str | None = None
    compute_capability: str | None = None  # "9.0", the first GPU's

    @property
    def kind(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """What must agree across a group: the model and the memory."""
        return self.models, self.memory_mib

    def describe(self) -> str:
        memory = "/".join(f"{m} MiB" for m in self.memory_mib)
        return f"{self.count} x {' + '.join(self.models) or 'no GPU'}" + (f" ({memory})" if memory else "")


def facts_from_report(report: Mapping[str, Any]) -> GpuFacts | None:
    """From the preflight script's JSON report; None when it lists no GPU."""
    gpus = report.get("gpus") or []
    if not gpus:
        return None
    features = report.get("gpuFeatures")
    return GpuFacts(
        models=tuple(sorted({str(g.get("name", "")) for g in gpus})),
        memory_mib=tuple(sorted({int(g.get("memoryMiB") or 0) for g in gpus})),
        count=len(gpus),
        driver_version=report.get("driverVersion"),
        cuda_version=report.get("cudaVersion"),
        # GFD labels a machine it cannot name "unknown" (internal/lm/machine-type.go).
        machine=(features.get("machine") or "unknown") if isinstance(features, dict) else None,
        mig_capable=features.get("migCapable") if isinstance(features, dict) else None,
        clique=features.get("clique") if isinstance(features, dict) else None,
        compute_capability=features.get("computeCapability") if isinstance(features, dict) else None,
    )


def annotation(facts: GpuFacts) -> str:
    """The annotation value: compact, key-sorted JSON, the same for the same facts."""
    value = {"count": facts.count, "memoryMiB": list(facts.memory_mib), "models": list(facts.models)}
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=1024)
def from_annotation(value: str | None) -> GpuFacts | None:
    """Facts read back from a node's annotation; None when absent or not ours to read."""
    if not value:
        return None
    try:
        raw = json.loads(value)
        return GpuFacts(
            models=tuple(str(m) for m in raw["models"]),
            memory_mib=tuple(int(m) for m in raw["memoryMiB"]),
            count=int(raw["count"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def node_facts(node: Mapping[str, Any] | None) -> GpuFacts | None:
    annotations = ((node or {}).get("metadata") or {}).get("annotations") or {}
    return from_annotation(annotations.get(FACTS_ANNOTATION))


def product_label(model: str) -> str:
    """GFD's `sanitise`: drop what a label value may not hold, join the words with '-'."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", model).split())[:63].strip("-_.")


# GFD writes each version under its new key and, deprecated, its old one: (new part, old part).
_DRIVER_PARTS = (("major", "major"), ("minor", "minor"), ("revision", "rev"))
_CUDA_PARTS = (("major", "major"), ("minor", "minor"))


def _version_labels(new: str, old: str, version: str | None, parts: Sequence[tuple[str, str]]) -> dict[str, str]:
    if not version:
        return {}
    numbers = version.split(".") + [""] * len(parts)
    labels = {f"{GFD_LABEL_PREFIX}{new}.full": version}
    for (new_part, old_part), number in zip(parts, numbers, strict=False):
        labels[f"{GFD_LABEL_PREFIX}{new}.{new_part}"] = number
        labels[f"{GFD_LABEL_PREFIX}{old}.{old_part}"] = number
    return labels


# GFD's families by compute capability major, as k8s-device-plugin v0.20.0 maps them
# (internal/lm/resource.go getArchFamily; 10 and 12 are both Blackwell; 13, Rubin, came in v0.20.0:
# its CHANGELOG, "Add support for the Rubin architecture family (#1909)"). 7 and 8 split by minor
# below; a major not here (4, 11, 14, ...) is "undefined", as GFD writes it.
_ARCH_FAMILIES = {
    1: "tesla",
    2: "fermi",
    3: "kepler",
    5: "maxwell",
    6: "pascal",
    9: "hopper",
    10: "blackwell",
    12: "blackwell",
    13: "rubin",
}


def arch_family(major: int, minor: int) -> str:
    """GFD's getArchFamily (k8s-device-plugin internal/lm/resource.go): _ARCH_FAMILIES, and 7.x
    volta below 7.5, turing from it; 8.x ampere below 8.9, ada-lovelace from it."""
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return _ARCH_FAMILIES.get(major, "undefined")


def _architecture_labels(capability: str | None) -> dict[str, str]:
    """None, or a major of 0, writes none, as GFD does."""
    if not capability or not re.fullmatch(r"[0-9]+\.[0-9]+", capability):
        return {}
    major, minor = (int(part) for part in capability.split("."))
    if major == 0:
        return {}
    return {GFD_FAMILY_LABEL: arch_family(major, minor), GFD_COMPUTE_MAJOR_LABEL: str(major), GFD_COMPUTE_MINOR_LABEL: str(minor)}


def feature_labels(facts: GpuFacts, mig_strategy: MigStrategy, sharing: GpuSharing = NOT_SHARED) -> dict[str, str]:
    """GFD's labels for what preflight knows. Under MIG, GFD describes the MIG devices in the
    product, count and memory labels, which preflight does not read: then only the versions.

    sharing: devicePlugin.sharing's (or timeSlicingReplicas'). GFD (`internal/lm/resource.go` baseLabeler)
    writes `gpu.replicas` and `gpu.sharing-strategy` (1 and none when the plugin's config shares nothing,
    else the replicas and `time-slicing` or `mps`), and appends SHARED to the product of a shared resource
    that is not renamed (getProductName, isRenamed: renameByDefault gives each resource its `.shared`
    name). Under MPS also `mps.capable` true (`internal/lm/nvml.go` newSharingLabeler: true with an MPS
    config and no GPU in MIG mode, which preflight's mps check makes sure of); GFD writes false on other
    nodes, which we leave unwritten (no label of ours changes on a group that does not use MPS).

    From the report's gpuFeatures, whatever the MIG strategy (they describe the machine):
    `gpu.machine` (the DMI product name, `machine-type.go`; sanitised as the product is, since
    a name such as "To Be Filled By O.E.M." is no valid label value as GFD writes it),
    `mig.capable` (`nvml.go`) and `gpu.clique` (`imex.go`, only on an NVLink fabric).

    With the first GPU's compute capability, and like GFD for whole GPUs only (not under MIG):
    `gpu.family`, `gpu.compute.major` and `gpu.compute.minor` (`newArchitectureLabels`)."""
    labels = {
        **_version_labels("cuda.driver-version", "cuda.driver", facts.driver_version, _DRIVER_PARTS),
        **_version_labels("cuda.runtime-version", "cuda.runtime", facts.cuda_version, _CUDA_PARTS),
    }
    if facts.machine is not None:
        labels[GFD_MACHINE_LABEL] = product_label(facts.machine)
    if facts.mig_capable is not None:
        labels[GFD_MIG_CAPABLE_LABEL] = "true" if facts.mig_capable else "false"
    if facts.clique and _LABEL_VALUE.fullmatch(facts.clique):
        labels[GFD_CLIQUE_LABEL] = facts.clique
    if sharing.strategy == MPS:
        labels[GFD_MPS_CAPABLE_LABEL] = "true"
    if mig_strategy == "none":
        # GFD labels a node by its first GPU; a node of mixed models fails the group check anyway.
        suffix = "-SHARED" if sharing.shares and not sharing.renamed else ""
        labels[GFD_PRODUCT_LABEL] = product_label(facts.models[0]) + suffix
        labels[GFD_MEMORY_LABEL] = str(facts.memory_mib[0])
        labels[GFD_COUNT_LABEL] = str(facts.count)
        labels[GFD_REPLICAS_LABEL] = str(sharing.replicas)
        labels[GFD_SHARING_LABEL] = SHARING_LABEL_VALUES[sharing.strategy] if sharing.shares else "none"
        labels.update(_architecture_labels(facts.compute_capability))
    return dict(sorted(labels.items()))


def disagreement(node: str, group: Mapping[str, GpuFacts | None]) -> str | None:
    """Why `node`'s GPUs do not match its group's (None when they do, or are not known yet).

    `group` maps every node of the group, in the group's order, to its facts (None: not checked
    yet). The reference is the kind most nodes have, ties going to the one listed first. (A
    declared gpuModel is checked by preflight, on each machine alone.)"""
    own = group.get(node)
    if own is None:
        return None
    if len(own.models) > 1:
        return f"node {node} has GPUs of {len(own.models)} models: {own.describe()}"
    known = {name: facts for name, facts in group.items() if facts is not None}
    # A Counter keeps the order kinds were first seen in, and max keeps the first of equals.
    counts = Counter(facts.kind for facts in known.values())
    reference = max(counts, key=counts.__getitem__)
    if own.kind == reference:
        return None
    others = [name for name, facts in known.items() if facts.kind == reference]
    example = known[others[0]]
    return (
        f"node {node} has {own.describe()}, unlike {len(others)} of the group's {len(known)} checked nodes "
        f"({', '.join(others[:5])}{', ...' if len(others) > 5 else ''}), which have {example.describe()}: "
        "move it to a group of its own, or declare the group's gpuModel"
    )
