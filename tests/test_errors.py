"""Every failure meant for the operator shares one base, which an embedding program can catch."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import (
    ClaimError,
    ConfigError,
    GpuNodesError,
    NodeNotReadyError,
    OtherPluginError,
    ResourceVersionConflictError,
    TaintConflictError,
)


@pytest.mark.parametrize(
    "error", [ConfigError, ClaimError, OtherPluginError, NodeNotReadyError, TaintConflictError, ResourceVersionConflictError]
)
def test_user_facing_errors_derive_from_the_base(error):
    assert issubclass(error, GpuNodesError), error


def test_internal_signals_are_not_user_facing():
    from gpu_nodes.errors import WatchExpiredError

    assert not issubclass(WatchExpiredError, GpuNodesError)


def test_the_base_is_a_run_error_so_pulumi_shows_the_message_without_a_traceback():
    import pulumi

    assert issubclass(GpuNodesError, pulumi.RunError)
