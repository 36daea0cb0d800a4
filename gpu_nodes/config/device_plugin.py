"""The group's `devicePlugin` section: how the NVIDIA device plugin runs on the group's nodes (its
image, MIG strategy and layout, how it shares a GPU (time-slicing or MPS), health checks, pod
settings, its 2026 settings (allocation policy, CDI feature flags and hooks, device discovery) and the
IMEX channels it injects), and its reader."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Final, Literal, TypedDict, get_args

from gpu_nodes.advisories import DEVICE_PLUGIN_CVES
from gpu_nodes.config.checks import (
    CDI_HOOK,
    COUNT_OR_PERCENT,
    DIRECTORY,
    TAINT_EFFECTS,
    PullPolicy,
    image_setting,
    is_label_key,
    is_label_value,
    namespace_setting,
    pull_policy_setting,
)
from gpu_nodes.config.fields import Component, Need, Parse, between, section, setting
from gpu_nodes.config.problems import Problem, Problems, Severity
from gpu_nodes.constants import MAX_MIG_DEVICES_PER_GPU
from gpu_nodes.vocabulary import (
    GPU_RESOURCE,
    MPS,
    SHARED_GPU_RESOURCE,
    TIME_SLICING,
    GpuSharing,
    MigStrategy,
    SharingStrategy,
    mig_resource,
)

# The newest release: v0.20.1 (2026-09-22; its changelog: NodeFeature CR delete rights and
# component-specific selector labels in the chart, vGPU and GFD parsing guards, the toolkit module
# bumped to v1.20.1; no environment variable or config field we set changed, and the chart's
# device-plugin template keeps the defaults we follow).
DEFAULT_DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.1"
DEFAULT_DEVICE_PLUGIN_NAMESPACE = "nvidia-device-plugin"
# The program the device plugin's CDI specs run as hooks, by default (k8s-device-plugin
# api/config/v1/consts.go, DefaultNvidiaCTKPath), where the toolkit's packages install it.
DEFAULT_CDI_HOOK_PATH = "/usr/bin/nvidia-ctk"
MIG_STRATEGIES: tuple[MigStrategy, ...] = get_args(MigStrategy)


# A MIG profile as the plugin (v0.20.0) names a MIG device, go-nvlib's MigProfileInfo.String
# (pkg/nvlib/device/mig_profile.go, as k8s-device-plugin vendors it): "<g>g.<memory>gb", or
# "<c>c.<g>g.<memory>gb" for a compute instance smaller than its GPU instance (C != G), then at most
# one attribute: "+me", "+me.all", "+gfx" (Attributes) or "-me" (NegAttributes). NewMigProfile maps
# NVML's profile ids to 1, 2, 3, 4, 6, 7 or 8 slices, and to those four attributes only. The memory
# is a whole number of GB (getMigMemorySizeGB), written without leading zeros.
_MIG_PROFILE = re.compile(r"(?:(?P<c>[1-46-8])c\.)?(?P<g>[1-46-8])g\.[1-9][0-9]*gb(?:\+(?:me|me\.all|gfx)|-me)?")
MIG_PROFILE_FORMS = (
    "<g>g.<memory>gb (1g.10gb, 3g.40gb) or <c>c.<g>g.<memory>gb with c < g (1c.3g.40gb), <g> and <c> one of "
    "1, 2, 3, 4, 6, 7, 8, optionally followed by one of +me, -me, +me.all, +gfx (1g.10gb+me)"
)
# DP_ENABLE_HEALTHCHECKS's word for every XID (k8s-device-plugin internal/rm/health.go, newHealthCheckXIDs).
ALL_XIDS: Final = "all"
# The largest XID the plugin reads: strconv.ParseUint(…, 10, 64) in newHealthCheckXIDs; it skips others.
_MAX_XID = 2**64 - 1
# A toleration's keys and operators, as the pod spec takes them (core/v1 Toleration).
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TOLERATION_OPERATORS = ("Equal", "Exists")
_QUANTITY = re.compile(r"[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")
_RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage")
# A container's resources, as the pod spec takes them: each a map of resource name to quantity.
RESOURCE_PARTS = ("requests", "limits")


class Toleration(TypedDict, total=False):
    """A toleration as the pod spec takes it (core/v1 Toleration): what the reader lets through."""

    key: str
    operator: str
    value: str
    effect: str
    tolerationSeconds: int


class ResourceRequirements(TypedDict, total=False):
    """A container's resources as the pod spec takes them: each part a map of resource name to quantity."""

    requests: dict[str, str]
    limits: dict[str, str]


def mig_profile_problem(profile: object) -> str | None:
    """Why profile is not a MIG profile the plugin can name; None when it is."""
    found = _MIG_PROFILE.fullmatch(profile) if isinstance(profile, str) else None
    if found is None or (found["c"] is not None and int(found["c"]) >= int(found["g"])):
        return f"expected a MIG profile as the device plugin names it: {MIG_PROFILE_FORMS}"
    return None


def is_compute_instance_profile(profile: str) -> bool:
    """`1c.3g.40gb`: a compute instance smaller than its GPU instance."""
    found = _MIG_PROFILE.fullmatch(profile)
    return found is not None and found["c"] is not None


def read_mig_devices(problems: Problems, key: str, raw: dict[object, object] | None) -> tuple[tuple[str, int], ...]:
    """The MIG layout of each GPU, profile -> devices, as nvidia-mig-parted writes it."""
    devices: list[tuple[str, int]] = []
    for profile, count in sorted((raw or {}).items(), key=lambda item: str(item[0])):
        problem = mig_profile_problem(profile)
        if problem:
            problems.add(f"{key}.{profile}", profile, problem)
        elif not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_MIG_DEVICES_PER_GPU:
            problems.add(f"{key}.{profile}", count, f"expected 1 to {MAX_MIG_DEVICES_PER_GPU} devices per GPU")
        else:
            devices.append((str(profile), count))
    if sum(n for _, n in devices) > MAX_MIG_DEVICES_PER_GPU:
        problems.add(key, raw, f"expected at most {MAX_MIG_DEVICES_PER_GPU} MIG devices per GPU in all")
    return tuple(devices)


