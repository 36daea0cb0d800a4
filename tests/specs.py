"""Parsed specs from raw config, for tests of the pure manifest functions."""

from __future__ import annotations

from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import parse_stack
from tests.factories import group


def group_spec(name: str = "a100", nodes: int | list[dict[str, Any]] = 2, **overrides: Any) -> NodeGroupSpec:
    return parse_stack([group(name, nodes, **overrides)]).node_groups[0]
