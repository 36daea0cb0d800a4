"""The one way our modules register a Kubernetes object: its manifest, as a typed resource."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import pulumi

Registered = TypeVar("Registered", bound=pulumi.CustomResource)


def register(manifest: dict[str, Any], cls: type[Registered], name: str, opts: pulumi.ResourceOptions) -> Registered:
    """Register a manifest dict as the typed resource `cls` (top-level fields become its arguments)."""
    fields = {_snake(k): v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    return cls(name, **fields, opts=opts)


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
