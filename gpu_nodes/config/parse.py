"""Stack configuration: parse and validate `gpu-nodes:*` into the specs of gpu_nodes/config/specs.py.

Everything here is pure: it takes plain data (as `pulumi.Config.require_object` returns it)
and either returns specs or raises `ConfigError` listing every problem found, so that a bad
stack fails before a single resource is registered. Plain fields are read by their
declarations (`Section`); what is here is what a declaration cannot say: lists of nodes,
labels and taints, MIG resources, fields whose default or requirement depends on another
field, and the checks across groups.
"""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.fields import MISSING, Problems, Section, Setting
from gpu_nodes.config.gpus import (
    check_gpu_facts_settings,
    check_jobs_fit_the_sharing,
    check_mig_resources_in_layout,
    parse_ignored_xids,
    parse_mig_devices,
    parse_verification,
)
from gpu_nodes.config.k8s_syntax import TAINT_EFFECTS, is_label_key, is_label_value, parse_taint, reserved_key_owner
from gpu_nodes.config.pod_settings import read_resources, read_tolerations
from gpu_nodes.config.preflight_spec import PreflightSpec, SshProxySpec
from gpu_nodes.config.specs import DevicePluginSpec, NodeGroupSpec, NodeSpec, PriorityClassSpec, VerificationSpec
from gpu_nodes.config.stack import parse_existing_namespaces, parse_hand_over, parse_runtime_class, read_runtime_class
from gpu_nodes.config.stack_settings import INSECURE_SKIP_HOST_KEY_CHECK, NODE_GROUPS, RUNTIME_CLASS, RuntimeClassSpec, StackSpec
from gpu_nodes.constants import PULL_SECRET_NAME, VERIFICATION_PRIORITY_SUFFIX
from gpu_nodes.errors import ConfigError
from gpu_nodes.vocabulary import GROUP_LABEL, Taint

__all__ = ["parse_runtime_class", "parse_stack"]


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
    if insecure_skip_host_key_check is None:  # not set
        insecure_skip_host_key_check = False
    if not INSECURE_SKIP_HOST_KEY_CHECK.kind.accepts(insecure_skip_host_key_check):
        problems.add(INSECURE_SKIP_HOST_KEY_CHECK.key, insecure_skip_host_key_check, "expected true or false")
        insecure_skip_host_key_check = False
    runtime = read_runtime_class(problems, runtime_class, create_runtime_class)
    if not isinstance(node_groups, list) or not node_groups:
        problems.add(key, node_groups, "expected a list with at least one node group")
    else:
        for index, raw in enumerate(node_groups):
            group = _parse_group(problems, f"{key}[{index}]", raw, insecure_skip_host_key_check, runtime, has_pull_secret)
            if group is not None:
                groups.append(group)
        _check_across_groups(problems, key, groups)
    existing = parse_existing_namespaces(problems, existing_namespaces, groups)
    handed_over = parse_hand_over(problems, hand_over)
    if problems.problems:
        raise ConfigError(problems.problems)
    return StackSpec(
        node_groups=tuple(groups),
        insecure_skip_host_key_check=insecure_skip_host_key_check,
        runtime_class=runtime,
        existing_namespaces=existing,
        hand_over=handed_over,
        warnings=tuple(problems.warnings),
    )


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
                "mig_devices": parse_mig_devices,
                "tolerations": lambda p, t: read_tolerations(problems, f"{p.key}.{t.key}", p.fields.read(t)),
                "resources": lambda p, t: read_resources(problems, f"{p.key}.{t.key}", p.fields.read(t)),
                "ignored_xids": parse_ignored_xids,
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
        return parse_verification(problems, f"{key}.{s.key}", group.fields.read(s) or {}, group["gpus_per_node"], mig_strategy)

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
    if access == "cdi" and group["preflight"].clean and group["preflight"]["container_runtime"] == "docker":
        problems.add(
            f"{key}.gpuAccess",
            access,
            "cannot work with preflight.containerRuntime 'docker': cri-dockerd passes no CDI devices to Docker; "
            "use defaultRuntime there",
        )
    check_mig_resources_in_layout(problems, key, group)
    check_jobs_fit_the_sharing(problems, key, group)
    check_gpu_facts_settings(problems, key, group)
    _warn_unused_preflight(problems, key, group)
    if not group.clean:
        return None
    return group.build(
        preflight=group["preflight"].build(
            require_default_runtime=access == "defaultRuntime",
            require_cdi=access == "cdi",
            isolation=group["isolation"],
            cdi_hook_path=group["device_plugin"]["cdi_hook_path"] if access == "cdi" else None,
            min_cuda=group["verification"].cuda_version if group["verification"] else None,
            mig_strategy=group["device_plugin"]["mig_strategy"],
            gpu_model=group["gpu_model"],
        ),
        device_plugin=group["device_plugin"].build(),
        runtime_class=runtime_class.name if runtime_class else None,
        image_pull_secret=PULL_SECRET_NAME if has_pull_secret else None,
    )


def _warn_unused_preflight(problems: Problems, key: str, group: Section[NodeGroupSpec]) -> None:
    """Preflight settings given while preflight is off do nothing: say so, rather than ignore them."""
    preflight = group["preflight"]
    if not preflight.clean or preflight["enabled"] is not False:
        return
    for name in sorted(k for k in preflight.fields.raw if k != "enabled" and preflight.fields.raw[k] is not None):
        problems.warn(f"{key}.preflight.{name}", preflight.fields.raw[name], "preflight.enabled is false")


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


def _parse_labels(problems: Problems, key: str, raw: dict[Any, Any] | None) -> tuple[tuple[str, str], ...]:
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
        if reserved_key_owner(taint.key):
            problems.add(f"{key}[{index}]", text, _reserved(taint.key, "taint"))
            continue
        if (taint.key, taint.effect) in seen:
            problems.add(f"{key}[{index}]", text, "a node has one taint per key and effect")
            continue
        seen.add((taint.key, taint.effect))
        taints.append(taint)
    return tuple(taints)


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
                f"pin the machine's SSH host key (ssh-keyscan), or set {INSECURE_SKIP_HOST_KEY_CHECK.key} to true "
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
