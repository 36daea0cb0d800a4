"""Stack configuration: parse and validate `gpu-nodes:*` into the specs of components/specs.py.

Everything here is pure: it takes plain data (as `pulumi.Config.require_object` returns it)
and either returns specs or raises `ConfigError` listing every problem found, so that a bad
stack fails before a single resource is registered. Plain fields are read by their
declarations (`Section`); what is here is what a declaration cannot say: lists of nodes,
labels and taints, MIG resources, fields whose default or requirement depends on another
field, and the checks across groups.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from components.config_fields import MISSING, ConfigError, Problems, Section, Setting
from components.gpu_facts import FEATURE_LABEL_KEYS
from components.k8s_syntax import TAINT_EFFECTS, Taint, is_dns_label, is_dns_subdomain, is_label_key, is_label_value, parse_taint
from components.pod_settings import read_resources, read_tolerations, read_xids
from components.specs import (
    CREATE_RUNTIME_CLASS,
    DEFAULT_RUNTIME_CLASS,
    EXISTING_NAMESPACES,
    GROUP_LABEL,
    HAND_OVER,
    INSECURE_SKIP_HOST_KEY_CHECK,
    MAX_MIG_DEVICES_PER_GPU,
    NODE_GROUPS,
    PULL_SECRET_NAME,
    RUNTIME_CLASS,
    VERIFICATION_PRIORITY_SUFFIX,
    DevicePluginSpec,
    NodeGroupSpec,
    NodeSpec,
    PreflightSpec,
    PriorityClassSpec,
    RuntimeClassSpec,
    SshProxySpec,
    StackSpec,
    VerificationSpec,
)

__all__ = ["ConfigError", "parse_runtime_class", "parse_stack"]

_MIG_PROFILE = re.compile(r"^[1-7]g\.[0-9]+gb$")
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def parse_stack(
    node_groups: Any,
    insecure_skip_host_key_check: Any = False,
    runtime_class: Any = None,
    create_runtime_class: Any = None,
    existing_namespaces: Any = None,
    has_pull_secret: bool = False,
    hand_over: Any = None,
) -> StackSpec:
    """Validate the whole stack config; raise ConfigError with every problem found.

    `runtime_class` and `create_runtime_class` are the raw strings of `gpu-nodes:runtimeClass`
    and `gpu-nodes:createRuntimeClass` (None when unset), see `parse_runtime_class`.
    """
    problems = Problems()
    key = NODE_GROUPS.key
    groups: list[NodeGroupSpec] = []
    if not INSECURE_SKIP_HOST_KEY_CHECK.kind.accepts(insecure_skip_host_key_check):
        problems.add(INSECURE_SKIP_HOST_KEY_CHECK.key, insecure_skip_host_key_check, "expected true or false")
        insecure_skip_host_key_check = False
    runtime = _parse_runtime_class(problems, runtime_class, create_runtime_class)
    if not isinstance(node_groups, list) or not node_groups:
        problems.add(key, node_groups, "expected a list with at least one node group")
    else:
        for index, raw in enumerate(node_groups):
            group = _parse_group(problems, f"{key}[{index}]", raw, insecure_skip_host_key_check, runtime, has_pull_secret)
            if group is not None:
                groups.append(group)
        _check_across_groups(problems, key, groups)
    existing = _parse_existing_namespaces(problems, existing_namespaces, groups)
    handed_over = _parse_hand_over(problems, hand_over)
    if problems.problems:
        raise ConfigError(problems.problems)
    return StackSpec(
        node_groups=tuple(groups),
        insecure_skip_host_key_check=insecure_skip_host_key_check,
        runtime_class=runtime,
        existing_namespaces=existing,
        hand_over=handed_over,
    )


_HAND_OVER_REF = re.compile(
    r"^(ClusterPolicy/[a-z0-9]([-a-z0-9.]*[a-z0-9])?|[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$"
)


def _parse_hand_over(problems: Problems, raw: Any) -> tuple[str, ...]:
    """Other device plugin installs the stack may share the cluster with, by reference."""

    def problem(ref: str) -> str | None:
        return None if _HAND_OVER_REF.match(ref) else "expected <namespace>/<DaemonSet name> or ClusterPolicy/<name>"

    return _read_names(problems, HAND_OVER.key, raw, "a list such as [kube-system/nvdp-nvidia-device-plugin]", problem)


def _parse_existing_namespaces(problems: Problems, raw: Any, groups: list[NodeGroupSpec]) -> tuple[str, ...]:
    """Namespaces to reference, not create: each one a group uses."""
    used = {name for group in groups for name in (group.device_plugin.namespace, group.verification.namespace)}

    def problem(name: str) -> str | None:
        if not is_dns_label(name):
            return "expected a namespace name (DNS-1123 label)"
        return f"no group uses it; the groups use {', '.join(sorted(used))}" if groups and name not in used else None

    return _read_names(problems, EXISTING_NAMESPACES.key, raw, "a list of namespace names", problem)


def _read_names(problems: Problems, key: str, raw: Any, expected: str, problem: Callable[[str], str | None]) -> tuple[str, ...]:
    """A stack-level list of names, each once, sorted; `problem` says what is wrong with one."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, f"expected {expected}")
        return ()
    names: list[str] = []
    for index, name in enumerate(raw):
        wrong = problem(name) if isinstance(name, str) else "expected a string"
        if wrong:
            problems.add(f"{key}[{index}]", name, wrong)
        elif name not in names:
            names.append(name)
    return tuple(sorted(names))


