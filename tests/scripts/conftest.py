"""Fixtures for the tests of the preflight script (gpu_nodes/scripts/preflight/*.sh)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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


@pytest.fixture
def open_node() -> Iterator[FakeNode]:
    """A healthy node in a tree any user may reach (pytest's own tmp dir is root's only)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.fail("these tests switch to another user: run them as root, with setpriv (util-linux)")
    base = Path(tempfile.mkdtemp(prefix="preflight-open-"))
    try:
        base.chmod(0o755)
        node = FakeNode.healthy(base, make_system_bin(base / "system-bin"))
        yield node
    finally:
        shutil.rmtree(base, ignore_errors=True)
