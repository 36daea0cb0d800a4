"""Which of the e2e stack's nodes carry the readiness gate, as a test asks it of the cluster."""

from __future__ import annotations

from tests.e2e.conftest import GATE, NODES, LocalEnv, taints_of


def gated(local: LocalEnv, name: str) -> bool:
    return GATE in taints_of(local.node(name))


def assert_only_gated(local: LocalEnv, *names: str) -> None:
    """Exactly `names` of the stack's nodes carry the gate; the others are open."""
    for name in NODES:
        expected = name in names
        assert gated(local, name) == expected, local.explain(f"{name} is {'not ' if expected else ''}gated")
