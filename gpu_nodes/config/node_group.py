"""The node group: its machines, labels, taints, how tenants get its GPUs, its priority class, the
sections it holds (device plugin, verification, preflight), and the checks that weigh the sections'
settings against each other once each has been read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final, Literal, get_args

import pulumi

from gpu_nodes.advisories import (
    DCGM_ADVISORIES,
    DCGM_EXPORTER_ADVISORIES,
    DEVICE_PLUGIN_ADVISORIES,
    DRA_DRIVER_FLOOR,
    DRA_DRIVER_FLOOR_SOURCE,
    DRA_DRIVER_RELEASE,
    ComponentAdvisory,
    exporter_release,
    open_component_advisories,
    release_of,
    version_key,
)
from gpu_nodes.bandwidth_floors import floor_for
from gpu_nodes.config.checks import (
    GPU_MODEL,
    HOST_KEY,
    PORT,
    SSH_HOST,
    SSH_USER,
    TAINT_EFFECTS,
    image_tag,
    is_dns_label,
    is_dns_subdomain,
    is_label_key,
    is_label_value,
    parse_taint,
    reserved_key_owner,
)
from gpu_nodes.config.device_plugin import DevicePluginSpec, SharingSpec
from gpu_nodes.config.dra import DraSpec
from gpu_nodes.config.fields import Check, Component, Need, at_least, between, section, setting
from gpu_nodes.config.metrics import MetricsSpec
from gpu_nodes.config.nvlink import NvlinkDomainSpec
from gpu_nodes.config.preflight import PreflightSpec, read_host_key
from gpu_nodes.config.problems import MISSING, Problem, Problems, Severity
from gpu_nodes.config.releases import Requirement, release_problem, requirements, unmet
from gpu_nodes.config.verification import (
    DEFAULT_DIAGNOSTICS_LEVEL,
    DIAGNOSTICS_OFF,
    MIN_PERFORMANCE_GPUS,
    VerificationSpec,
)
from gpu_nodes.constants import MAX_MIG_DEVICES_PER_GPU, NAMESPACE, VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.vocabulary import (
    FEATURE_LABEL_KEYS,
    GFD_MPS_CAPABLE_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    GROUP_LABEL,
    MPS,
    Taint,
    mig_resource,
)

# `accelerator` is the runbook's; `nvidia.com/gpu.present` is NVIDIA's own (GPU Feature
# Discovery, NFD rules, the device plugin chart's affinity and the GPU Operator key on it), so
# that a cluster that later adopts those tools schedules them on our nodes.
DEFAULT_LABELS = {"accelerator": "nvidia", GPU_PRESENT_LABEL: "true"}
DEFAULT_TAINTS = (f"{GPU_RESOURCE}=present:NoSchedule",)
# How a tenant's pod gets its GPUs, and so the path the verification pods take (docs/tenants.md,
# "How tenants get their GPUs"): nvidia as the node's default runtime; a RuntimeClass that tenants
# must name; or CDI devices that the plugin names (its cdi-cri strategy).
GpuAccess = Literal["defaultRuntime", "runtimeClass", "cdi"]
GPU_ACCESS: tuple[GpuAccess, ...] = get_args(GpuAccess)
# Whether a pod may see GPUs it was not given (docs/tenants.md, "Isolation"): `default`
# leaves the container toolkit as it ships, which honours NVIDIA_VISIBLE_DEVICES in any container;
# `strict` is NVIDIA's hardening, where only the device plugin's volume mounts (or CDI) give GPUs.
Isolation = Literal["default", "strict"]
ISOLATION: tuple[Isolation, ...] = get_args(Isolation)
# Who hands out the group's GPUs (docs/dra.md): NVIDIA's device plugin, which registers
# `nvidia.com/gpu` with kubelet, or NVIDIA's DRA driver, whose kubelet plugin publishes the GPUs as
# ResourceSlices that the scheduler allocates to ResourceClaims. NVIDIA refuses both on one node.
Allocator = Literal["devicePlugin", "dra"]
DEVICE_PLUGIN_ALLOCATOR: Final = "devicePlugin"
DRA_ALLOCATOR: Final = "dra"
ALLOCATORS: tuple[Allocator, ...] = get_args(Allocator)
# How the device plugin hands a container its GPUs: its DEVICE_LIST_STRATEGY (`NodeGroupSpec.device_list_strategy`).
DeviceListStrategy = Literal["envvar", "volume-mounts", "cdi-cri"]
# How the machines' NVIDIA Container Toolkit reaches containers: through the container runtime's `nvidia` entry
# (`nvidia-ctk runtime configure`, or the GPU Operator's toolkit container by default), or through its NRI plugin,
# which leaves the runtime's configuration alone and injects the CDI devices a pod's annotation names (the GPU
# Operator's `cdi.nriPluginEnabled`: gpu-operator controllers/object_controls.go, transformForRuntime and
# setNRIPluginAnnotation; nvidia-container-toolkit cmd/nvidia-ctk-installer/container/runtime/nri/plugin.go).
ContainerToolkit = Literal["runtime", "nri"]
RUNTIME_TOOLKIT: Final = "runtime"
NRI_TOOLKIT: Final = "nri"
CONTAINER_TOOLKITS: tuple[ContainerToolkit, ...] = get_args(ContainerToolkit)
DEFAULT_PRIORITY_VALUE = 1_000_000
# Kubernetes reserves values above one billion for the system classes.
MAX_USER_PRIORITY = 1_000_000_000
MIN_PRIORITY = -2_147_483_648
MAX_PRIORITY_CLASS_NAME = 253 - len(VERIFICATION_PRIORITY_SUFFIX)


# Where NVIDIA's DRA driver says what a machine needs for GPU allocation.
DRA_PREREQUISITES = "kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/prerequisites.md"


# The stack setting a group's gpuAccess may need (declared in config/stack.py).
RUNTIME_CLASS_KEY = f"{NAMESPACE}:runtimeClass"


def read_labels(problems: Problems, key: str, raw: dict[object, object] | None) -> tuple[tuple[str, str], ...]:
    labels: list[tuple[str, str]] = []
    for label_key, value in sorted((raw or {}).items(), key=lambda item: str(item[0])):
        here = f"{key}.{label_key}"
        if label_key == GROUP_LABEL:
            problems.add(here, value, "this label is set by gpu-nodes itself (to the group name)")
        elif not isinstance(label_key, str) or not is_label_key(label_key):
            problems.add(here, label_key, "expected a label key: [prefix/]name, name at most 63 characters")
        elif reserved_key_owner(label_key):
            problems.add(here, label_key, _reserved(label_key, "label"))
        elif not isinstance(value, str) or not is_label_value(value):
            problems.add(
                here,
                value,
                "expected a label value (a string): at most 63 letters, digits, '-', '_' or '.', starting and ending "
                "alphanumeric",
            )
        else:
            labels.append((label_key, value))
    return tuple(labels)


def _reserved(key: str, what: str) -> str:
    owner = reserved_key_owner(key)
    domain = key.rpartition("/")[0]
    return f"the {what} key prefix {domain}/ belongs to {owner}: a node's {what}s under it are not this config's to set"


def read_taints(problems: Problems, key: str, raw: list[object] | None) -> tuple[Taint, ...]:
    taints: list[Taint] = []
    keys_and_effects: set[tuple[str, str]] = set()
    for index, text in enumerate(raw or []):
        taint = parse_taint(text) if isinstance(text, str) else None
        if taint is None:
            problems.add(
                f"{key}[{index}]",
                text,
                f"expected 'key[=value]:Effect' as for kubectl taint, Effect one of {', '.join(TAINT_EFFECTS)}",
            )
            continue
        if reserved_key_owner(taint.key):
            problems.add(f"{key}[{index}]", text, _reserved(taint.key, "taint"))
            continue
        if (taint.key, taint.effect) in keys_and_effects:
            problems.add(f"{key}[{index}]", text, "a node has one taint per key and effect")
            continue
        keys_and_effects.add((taint.key, taint.effect))
        taints.append(taint)
    return tuple(taints)


@section
class NodeSpec:
    name: str = setting(
        "name",
        "the Kubernetes node name",
        check=Check(is_dns_subdomain, "expected a Kubernetes node name (DNS-1123 subdomain)"),
        row=False,
        names_resources=True,
    )
    # The SSH fields are required where preflight runs: the group says so (`_ssh_problems`), and the stack
    # for the host key, unless it accepts any (`gpu-nodes:insecureSkipHostKeyCheck`). Each may be another
    # resource's output (a machine the same program creates), read when it resolves: only the
    # preflight's connection holds them (gpu_nodes/preflight/command.py), no name or report key.
    ssh_host: str | pulumi.Output[str] | None = setting(
        "sshHost",
        "address of the machine: a host name or an IP address",
        default=None,
        default_text="required with preflight",
        check=SSH_HOST,
        from_resource=True,
    )
    ssh_port: int | pulumi.Output[int] = setting("sshPort", "SSH port", default=22, check=PORT, from_resource=True)
    ssh_user: str | pulumi.Output[str] | None = setting(
        "sshUser",
        'SSH user: `root` (see "Privileges")',
        default=None,
        default_text="required with preflight",
        check=SSH_USER,
        from_resource=True,
    )
    host_key: str | pulumi.Output[str] | None = setting(
        "hostKey",
        "the machine's public ed25519 or ecdsa host key, `ssh-ed25519 AAAA...` (`ssh-keyscan -t ed25519 HOST`)",
        default=None,
        default_text="required with preflight",
        check=HOST_KEY,
        parse=read_host_key,
        from_resource=True,
    )


@section
class PriorityClassSpec:
    # As written; None: `gpu-<group>` (`NodeGroupSpec.priority_class_name`).
    name: str | None = setting(
        "name",
        "not `system-*`, at most 240 characters: `<name>-verification` is created too",
        default=None,
        default_text="`gpu-<group>`",
        check=Check(
            lambda n: is_dns_subdomain(n) and not n.startswith("system-") and len(n) <= MAX_PRIORITY_CLASS_NAME,
            f"expected a DNS-1123 subdomain not starting with 'system-' (reserved), at most {MAX_PRIORITY_CLASS_NAME} "
            f"characters (the verification class adds {VERIFICATION_PRIORITY_SUFFIX!r})",
        ),
    )
    value: int = setting(
        "value",
        "at most 1000000000 (above is reserved for system classes)",
        default=DEFAULT_PRIORITY_VALUE,
        check=between(
            MIN_PRIORITY,
            MAX_USER_PRIORITY,
            f"expected {MIN_PRIORITY} to {MAX_USER_PRIORITY} (higher values are reserved for system classes)",
            words="",
        ),
    )


# The releases of the device plugin that the way a group's pods get their GPUs needs (`device_list_env` in
# gpu_nodes/manifests/device_plugin.py: what is deployed for each).
_ACCESS_NEEDS = (
    # k8s-device-plugin PR 573 (merged March 2024, "Add cdi-cri device list strategy"), after v0.15.0-rc.1 was cut;
    # v0.14's --device-list-strategy takes envvar, volume-mounts and cdi-annotations only. First released in v0.15.0.
    Need(
        Component.DEVICE_PLUGIN,
        "0.15.0",
        "DEVICE_LIST_STRATEGY=cdi-cri",
        "k8s-device-plugin PR 573, released in v0.15.0",
        when=lambda group: group.device_list_strategy == "cdi-cri",
        shown=lambda group: group.gpu_access,
    ),
    # k8s-device-plugin CHANGELOG.md, v0.5.0: "Add flag to optionally return list of device nodes in Allocate() call"
    # (--pass-device-specs, PASS_DEVICE_SPECS).
    Need(
        Component.DEVICE_PLUGIN,
        "0.5.0",
        "PASS_DEVICE_SPECS=true",
        "k8s-device-plugin CHANGELOG.md, v0.5.0",
        when=lambda group: group.device_list_strategy != "cdi-cri",
        shown=lambda group: group.gpu_access,
    ),
)


@section
class NodeGroupSpec:
    name: str = setting(
        "name",
        "DNS-1123 label; names the group's objects and its node label value",
        check=Check(is_dns_label, "expected a DNS-1123 label: lowercase letters, digits and '-', at most 63 characters"),
        names_resources=True,
    )
    nodes: tuple[NodeSpec, ...] = setting(
        "nodes",
        "`{name, sshHost, sshPort, sshUser, hostKey}`; `name` is the Kubernetes node name; a node may belong to one group only",
        default_text="required, at least one",
        check=Check(lambda nodes: len(nodes) >= 1, "expected at least one node"),
    )
    gpus_per_node: int = setting(
        "gpusPerNode",
        "GPUs each node must expose",
        check=at_least(1, "expected at least 1"),
    )
    labels: tuple[tuple[str, str], ...] = setting(
        "labels",
        "labels for every node (a map given here replaces the default); `gpu-nodes.dev/node-group` is added; keys under "
        "`kubernetes.io/`, `k8s.io/` (and their subdomains) and `gpu-nodes.dev/` are reserved",
        default=DEFAULT_LABELS,
        default_text='`{accelerator: nvidia, nvidia.com/gpu.present: "true"}`',
        written=Mapping[str, str],
        parse=read_labels,
    )
    taints: tuple[Taint, ...] = setting(
        "taints",
        "`kubectl taint` syntax `key[=value]:Effect`; the same keys are reserved as for labels (the gate "
        "`gpu-nodes.dev/unverified` is the stack's own)",
        default=list(DEFAULT_TAINTS),
        written=Sequence[str],
        parse=read_taints,
    )
    device_plugin: DevicePluginSpec = setting("devicePlugin", "", row=False)
    priority_class: PriorityClassSpec = setting("priorityClass", "", row=False)
    verification: VerificationSpec = setting("verification", "", row=False)
    preflight: PreflightSpec = setting("preflight", "", row=False)
    # As written; None: the group's default (`gpu_access`).
    gpu_access_setting: GpuAccess | None = setting(
        "gpuAccess",
        "how a tenant's pod gets its GPUs, and so what preflight requires and how the verification pods run: "
        "nvidia as the default runtime; a RuntimeClass tenants must name (`gpu-nodes:runtimeClass`); or CDI "
        '(the plugin\'s `cdi-cri` strategy). See "How tenants get their GPUs"',
        default=None,
        default_text="`defaultRuntime` (`cdi` with allocator `dra`)",
        needs=_ACCESS_NEEDS,
    )
    isolation: Isolation = setting(
        "isolation",
        "whether a pod may see GPUs it was not given: `default` keeps the container toolkit as it ships (a pod "
        "that sets `NVIDIA_VISIBLE_DEVICES=all`, as CUDA images do, sees every GPU under the nvidia runtime); "
        "`strict` needs NVIDIA's hardened toolkit settings, which preflight checks, and proves that a pod given no "
        'GPU sees none. See "How tenants get their GPUs"',
        default="default",
        needs=(
            # k8s-device-plugin CHANGELOG.md, v0.7.0-rc.5: "Add deviceListStrategyFlag to allow device list passing as
            # volume mounts".
            Need(
                Component.DEVICE_PLUGIN,
                "0.7.0",
                "DEVICE_LIST_STRATEGY=volume-mounts",
                "k8s-device-plugin CHANGELOG.md, v0.7.0-rc.5",
                when=lambda group: group.device_list_strategy == "volume-mounts",
            ),
        ),
    )
    gpu_model: str | None = setting(
        "gpuModel",
        "the GPU model every node must have, as `nvidia-smi` names it (`NVIDIA H100 80GB HBM3`); without it the "
        'group\'s nodes must agree with each other (see "GPU facts")',
        default=None,
        default_text="most nodes' model",
        check=GPU_MODEL,
    )
    allocator: Allocator = setting(
        "allocator",
        "who hands out the group's GPUs: NVIDIA's device plugin (`nvidia.com/gpu`), or NVIDIA's DRA driver "
        '(ResourceClaims of the DeviceClass `gpu.nvidia.com`). See "DRA"',
        default=DEVICE_PLUGIN_ALLOCATOR,
        needs=(
            Need(
                Component.DRA_DRIVER,
                DRA_DRIVER_FLOOR,
                "its chart and image under their present names",
                DRA_DRIVER_FLOOR_SOURCE,
                when=lambda group: group.uses_dra,
            ),
            # NVIDIA's DRA driver's prerequisites for GPU allocation (kubernetes-sigs/dra-driver-nvidia-gpu
            # site/content/docs/prerequisites.md): found on each machine, where preflight's dra-driver-version and
            # dra-toolkit checks hold them (68-check-dra.sh, DRA_FLOOR; tests/config/test_releases.py holds the two
            # together).
            Need(
                Component.DRIVER,
                "565",
                "GPU allocation by NVIDIA's DRA driver",
                DRA_PREREQUISITES,
                when=lambda group: group.uses_dra,
            ),
            Need(
                Component.TOOLKIT,
                "1.18.0",
                "GPU allocation by NVIDIA's DRA driver",
                DRA_PREREQUISITES,
                when=lambda group: group.uses_dra,
            ),
        ),
    )
    dra: DraSpec = setting("dra", "", row=False)
    nvlink_domain: NvlinkDomainSpec | None = setting("nvlinkDomain", "", default=None, row=False)
    container_toolkit: ContainerToolkit = setting(
        "containerToolkit",
        "how the machines' NVIDIA Container Toolkit reaches containers: the container runtime's `nvidia` entry, or its "
        "NRI plugin (the GPU Operator's `cdi.nriPluginEnabled`: no `nvidia` runtime, no RuntimeClass; CDI devices only, "
        'so `gpuAccess: cdi`). See "NRI-mode nodes"',
        default=RUNTIME_TOOLKIT,
        needs=(
            # Found on each machine, where preflight's nri check holds it (73-check-nri.sh, NRI_TOOLKIT_FLOOR;
            # tests/config/test_releases.py holds the two together): 1.19.0 brought the NRI plugin but injected only
            # into pods of the toolkit's own namespace, 1.20.0 into the namespaces it is given too.
            Need(
                Component.TOOLKIT,
                "1.20.0",
                "its NRI plugin injecting into the device plugin's namespace",
                "nvidia-container-toolkit CHANGELOG.md v1.19.0-rc.2 and v1.20.0-rc.1",
                when=lambda group: group.container_toolkit == NRI_TOOLKIT,
            ),
        ),
    )
    metrics: MetricsSpec = setting("metrics", "", row=False)
    gpu_feature_labels: bool = setting(
        "gpuFeatureLabels",
        "label each node with GPU Feature Discovery's keys (`nvidia.com/gpu.product`, ...) from preflight's facts; "
        "turn off where GFD itself runs",
        default=True,
    )
    # The stack's RuntimeClass (per stack), which the device plugin names; None: there is none. Set by the stack's
    # reader (gpu_nodes/config/stack.py, `read_stack`).
    runtime_class: str | None = None
    # The pull secret every pod of the group names (gpu-nodes:imagePullSecret); None: none. Set as runtime_class is.
    image_pull_secret: str | None = None

    def cross_checks(self) -> Iterator[Problem]:
        yield from _ssh_problems(self)
        yield from _verification_problems(self)
        if self.gpu_access == "cdi" and self.preflight.container_runtime == "docker":
            yield Problem(
                "gpuAccess",
                self.gpu_access,
                "cannot work with preflight.containerRuntime 'docker': cri-dockerd passes no CDI devices to Docker; "
                "use defaultRuntime there",
            )
        yield from _dra_problems(self)
        yield from _nvlink_problems(self)
        yield from _nri_problems(self)
        yield from _plugin_setting_problems(self)
        yield from _mig_resources_outside_the_layout(self)
        yield from _jobs_that_outgrow_the_sharing(self)
        yield from _gpu_facts_problems(self)
        yield from _device_plugin_release_problems(self)
        yield from dra_driver_release_problems(self)
        yield from _proof_problems(self)

    @property
    def gpu_access(self) -> GpuAccess:
        """How a tenant's pod gets its GPUs: as written, else nvidia as the default runtime, or, under DRA, CDI:
        NVIDIA's DRA driver gives containers their GPUs as CDI devices only."""
        if self.gpu_access_setting is not None:
            return self.gpu_access_setting
        return "cdi" if self.uses_dra else "defaultRuntime"

    @property
    def priority_class_name(self) -> str:
        """The group's PriorityClass: as written, else `gpu-<group>`."""
        return self.priority_class.name or f"gpu-{self.name}"

    @property
    def diagnostics_level(self) -> int:
        """The DCGM diagnostics level the group runs: its own, else NVIDIA's readiness level where a pod can hold the
        GPUs whole, else off."""
        chosen = self.verification.diagnostics
        if chosen is not None:
            return chosen
        return DIAGNOSTICS_OFF if self.whole_gpus_problem else DEFAULT_DIAGNOSTICS_LEVEL

    @property
    def runs_diagnostics(self) -> bool:
        return self.diagnostics_level != DIAGNOSTICS_OFF

    @property
    def tenant_runtime_class(self) -> str | None:
        """The RuntimeClass a tenant's GPU pod must name: only with gpuAccess runtimeClass."""
        return self.runtime_class if self.gpu_access == "runtimeClass" else None

    @property
    def device_list_strategy(self) -> DeviceListStrategy:
        """How the device plugin hands a container its GPUs (its DEVICE_LIST_STRATEGY, as
        manifests/device_plugin.py `device_list_env` sets it): `cdi-cri` under gpuAccess cdi,
        `volume-mounts` under isolation strict, else the plugin's default `envvar`."""
        if self.gpu_access == "cdi":
            return "cdi-cri"
        return "volume-mounts" if self.isolation == "strict" else "envvar"

    @property
    def uses_dra(self) -> bool:
        return self.allocator == DRA_ALLOCATOR

    @property
    def shares_through_mps(self) -> bool:
        """The group's device plugin shares its GPUs through MPS, and so runs an MPS control daemon."""
        return not self.uses_dra and self.device_plugin.sharing.strategy == MPS

    @property
    def claims_gpus(self) -> bool:
        """Whether the group's pods take their GPUs through ResourceClaims they name: under DRA, unless
        its DeviceClass serves plain `nvidia.com/gpu` requests (`dra.extendedResourceName`), which is then
        the tenant's path and the verification Jobs'."""
        return self.uses_dra and not self.dra.extended_resource_name

    @property
    def whole_gpus_problem(self) -> str | None:
        """Why no pod can hold each of a node's GPUs whole, as DCGM's diagnostics and NCCL's all-reduce need them;
        None where one can: a pod that asks for every GPU (under time-slicing, every replica) of its node."""
        plugin = self.device_plugin
        if plugin.mig_strategy != "none":
            # NVIDIA/DCGM nvvs/src/Gpu.cpp IsMigModeDiagCompatible and NvidiaValidationSuite.cpp BuildCommonGpusList
            # (v4.6.0): the diagnostic refuses a GPU whose MIG instances do not span it, and more than one MIG GPU.
            return (
                f"devicePlugin.migStrategy {plugin.mig_strategy}: pods are given MIG devices, not GPUs, and DCGM refuses "
                "a GPU whose MIG instances do not span it whole (its nvvs/src/Gpu.cpp, IsMigModeDiagCompatible)"
            )
        sharing = plugin.sharing
        if self.shares_through_mps:
            # k8s-device-plugin cmd/mps-control-daemon/mps/daemon.go: the daemon limits each client's memory and
            # threads to its share of the GPU.
            return (
                "devicePlugin.sharing.strategy mps: pods are MPS clients, each limited to its share of a GPU's memory "
                "and threads by the plugin's MPS control daemon"
            )
        if sharing.shares and sharing.refuses_more_than_one:
            return (
                f"devicePlugin.sharing.failRequestsGreaterThanOne: the plugin refuses a pod that asks for more than one "
                f"of the {sharing.replicas} replicas of a GPU"
            )
        return None

    @property
    def node_labels(self) -> dict[str, str]:
        """Every label this group puts on its nodes, the group label included."""
        return {**dict(self.labels), GROUP_LABEL: self.name}


