"""Fixtures for the tests of the preflight script (gpu_nodes/scripts/preflight/*.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .preflight_node import FakeNode, make_system_bin


@pytest.fixture(scope="session")
def system_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Symlinks to the few coreutils the script may use: no jq, no python."""
    return make_system_bin(tmp_path_factory.mktemp("system-bin"))


@pytest.fixture
def node(tmp_path: Path, system_bin: Path) -> FakeNode:
    """A node that passes every check with --runtime containerd --expect-gpus 2."""
    return FakeNode.healthy(tmp_path, system_bin)


@pytest.fixture
def bare_node(tmp_path: Path, system_bin: Path) -> FakeNode:
    """An empty root and no commands: each test adds what it needs."""
    return FakeNode(tmp_path, system_bin)
