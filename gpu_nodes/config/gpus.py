"""Reading the GPU-shaped settings of a group: the Jobs' GPU counts and MIG resources, the MIG
layout, the XIDs to ignore, and the checks between them and the GPU facts settings.

Part of gpu_nodes/config/parse.py's reading; one problem per mistake, named by its key.
"""

from __future__ import annotations

import re
from typing import Any

from gpu_nodes.config.fields import MISSING, Problems, Section, Setting
from gpu_nodes.config.pod_settings import read_xids
from gpu_nodes.config.specs import DevicePluginSpec, NodeGroupSpec, VerificationSpec
from gpu_nodes.constants import MAX_MIG_DEVICES_PER_GPU
from gpu_nodes.vocabulary import FEATURE_LABEL_KEYS, mig_resource

# mig-parted's profiles (pkg/types/mig_profile.go ParseMigProfile): "<g>g.<memory>gb", and "+me" for
# the media extensions, its one attribute (AttributeMediaExtensions).
_MIG_PROFILE = re.compile(r"[1-7]g\.[0-9]+gb(\+me)?")
_MIG_RESOURCE = re.compile(r"nvidia\.com/mig-[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def parse_verification(
    problems: Problems, key: str, raw: dict[str, Any], gpus_per_node: int | None, mig_strategy: str | None
) -> VerificationSpec | None:
    section = Section(
        problems,
        key,
        raw,
        VerificationSpec,
        hooks={
            "mig_resources": lambda v, s: _parse_mig_resources(v, s, gpus_per_node, mig_strategy),
            "gpus_per_pod": lambda v, s: _parse_gpus_per_pod(v, s, gpus_per_node, mig_strategy),
        },
    )
    # In this order: gpusPerPod may be empty when migResources is not.
    section["mig_resources"]
    section["gpus_per_pod"]
    return section.build()


def _parse_gpus_per_pod(
    section: Section[VerificationSpec], s: Setting, gpus_per_node: int | None, mig_strategy: str | None
) -> tuple[int, ...]:
    key = f"{section.key}.{s.key}"
    counts = section.fields.read(s)
    # Time-slicing replicas do not count: a pod must see as many distinct GPUs as it asks for.
    # With single, every MIG device is one nvidia.com/gpu.
    per_gpu = MAX_MIG_DEVICES_PER_GPU if mig_strategy == "single" else 1
    limit = gpus_per_node * per_gpu if gpus_per_node is not None else None
    limit_text = f"gpusPerNode ({gpus_per_node})" if per_gpu == 1 else f"{limit} ({per_gpu} MIG devices per GPU)"
    gpus_per_pod: list[int] = []
    for index, count in enumerate(counts or []):
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            section.problems.add(f"{key}[{index}]", count, "expected a whole number of at least 1")
        elif limit is not None and count > limit:
            section.problems.add(f"{key}[{index}]", count, f"expected at most {limit_text}")
        elif count in gpus_per_pod:
            section.problems.add(f"{key}[{index}]", count, "each GPU count may be listed once")
        else:
            gpus_per_pod.append(count)
    # With mixed, a group whose GPUs are all in MIG mode has no nvidia.com/gpu to ask for.
    if counts is not None and not counts and not section["mig_resources"]:
        section.problems.add(key, counts, "expected at least one GPU count, e.g. [1] or [1, 2]")
    return tuple(gpus_per_pod)


def _parse_mig_resources(
    section: Section[VerificationSpec], s: Setting, gpus_per_node: int | None, mig_strategy: str | None
) -> tuple[tuple[str, int], ...]:
    """MIG resources the Jobs request: needed with mixed, where MIG GPUs are no nvidia.com/gpu."""
    key = f"{section.key}.{s.key}"
    problems = section.problems
    raw = section.fields.read(s)
    if mig_strategy == "mixed" and not raw:
        problems.add(
            key,
            MISSING if raw is None else raw,
            "with devicePlugin.migStrategy 'mixed' MIG GPUs are advertised only as nvidia.com/mig-<profile>: list "
            'the MIG resources to verify and how many each Job requests, e.g. {"nvidia.com/mig-1g.5gb": 1}',
        )
        return ()
    if raw is None:
        return ()
    if mig_strategy != "mixed":
        problems.add(
            key,
            raw,
            "only with devicePlugin.migStrategy 'mixed' (with 'single' MIG devices are nvidia.com/gpu: use gpusPerPod)",
        )
        return ()
    limit = gpus_per_node * MAX_MIG_DEVICES_PER_GPU if gpus_per_node is not None else None
    resources: list[tuple[str, int]] = []
    for resource, count in sorted(raw.items(), key=lambda item: str(item[0])):
        if not isinstance(resource, str) or not _MIG_RESOURCE.fullmatch(resource) or len(resource) > 11 + 63:
            problems.add(
                f"{key}.{resource}", resource, "expected a MIG resource name nvidia.com/mig-<profile>, e.g. nvidia.com/mig-1g.5gb"
            )
        elif not isinstance(count, int) or isinstance(count, bool) or count < 1:
            problems.add(f"{key}.{resource}", count, "expected a whole number of at least 1")
        elif limit is not None and count > limit:
            per_gpu = f"{MAX_MIG_DEVICES_PER_GPU} MIG devices per GPU"
            problems.add(f"{key}.{resource}", count, f"expected at most {limit} ({per_gpu})")
        else:
            resources.append((resource, count))
    return tuple(resources)