def parse_runtime_class(name: Any, create: Any = None) -> RuntimeClassSpec | None:
    """`gpu-nodes:runtimeClass` / `gpu-nodes:createRuntimeClass`; None when the class is off.

    - unset: the class `nvidia` (handler `nvidia`), created by this stack;
    - another name: a class that exists already (the GPU Operator's `nvidia-cdi`, say): named,
      not created, unless createRuntimeClass is true;
    - "" or false: no RuntimeClass; preflight then requires nvidia as the default runtime.
    createRuntimeClass: false with `nvidia` names an existing `nvidia` class instead of creating
    (and on destroy deleting) it.
    """
    problems = Problems()
    spec = _parse_runtime_class(problems, name, create)
    if problems.problems:
        raise ConfigError(problems.problems)
    return spec


def _parse_runtime_class(problems: Problems, name: Any, create: Any) -> RuntimeClassSpec | None:
    name_key, create_key = RUNTIME_CLASS.key, CREATE_RUNTIME_CLASS.key
    # Stack config reaches the program as strings: YAML `false` arrives as "false".
    create = _boolean_text(create)
    if create is not None and not isinstance(create, bool):
        problems.add(create_key, create, "expected true or false")
        create = None
    if name is None:
        name = DEFAULT_RUNTIME_CLASS
    if name is False or name in ("", "false"):
        if create is True:
            problems.add(create_key, create, f'nothing to create: {name_key} is off ("" or false)')
        return None
    if not isinstance(name, str) or name == "true" or not is_dns_subdomain(name):
        problems.add(name_key, name, 'expected a RuntimeClass name (DNS-1123 subdomain), or "" / false to use no RuntimeClass')
        return None
    return RuntimeClassSpec(name=name, create=create if create is not None else name == DEFAULT_RUNTIME_CLASS)


