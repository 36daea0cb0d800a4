"""Object names and the standard `app.kubernetes.io/*` labels, derived deterministically."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gpu_nodes.vocabulary import (
    COMPONENT_LABEL,
    INSTANCE_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NAME_LABEL,
    PART_OF,
    PART_OF_LABEL,
    STACK_LABEL,
    VERSION_LABEL,
)


def dns_label(*parts: str) -> str:
    """Join parts into a DNS-1123 label; over 63 characters, shorten with a stable hash."""
    name = "-".join(parts)
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[:52].rstrip('-.')}-{digest}"


def content_hash(data: Any) -> str:
    """A short hash of JSON-able data; the same data always gives the same hash."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def ownership_labels() -> dict[str, str]:
    """What every object of ours carries, shared ones (namespaces) included."""
    return {PART_OF_LABEL: PART_OF, MANAGED_BY_LABEL: MANAGED_BY}


def claimed_labels(stack: str) -> dict[str, str]:
    """What an object a claim covers carries (a namespace, the RuntimeClass, a PriorityClass, the
    pull Secret): ours, and which stack made it (gpu_nodes/providers/claims.py)."""
    return {**ownership_labels(), STACK_LABEL: stack}


def standard_labels(name: str, instance: str, component: str, version: str | None = None) -> dict[str, str]:
    labels = {
        NAME_LABEL: name,
        INSTANCE_LABEL: instance,
        COMPONENT_LABEL: component,
        **ownership_labels(),
    }
    if version is not None:
        labels[VERSION_LABEL] = version
    return labels


def selector_labels(name: str, instance: str) -> dict[str, str]:
    """The immutable subset of `standard_labels` that selectors use."""
    return {NAME_LABEL: name, INSTANCE_LABEL: instance}