def check_gpu_facts_settings(problems: Problems, key: str, group: Section[NodeGroupSpec]) -> None:
    """The GPU facts come from preflight; their labels are ours alone to write."""
    preflight = group["preflight"]
    preflight_on = preflight.clean and preflight["enabled"] is True
    if group["gpu_model"] is not None and not preflight_on:
        problems.add(f"{key}.gpuModel", group["gpu_model"], "needs preflight, which reads each machine's GPU model")
    if group["gpu_feature_labels"] is True and preflight_on:
        for label in sorted(dict(group["labels"] or ()).keys() & set(FEATURE_LABEL_KEYS)):
            problems.add(
                f"{key}.labels.{label}",
                dict(group["labels"])[label],
                "is written from preflight's facts (gpuFeatureLabels): remove it here, or set gpuFeatureLabels false",
            )


def check_mig_resources_in_layout(problems: Problems, key: str, group: Section[NodeGroupSpec]) -> None:
    """Under mixed MIG, a Job that asks for a profile the declared layout lacks would never schedule."""
    plugin, verification = group["device_plugin"], group["verification"]
    if not plugin.clean or verification is None or not plugin["mig_devices"] or group["gpus_per_node"] is None:
        return
    offered = {mig_resource(profile): n * group["gpus_per_node"] for profile, n in plugin["mig_devices"]}
    for resource, count in verification.mig_resources or ():
        if resource not in offered:
            layout = ", ".join(sorted(offered))
            problems.add(
                f"{key}.verification.migResources.{resource}", resource, f"expected one of devicePlugin.migDevices: {layout}"
            )
        elif count > offered[resource]:
            problems.add(
                f"{key}.verification.migResources.{resource}",
                count,
                f"expected at most {offered[resource]}, the {resource} devicePlugin.migDevices puts on a node",
            )


def check_jobs_fit_the_sharing(problems: Problems, key: str, group: Section[NodeGroupSpec]) -> None:
    """A Job must get as many distinct GPUs as it asks for: time-slicing may hand it one GPU twice
    (README, Troubleshooting), and a single MIG layout offers only so many devices per node."""
    plugin, verification, gpus_per_node = group["device_plugin"], group["verification"], group["gpus_per_node"]
    if not plugin.clean or verification is None or gpus_per_node is None:
        return
    replicas, layout = plugin["time_slicing_replicas"], plugin["mig_devices"]
    for index, count in enumerate(verification.gpus_per_pod):
        here = f"{key}.verification.gpusPerPod[{index}]"
        if count > 1 and replicas > 1:
            problems.add(
                here,
                count,
                f"with devicePlugin.timeSlicingReplicas {replicas} a multi-GPU pod may get one GPU twice: keep "
                "gpusPerPod at [1] for a time-sliced group, or set timeSlicingReplicas to 1",
            )
        elif plugin["mig_strategy"] == "single" and layout and count > gpus_per_node * sum(n for _, n in layout):
            offered = gpus_per_node * sum(n for _, n in layout)
            problems.add(
                here,
                count,
                f"expected at most {offered}: the MIG devices devicePlugin.migDevices puts on a node "
                f"({gpus_per_node} GPUs x {sum(n for _, n in layout)})",
            )


def parse_ignored_xids(section: Section[DevicePluginSpec], s: Setting) -> tuple[int, ...]:
    key = f"{section.key}.{s.key}"
    xids = read_xids(section.problems, key, section.fields.read(s))
    if xids and section["health_checks"] is False:
        section.problems.add(key, list(xids), "has no effect with healthChecks false (no XID is checked)")
    return xids


def parse_mig_devices(section: Section[DevicePluginSpec], s: Setting) -> tuple[tuple[str, int], ...]:
    """The MIG layout of each GPU, profile -> devices, as nvidia-mig-parted writes it."""
    key = f"{section.key}.{s.key}"
    raw = section.fields.read(s)
    if not raw:
        return ()
    strategy = section["mig_strategy"]
    if strategy == "none":
        section.problems.add(key, raw, "only with devicePlugin.migStrategy 'single' or 'mixed'")
        return ()
    devices: list[tuple[str, int]] = []
    for profile, count in sorted(raw.items(), key=lambda item: str(item[0])):
        if not isinstance(profile, str) or not _MIG_PROFILE.fullmatch(profile):
            section.problems.add(
                f"{key}.{profile}", profile, "expected a MIG profile such as 1g.10gb, 3g.40gb or 1g.10gb+me (media extensions)"
            )
        elif not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_MIG_DEVICES_PER_GPU:
            section.problems.add(f"{key}.{profile}", count, f"expected 1 to {MAX_MIG_DEVICES_PER_GPU} devices per GPU")
        else:
            devices.append((profile, count))
    if strategy == "single" and len(raw) > 1:
        section.problems.add(key, raw, "migStrategy 'single' needs one profile on every GPU; use 'mixed' for several")
    elif sum(n for _, n in devices) > MAX_MIG_DEVICES_PER_GPU:
        section.problems.add(key, raw, f"expected at most {MAX_MIG_DEVICES_PER_GPU} MIG devices per GPU in all")
    return tuple(devices)