def _proof_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """The proof items beyond the runbook's: DCGM's diagnostics and NCCL's all-reduce need a node's GPUs whole; the
    all-reduce needs two GPUs and a floor; DCGM's and its exporter's images must be past NVIDIA's bulletins."""
    verification, whole = group.verification, group.whole_gpus_problem
    if group.runs_diagnostics and whole:
        yield Problem(
            "verification.diagnostics",
            group.diagnostics_level,
            f"cannot run here, {whole}: set off (preflight's gpu-health check still judges every GPU)",
        )
    if group.runs_diagnostics:
        yield from _image_problems("verification.diagnosticsImage", verification.diagnostics_image, "DCGM", DCGM_ADVISORIES)
    performance = verification.performance
    if performance.enabled:
        if group.gpus_per_node < MIN_PERFORMANCE_GPUS:
            yield Problem(
                "verification.performance.enabled",
                True,
                f"needs gpusPerNode {MIN_PERFORMANCE_GPUS} or more: an all-reduce within one node spans its GPUs",
            )
        elif whole:
            yield Problem("verification.performance.enabled", True, f"cannot run here, {whole}")
        elif performance.min_bus_bandwidth is None:
            yield from _floor_problems(group)
    if group.metrics.enabled:
        yield from _image_problems("metrics.image", group.metrics.image, "dcgm-exporter", DCGM_EXPORTER_ADVISORIES)


