"""Parsed specs from raw config, for tests of the pure manifest functions."""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.parse import parse_stack
from gpu_nodes.config.specs import NodeGroupSpec
from tests.factories import group


def group_spec(name: str = "a100", nodes: int | list[dict[str, Any]] = 2, **overrides: Any) -> NodeGroupSpec:
    return parse_stack([group(name, nodes, **overrides)]).node_groups[0]
