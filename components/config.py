"""Stack configuration: parse and validate `gpu-nodes:*` into typed, immutable specs.

Everything here is pure: it takes plain data (as `pulumi.Config.require_object` returns it)
and either returns specs or raises `ConfigError` listing every problem found, so that a bad
stack fails before a single resource is registered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NAMESPACE = "gpu-nodes"

# The resource the device plugin registers for whole GPUs (and, with migStrategy single, MIG devices).
GPU_RESOURCE = "nvidia.com/gpu"

# Our own label on every node of a group; the group's DaemonSet and Jobs select on it.
GROUP_LABEL = "gpu-nodes.dev/node-group"

# `accelerator` is the runbook's; `nvidia.com/gpu.present` is NVIDIA's own (GPU Feature
# Discovery, NFD rules, the device plugin chart's affinity and the GPU Operator key on it), so
# that a cluster that later adopts those tools schedules them on our nodes.
DEFAULT_LABELS = {"accelerator": "nvidia", "nvidia.com/gpu.present": "true"}
DEFAULT_TAINTS = ("nvidia.com/gpu=present:NoSchedule",)
DEFAULT_DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
DEFAULT_DEVICE_PLUGIN_NAMESPACE = "nvidia-device-plugin"
DEFAULT_VERIFICATION_IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
DEFAULT_VERIFICATION_NAMESPACE = "gpu-verification"
DEFAULT_VERIFICATION_TIMEOUT = 600
DEFAULT_PRIORITY_VALUE = 1_000_000
# Kubernetes reserves values above one billion for the system classes.
MAX_USER_PRIORITY = 1_000_000_000
MIN_PRIORITY = -2_147_483_648
# The verification pods' own, non-preempting PriorityClass is named after the group's.
VERIFICATION_PRIORITY_SUFFIX = "-verification"
_MAX_PRIORITY_CLASS_NAME = 253 - len(VERIFICATION_PRIORITY_SUFFIX)

# The RuntimeClass the device plugin and verification pods run under, as the GPU Operator
# names it; its handler is the runtime name `nvidia-ctk runtime configure` writes.
DEFAULT_RUNTIME_CLASS = "nvidia"
RUNTIME_HANDLER = "nvidia"

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MIG_STRATEGIES = ("none", "single", "mixed")
CONTAINER_RUNTIMES = ("containerd", "docker", "cri-o", "k3s", "rke2", "auto")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
# A GPU splits into at most seven MIG devices (the smallest profile is 1/7 of an A100/H100).
MAX_MIG_DEVICES_PER_GPU = 7
_DRIVER_VERSION = re.compile(r"^\d+(\.\d+){0,2}$")
_RECHECK = re.compile(r"^[!-~][ -~]{0,63}$")
_HOST_KEY = re.compile(
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com"
    r"|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$"
)


class ConfigError(Exception):
    """Invalid stack configuration; `problems` holds one line per mistake."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid stack configuration:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value is not None else f"{self.key}:{self.effect}"

    @classmethod
    def from_k8s(cls, taint: dict[str, str]) -> Taint:
        """A taint as the API returns it; an empty value is no value, as kubectl shows it."""
        return cls(key=taint["key"], value=taint.get("value") or None, effect=taint["effect"])

    def to_k8s(self) -> dict[str, str]:
        taint = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            taint["value"] = self.value
        return taint


@dataclass(frozen=True)
class NodeSpec:
    name: str
    ssh_host: str | None
    ssh_port: int
    ssh_user: str | None
    host_key: str | None


@dataclass(frozen=True)
class SshProxySpec:
    host: str
    port: int
    user: str
    host_key: str | None


@dataclass(frozen=True)
class DevicePluginSpec:
    image: str
    namespace: str
    mig_strategy: str
    time_slicing_replicas: int
    fail_on_init_error: bool

    @property
    def needs_config_file(self) -> bool:
        return self.mig_strategy != "none" or self.time_slicing_replicas > 1


@dataclass(frozen=True)
class PriorityClassSpec:
    name: str
    value: int