def _floor_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """Without a floor of its own, a group takes the floor of its GPU model and count: it must be one the data knows,
    or known only once preflight reads the model."""
    model = group.gpu_model
    if model is not None and floor_for(model, group.gpus_per_node) is None:
        yield Problem(
            "verification.performance.minBusBandwidth",
            MISSING,
            f"no floor is known for gpusPerNode {group.gpus_per_node} x gpuModel {model!r} (gpu_nodes/bandwidth_floors.py): "
            "give the bus bandwidth in GB/s these nodes must reach",
        )
    elif model is None and not group.preflight.enabled:
        yield Problem(
            "verification.performance.minBusBandwidth",
            MISSING,
            "expected the bus bandwidth in GB/s these nodes must reach: without preflight (which reads each machine's GPU "
            "model) or gpuModel, no floor can be looked up",
        )


def _image_problems(key: str, image: str, what: str, advisories: tuple[ComponentAdvisory, ...]) -> Iterator[Problem]:
    """An NVIDIA image open to one of its bulletins is refused; a tag that names no release cannot be judged (a warning)."""
    tag = image_tag(image)
    release = exporter_release(tag) if advisories is DCGM_EXPORTER_ADVISORIES else release_of(tag)
    if release is None:
        yield Problem(
            key,
            image,
            f"cannot be judged against NVIDIA's {what} bulletins: its tag {tag!r} names no release; pin a release tag",
            severity=Severity.RISK,
        )
        return
    open_to = open_component_advisories(advisories, release)
    if open_to:
        fix = max((a.fixed[-1] for a in open_to), key=version_key)
        cves = ", ".join(f"{a.cve} ({a.bulletin}, fixed in {a.fixed[-1]})" for a in open_to)
        yield Problem(key, image, f"{what} {release} is open to {cves}: use {fix} or later")


