"""Reading the stack-level settings beside the node groups: the RuntimeClass, the namespaces
that exist already, and the other device plugin installs handed over.

Part of gpu_nodes/config/parse.py's reading; one problem per mistake, named by its key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gpu_nodes.config.fields import Problems
from gpu_nodes.config.k8s_syntax import is_dns_label, is_dns_subdomain
from gpu_nodes.config.specs import NodeGroupSpec
from gpu_nodes.config.stack_settings import CREATE_RUNTIME_CLASS, EXISTING_NAMESPACES, HAND_OVER, RUNTIME_CLASS, RuntimeClassSpec
from gpu_nodes.constants import DEFAULT_RUNTIME_CLASS
from gpu_nodes.errors import ConfigError

_HAND_OVER_REF = re.compile(
    r"(ClusterPolicy/[a-z0-9]([-a-z0-9.]*[a-z0-9])?|[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
)


def parse_hand_over(problems: Problems, raw: Any) -> tuple[str, ...]:
    """Other device plugin installs the stack may share the cluster with, by reference."""

    def problem(ref: str) -> str | None:
        return None if _HAND_OVER_REF.fullmatch(ref) else "expected <namespace>/<DaemonSet name> or ClusterPolicy/<name>"

    return _read_names(problems, HAND_OVER.key, raw, "a list such as [kube-system/nvdp-nvidia-device-plugin]", problem)


def parse_existing_namespaces(problems: Problems, raw: Any, groups: list[NodeGroupSpec]) -> tuple[str, ...]:
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
    spec = read_runtime_class(problems, name, create)
    if problems.problems:
        raise ConfigError(problems.problems)
    return spec


def read_runtime_class(problems: Problems, name: Any, create: Any) -> RuntimeClassSpec | None:
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
