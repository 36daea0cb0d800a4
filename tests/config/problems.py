"""The problems parse_stack refuses a stack config with, as the config tests read them: each one
starts with its key."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_nodes.config.stack import parse_stack
from gpu_nodes.errors import ConfigError

# The first node group's key, the start of every key within it.
KEY = "gpu-nodes:nodeGroups[0]"
MIG_1G = "nvidia.com/mig-1g.5gb"


def stack_problems(node_groups: Any, **settings: Any) -> list[str]:
    """The problems of a stack whose nodeGroups is `node_groups`, as given (a list or not)."""
    with pytest.raises(ConfigError) as caught:
        parse_stack(node_groups, **settings)
    return caught.value.problems


def problems_of(*groups: dict[str, Any], **settings: Any) -> list[str]:
    return stack_problems(list(groups), **settings)


def assert_one_problem(problems: list[str], key: str, *fragments: str) -> None:
    matching = [p for p in problems if p.startswith(f"{key}:")]
    assert len(matching) == 1, f"expected one problem for {key}, got {problems}"
    for fragment in fragments:
        assert fragment in matching[0], f"{key}: expected {fragment!r} in {matching[0]!r}"


def refused(rows: list[tuple[Any, ...]]) -> pytest.MarkDecorator:
    """A table of refused configs, `(id, raw group, key, fragments of its problem)`, as test cases."""
    return pytest.mark.parametrize(("raw", "key", "fragments"), [r[1:] for r in rows], ids=[r[0] for r in rows])