def _ssh_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """Each machine listed once, and reachable where preflight runs."""
    seen: set[str] = set()
    for index, node in enumerate(group.nodes):
        if node.name in seen:
            yield Problem(f"nodes[{index}].name", node.name, "each node may be listed once")
        seen.add(node.name)
        if group.preflight.enabled:
            for key, value in (("sshHost", node.ssh_host), ("sshUser", node.ssh_user)):
                if value is None:
                    yield Problem(f"nodes[{index}].{key}", MISSING, "expected a string")


def _verification_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """What the Jobs ask for, against what a node offers under the device plugin's MIG strategy."""
    verification, strategy = group.verification, group.device_plugin.mig_strategy
    # MIG devices only: mixed MIG's resources, or the DRA driver's dynamic MIG on Ampere GPUs in MIG mode, which it
    # publishes as their MIG profiles and not whole (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/
    # nvlib.go: "the full GPU is not allocatable on Ampere when MIG cannot be toggled without a GPU reset").
    mig_only = verification.mig_resources or (group.uses_dra and group.dra.mig_profiles)
    if not verification.gpus_per_pod and not mig_only:
        yield Problem("verification.gpusPerPod", [], "expected at least one GPU count, e.g. [1] or [1, 2]")
    # Time-slicing replicas do not count: a pod must see as many distinct GPUs as it asks for.
    # With single, every MIG device is one nvidia.com/gpu.
    per_gpu = MAX_MIG_DEVICES_PER_GPU if strategy == "single" else 1
    limit = group.gpus_per_node * per_gpu
    limit_text = (
        f"gpusPerNode ({group.gpus_per_node})"
        if per_gpu == 1
        else f"{limit} ({per_gpu} MIG devices per GPU under devicePlugin.migStrategy single, gpusPerNode {group.gpus_per_node})"
    )
    for index, count in enumerate(verification.gpus_per_pod):
        if count > limit:
            yield Problem(f"verification.gpusPerPod[{index}]", count, f"expected at most {limit_text}")
    resources = dict(verification.mig_resources)
    if strategy == "mixed" and not resources:
        yield Problem(
            "verification.migResources",
            MISSING,
            "with devicePlugin.migStrategy 'mixed' MIG GPUs are advertised only as nvidia.com/mig-<profile>: list "
            'the MIG resources to verify and how many each Job requests, e.g. {"nvidia.com/mig-1g.5gb": 1}',
        )
    elif resources and strategy != "mixed":
        yield Problem(
            "verification.migResources",
            resources,
            "only with devicePlugin.migStrategy 'mixed' (with 'single' MIG devices are nvidia.com/gpu: use gpusPerPod)",
        )
    else:
        mig_limit = group.gpus_per_node * MAX_MIG_DEVICES_PER_GPU
        for resource, count in resources.items():
            if count > mig_limit:
                yield Problem(
                    f"verification.migResources.{resource}",
                    count,
                    f"expected at most {mig_limit} ({MAX_MIG_DEVICES_PER_GPU} MIG devices per GPU, "
                    f"gpusPerNode {group.gpus_per_node})",
                )


