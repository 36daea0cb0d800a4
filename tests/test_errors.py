"""Every failure meant for the operator shares one base, which an embedding program can catch;
the internal signals, raised and caught inside the package, do not."""

from __future__ import annotations

import pulumi
import pytest

from gpu_nodes import errors
from gpu_nodes.errors import (
    ClaimError,
    ClusterViewUnavailableError,
    ConfigError,
    FleetError,
    GpuNodesError,
    NodeKeptChangingError,
    NodeNotFoundError,
    NodeNotReadyError,
    NodeQuarantinedError,
    OtherPluginError,
    ResourceVersionConflictError,
    TaintConflictError,
    WatchExpiredError,
)

OPERATOR_FACING = [
    ConfigError,
    FleetError,
    ClaimError,
    OtherPluginError,
    NodeNotReadyError,
    NodeQuarantinedError,
    TaintConflictError,
    NodeKeptChangingError,
    NodeNotFoundError,
    ClusterViewUnavailableError,
]
INTERNAL_SIGNALS = [WatchExpiredError, ResourceVersionConflictError]


@pytest.mark.parametrize("error", OPERATOR_FACING, ids=lambda error: error.__name__)
def test_operator_facing_errors_derive_from_the_base(error):
    assert issubclass(error, GpuNodesError), f"{error.__name__} reaches the operator but is no GpuNodesError"


@pytest.mark.parametrize("error", INTERNAL_SIGNALS, ids=lambda error: error.__name__)
def test_internal_signals_are_not_operator_facing(error):
    assert not issubclass(error, GpuNodesError), f"{error.__name__} is caught inside the package but is a GpuNodesError"


def test_every_error_of_the_package_is_sorted_into_one_of_the_two():
    defined = {
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__
    }
    assert defined - {GpuNodesError} == {*OPERATOR_FACING, *INTERNAL_SIGNALS}, "an error not listed here"


def test_the_base_is_a_run_error_so_pulumi_shows_the_message_without_a_traceback():
    assert issubclass(GpuNodesError, pulumi.RunError)