@dataclass(frozen=True)
class VerificationSpec:
    image: str
    namespace: str
    gpus_per_pod: tuple[int, ...]
    # With migStrategy mixed: (resource, count) pairs, e.g. ("nvidia.com/mig-1g.5gb", 1).
    mig_resources: tuple[tuple[str, int], ...]
    per_node: bool
    timeout_seconds: int


@dataclass(frozen=True)
class PreflightSpec:
    enabled: bool
    container_runtime: str
    min_driver: str | None
    proxy: SshProxySpec | None
    # True when no RuntimeClass is used: then pods get the nvidia runtime only as the default.
    require_default_runtime: bool = False
    # Any text; a new value runs preflight again on every node of the group.
    recheck: str | None = None


@dataclass(frozen=True)
class RuntimeClassSpec:
    name: str
    create: bool  # False: the class exists already (someone else's); we only name it


@dataclass(frozen=True)
class NodeGroupSpec:
    name: str
    nodes: tuple[NodeSpec, ...]
    gpus_per_node: int
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    device_plugin: DevicePluginSpec
    priority_class: PriorityClassSpec
    verification: VerificationSpec
    preflight: PreflightSpec
    # The RuntimeClass our pods name (per stack); None: they use the node's default runtime.
    runtime_class: str | None = None

    @property
    def node_labels(self) -> dict[str, str]:
        """Every label this group puts on its nodes, the group label included."""
        return {**dict(self.labels), GROUP_LABEL: self.name}


@dataclass(frozen=True)
class StackSpec:
    node_groups: tuple[NodeGroupSpec, ...]
    insecure_skip_host_key_check: bool
    runtime_class: RuntimeClassSpec | None = None

    @property
    def needs_ssh_key(self) -> bool:
        return any(group.preflight.enabled for group in self.node_groups)


# --- small validators --------------------------------------------------------------------


class _Collector:
    """Collects problems so that one run reports every mistake, not just the first."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, key: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{key}: got {_show(value)}; {allowed}")


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing (the key is required)"
    return repr(value)


_MISSING = object()


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS_LABEL.match(value))


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS_SUBDOMAIN.match(value))


def is_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and is_dns_subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def is_pinned_image(image: str) -> bool:
    """True when the image names a digest, or a tag other than `latest`."""
    if _DIGEST.search(image):
        return True
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.rsplit(":", 1)[1]
    return bool(_TAG.match(tag)) and tag != "latest"


def image_tag(image: str) -> str:
    """The tag of a pinned image (or `digest` when pinned by digest only)."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "digest"


def parse_taint(text: str) -> Taint | None:
    """Parse `key[=value]:Effect` as `kubectl taint` does; None when it does not parse."""
    spec, sep, effect = text.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        return None
    key, has_value, value = spec.partition("=")
    if not is_label_key(key) or (has_value and not is_label_value(value)):
        return None
    return Taint(key=key, value=value if has_value else None, effect=effect)


# --- typed field readers -----------------------------------------------------------------


class _Fields:
    """Reads one config object's fields, reporting wrong types and unknown keys."""

    def __init__(self, errors: _Collector, key: str, raw: Any, allowed: tuple[str, ...]):
        self.errors = errors
        self.key = key
        self.raw = raw if isinstance(raw, dict) else {}
        if not isinstance(raw, dict):
            errors.add(key, raw, "expected an object")
        for unknown in sorted(set(self.raw) - set(allowed)):
            errors.add(f"{key}.{unknown}", self.raw[unknown], f"unknown key; allowed keys: {', '.join(allowed)}")

    def _get(self, name: str, default: Any, kind: type | tuple[type, ...], kind_text: str) -> Any:
        value = self.raw.get(name, default)
        if value is _MISSING:
            self.errors.add(f"{self.key}.{name}", _MISSING, f"expected {kind_text}")
            return None
        # bool is an int in Python; a YAML `true` is no port number.
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            self.errors.add(f"{self.key}.{name}", value, f"expected {kind_text}")
            return None
        return value

    def string(self, name: str, default: Any = _MISSING) -> str | None:
        return self._get(name, default, str, "a string")

    def integer(self, name: str, default: Any = _MISSING) -> int | None:
        return self._get(name, default, int, "a whole number")

    def boolean(self, name: str, default: Any = _MISSING) -> bool | None:
        return self._get(name, default, bool, "true or false")

    def mapping(self, name: str, default: Any = _MISSING) -> dict | None:
        return self._get(name, default, dict, "an object")

    def sequence(self, name: str, default: Any = _MISSING) -> list | None:
        return self._get(name, default, list, "a list")

    def choice(self, name: str, default: str, options: tuple[str, ...]) -> str | None:
        return self.check(name, self.string(name, default), lambda v: v in options, f"expected one of {', '.join(options)}")

    def check(self, name: str, value: Any, ok: Callable[[Any], bool], allowed: str) -> Any:
        if value is not None and not ok(value):
            self.errors.add(f"{self.key}.{name}", value, allowed)
            return None
        return value