def _dra_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """Under allocator dra: NVIDIA's DRA driver gives a container its GPUs as CDI devices only (its
    docs' prerequisites), so tenants' pods take the CDI path; and the device plugin's ways of
    sharing and splitting GPUs are not the driver's (docs/dra.md)."""
    if not group.uses_dra:
        if group.dra.extended_resource_name:
            yield Problem(
                "dra.extendedResourceName",
                True,
                "only with allocator dra: a device plugin group serves nvidia.com/gpu itself",
            )
        if group.dra.compute_domains:
            yield Problem(
                "dra.computeDomains",
                True,
                "only with allocator dra: ComputeDomains are NVIDIA's DRA driver's; a device plugin group gets IMEX channels "
                "through devicePlugin.imex",
            )
        if group.dra.mig_profiles:
            yield Problem(
                "dra.migProfiles",
                list(group.dra.mig_profiles),
                "only with allocator dra: a device plugin group splits GPUs with devicePlugin.migStrategy and migDevices",
            )
        return
    if group.gpu_access != "cdi":
        yield Problem(
            "gpuAccess",
            group.gpu_access,
            "expected cdi (its default) with allocator dra: NVIDIA's DRA driver gives containers their GPUs only as CDI devices",
        )
    plugin = group.device_plugin
    if plugin.mig_strategy != "none":
        yield Problem(
            "devicePlugin.migStrategy",
            plugin.mig_strategy,
            "expected none with allocator dra: MIG under NVIDIA's DRA driver is dra.migProfiles (its DynamicMIG, DeviceClass "
            "mig.nvidia.com)",
        )
    sharing = plugin.sharing
    if sharing.strategy == MPS:
        yield Problem(
            "devicePlugin.sharing.strategy",
            MPS,
            "cannot work with allocator dra: the device plugin's MPS control daemon serves the plugin's replicas; "
            "NVIDIA's DRA driver shares a GPU through MPS by its claims' config, not this",
        )
    elif sharing.shares:
        yield Problem(
            f"devicePlugin.{sharing.replicas_key}",
            sharing.replicas,
            "expected 1 with allocator dra: the DRA driver shares a GPU through its claims' config, not replicas",
        )
    if group.verification.mig_resources:
        yield Problem("verification.migResources", dict(group.verification.mig_resources), "expected none with allocator dra")
    if plugin.pause_for_mig_manager:
        yield Problem(
            "devicePlugin.pauseForMigManager",
            True,
            "has no effect with allocator dra: it keeps the device plugin off a node NVIDIA's MIG manager reconfigures, "
            "and a dra group runs none",
        )


