"""Stacks deployed before the package keep their providers' old import paths in the state."""

from __future__ import annotations

import base64

import dill
import pytest

from gpu_nodes.providers.claims import ClaimProvider
from gpu_nodes.providers.coexistence import CoexistenceProvider
from gpu_nodes.providers.readiness import NodeReadinessProvider
from gpu_nodes.providers.taints import NodeTaintsProvider


def old_state_provider(module: str, name: str) -> str:
    """`__provider` as the state of an earlier deploy holds it: the class by its import path."""
    pickled = b"c" + module.encode() + b"\n" + name.encode() + b"\n)\x81."
    return base64.b64encode(pickled).decode()


@pytest.mark.parametrize(
    "module, provider",
    [
        ("components.taints", NodeTaintsProvider),
        ("components.readiness", NodeReadinessProvider),
        ("components.claims", ClaimProvider),
        ("components.coexistence", CoexistenceProvider),
    ],
)
def test_a_provider_saved_under_its_old_path_loads_as_todays(module, provider):
    # As Pulumi's provider server loads it (pulumi.dynamic.__main__.get_provider).
    loaded = dill.loads(base64.b64decode(old_state_provider(module, provider.__name__)))
    assert type(loaded) is provider, f"{module}.{provider.__name__} loaded as {type(loaded)!r}"