# --- the stack ---------------------------------------------------------------------------


def parse_stack(
    node_groups: Any,
    insecure_skip_host_key_check: Any = False,
    runtime_class: Any = None,
    create_runtime_class: Any = None,
) -> StackSpec:
    """Validate the whole stack config; raise ConfigError with every problem found.

    `runtime_class` and `create_runtime_class` are the raw strings of `gpu-nodes:runtimeClass`
    and `gpu-nodes:createRuntimeClass` (None when unset), see `parse_runtime_class`.
    """
    errors = _Collector()
    key = f"{NAMESPACE}:nodeGroups"
    groups: list[NodeGroupSpec] = []
    if not isinstance(insecure_skip_host_key_check, bool):
        errors.add(f"{NAMESPACE}:insecureSkipHostKeyCheck", insecure_skip_host_key_check, "expected true or false")
        insecure_skip_host_key_check = False
    runtime = _parse_runtime_class(errors, runtime_class, create_runtime_class)
    if not isinstance(node_groups, list) or not node_groups:
        errors.add(key, node_groups, "expected a list with at least one node group")
    else:
        for index, raw in enumerate(node_groups):
            group = _parse_group(errors, f"{key}[{index}]", raw, insecure_skip_host_key_check, runtime)
            if group is not None:
                groups.append(group)
        _check_across_groups(errors, key, groups)
    if errors.problems:
        raise ConfigError(errors.problems)
    return StackSpec(node_groups=tuple(groups), insecure_skip_host_key_check=insecure_skip_host_key_check, runtime_class=runtime)


def parse_runtime_class(name: Any, create: Any = None) -> RuntimeClassSpec | None:
    """`gpu-nodes:runtimeClass` / `gpu-nodes:createRuntimeClass`; None when the class is off.

    - unset: the class `nvidia` (handler `nvidia`), created by this stack;
    - another name: a class that exists already (the GPU Operator's `nvidia-cdi`, say): named,
      not created, unless createRuntimeClass is true;
    - "" or false: no RuntimeClass; preflight then requires nvidia as the default runtime.
    createRuntimeClass: false with `nvidia` names an existing `nvidia` class instead of creating
    (and on destroy deleting) it.
    """
    errors = _Collector()
    spec = _parse_runtime_class(errors, name, create)
    if errors.problems:
        raise ConfigError(errors.problems)
    return spec


def _parse_runtime_class(errors: _Collector, name: Any, create: Any) -> RuntimeClassSpec | None:
    name_key, create_key = f"{NAMESPACE}:runtimeClass", f"{NAMESPACE}:createRuntimeClass"
    # Stack config reaches the program as strings: YAML `false` arrives as "false".
    create = _boolean_text(create)
    if create is not None and not isinstance(create, bool):
        errors.add(create_key, create, "expected true or false")
        create = None
    if name is None:
        name = DEFAULT_RUNTIME_CLASS
    if name is False or name in ("", "false"):
        if create is True:
            errors.add(create_key, create, f'nothing to create: {name_key} is off ("" or false)')
        return None
    if not isinstance(name, str) or name == "true" or not is_dns_subdomain(name):
        errors.add(name_key, name, 'expected a RuntimeClass name (DNS-1123 subdomain), or "" / false to use no RuntimeClass')
        return None
    return RuntimeClassSpec(name=name, create=create if create is not None else name == DEFAULT_RUNTIME_CLASS)