def _nvlink_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """IMEX channels come with the NVLink domain they span: the device plugin's need the machines' own IMEX daemon,
    listing the domain's peers; a DRA group's ComputeDomains run the daemons themselves."""
    domain, imex = group.nvlink_domain, group.device_plugin.imex
    if group.dra.compute_domains and domain is None:
        yield Problem(
            "nvlinkDomain",
            MISSING,
            "expected the NVLink domain of the group's machines with dra.computeDomains ({clique: <ClusterUUID>.<CliqueId>}): "
            "a ComputeDomain spans machines of one clique, and each node's is checked",
        )
    if group.uses_dra:
        if domain is not None and domain.imex_peers:
            yield Problem(
                "nvlinkDomain.imexPeers",
                list(domain.imex_peers),
                "expected none with allocator dra: NVIDIA's DRA driver runs the IMEX daemons of its ComputeDomains itself, "
                "and its prerequisites want the machines' own nvidia-imex service disabled (dra.computeDomains)",
            )
        return
    if imex.channel_ids and (domain is None or not domain.imex_peers):
        yield Problem(
            "nvlinkDomain.imexPeers" if domain is not None else "nvlinkDomain",
            MISSING,
            "expected the NVLink domain with devicePlugin.imex.channelIds ({clique: ..., imexPeers: [<IP>, ...]}): an IMEX "
            "channel works only with the machine's IMEX daemon running and listing the domain's machines, which preflight "
            "checks",
        )


