"""The import paths by which deployed stacks' states name our providers.

Pulumi keeps each dynamic resource's provider in the state as its class's import path
(`__provider`), and `pulumi refresh` and `pulumi destroy` load it from there without running the
program. A provider moved or renamed without a module left at its old path breaks both on
every stack deployed before the move.
"""

from __future__ import annotations

import base64
import importlib
import pkgutil

import dill
import pytest
from pulumi.dynamic.dynamic import serialize_provider

import gpu_nodes.providers
from gpu_nodes.providers.claims import ClaimProvider
from gpu_nodes.providers.cluster_resource import ClusterResourceProvider
from gpu_nodes.providers.coexistence import CoexistenceProvider
from gpu_nodes.providers.dra_features import DraFeaturesProvider
from gpu_nodes.providers.readiness import NodeReadinessProvider
from gpu_nodes.providers.taints import NodeTaintsProvider
from tests.golden_state import pickled_class

# Where today's states find each provider: every `pulumi up` writes these paths.
CURRENT_PATHS = {
    "gpu_nodes.providers.taints.NodeTaintsProvider": NodeTaintsProvider,
    "gpu_nodes.providers.readiness.NodeReadinessProvider": NodeReadinessProvider,
    "gpu_nodes.providers.claims.ClaimProvider": ClaimProvider,
    "gpu_nodes.providers.coexistence.CoexistenceProvider": CoexistenceProvider,
    "gpu_nodes.providers.dra_features.DraFeaturesProvider": DraFeaturesProvider,
}

# Where stacks deployed before the package find them (components/, docs/layout.md, "Layout").
OLD_PATHS = {
    "components.taints.NodeTaintsProvider": NodeTaintsProvider,
    "components.readiness.NodeReadinessProvider": NodeReadinessProvider,
    "components.claims.ClaimProvider": ClaimProvider,
    "components.coexistence.CoexistenceProvider": CoexistenceProvider,
}


def state_provider(path: str) -> str:
    """`__provider` as a state holds it: the class by its import path."""
    module, name = path.rsplit(".", 1)
    pickled = b"c" + module.encode() + b"\n" + name.encode() + b"\n)\x81."
    return base64.b64encode(pickled).decode()


@pytest.mark.parametrize("path", [*CURRENT_PATHS, *OLD_PATHS])
def test_a_provider_saved_under_its_path_loads_as_todays(path):
    provider = {**CURRENT_PATHS, **OLD_PATHS}[path]
    # As Pulumi's provider server loads it (pulumi.dynamic.__main__.get_provider).
    loaded = dill.loads(base64.b64decode(state_provider(path)))
    assert type(loaded) is provider, f"{path} loaded as {type(loaded)!r}"


@pytest.mark.parametrize("path", list(CURRENT_PATHS))
def test_a_provider_is_saved_under_its_pinned_path(path):
    # As the SDK pickles it for `__provider` (pulumi/dynamic/dynamic.py, serialize_provider).
    assert pickled_class(serialize_provider(CURRENT_PATHS[path]())) == path


def test_every_provider_of_ours_has_its_path_pinned():
    for module in pkgutil.iter_modules(gpu_nodes.providers.__path__, "gpu_nodes.providers."):
        importlib.import_module(module.name)
    found, pending = set(), [ClusterResourceProvider]
    while pending:
        for subclass in pending.pop().__subclasses__():
            if subclass.__module__.startswith("gpu_nodes."):  # not a test's own
                found.add(f"{subclass.__module__}.{subclass.__qualname__}")
            pending.append(subclass)
    assert found == set(CURRENT_PATHS), f"providers without a pinned path: {sorted(found - set(CURRENT_PATHS))}"
