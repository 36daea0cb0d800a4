"""Every failure meant for the operator shares one base, which an embedding program can catch."""

from __future__ import annotations

import pytest

from components.claims import ClaimError
from components.coexistence import OtherPluginError
from components.config_fields import ConfigError
from components.errors import GpuNodesError
from components.readiness import NodeNotReadyError
from components.taints import ResourceVersionConflictError, TaintConflictError


@pytest.mark.parametrize(
    "error", [ConfigError, ClaimError, OtherPluginError, NodeNotReadyError, TaintConflictError, ResourceVersionConflictError]
)
def test_user_facing_errors_derive_from_the_base(error):
    assert issubclass(error, GpuNodesError), error


def test_internal_signals_are_not_user_facing():
    from components.cluster_view import WatchExpiredError

    assert not issubclass(WatchExpiredError, GpuNodesError)