def _boolean_text(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def _check_across_groups(problems: Problems, key: str, groups: list[NodeGroupSpec]) -> None:
    seen_groups: dict[str, int] = {}
    seen_nodes: dict[str, str] = {}
    seen_priority: dict[str, str] = {}
    namespace_use: dict[str, str] = {}
    for index, group in enumerate(groups):
        if group.name in seen_groups:
            problems.add(
                f"{key}[{index}].name",
                group.name,
                f"group names must be unique (also used by nodeGroups[{seen_groups[group.name]}])",
            )
        seen_groups.setdefault(group.name, index)
        for node in group.nodes:
            owner = seen_nodes.setdefault(node.name, group.name)
            if owner != group.name:
                problems.add(
                    f"{key}[{index}].nodes", node.name, f"a node may belong to one group only (already in group {owner!r})"
                )
        pc_name = group.priority_class.name
        for taken in (pc_name, pc_name + VERIFICATION_PRIORITY_SUFFIX):
            pc_owner = seen_priority.setdefault(taken, group.name)
            if pc_owner != group.name:
                problems.add(f"{key}[{index}].priorityClass.name", pc_name, f"{taken!r} is already used by group {pc_owner!r}")
                break
        # One namespace cannot be both privileged (plugin) and restricted (verification).
        for namespace, use in ((group.device_plugin.namespace, "devicePlugin"), (group.verification.namespace, "verification")):
            other = namespace_use.setdefault(namespace, use)
            if other != use:
                problems.add(
                    f"{key}[{index}].{use}.namespace",
                    namespace,
                    "the device plugin namespace (Pod Security privileged) and the verification namespace "
                    "(Pod Security restricted) must differ",
                )


def _parse_group(
    problems: Problems,
    key: str,
    raw: Any,
    insecure_skip_host_key_check: bool,
    runtime_class: RuntimeClassSpec | None,
    has_pull_secret: bool = False,
) -> NodeGroupSpec | None:
    def preflight(group: Section[NodeGroupSpec], s: Setting) -> Section[PreflightSpec]:
        return _parse_preflight(problems, f"{key}.{s.key}", group.fields.read(s), insecure_skip_host_key_check)

    def nodes(group: Section[NodeGroupSpec], s: Setting) -> tuple[NodeSpec, ...]:
        # Unless the preflight settings are wrong: that is reported there, once.
        preflight = group["preflight"]
        needs_ssh = preflight.clean and preflight["enabled"] is True
        return _parse_nodes(problems, f"{key}.{s.key}", group.fields.read(s), needs_ssh, insecure_skip_host_key_check)

    def device_plugin(group: Section[NodeGroupSpec], s: Setting) -> Section[DevicePluginSpec]:
        section = Section(
            problems,
            f"{key}.{s.key}",
            group.fields.read(s) or {},
            DevicePluginSpec,
            hooks={
                "mig_devices": _parse_mig_devices,
                "tolerations": lambda p, t: read_tolerations(problems, f"{p.key}.{t.key}", p.fields.read(t)),
                "resources": lambda p, t: read_resources(problems, f"{p.key}.{t.key}", p.fields.read(t)),
                "ignored_xids": _parse_ignored_xids,
            },
        )
        section.read_all()
        return section

    def priority_class(group: Section[NodeGroupSpec], s: Setting) -> PriorityClassSpec | None:
        # No default from an invalid group name: that mistake is reported once, on the name.
        name = group["name"]
        section = Section(
            problems,
            f"{key}.{s.key}",
            group.fields.read(s) or {},
            PriorityClassSpec,
            hooks={"name": lambda pc, n: pc.fields.read(n, f"gpu-{name}" if name else None)},
        )
        return section.build()

    def verification(group: Section[NodeGroupSpec], s: Setting) -> VerificationSpec | None:
        mig_strategy = group["device_plugin"]["mig_strategy"]
        return _parse_verification(problems, f"{key}.{s.key}", group.fields.read(s) or {}, group["gpus_per_node"], mig_strategy)

    group = Section(
        problems,
        key,
        raw,
        NodeGroupSpec,
        hooks={
            "preflight": preflight,
            "nodes": nodes,
            "labels": lambda g, s: _parse_labels(problems, f"{key}.{s.key}", g.fields.read(s)),
            "taints": lambda g, s: _parse_taints(problems, f"{key}.{s.key}", g.fields.read(s)),
            "device_plugin": device_plugin,
            "priority_class": priority_class,
            "verification": verification,
        },
    )
    # The order problems are reported in: what other fields depend on first.
    for attr in ("name", "gpus_per_node", "preflight", "nodes", "labels", "taints", "device_plugin", "priority_class"):
        group[attr]
    group.read_all()
    access = group["gpu_access"]
    if access in ("runtimeClass", "cdi") and runtime_class is None:
        # With cdi the plugin itself needs the class: without nvidia as the default it has no NVML otherwise.
        who = "tenants must name" if access == "runtimeClass" else "the device plugin runs under"
        problems.add(
            f"{key}.gpuAccess",
            access,
            f"needs the RuntimeClass {who}, but {RUNTIME_CLASS.key} is off; set it, or use defaultRuntime",
        )
    _check_mig_resources_in_layout(problems, key, group)
    _check_gpu_facts_settings(problems, key, group)
    if not group.clean:
        return None
    return group.build(
        preflight=group["preflight"].build(
            require_default_runtime=access == "defaultRuntime",
            require_cdi=access == "cdi",
            min_cuda=group["verification"].cuda_version if group["verification"] else None,
            mig_strategy=group["device_plugin"]["mig_strategy"],
            gpu_model=group["gpu_model"],
        ),
        device_plugin=group["device_plugin"].build(),
        runtime_class=runtime_class.name if runtime_class else None,
        image_pull_secret=PULL_SECRET_NAME if has_pull_secret else None,
    )


def _parse_nodes(
    problems: Problems, key: str, raw: list[Any] | None, needs_ssh: bool, insecure_skip_host_key_check: bool
) -> tuple[NodeSpec, ...]:
    if raw is None:
        return ()
    if not raw:
        problems.add(key, raw, "expected at least one node")
        return ()
    nodes: list[NodeSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        node = Section(
            problems,
            f"{key}[{index}]",
            item,
            NodeSpec,
            hooks={
                "ssh_host": lambda n, s: n.fields.read(s, MISSING if needs_ssh else None),
                "ssh_user": lambda n, s: n.fields.read(s, MISSING if needs_ssh else None),
                "host_key": lambda n, s: _host_key(n, s, required=needs_ssh and not insecure_skip_host_key_check),
            },
        )
        node.read_all()
        name = node["name"]
        if name is not None:
            if name in seen:
                problems.add(f"{key}[{index}].name", name, "each node may be listed once")
            seen.add(name)
        spec = node.build()
        if spec is not None:
            nodes.append(spec)
    return tuple(nodes)


def _parse_labels(problems: Problems, key: str, raw: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    labels: list[tuple[str, str]] = []
    for label_key, value in sorted((raw or {}).items()):
        if label_key == GROUP_LABEL:
            problems.add(f"{key}.{label_key}", value, "this label is set by gpu-nodes itself (to the group name)")
        elif not is_label_key(label_key):
            problems.add(f"{key}.{label_key}", label_key, "expected a label key: [prefix/]name, name at most 63 characters")
        elif not isinstance(value, str) or not is_label_value(value):
            problems.add(
                f"{key}.{label_key}",
                value,
                "expected a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric",
            )
        else:
            labels.append((label_key, value))
    return tuple(labels)


def _parse_taints(problems: Problems, key: str, raw: list[Any] | None) -> tuple[Taint, ...]:
    taints: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for index, text in enumerate(raw or []):
        taint = parse_taint(text) if isinstance(text, str) else None
        if taint is None:
            problems.add(
                f"{key}[{index}]",
                text,
                f"expected 'key[=value]:Effect' as for kubectl taint, Effect one of {', '.join(TAINT_EFFECTS)}",
            )
            continue
        if (taint.key, taint.effect) in seen:
            problems.add(f"{key}[{index}]", text, "a node has one taint per key and effect")
            continue
        seen.add((taint.key, taint.effect))
        taints.append(taint)
    return tuple(taints)


def _parse_verification(
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
    for resource, count in sorted(raw.items()):
        if not isinstance(resource, str) or not _MIG_RESOURCE.match(resource) or len(resource) > 11 + 63:
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


def _check_gpu_facts_settings(problems: Problems, key: str, group: Section[NodeGroupSpec]) -> None:
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


def _check_mig_resources_in_layout(problems: Problems, key: str, group: Section[NodeGroupSpec]) -> None:
    """Under mixed MIG, a Job that asks for a profile the declared layout lacks would never schedule."""
    plugin, verification = group["device_plugin"], group["verification"]
    if not plugin.clean or verification is None or not plugin["mig_devices"] or group["gpus_per_node"] is None:
        return
    offered = {f"nvidia.com/mig-{profile}": n * group["gpus_per_node"] for profile, n in plugin["mig_devices"]}
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


def _parse_ignored_xids(section: Section[DevicePluginSpec], s: Setting) -> tuple[int, ...]:
    key = f"{section.key}.{s.key}"
    xids = read_xids(section.problems, key, section.fields.read(s))
    if xids and section["health_checks"] is False:
        section.problems.add(key, list(xids), "has no effect with healthChecks false (no XID is checked)")
    return xids


def _parse_mig_devices(section: Section[DevicePluginSpec], s: Setting) -> tuple[tuple[str, int], ...]:
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
    for profile, count in sorted(raw.items()):
        if not isinstance(profile, str) or not _MIG_PROFILE.match(profile):
            section.problems.add(f"{key}.{profile}", profile, "expected a MIG profile such as 1g.10gb or 3g.40gb")
        elif not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_MIG_DEVICES_PER_GPU:
            section.problems.add(f"{key}.{profile}", count, f"expected 1 to {MAX_MIG_DEVICES_PER_GPU} devices per GPU")
        else:
            devices.append((profile, count))
    if strategy == "single" and len(raw) > 1:
        section.problems.add(key, raw, "migStrategy 'single' needs one profile on every GPU; use 'mixed' for several")
    elif sum(n for _, n in devices) > MAX_MIG_DEVICES_PER_GPU:
        section.problems.add(key, raw, f"expected at most {MAX_MIG_DEVICES_PER_GPU} MIG devices per GPU in all")
    return tuple(devices)


def _parse_preflight(
    problems: Problems, key: str, raw: dict[str, Any] | None, insecure_skip_host_key_check: bool
) -> Section[PreflightSpec]:
    section = Section(
        problems,
        key,
        raw or {},
        PreflightSpec,
        hooks={"proxy": lambda p, s: _parse_proxy(problems, f"{key}.{s.key}", p.fields.read(s), insecure_skip_host_key_check)},
    )
    section.read_all()
    return section


def _parse_proxy(
    problems: Problems, key: str, raw: dict[str, Any] | None, insecure_skip_host_key_check: bool
) -> SshProxySpec | None:
    if raw is None:
        return None
    section = Section(
        problems,
        key,
        raw,
        SshProxySpec,
        hooks={"host_key": lambda p, s: _host_key(p, s, required=not insecure_skip_host_key_check)},
    )
    return section.build()


def _host_key(section: Section[Any], s: Setting, required: bool) -> str | None:
    """A pinned host key; required unless the stack opted out of host key checking."""
    if s.key not in section.fields.raw:
        if required:
            section.problems.add(
                f"{section.key}.{s.key}",
                MISSING,
                "pin the machine's SSH host key (ssh-keyscan), or set gpu-nodes:insecureSkipHostKeyCheck: true "
                "to accept any host key",
            )
        return None
    host_key = section.fields.read(s)
    if host_key and host_key.split()[0] == "ssh-rsa":
        # pulumi-command pins HostKeyAlgorithms to the key's type, and for RSA that is the SHA-1
        # `ssh-rsa` signature, which OpenSSH 8.8 and later no longer offer: the session would fail.
        section.problems.add(
            f"{section.key}.{s.key}",
            host_key.split()[0],
            "an ed25519 or ecdsa host key (`ssh-keyscan -t ed25519 HOST`): pulumi-command verifies an RSA host key "
            "only with the SHA-1 ssh-rsa algorithm, which OpenSSH 8.8 and later refuse",
        )
        return None
    return host_key.strip() if host_key else None