def read_enabled_xids(problems: Problems, key: str, raw: object) -> tuple[int, ...] | Literal["all"]:
    """A list of XIDs, or `all` (ALL_XIDS)."""
    if raw is None:
        return ()
    if raw == ALL_XIDS:
        return ALL_XIDS
    if not isinstance(raw, list):
        problems.add(key, raw, "expected a list of XID numbers, e.g. [45], or all")
        return ()
    return read_xids(problems, key, raw)


def read_accepted_plugin_advisories(problems: Problems, key: str, raw: list[object] | None) -> tuple[str, ...]:
    """CVE ids of NVIDIA's device plugin advisories (DEVICE_PLUGIN_ADVISORIES), each once, in the table's order."""
    for index, cve in enumerate(raw or ()):
        if cve not in DEVICE_PLUGIN_CVES:
            problems.add(
                f"{key}[{index}]", cve, f"expected a CVE id of NVIDIA's device plugin advisories: {', '.join(DEVICE_PLUGIN_CVES)}"
            )
    return tuple(cve for cve in DEVICE_PLUGIN_CVES if cve in (raw or ()))


def read_tolerations(problems: Problems, key: str, raw: object) -> tuple[Toleration, ...]:
    """Tolerations as the pod spec takes them, in the order given."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, "expected a list of tolerations, e.g. [{key: example.com/dedicated, operator: Exists}]")
        return ()
    found: list[Toleration] = []
    for index, item in enumerate(raw):
        here = f"{key}[{index}]"
        if not isinstance(item, dict) or not item or set(item) - set(TOLERATION_KEYS):
            problems.add(here, item, f"expected an object with {', '.join(TOLERATION_KEYS)}")
            continue
        problem = _toleration_problem(item)
        if problem:
            problems.add(here, item, problem)
        else:
            found.append(Toleration(**{str(key): value for key, value in item.items()}))  # type: ignore[typeddict-item]
    return tuple(found)


def _toleration_problem(item: dict[object, object]) -> str | None:
    operator = item.get("operator", "Equal")
    if operator not in TOLERATION_OPERATORS:
        return f"expected operator {' or '.join(TOLERATION_OPERATORS)}"
    if "key" in item and not (isinstance(item["key"], str) and is_label_key(item["key"])):
        return "expected a label key as key"
    if "key" not in item and operator != "Exists":
        return "a toleration without a key must have operator Exists (it tolerates every taint)"
    if "value" in item and not isinstance(item["value"], str):
        return "a toleration's value is a string, as a taint's is: quote it (value: \"1\")"
    if any(name in item and not isinstance(item[name], str) for name in ("key", "operator", "effect")):
        return "key, operator and effect are strings"
    if isinstance(value := item.get("value"), str) and not is_label_value(value):
        # The API server takes an Equal toleration's value only as a label value (ValidateTolerations,
        # kubernetes/kubernetes pkg/apis/core/validation/validation.go).
        return "expected a label value as value: at most 63 letters, digits, '-', '_' or '.'"
    if operator == "Exists" and item.get("value") not in (None, ""):
        return "operator Exists takes no value"
    if "effect" in item and item["effect"] not in TAINT_EFFECTS:
        return f"expected effect {', '.join(TAINT_EFFECTS)} (or none: every effect)"
    if "tolerationSeconds" in item:
        seconds = item["tolerationSeconds"]
        if item.get("effect") != "NoExecute" or not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            return "tolerationSeconds is whole seconds, and only with effect NoExecute"
    return None


def read_resources(problems: Problems, key: str, raw: object) -> ResourceRequirements:
    """`{requests: {...}, limits: {...}}` with quantities as strings."""
    if not raw:
        return {}
    if not isinstance(raw, dict) or set(raw) - set(RESOURCE_PARTS):
        problems.add(key, raw, 'expected {requests: {cpu: "50m", memory: 64Mi}, limits: {memory: 128Mi}}')
        return {}
    resources: ResourceRequirements = {}
    for part in RESOURCE_PARTS:
        values = raw.get(part)
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.add(f"{key}.{part}", values, f"expected a map of {', '.join(_RESOURCE_NAMES)} to quantities")
            continue
        for name, quantity in sorted(values.items(), key=lambda item: str(item[0])):
            text = str(quantity) if isinstance(quantity, (int, float)) and not isinstance(quantity, bool) else quantity
            if name not in _RESOURCE_NAMES:
                problems.add(f"{key}.{part}.{name}", name, f"expected one of {', '.join(_RESOURCE_NAMES)}")
            elif not isinstance(text, str) or not _QUANTITY.fullmatch(text):
                problems.add(f"{key}.{part}.{name}", quantity, "expected a Kubernetes quantity such as 50m, 0.5, 64Mi or 1Gi")
            else:
                resources.setdefault(part, {})[str(name)] = text  # type: ignore[misc]  # part is one of RESOURCE_PARTS
    for name, request in sorted(resources.get("requests", {}).items()):
        limit = resources.get("limits", {}).get(name)
        if limit is not None and quantity_value(request) > quantity_value(limit):
            problems.add(
                f"{key}.requests.{name}", request, f"expected at most limits.{name} ({limit}): a request is within its limit"
            )
    return resources


_SUFFIXES = {
    **{
        s: Decimal(1000) ** p
        for s, p in (("n", -3), ("u", -2), ("m", -1), ("", 0), ("k", 1), ("M", 2), ("G", 3), ("T", 4), ("P", 5), ("E", 6))
    },
    **{s: Decimal(1024) ** p for s, p in (("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6))},
}


def quantity_value(text: str) -> Decimal:
    """A quantity's value, as apimachinery's resource.Quantity reads `<number><suffix>`."""
    found = _QUANTITY.fullmatch(text)
    assert found is not None, text
    number = text[: found.start(3)] if found[3] is not None else text
    suffix = found[3] or ""
    if suffix[:1] in ("e", "E") and suffix not in _SUFFIXES:
        return Decimal(text)
    return Decimal(number.lstrip("+")) * _SUFFIXES[suffix]


def read_xids(problems: Problems, key: str, raw: object) -> tuple[int, ...]:
    """XIDs the plugin's health check should ignore, as it takes them: whole numbers."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, "expected a list of XID numbers, e.g. [109]")
        return ()
    xids: list[int] = []
    for index, xid in enumerate(raw):
        # 0 is no XID: the plugin's key for every XID (allXIDs).
        if not isinstance(xid, int) or isinstance(xid, bool) or not 1 <= xid <= _MAX_XID:
            problems.add(f"{key}[{index}]", xid, "expected an XID number, e.g. 109")
        elif xid not in xids:
            xids.append(xid)
    return tuple(sorted(xids))


