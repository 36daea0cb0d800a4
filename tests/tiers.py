"""Which tier a test is in (docs/testing.md): `make unit` runs the tests marked neither `engine`
nor `cluster`, and says so (GPU_NODES_TIER=unit). A test that reaches for the engine in that run
was not marked, and fails saying so, rather than building the toolchain or waiting on it."""

from __future__ import annotations

import os

import pytest


def needs_the_engine(what: str) -> None:
    """Fail a test of the unit tier that asks for the engine (or the cluster) through `what`."""
    if os.environ.get("GPU_NODES_TIER") == "unit":
        pytest.fail(f"{what} needs the engine, which make unit does not run: mark the test's module with pytest.mark.engine")