def _boolean_text(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def _check_across_groups(errors: _Collector, key: str, groups: list[NodeGroupSpec]) -> None:
    seen_groups: dict[str, int] = {}
    seen_nodes: dict[str, str] = {}
    seen_priority: dict[str, str] = {}
    namespace_use: dict[str, str] = {}
    for index, group in enumerate(groups):
        if group.name in seen_groups:
            errors.add(
                f"{key}[{index}].name",
                group.name,
                f"group names must be unique (also used by nodeGroups[{seen_groups[group.name]}])",
            )
        seen_groups.setdefault(group.name, index)
        for node in group.nodes:
            owner = seen_nodes.setdefault(node.name, group.name)
            if owner != group.name:
                errors.add(
                    f"{key}[{index}].nodes", node.name, f"a node may belong to one group only (already in group {owner!r})"
                )
        pc_name = group.priority_class.name
        for taken in (pc_name, pc_name + VERIFICATION_PRIORITY_SUFFIX):
            pc_owner = seen_priority.setdefault(taken, group.name)
            if pc_owner != group.name:
                errors.add(f"{key}[{index}].priorityClass.name", pc_name, f"{taken!r} is already used by group {pc_owner!r}")
                break
        # One namespace cannot be both privileged (plugin) and restricted (verification).
        for namespace, use in ((group.device_plugin.namespace, "devicePlugin"), (group.verification.namespace, "verification")):
            other = namespace_use.setdefault(namespace, use)
            if other != use:
                errors.add(
                    f"{key}[{index}].{use}.namespace",
                    namespace,
                    "the device plugin namespace (Pod Security privileged) and the verification namespace "
                    "(Pod Security restricted) must differ",
                )


def _parse_group(
    errors: _Collector, key: str, raw: Any, insecure_skip_host_key_check: bool, runtime_class: RuntimeClassSpec | None
) -> NodeGroupSpec | None:
    fields = _Fields(
        errors,
        key,
        raw,
        ("name", "nodes", "gpusPerNode", "labels", "taints", "devicePlugin", "priorityClass", "verification", "preflight"),
    )
    before = len(errors.problems)
    name = fields.check(
        "name",
        fields.string("name"),
        is_dns_label,
        "expected a DNS-1123 label: lowercase letters, digits and '-', at most 63 characters",
    )
    gpus_per_node = fields.check("gpusPerNode", fields.integer("gpusPerNode"), lambda n: n >= 1, "expected at least 1")
    preflight = _parse_preflight(
        errors,
        f"{key}.preflight",
        fields.mapping("preflight", {}),
        insecure_skip_host_key_check,
        require_default_runtime=runtime_class is None,
    )
    nodes = _parse_nodes(errors, f"{key}.nodes", fields.sequence("nodes"), preflight, insecure_skip_host_key_check)
    labels = _parse_labels(errors, f"{key}.labels", fields.mapping("labels", DEFAULT_LABELS))
    taints = _parse_taints(errors, f"{key}.taints", fields.sequence("taints", list(DEFAULT_TAINTS)))
    device_plugin = _parse_device_plugin(errors, f"{key}.devicePlugin", fields.mapping("devicePlugin", {}))
    priority_class = _parse_priority_class(errors, f"{key}.priorityClass", fields.mapping("priorityClass", {}), name)
    verification = _parse_verification(
        errors,
        f"{key}.verification",
        fields.mapping("verification", {}),
        gpus_per_node,
        device_plugin.mig_strategy if device_plugin else None,
    )
    if len(errors.problems) > before:
        return None
    return NodeGroupSpec(
        name=name,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        labels=labels,
        taints=taints,
        device_plugin=device_plugin,
        priority_class=priority_class,
        verification=verification,
        preflight=preflight,
        runtime_class=runtime_class.name if runtime_class else None,
    )


def _parse_nodes(
    errors: _Collector, key: str, raw: list | None, preflight: PreflightSpec | None, insecure_skip_host_key_check: bool
) -> tuple[NodeSpec, ...]:
    if raw is None:
        return ()
    if not raw:
        errors.add(key, raw, "expected at least one node")
        return ()
    needs_ssh = preflight is not None and preflight.enabled
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        node_key = f"{key}[{index}]"
        fields = _Fields(errors, node_key, item, ("name", "sshHost", "sshPort", "sshUser", "hostKey"))
        name = fields.check(
            "name", fields.string("name"), is_dns_subdomain, "expected a Kubernetes node name (DNS-1123 subdomain)"
        )
        ssh_host = fields.string("sshHost", _MISSING if needs_ssh else None)
        ssh_port = fields.check(
            "sshPort", fields.integer("sshPort", 22), lambda p: 1 <= p <= 65535, "expected a port from 1 to 65535"
        )
        ssh_user = fields.string("sshUser", _MISSING if needs_ssh else None)
        host_key = _host_key(fields, required=needs_ssh and not insecure_skip_host_key_check)
        if name is not None:
            if name in seen:
                errors.add(f"{node_key}.name", name, "each node may be listed once")
            seen.add(name)
        nodes.append(NodeSpec(name=name, ssh_host=ssh_host, ssh_port=ssh_port, ssh_user=ssh_user, host_key=host_key))
    return tuple(nodes)


def _parse_labels(errors: _Collector, key: str, raw: dict | None) -> tuple[tuple[str, str], ...]:
    labels: list[tuple[str, str]] = []
    for label_key, value in sorted((raw or {}).items()):
        if label_key == GROUP_LABEL:
            errors.add(f"{key}.{label_key}", value, "this label is set by gpu-nodes itself (to the group name)")
        elif not is_label_key(label_key):
            errors.add(f"{key}.{label_key}", label_key, "expected a label key: [prefix/]name, name at most 63 characters")
        elif not isinstance(value, str) or not is_label_value(value):
            errors.add(
                f"{key}.{label_key}",
                value,
                "expected a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric",
            )
        else:
            labels.append((label_key, value))
    return tuple(labels)


def _parse_taints(errors: _Collector, key: str, raw: list | None) -> tuple[Taint, ...]:
    taints: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for index, text in enumerate(raw or []):
        taint = parse_taint(text) if isinstance(text, str) else None
        if taint is None:
            errors.add(
                f"{key}[{index}]",
                text,
                f"expected 'key[=value]:Effect' as for kubectl taint, Effect one of {', '.join(TAINT_EFFECTS)}",
            )
            continue
        if (taint.key, taint.effect) in seen:
            errors.add(f"{key}[{index}]", text, "a node has one taint per key and effect")
            continue
        seen.add((taint.key, taint.effect))
        taints.append(taint)
    return tuple(taints)


def _pinned(fields: _Fields, name: str, default: str) -> str | None:
    return fields.check(
        name,
        fields.string(name, default),
        is_pinned_image,
        "expected an image pinned by tag (not 'latest') or digest, e.g. registry/name:v1.2.3",
    )


def _namespace(fields: _Fields, default: str) -> str | None:
    return fields.check(
        "namespace", fields.string("namespace", default), is_dns_label, "expected a namespace name (DNS-1123 label)"
    )


def _parse_device_plugin(errors: _Collector, key: str, raw: dict | None) -> DevicePluginSpec | None:
    fields = _Fields(errors, key, raw or {}, ("image", "namespace", "migStrategy", "timeSlicingReplicas", "failOnInitError"))
    spec = DevicePluginSpec(
        image=_pinned(fields, "image", DEFAULT_DEVICE_PLUGIN_IMAGE),
        namespace=_namespace(fields, DEFAULT_DEVICE_PLUGIN_NAMESPACE),
        mig_strategy=fields.choice("migStrategy", "none", MIG_STRATEGIES),
        time_slicing_replicas=fields.check(
            "timeSlicingReplicas",
            fields.integer("timeSlicingReplicas", 1),
            lambda n: 1 <= n <= 64,
            "expected 1 (time-slicing off) to 64",
        ),
        fail_on_init_error=fields.boolean("failOnInitError", True),
    )
    return spec


def _parse_priority_class(errors: _Collector, key: str, raw: dict | None, group_name: str | None) -> PriorityClassSpec:
    fields = _Fields(errors, key, raw or {}, ("name", "value"))
    return PriorityClassSpec(
        name=fields.check(
            "name",
            # No default from an invalid group name: that mistake is reported once, on the name.
            fields.string("name", f"gpu-{group_name}" if group_name else None),
            lambda n: is_dns_subdomain(n) and not n.startswith("system-") and len(n) <= _MAX_PRIORITY_CLASS_NAME,
            f"expected a DNS-1123 subdomain not starting with 'system-' (reserved), at most {_MAX_PRIORITY_CLASS_NAME} "
            f"characters (the verification class adds {VERIFICATION_PRIORITY_SUFFIX!r})",
        ),
        value=fields.check(
            "value",
            fields.integer("value", DEFAULT_PRIORITY_VALUE),
            lambda v: MIN_PRIORITY <= v <= MAX_USER_PRIORITY,
            f"expected {MIN_PRIORITY} to {MAX_USER_PRIORITY} (higher values are reserved for system classes)",
        ),
    )


def _parse_verification(
    errors: _Collector, key: str, raw: dict | None, gpus_per_node: int | None, mig_strategy: str | None
) -> VerificationSpec:
    fields = _Fields(errors, key, raw or {}, ("image", "namespace", "gpusPerPod", "migResources", "perNode", "timeoutSeconds"))
    mig_resources = _parse_mig_resources(fields, gpus_per_node, mig_strategy)
    gpus_per_pod = _parse_gpus_per_pod(fields, gpus_per_node, mig_strategy, bool(mig_resources))
    return VerificationSpec(
        image=_pinned(fields, "image", DEFAULT_VERIFICATION_IMAGE),
        namespace=_namespace(fields, DEFAULT_VERIFICATION_NAMESPACE),
        gpus_per_pod=gpus_per_pod,
        mig_resources=mig_resources,
        per_node=fields.boolean("perNode", True),
        timeout_seconds=fields.check(
            "timeoutSeconds",
            fields.integer("timeoutSeconds", DEFAULT_VERIFICATION_TIMEOUT),
            lambda s: 30 <= s <= 86_400,
            "expected 30 to 86400 seconds",
        ),
    )


def _parse_gpus_per_pod(
    fields: _Fields, gpus_per_node: int | None, mig_strategy: str | None, has_mig_resources: bool
) -> tuple[int, ...]:
    key = f"{fields.key}.gpusPerPod"
    counts = fields.sequence("gpusPerPod", [1])
    # Time-slicing replicas do not count: a pod must see as many distinct GPUs as it asks for.
    # With single, every MIG device is one nvidia.com/gpu.
    per_gpu = MAX_MIG_DEVICES_PER_GPU if mig_strategy == "single" else 1
    limit = gpus_per_node * per_gpu if gpus_per_node is not None else None
    limit_text = f"gpusPerNode ({gpus_per_node})" if per_gpu == 1 else f"{limit} ({per_gpu} MIG devices per GPU)"
    gpus_per_pod: list[int] = []
    for index, count in enumerate(counts or []):
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            fields.errors.add(f"{key}[{index}]", count, "expected a whole number of at least 1")
        elif limit is not None and count > limit:
            fields.errors.add(f"{key}[{index}]", count, f"expected at most {limit_text}")
        elif count in gpus_per_pod:
            fields.errors.add(f"{key}[{index}]", count, "each GPU count may be listed once")
        else:
            gpus_per_pod.append(count)
    # With mixed, a group whose GPUs are all in MIG mode has no nvidia.com/gpu to ask for.
    if counts is not None and not counts and not has_mig_resources:
        fields.errors.add(key, counts, "expected at least one GPU count, e.g. [1] or [1, 2]")
    return tuple(gpus_per_pod)


def _parse_mig_resources(fields: _Fields, gpus_per_node: int | None, mig_strategy: str | None) -> tuple[tuple[str, int], ...]:
    """MIG resources the Jobs request: needed with mixed, where MIG GPUs are no nvidia.com/gpu."""
    key = f"{fields.key}.migResources"
    raw = fields.mapping("migResources", None)
    if mig_strategy == "mixed" and not raw:
        fields.errors.add(
            key,
            _MISSING if raw is None else raw,
            "with devicePlugin.migStrategy 'mixed' MIG GPUs are advertised only as nvidia.com/mig-<profile>: list "
            'the MIG resources to verify and how many each Job requests, e.g. {"nvidia.com/mig-1g.5gb": 1}',
        )
        return ()
    if raw is None:
        return ()
    if mig_strategy != "mixed":
        fields.errors.add(
            key,
            raw,
            "only with devicePlugin.migStrategy 'mixed' (with 'single' MIG devices are nvidia.com/gpu: use gpusPerPod)",
        )
        return ()
    limit = gpus_per_node * MAX_MIG_DEVICES_PER_GPU if gpus_per_node is not None else None
    resources: list[tuple[str, int]] = []
    for resource, count in sorted(raw.items()):
        if not isinstance(resource, str) or not _MIG_RESOURCE.match(resource) or len(resource) > 11 + 63:
            fields.errors.add(
                f"{key}.{resource}", resource, "expected a MIG resource name nvidia.com/mig-<profile>, e.g. nvidia.com/mig-1g.5gb"
            )
        elif not isinstance(count, int) or isinstance(count, bool) or count < 1:
            fields.errors.add(f"{key}.{resource}", count, "expected a whole number of at least 1")
        elif limit is not None and count > limit:
            per_gpu = f"{MAX_MIG_DEVICES_PER_GPU} MIG devices per GPU"
            fields.errors.add(f"{key}.{resource}", count, f"expected at most {limit} ({per_gpu})")
        else:
            resources.append((resource, count))
    return tuple(resources)


def _parse_preflight(
    errors: _Collector, key: str, raw: dict | None, insecure_skip_host_key_check: bool, require_default_runtime: bool
) -> PreflightSpec | None:
    fields = _Fields(errors, key, raw or {}, ("enabled", "containerRuntime", "minDriver", "proxy", "recheck"))
    before = len(errors.problems)
    spec = PreflightSpec(
        enabled=fields.boolean("enabled", True),
        container_runtime=fields.choice("containerRuntime", "containerd", CONTAINER_RUNTIMES),
        min_driver=fields.check(
            "minDriver",
            fields.string("minDriver", None),
            lambda v: bool(_DRIVER_VERSION.match(v)),
            "expected a driver version such as '535' or '550.54'",
        ),
        proxy=_parse_proxy(errors, f"{key}.proxy", fields.mapping("proxy", None), insecure_skip_host_key_check),
        recheck=fields.check(
            "recheck",
            fields.string("recheck", None),
            lambda v: bool(_RECHECK.match(v)),
            "expected 1-64 printable characters, such as a date: '2026-11-30'",
        ),
        require_default_runtime=require_default_runtime,
    )
    return spec if len(errors.problems) == before else None


def _parse_proxy(errors: _Collector, key: str, raw: dict | None, insecure_skip_host_key_check: bool) -> SshProxySpec | None:
    if raw is None:
        return None
    fields = _Fields(errors, key, raw, ("host", "port", "user", "hostKey"))
    spec = SshProxySpec(
        host=fields.string("host"),
        port=fields.check("port", fields.integer("port", 22), lambda p: 1 <= p <= 65535, "expected a port from 1 to 65535"),
        user=fields.string("user"),
        host_key=_host_key(fields, required=not insecure_skip_host_key_check),
    )
    return spec


def _host_key(fields: _Fields, required: bool) -> str | None:
    """A pinned host key; required unless the stack opted out of host key checking."""
    if "hostKey" not in fields.raw:
        if required:
            fields.errors.add(
                f"{fields.key}.hostKey",
                _MISSING,
                "pin the machine's SSH host key (ssh-keyscan), or set gpu-nodes:insecureSkipHostKeyCheck: true "
                "to accept any host key",
            )
        return None
    host_key = fields.check(
        "hostKey",
        fields.string("hostKey"),
        lambda k: bool(_HOST_KEY.match(k.strip())),
        "expected an OpenSSH public host key line such as 'ssh-ed25519 AAAA...'",
    )
    return host_key.strip() if host_key else None