# The plugin's 2026 settings, each read from k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go (the release
# that introduced each is declared with its setting, `needs`, below).
# --shared-devices-allocation-policy (SHARED_DEVICES_ALLOCATION_POLICY; api/config/v1/consts.go AllocationPolicyDistributed,
# AllocationPolicyPacked; validateFlags refuses any other word): how the plugin picks the GPUs of a request among
# replicas and MIG devices (internal/rm/allocate.go: distributed prefers the GPUs with the fewest replicas allocated,
# packed those with the most). Whole GPUs without replicas keep NVLink-aligned placement whatever it says
# (internal/rm/nvml_manager.go, getPreferredAllocation).
AllocationPolicy = Literal["distributed", "packed"]
ALLOCATION_POLICIES: tuple[AllocationPolicy, ...] = get_args(AllocationPolicy)
# --device-discovery-strategy (DEVICE_DISCOVERY_STRATEGY): validateFlags takes auto, nvml or tegra.
DeviceDiscoveryStrategy = Literal["auto", "nvml", "tegra"]
DEVICE_DISCOVERY_STRATEGIES: tuple[DeviceDiscoveryStrategy, ...] = get_args(DeviceDiscoveryStrategy)
# --cdi-feature-flags (CDI_FEATURE_FLAGS) and --cdi-disable-hooks (CDI_DISABLE_HOOKS): passed to the container toolkit's
# CDI library the plugin vendors (nvidia-container-toolkit v1.20.0, pkg/nvcdi/api.go FeatureFlag and HookName,
# internal/discover/hooks.go), and used only where the plugin writes CDI specs: with a CDI strategy
# (internal/cdi/cdi.go, New: a null handler otherwise). The words each takes, as that library defines them.
CDI_FEATURE_FLAGS = (
    "enable-explicit-driver-libraries",
    "disable-nvsandboxutils",
    "enable-coherent-annotations",
    "disable-multiple-csv-devices",
    "no-additional-gids-for-device-nodes",
    "disable-ipc-discoverer",
)
CDI_HOOKS = (
    "all",
    "create-symlinks",
    "disable-device-node-modification",
    "enable-cuda-compat",
    "update-ldcache",
    "update-application-profile",
    "chmod",
)