def _nri_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """The toolkit's NRI plugin injects CDI devices, and only into a runtime that speaks NRI."""
    if group.container_toolkit != NRI_TOOLKIT:
        return
    if group.gpu_access != "cdi":
        yield Problem(
            "containerToolkit",
            NRI_TOOLKIT,
            f"needs gpuAccess cdi (got {group.gpu_access}): with its NRI plugin the toolkit configures no nvidia runtime "
            "and gives containers their GPUs as CDI devices only (the GPU Operator refuses nriPluginEnabled without CDI: "
            "its controllers/state_manager.go, validateClusterPolicySpec)",
        )
    if group.preflight.container_runtime == "docker":
        yield Problem(
            "containerToolkit",
            NRI_TOOLKIT,
            "cannot work with preflight.containerRuntime 'docker': NRI is containerd's and CRI-O's (its plugin talks to the "
            "runtime's NRI socket, /var/run/nri/nri.sock)",
        )


# The device plugin's 2026 settings and its IMEX channels, by key, with whether the group sets each.
def _plugin_settings_set(group: NodeGroupSpec) -> dict[str, object]:
    plugin = group.device_plugin
    return {
        "allocationPolicy": plugin.allocation_policy,
        "cdiFeatureFlags": list(plugin.cdi_feature_flags) or None,
        "cdiDisableHooks": list(plugin.cdi_disable_hooks) or None,
        "deviceDiscoveryStrategy": plugin.device_discovery_strategy,
        "imex.channelIds": list(plugin.imex.channel_ids) or None,
    }


def _plugin_setting_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """The plugin's own settings where the plugin does not run (a dra group), or where it ignores them."""
    plugin = group.device_plugin
    if group.uses_dra:
        for key, value in _plugin_settings_set(group).items():
            if value is not None:
                instead = " (ComputeDomains give IMEX channels under DRA: dra.computeDomains)" if key.startswith("imex") else ""
                yield Problem(f"devicePlugin.{key}", value, f"is the device plugin's: a dra group runs none{instead}")
        return
    if plugin.allocation_policy is not None and not (plugin.sharing.shares or plugin.mig_strategy != "none"):
        yield Problem(
            "devicePlugin.allocationPolicy",
            plugin.allocation_policy,
            "the plugin applies it to shared replicas and MIG devices only, and this group shares no GPU and runs no MIG "
            "(whole GPUs keep NVLink-aligned placement: k8s-device-plugin internal/rm/nvml_manager.go)",
            severity=Severity.NO_EFFECT,
        )
    if group.gpu_access != "cdi":
        for key, value in (("cdiFeatureFlags", plugin.cdi_feature_flags), ("cdiDisableHooks", plugin.cdi_disable_hooks)):
            if value:
                yield Problem(
                    f"devicePlugin.{key}",
                    list(value),
                    f"the plugin writes CDI specs only with a CDI strategy, and gpuAccess {group.gpu_access} uses none "
                    "(k8s-device-plugin internal/cdi/cdi.go, New)",
                    severity=Severity.NO_EFFECT,
                )


def _gpu_facts_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """The GPU facts come from preflight; their labels are ours alone to write."""
    if group.gpu_model is not None and not group.preflight.enabled:
        yield Problem("gpuModel", group.gpu_model, "needs preflight.enabled true: preflight reads each machine's GPU model")
    if group.gpu_feature_labels and group.preflight.enabled:
        labels = dict(group.labels)
        ours = {*FEATURE_LABEL_KEYS, *([GFD_MPS_CAPABLE_LABEL] if group.device_plugin.sharing.strategy == MPS else [])}
        for label in sorted(labels.keys() & ours):
            yield Problem(
                f"labels.{label}",
                labels[label],
                "is written from preflight's facts (gpuFeatureLabels): remove it here, or set gpuFeatureLabels false",
            )


def _mig_resources_outside_the_layout(group: NodeGroupSpec) -> Iterator[Problem]:
    """Under mixed MIG, a Job that asks for a profile the declared layout lacks would never schedule."""
    plugin = group.device_plugin
    if not plugin.mig_devices or plugin.mig_strategy != "mixed":
        return
    offered = {mig_resource(profile): n * group.gpus_per_node for profile, n in plugin.mig_devices}
    for resource, count in group.verification.mig_resources:
        if resource not in offered:
            layout = ", ".join(sorted(offered))
            yield Problem(f"verification.migResources.{resource}", resource, f"expected one of devicePlugin.migDevices: {layout}")
        elif count > offered[resource]:
            yield Problem(
                f"verification.migResources.{resource}",
                count,
                f"expected at most {offered[resource]}, the {resource} devicePlugin.migDevices puts on a node",
            )


