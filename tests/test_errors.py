"""Every failure meant for the operator shares one base, which an embedding program can catch,
and one of three kinds below it (a config mistake, a cluster in the way, a node that failed),
which it can catch apart; the internal signals, raised and caught inside the package, do not."""

from __future__ import annotations

import pulumi
import pytest

import gpu_nodes
from gpu_nodes import errors
from gpu_nodes.errors import (
    ClaimError,
    ClusterError,
    ClusterFeatureError,
    ClusterViewUnavailableError,
    ConfigError,
    FleetError,
    GpuNodesError,
    NodeError,
    NodeKeptChangingError,
    NodeNotFoundError,
    NodeNotReadyError,
    NodeQuarantinedError,
    OtherPluginError,
    ResourceVersionConflictError,
    TaintConflictError,
    WatchExpiredError,
)

# Each error the operator can see, and the class it derives from: the tree as a program catches it.
TREE = {
    GpuNodesError: pulumi.RunError,
    ConfigError: GpuNodesError,
    FleetError: ConfigError,
    ClusterError: GpuNodesError,
    ClaimError: ClusterError,
    ClusterFeatureError: ClusterError,
    OtherPluginError: ClusterError,
    ClusterViewUnavailableError: ClusterError,
    NodeError: GpuNodesError,
    NodeNotReadyError: NodeError,
    NodeQuarantinedError: NodeNotReadyError,
    TaintConflictError: NodeError,
    NodeKeptChangingError: NodeError,
    NodeNotFoundError: NodeError,
}
KINDS = (ConfigError, ClusterError, NodeError)
INTERNAL_SIGNALS = [WatchExpiredError, ResourceVersionConflictError]


@pytest.mark.parametrize("error", TREE, ids=lambda error: error.__name__)
def test_each_operator_facing_error_has_its_place_in_the_tree(error):
    assert error.__bases__ == (TREE[error],), f"{error.__name__} derives from {error.__bases__}, not {TREE[error].__name__}"


@pytest.mark.parametrize("error", set(TREE) - {GpuNodesError, *KINDS}, ids=lambda error: error.__name__)
def test_each_operator_facing_error_is_of_exactly_one_kind(error):
    kinds = [kind.__name__ for kind in KINDS if issubclass(error, kind)]
    assert len(kinds) == 1, f"{error.__name__} is of the kinds {kinds}"


@pytest.mark.parametrize("error", INTERNAL_SIGNALS, ids=lambda error: error.__name__)
def test_internal_signals_are_not_operator_facing(error):
    assert not issubclass(error, GpuNodesError), f"{error.__name__} is caught inside the package but is a GpuNodesError"


def test_every_error_of_the_package_is_sorted_into_one_of_the_two():
    defined = {
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__
    }
    assert defined == {*TREE, *INTERNAL_SIGNALS}, "an error not listed here"


def test_the_base_is_a_run_error_so_pulumi_shows_the_message_without_a_traceback():
    assert issubclass(GpuNodesError, pulumi.RunError)


def outcome(raised: Exception) -> str:
    """What a program embedding gpu-nodes does, catching by kind."""
    try:
        raise raised
    except ConfigError:
        return "fix the config"
    except NodeError:
        return "look at the node"
    except GpuNodesError:
        return "look at the cluster"


@pytest.mark.parametrize(
    "raised, expected",
    [
        (ConfigError(["gpu-nodes:nodeGroups[0].gpusPerNode: got 0; expected 1 to 64"]), "fix the config"),
        (FleetError("fleet.yaml", ["owner: got 'c'; expected one of the stacks: a, b"]), "fix the config"),
        (NodeNotReadyError("node a100-node-1: nvidia.com/gpu 0, expected 4"), "look at the node"),
        (NodeQuarantinedError("node a100-node-1: quarantined by NVSentinel"), "look at the node"),
        (ClaimError("Namespace gpu-nodes is another stack's"), "look at the cluster"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_a_program_catches_a_config_mistake_apart_from_a_node_failure(raised, expected):
    assert outcome(raised) == expected


def test_a_fleet_file_error_reads_as_before():
    error = FleetError("fleet.yaml", ["owner: got 'c'; expected one of the stacks: a, b"])
    assert str(error) == "fleet.yaml: invalid fleet file:\n  - owner: got 'c'; expected one of the stacks: a, b"
    assert error.problems == ["owner: got 'c'; expected one of the stacks: a, b"]


@pytest.mark.parametrize("error", [GpuNodesError, *KINDS], ids=lambda error: error.__name__)
def test_the_root_and_each_kind_are_exported_by_the_package(error):
    assert getattr(gpu_nodes, error.__name__, None) is error, f"gpu_nodes does not export {error.__name__}"
    assert error.__name__ in gpu_nodes.__all__, f"{error.__name__} is missing from gpu_nodes.__all__"