def read_words(words: tuple[str, ...], example: str) -> Parse[tuple[str, ...]]:
    """A reader of a list of words from `words`, each once, in the order given."""

    def read(problems: Problems, key: str, raw: object) -> tuple[str, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            problems.add(key, raw, f"expected a list, e.g. [{example}]")
            return ()
        found: list[str] = []
        for index, word in enumerate(raw):
            if not isinstance(word, str) or word not in words:
                problems.add(f"{key}[{index}]", word, f"expected one of {', '.join(words)}")
            elif word not in found:
                found.append(word)
        return tuple(found)

    return read


def read_channel_ids(problems: Problems, key: str, raw: object) -> tuple[int, ...]:
    """The IMEX channels the plugin injects: `[]` or `[0]`, all the plugin takes (api/config/v1/imex.go,
    AssertChannelIDsValid: "channelIDs must be [] or [0]", checked at start by validateFlags)."""
    if raw is None or raw == []:
        return ()
    if raw != [0] or isinstance(raw[0], bool):
        problems.add(key, raw, "expected [] or [0]: the device plugin injects only IMEX channel 0 (its api/config/v1/imex.go)")
        return ()
    return (0,)


@section
class ImexSpec:
    """`devicePlugin.imex`: the IMEX channels the plugin adds to every container it gives GPUs
    (k8s-device-plugin v0.20.0 README "IMEX Support"; internal/imex/imex.go finds
    `/dev/nvidia-caps-imex-channels/channel<N>` in the plugin's container or under its driver root)."""

    channel_ids: tuple[int, ...] = setting(
        "channelIds",
        "the IMEX channels the plugin adds to each container it gives GPUs (`IMEX_CHANNEL_IDS`): `[]` or `[0]`, for "
        'jobs across the machines of an NVLink domain; needs `nvlinkDomain` (see "IMEX and NVLink domains")',
        default=None,
        default_text="`[]` (none)",
        written=Sequence[int],
        parse=read_channel_ids,
        needs=(
            # commit f91cbb94d "Add optional injection of the default IMEX channel" (October 2024), first in
            # v0.17.0-rc.1 (CHANGELOG.md v0.17.0-rc.1): --imex-channel-ids / --imex-required, api/config/v1/imex.go.
            Need(
                Component.DEVICE_PLUGIN,
                "0.17.0",
                "IMEX_CHANNEL_IDS and IMEX_REQUIRED",
                "k8s-device-plugin commit f91cbb94d, released in v0.17.0",
                shown=lambda imex: list(imex.channel_ids),
            ),
        ),
    )
    required: bool = setting(
        "required",
        "the plugin refuses to start on a machine without the channel, rather than leave it out (`IMEX_REQUIRED`)",
        default=False,
    )

    def cross_checks(self) -> Iterator[Problem]:
        if self.required and not self.channel_ids:
            yield Problem("required", True, "channelIds is [] (the plugin's README: no effect then)", severity=Severity.NO_EFFECT)


# How the plugin shares a GPU, as its config file names each way (k8s-device-plugin v0.20.0
# `api/config/v1/sharing.go`: `sharing.timeSlicing`, `sharing.mps`; the two exclude each other, README
# "Shared Access to GPUs"), and as GPU Feature Discovery names them in `nvidia.com/gpu.sharing-strategy`
# (`SharingStrategyTimeSlicing` "time-slicing", `SharingStrategyMPS` "mps": gpu_nodes/preflight/facts.py).
SHARING_STRATEGIES: tuple[SharingStrategy, ...] = get_args(SharingStrategy)
# Time-slicing: ours (upstream sets no upper bound; 1 is "off").
MAX_TIME_SLICING_REPLICAS = 64
# MPS: the plugin reads a shared resource only with 2 or more replicas (`api/config/v1/replicas.go`,
# ReplicatedResource.UnmarshalJSON: "number of replicas must be >= 2"; issue 1548, a `replicas: 1` MPS
# config refused at start, and pull request 1655, which would have allowed it, closed unmerged); its MPS
# control daemon serves at most 48 clients per GPU of compute capability 7.5 or later and 16 below
# (`cmd/mps-control-daemon/mps/device.go`, maxClients and assertReplicas: "invalid MPS configuration",
# since v0.15.0 "Enforce replica limits for MPS sharing"). Preflight checks each machine's GPUs against
# the lower limit (`gpu_nodes/scripts/preflight/69-check-mps.sh`).
MIN_MPS_REPLICAS = 2
MAX_MPS_REPLICAS = 48


# Where the plugin's releases that each sharing setting needs are read: its CHANGELOG.md (k8s-device-plugin, kept
# to v0.15.0; later releases' notes are on their GitHub releases) and the pull requests named.
_CHANGELOG = "k8s-device-plugin CHANGELOG.md"
# The plugin's config file (`CONFIG_FILE`, `version: v1`), which time-slicing, MPS and the MIG strategy are written
# to (gpu_nodes/manifests/device_plugin.py, `plugin_config`): v0.12.0-rc.1, "Add the ability to load the plugin
# configuration from a file", "Add API for specifying time-slicing parameters to support GPU sharing".
_CONFIG_FILE = Need(
    Component.DEVICE_PLUGIN,
    "0.12.0",
    "its config file (CONFIG_FILE, version v1)",
    f"{_CHANGELOG}, v0.12.0-rc.1: the plugin configuration loaded from a file",
)


@section
class SharingSpec:
    """`devicePlugin.sharing`: how many replicas of each GPU the plugin advertises, and how."""

    strategy: SharingStrategy = setting(
        "strategy",
        "CUDA time-slicing (no isolation between the pods sharing a GPU), or CUDA MPS: the plugin's MPS control "
        "daemon runs on each node and gives each pod an equal share of the GPU's memory and compute (see "
        '"Sharing a GPU")',
        default=TIME_SLICING,
        needs=(
            Need(
                Component.DEVICE_PLUGIN,
                "0.12.0",
                "sharing.timeSlicing in its config file",
                f"{_CHANGELOG}, v0.12.0-rc.1: the API for time-slicing parameters",
                when=lambda sharing: sharing.strategy == TIME_SLICING and sharing.shares,
            ),
            Need(
                Component.DEVICE_PLUGIN,
                "0.15.0",
                "sharing.mps in its config file, and its MPS control daemon",
                f"{_CHANGELOG}, v0.15.0-rc.1: support for MPS sharing",
                when=lambda sharing: sharing.strategy == MPS,
            ),
        ),
    )
    replicas: int = setting(
        "replicas",
        "how many pods share each GPU: the node offers `gpusPerNode` x replicas; with `timeSlicing`, 1 is off",
        check=between(
            1,
            MAX_TIME_SLICING_REPLICAS,
            f"expected 1 (off) to {MAX_TIME_SLICING_REPLICAS}; with strategy mps {MIN_MPS_REPLICAS} to {MAX_MPS_REPLICAS}",
            words=f"1-{MAX_TIME_SLICING_REPLICAS}; `mps`: {MIN_MPS_REPLICAS}-{MAX_MPS_REPLICAS}",
        ),
    )
    rename_by_default: bool = setting(
        "renameByDefault",
        f"advertise the replicas as `{SHARED_GPU_RESOURCE}`, which tenants' pods then ask for, in place of `{GPU_RESOURCE}`",
        default=False,
        needs=(
            Need(
                Component.DEVICE_PLUGIN,
                "0.12.0",
                "renameByDefault",
                f"{_CHANGELOG}, v0.12.0-rc.4: TimeSlicing.RenameByDefault",
                when=lambda sharing: sharing.rename_by_default,
            ),
        ),
    )
    # As written; None: the plugin's own default (`refuses_more_than_one`).
    fail_requests_greater_than_one: bool | None = setting(
        "failRequestsGreaterThanOne",
        "the plugin refuses a container that asks for more than one replica (its pod fails with "
        "`UnexpectedAdmissionError`); `false` under `mps` needs plugin v0.20.0",
        default=None,
        default_text="`false`; `true` with `mps`",
        needs=(
            Need(
                Component.DEVICE_PLUGIN,
                "0.12.0",
                "failRequestsGreaterThanOne",
                f"{_CHANGELOG}, v0.12.0-rc.6: a flag FailRequestsGreaterThanOne for TimeSlicing resources",
                when=lambda sharing: sharing.strategy == TIME_SLICING and sharing.fail_requests_greater_than_one is True,
            ),
            # Before v0.20.0 the plugin ignored the field under MPS and refused such requests always (pull request
            # 574); pull request 1762, in v0.20.0, reads it (`api/config/v1/config.go`, NewConfig).
            Need(
                Component.DEVICE_PLUGIN,
                "0.20.0",
                "failRequestsGreaterThanOne false under sharing.mps",
                "k8s-device-plugin PR 1762, released in v0.20.0",
                when=lambda sharing: sharing.strategy == MPS and sharing.fail_requests_greater_than_one is False,
                shown=lambda sharing: False,
            ),
        ),
    )
    # Read from the older spelling, `devicePlugin.timeSlicingReplicas` (not a setting of its own).
    legacy: bool = False

    def cross_checks(self) -> Iterator[Problem]:
        if self.strategy == MPS and not MIN_MPS_REPLICAS <= self.replicas <= MAX_MPS_REPLICAS:
            yield Problem(
                "replicas",
                self.replicas,
                f"expected {MIN_MPS_REPLICAS} to {MAX_MPS_REPLICAS} with strategy mps: the device plugin takes 2 or more, and "
                f"its MPS control daemon serves at most {MAX_MPS_REPLICAS} clients per GPU (16 below compute capability 7.5, "
                "which preflight checks on each machine)",
            )
        if not self.shares:
            for key, value in (
                ("renameByDefault", self.rename_by_default),
                ("failRequestsGreaterThanOne", self.refuses_more_than_one),
            ):
                if value:
                    yield Problem(key, value, "replicas 1 shares nothing (time-slicing is off)", severity=Severity.NO_EFFECT)

    @property
    def refuses_more_than_one(self) -> bool:
        """Whether the plugin refuses a container that asks for more than one replica: as written, else the
        plugin's own default: false for time-slicing (README "With CUDA Time-Slicing": "set to false by default to
        retain backwards compatibility"); true for MPS (`api/config/v1/config.go`, NewConfig: an omitted value is
        true, "the historical MPS behavior", pull request 1762, in v0.20.0)."""
        written = self.fail_requests_greater_than_one
        return self.strategy == MPS if written is None else written

    @property
    def shares(self) -> bool:
        """Whether the plugin advertises replicas at all (MPS always does)."""
        return self.as_shared.shares

    @property
    def resource(self) -> str:
        """The resource a node offers its GPUs as, and a tenant's pod asks for."""
        return SHARED_GPU_RESOURCE if self.shares and self.rename_by_default else GPU_RESOURCE

    @property
    def replicas_key(self) -> str:
        """Where, under devicePlugin, the group's config gives its replicas, for messages: the older spelling
        where it was used."""
        return self.as_shared.replicas_key

    @property
    def as_shared(self) -> GpuSharing:
        """The sharing as the layers above take it: what the config says, and in which setting."""
        setting: Literal["sharing", "timeSlicingReplicas"] = "timeSlicingReplicas" if self.legacy else "sharing"
        return GpuSharing(self.strategy, self.replicas, self.rename_by_default, setting)

    def plugin_config(self) -> dict[str, object]:
        """The plugin's `sharing` section (`api/config/v1/sharing.go`, ReplicatedResources): the one
        resource, `nvidia.com/gpu`, with its replicas; `renameByDefault` and `failRequestsGreaterThanOne`
        only where they differ from what the plugin assumes when they are left out, except MPS's
        `failRequestsGreaterThanOne`, written always (a plugin before v0.20.0 ignores it)."""
        shared: dict[str, object] = {}
        if self.rename_by_default:
            shared["renameByDefault"] = True
        if self.strategy == MPS or self.refuses_more_than_one:
            shared["failRequestsGreaterThanOne"] = self.refuses_more_than_one
        shared["resources"] = [{"name": GPU_RESOURCE, "replicas": self.replicas}]
        return {self.strategy: shared}


def time_slicing(replicas: int | None) -> SharingSpec:
    """`devicePlugin.timeSlicingReplicas: N` as what it always meant: time-slicing with N replicas (1, or
    none given, is off); nothing renamed, no request refused."""
    return SharingSpec(TIME_SLICING, replicas or 1, False, False, legacy=True)


def _has_me_profile(plugin: DevicePluginSpec) -> bool:
    return plugin.mig_strategy != "none" and any("+me" in profile for profile, _ in plugin.mig_devices)


@section
class DevicePluginSpec:
    image: str = image_setting(
        "pinned by tag (not `latest`) or digest; a release NVIDIA's advisories name for the strategy the group uses is "
        'refused unless `acceptAdvisories` names its CVEs (see "Device plugin advisories")',
        DEFAULT_DEVICE_PLUGIN_IMAGE,
    )
    accept_advisories: tuple[str, ...] = setting(
        "acceptAdvisories",
        "NVIDIA's device plugin advisories accepted as a risk for this group's `image`, e.g. `[CVE-2025-23266, "
        "CVE-2025-23267]`: a plugin open only to these is deployed, and a warning names them",
        default=None,
        default_text="none",
        written=Sequence[str],
        parse=read_accepted_plugin_advisories,
    )
    namespace: str = namespace_setting(
        "shared by groups; Pod Security `privileged` (the plugin mounts hostPath)", DEFAULT_DEVICE_PLUGIN_NAMESPACE
    )
    mig_strategy: MigStrategy = setting(
        "migStrategy",
        'the plugin\'s MIG strategy; `mixed` needs `verification.migResources` (see "MIG")',
        default="none",
        needs=(replace(_CONFIG_FILE, when=lambda plugin: plugin.mig_strategy != "none"),),
    )
    # As given (None: not given); what the group shares is `sharing`, which follows it where that is not given.
    time_slicing_replicas: int | None = setting(
        "timeSlicingReplicas",
        "share each GPU N ways by time-slicing: the older spelling of `sharing: {strategy: timeSlicing, replicas: N}`",
        default=None,
        default_text="`1` (off)",
        check=between(1, MAX_TIME_SLICING_REPLICAS, f"expected 1 (time-slicing off) to {MAX_TIME_SLICING_REPLICAS}"),
        needs=(replace(_CONFIG_FILE, when=lambda plugin: (plugin.time_slicing_replicas or 1) > 1),),
    )
    # As written; None: what timeSlicingReplicas says (`sharing`).
    sharing_setting: SharingSpec | None = setting(
        "sharing",
        "",
        default=None,
        default_text="what `timeSlicingReplicas` says (off)",
        row=False,
    )
    fail_on_init_error: bool = setting(
        "failOnInitError", "the plugin's own default: exit when no GPU can be initialised", default=True
    )
    # Per GPU, as nvidia-mig-parted's `mig-devices` under `devices: all` (profile -> count).
    mig_devices: tuple[tuple[str, int], ...] = setting(
        "migDevices",
        'the MIG devices each GPU is split into, e.g. `{"1g.10gb": 7}`: preflight counts them on each GPU and the readiness '
        'checks the exact count (see "MIG")',
        default=None,
        default_text="the count is not checked",
        written=Mapping[str, int],
        parse=read_mig_devices,
        needs=(
            # The verification Jobs ask for the `+me` profiles' resources, which only a plugin that knows them registers.
            Need(
                Component.DEVICE_PLUGIN,
                "0.13.0",
                "MIG devices of a +me profile",
                f"{_CHANGELOG}, v0.13.0-rc.2: support MIG devices with the 1g.10gb+me profile",
                when=_has_me_profile,
                shown=lambda plugin: dict(plugin.mig_devices),
            ),
        ),
    )
    tolerations: tuple[Toleration, ...] = setting(
        "tolerations",
        "more tolerations for the plugin's pods, beside the group's taints and the gate, e.g. "
        "`[{key: example.com/dedicated, operator: Exists}]`",
        default=None,
        default_text="none",
        written=Sequence[Toleration],
        parse=read_tolerations,
    )
    resources: ResourceRequirements = setting(
        "resources",
        "the plugin container's `requests` and `limits`, e.g. `{requests: {cpu: 50m, memory: 64Mi}}`",
        default=None,
        default_text="none (upstream's)",
        written=ResourceRequirements,
        parse=read_resources,
    )
    health_checks: bool = setting(
        "healthChecks",
        "the plugin's XID health checks; `false` (`DP_DISABLE_HEALTHCHECKS=all`) for passthrough or vGPU hosts; "
        'under allocator `dra`, the DRA driver\'s, on where the cluster keeps device taints (see "DRA")',
        default=True,
    )
    image_pull_policy: PullPolicy | None = pull_policy_setting("the plugin's")
    max_unavailable: int | str | None = setting(
        "maxUnavailable",
        "how many nodes' plugin pods a rollout replaces at once (the DaemonSet's `maxUnavailable`)",
        default=None,
        default_text="`1` (Kubernetes')",
        check=COUNT_OR_PERCENT,
    )
    ignored_xids: tuple[int, ...] = setting(
        "ignoredXids",
        "XIDs that do not make a GPU unhealthy, beside the plugin's own list (`DP_DISABLE_HEALTHCHECKS=109,...`)",
        default=None,
        default_text="none",
        written=Sequence[int],
        parse=read_xids,
    )
    # A list of XIDs, or ALL_XIDS.
    enabled_xids: tuple[int, ...] | Literal["all"] = setting(
        "enabledXids",
        "XIDs that make a GPU unhealthy although the plugin's own list ignores them (13, 31, 43, 45, 68, 109) or "
        "`ignoredXids` would; `all` for every XID (`DP_ENABLE_HEALTHCHECKS`, plugin v0.18+)",
        default=None,
        default_text="none",
        written=Sequence[int] | Literal["all"] | None,
        parse=read_enabled_xids,
        needs=(
            # k8s-device-plugin PR 1443 (merged October 2025, "Add support for explicitly enabling XIDs in health
            # checks"): DP_ENABLE_HEALTHCHECKS, mirroring DP_DISABLE_HEALTHCHECKS; first released in v0.18.0.
            Need(
                Component.DEVICE_PLUGIN,
                "0.18.0",
                "DP_ENABLE_HEALTHCHECKS",
                "k8s-device-plugin PR 1443, released in v0.18.0",
                when=lambda plugin: bool(plugin.enabled_xids),
                shown=lambda plugin: plugin.enabled_xids if isinstance(plugin.enabled_xids, str) else list(plugin.enabled_xids),
            ),
        ),
    )
    driver_root: str = setting(
        "driverRoot",
        "where the NVIDIA driver is installed on the machines: `/`, or `/run/nvidia/driver` where the driver runs in "
        "a container (the GPU Operator's); with `gpuAccess: cdi` it is mounted at `/driver-root` for the plugin's "
        'CDI specs (see "How tenants get their GPUs")',
        default="/",
        check=DIRECTORY,
    )
    # The plugin's DaemonSet then has a node affinity off the MIG manager's pause (manifests/device_plugin.py); without
    # it the DaemonSet is as before, so that a stack with no MIG manager sees no change of its plugin pods.
    pause_for_mig_manager: bool = setting(
        "pauseForMigManager",
        "step off a node while NVIDIA's MIG manager (the GPU Operator's) reconfigures its GPUs, as the Operator's own "
        "plugin does, and come back after (`nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change`; see "
        '"Beside the GPU Operator")',
        default=False,
    )
    cdi_hook_path: str = setting(
        "cdiHookPath",
        "with `gpuAccess: cdi`: the `nvidia-ctk` (or `nvidia-cdi-hook`) on the machines that the CDI specs' hooks "
        "run; preflight checks each machine has it",
        default=DEFAULT_CDI_HOOK_PATH,
        check=CDI_HOOK,
    )
    # The plugin's --device-id-strategy (cmd/nvidia-device-plugin/main.go: `DEVICE_ID_STRATEGY`, `uuid | index`, uuid by
    # default): how it names each GPU it hands a container (NVIDIA_VISIBLE_DEVICES, the volume mounts, the CDI device
    # names). Unset, the plugin's default, and no variable is written.
    device_id_strategy: Literal["uuid", "index"] | None = setting(
        "deviceIdStrategy",
        "how the plugin names the GPUs it hands a container (`DEVICE_ID_STRATEGY`): by `uuid`, or by `index` where a "
        "GPU has no UUID the runtime can name (NVIDIA's Tegra parts)",
        default=None,
        default_text="`uuid` (the plugin's)",
        needs=(
            Need(
                Component.DEVICE_PLUGIN,
                "0.9.0",
                "DEVICE_ID_STRATEGY",
                f"{_CHANGELOG}, v0.9.0: GPUs passed by device index instead of UUID",
            ),
        ),
    )
    allocation_policy: AllocationPolicy | None = setting(
        "allocationPolicy",
        "how the plugin picks among shared replicas and MIG devices: spread over the GPUs, or packed onto the fewest "
        "(`SHARED_DEVICES_ALLOCATION_POLICY`); only with sharing or MIG",
        default=None,
        default_text="the plugin's (`distributed`)",
        needs=(
            # commit 88a79d7e9 "Add configurable allocation policy (packed/distributed) for replicated and MIG
            # resources (#1621)", July 2026, first in v0.20.0 (CHANGELOG.md v0.20.0).
            Need(
                Component.DEVICE_PLUGIN,
                "0.20.0",
                "SHARED_DEVICES_ALLOCATION_POLICY",
                "k8s-device-plugin PR 1621, released in v0.20.0",
            ),
        ),
    )
    cdi_feature_flags: tuple[str, ...] = setting(
        "cdiFeatureFlags",
        "features of the CDI specs the plugin writes, e.g. `[disable-ipc-discoverer]` (`CDI_FEATURE_FLAGS`); only with "
        "`gpuAccess: cdi`",
        default=None,
        default_text="none",
        written=Sequence[str],
        parse=read_words(CDI_FEATURE_FLAGS, "disable-ipc-discoverer"),
        needs=(
            # On the release-0.18 line v0.18.1 added the flag ("Allow CDI feature flags to be set") but passed it to no
            # CDI library until v0.18.2 ("Ensure that cdi.FeatureFlags are passed to CDI library":
            # cmd/nvidia-device-plugin/plugin-manager.go has cdi.WithFeatureFlags from v0.18.2); on main, commit
            # c82980680 (November 2025), first in v0.19.0. So v0.18.2 is the first release that honours it.
            Need(
                Component.DEVICE_PLUGIN,
                "0.18.2",
                "CDI_FEATURE_FLAGS",
                "k8s-device-plugin CHANGELOG.md v0.18.1 and v0.18.2 (honoured from v0.18.2)",
                shown=lambda plugin: list(plugin.cdi_feature_flags),
            ),
        ),
    )
    cdi_disable_hooks: tuple[str, ...] = setting(
        "cdiDisableHooks",
        "hooks left out of the CDI specs the plugin writes, e.g. `[enable-cuda-compat]`, or `[all]` "
        "(`CDI_DISABLE_HOOKS`); only with `gpuAccess: cdi`",
        default=None,
        default_text="none",
        written=Sequence[str],
        parse=read_words(CDI_HOOKS, "enable-cuda-compat"),
        needs=(
            # commit 32bf0136a "Allow CDI hooks to be disabled" (May 2026), first in v0.20.0.
            Need(
                Component.DEVICE_PLUGIN,
                "0.20.0",
                "CDI_DISABLE_HOOKS",
                "k8s-device-plugin commit 32bf0136a, released in v0.20.0",
                shown=lambda plugin: list(plugin.cdi_disable_hooks),
            ),
        ),
    )
    device_discovery_strategy: DeviceDiscoveryStrategy | None = setting(
        "deviceDiscoveryStrategy",
        "how the plugin finds the GPUs (`DEVICE_DISCOVERY_STRATEGY`): NVML for data-center GPUs, tegra for integrated ones",
        default=None,
        default_text="the plugin's (`auto`)",
        needs=(
            # commit a482e27c1 "Allow device discovery strategy to be specified" (May 2024), first in v0.16.0-rc.1.
            Need(
                Component.DEVICE_PLUGIN,
                "0.16.0",
                "DEVICE_DISCOVERY_STRATEGY",
                "k8s-device-plugin commit a482e27c1, released in v0.16.0",
            ),
        ),
    )
    imex: ImexSpec = setting("imex", "", row=False)

    def cross_checks(self) -> Iterator[Problem]:
        yield from _mig_layout_conflicts(self)
        yield from _health_check_conflicts(self)
        yield from _sharing_conflicts(self)

    @property
    def sharing(self) -> SharingSpec:
        """How the plugin shares each GPU: `sharing` as written, else what `timeSlicingReplicas` says (off without it)."""
        return self.sharing_setting or time_slicing(self.time_slicing_replicas)

    def mig_allocatable(self, gpus_per_node: int) -> dict[str, int] | None:
        """What each node offers under the declared MIG layout; None when none is declared."""
        if self.mig_strategy == "none" or not self.mig_devices:
            return None
        if self.mig_strategy == "single":
            # One profile: every MIG device is one nvidia.com/gpu, shared like a whole GPU.
            return {GPU_RESOURCE: gpus_per_node * sum(n for _, n in self.mig_devices) * self.sharing.replicas}
        return {mig_resource(profile): gpus_per_node * n for profile, n in self.mig_devices}

    @property
    def mig_layout(self) -> str:
        """The declared MIG layout of each GPU as preflight's --mig-devices takes it,
        `1g.10gb=3,2g.20gb=2`; empty when none is declared."""
        return ",".join(f"{profile}={count}" for profile, count in self.mig_devices)

    @property
    def needs_config_file(self) -> bool:
        return self.mig_strategy != "none" or self.sharing.shares


def _sharing_conflicts(plugin: DevicePluginSpec) -> Iterator[Problem]:
    """One spelling of the sharing, and MPS only on whole GPUs."""
    if plugin.time_slicing_replicas is not None and plugin.sharing_setting is not None:
        yield Problem(
            "timeSlicingReplicas",
            plugin.time_slicing_replicas,
            "is the older spelling of devicePlugin.sharing, which is given too: keep sharing only "
            f"(timeSlicingReplicas {plugin.time_slicing_replicas} is sharing: {{strategy: timeSlicing, replicas: "
            f"{plugin.time_slicing_replicas}}})",
        )
    if plugin.sharing.strategy == MPS and plugin.mig_strategy != "none":
        # k8s-device-plugin internal/plugin/mps.go, getMPSOptions: "sharing using MPS is not supported for MIG
        # devices"; README "With CUDA MPS": "not supported on devices with MIG enabled".
        yield Problem(
            "sharing.strategy",
            MPS,
            f"cannot work with devicePlugin.migStrategy {plugin.mig_strategy!r}: the device plugin does not share MIG "
            "devices through MPS; use strategy timeSlicing, or migStrategy none on GPUs out of MIG mode",
        )


def _health_check_conflicts(plugin: DevicePluginSpec) -> Iterator[Problem]:
    """DP_ENABLE_HEALTHCHECKS as the plugin combines it with DP_DISABLE_HEALTHCHECKS
    (k8s-device-plugin v0.20.0 internal/rm/health.go, getDisabledHealthCheckXids): an enabled XID
    wins over the plugin's own list and over a disabled one; `all` enables every XID, the plugin's
    own list and every disabled one included. With DP_DISABLE_HEALTHCHECKS=all the plugin checks
    nothing whatever is enabled: IsAllDisabled looks only at the `all` entry (its comment says
    otherwise), and the health provider is then a no-op. What has no effect, or undoes another
    setting, is refused."""
    ignored, enabled = plugin.ignored_xids, plugin.enabled_xids
    if ignored and not plugin.health_checks:
        yield Problem("ignoredXids", list(ignored), "has no effect with healthChecks false (no XID is checked)")
    if enabled == ALL_XIDS:
        if not plugin.health_checks:
            yield Problem("enabledXids", ALL_XIDS, "contradicts healthChecks false: the plugin would check every XID")
        elif ignored:
            yield Problem("enabledXids", ALL_XIDS, "leaves ignoredXids no effect: the plugin checks every XID, those too")
    elif enabled and not plugin.health_checks:
        yield Problem(
            "enabledXids",
            list(enabled),
            "has no effect with healthChecks false: with DP_DISABLE_HEALTHCHECKS=all the plugin checks no XID",
        )
    elif both := sorted(set(ignored) & set(enabled)):
        yield Problem(
            "enabledXids", list(enabled), f"{', '.join(map(str, both))} also in ignoredXids: an XID is either ignored or enabled"
        )


def _mig_layout_conflicts(plugin: DevicePluginSpec) -> Iterator[Problem]:
    """The layout under the strategy that registers it."""
    layout = dict(plugin.mig_devices)
    if not layout:
        return
    if plugin.mig_strategy == "none":
        yield Problem("migDevices", layout, "only with devicePlugin.migStrategy 'single' or 'mixed'")
    elif plugin.mig_strategy == "single" and len(layout) > 1:
        yield Problem("migDevices", layout, "migStrategy 'single' needs one profile on every GPU; use 'mixed' for several")
    elif plugin.mig_strategy == "mixed":
        for profile in layout:
            if is_compute_instance_profile(profile):
                # AddDefaultResourcesToConfig (k8s-device-plugin internal/rm/rm.go) adds a resource only for
                # profiles whose C == G, and buildMigDeviceMap (internal/rm/device_map.go) stops on a MIG
                # device that matches no resource: the plugin would not start on such a node.
                yield Problem(
                    f"migDevices.{profile}",
                    profile,
                    "under migStrategy mixed the device plugin registers no resource for a compute-instance profile and "
                    "does not start on a GPU that has one: use migStrategy single, or a GPU-instance profile such as "
                    f"{profile.split('.', 1)[1]}",
                )