def _jobs_that_outgrow_the_sharing(group: NodeGroupSpec) -> Iterator[Problem]:
    """A Job must get as many distinct GPUs as it asks for: a shared GPU's replicas may hand it one GPU
    twice (docs/operations.md, "Troubleshooting"), or the plugin refuses the pod outright where
    `failRequestsGreaterThanOne` says so; and a single MIG layout offers only so many devices per node."""
    plugin = group.device_plugin
    sharing, layout = plugin.sharing, plugin.mig_devices
    devices_per_node = group.gpus_per_node * sum(n for _, n in layout)
    for index, count in enumerate(group.verification.gpus_per_pod):
        here = f"verification.gpusPerPod[{index}]"
        if count > 1 and sharing.shares:
            yield Problem(here, count, _shared_multi_gpu_problem(sharing))
        elif plugin.mig_strategy == "single" and layout and count > devices_per_node:
            yield Problem(
                here,
                count,
                f"expected at most {devices_per_node}: the MIG devices devicePlugin.migDevices puts on a node "
                f"({group.gpus_per_node} GPUs x {sum(n for _, n in layout)})",
            )


# ------------------------------------------------- the device plugin release the group runs


def _device_plugin_release_problems(group: NodeGroupSpec) -> Iterator[Problem]:
    """The plugin image's release against NVIDIA's advisories for the strategy the group uses, and
    against the releases its settings need (`requirements`); a tag that is no release is named as a warning
    where either would apply. A DRA group runs no device plugin."""
    if group.uses_dra:
        return
    plugin = group.device_plugin
    tag = image_tag(plugin.image)
    release = release_of(tag) if tag != "digest" else None
    strategy = group.device_list_strategy
    needs = list(requirements(group, Component.DEVICE_PLUGIN))
    judged = [a for a in DEVICE_PLUGIN_ADVISORIES if not a.strategies or strategy in a.strategies]
    if release is None:
        yield from _unjudged_image(plugin.image, tag, strategy, judged, needs)
        return
    open_to = open_component_advisories(DEVICE_PLUGIN_ADVISORIES, release, (strategy,))
    let_in = [a for a in open_to if a.cve not in plugin.accept_advisories]
    if let_in:
        cves = ", ".join(f"{a.cve} ({a.bulletin}, fixed in {' / '.join(a.fixed)})" for a in let_in)
        yield Problem(
            "devicePlugin.image",
            plugin.image,
            f"device plugin {release} with the {strategy} strategy (gpuAccess {group.gpu_access}) is open to {cves}: "
            f"{let_in[0].condition}; use {let_in[0].fixed[-1]} or later, or name each CVE in devicePlugin.acceptAdvisories",
        )
    elif open_to:
        yield Problem(
            "devicePlugin.image",
            plugin.image,
            f"device plugin {release} is open to {', '.join(a.cve for a in open_to)} ({open_to[0].bulletin}), "
            "accepted by devicePlugin.acceptAdvisories",
            severity=Severity.RISK,
        )
    for requirement in unmet(needs, release):
        yield release_problem(requirement, "devicePlugin.image", plugin.image, release)


def _unjudged_image(
    image: str, tag: str, strategy: str, judged: list[ComponentAdvisory], needs: list[Requirement]
) -> Iterator[Problem]:
    """A plugin image whose tag names no release: what could not be checked, as a warning. Every group needs some
    release (its device list strategy has one), so the warning is there whatever else the group sets."""
    why = "it is pinned by digest only" if tag == "digest" else f"its tag {tag!r} names no release"
    wanted = [r for r in needs if version_key(r.need.since) > version_key(_OLDEST_JUDGED)]
    if not judged and not wanted:
        return
    yield Problem(
        "devicePlugin.image",
        image,
        f"cannot be judged: {why}, so neither NVIDIA's advisories for the {strategy} strategy "
        f"({', '.join(sorted({a.bulletin for a in judged})) or 'none'}) nor the releases its settings need "
        f"({', '.join(r.said for r in needs) or 'none'}) are checked; pin a release tag "
        "beside the digest (`...:v0.20.1@sha256:...`) to have it judged",
        severity=Severity.RISK,
    )


# The releases every plugin still published has: a group that needs no later one loses nothing when its tag names
# no release (v0.7.0's volume-mounts and v0.5.0's PASS_DEVICE_SPECS).
_OLDEST_JUDGED = "0.7.0"


def dra_driver_release_problems(group: NodeGroupSpec, release: str = DRA_DRIVER_RELEASE) -> Iterator[Problem]:
    """Under allocator dra, the DRA driver release the stack deploys (DRA_DRIVER_RELEASE, not a setting) against the
    releases the group's settings need: a release that moves back, or a setting that needs a later one, is held here."""
    if not group.uses_dra:
        return
    for requirement in unmet(list(requirements(group, Component.DRA_DRIVER)), release):
        yield release_problem(requirement, "the DRA driver", "gpu-nodes deploys", release)


def _shared_multi_gpu_problem(sharing: SharingSpec) -> str:
    """Why a Job of several GPUs cannot prove a group whose GPUs are shared, naming what shares them."""
    if sharing.legacy:
        return (
            f"with devicePlugin.timeSlicingReplicas {sharing.replicas} a multi-GPU pod may get one GPU twice: keep "
            "gpusPerPod at [1] for a time-sliced group, or set timeSlicingReplicas to 1"
        )
    if sharing.refuses_more_than_one:
        return (
            f"with devicePlugin.sharing.failRequestsGreaterThanOne true ({sharing.strategy}, {sharing.replicas} replicas) the "
            "device plugin refuses a pod that asks for more than one replica (UnexpectedAdmissionError): keep "
            "gpusPerPod at [1] for a shared group"
        )
    return (
        f"with devicePlugin.sharing ({sharing.strategy}, {sharing.replicas} replicas) a multi-GPU pod may get one GPU "
        "twice: keep gpusPerPod at [1] for a shared group"
    )
