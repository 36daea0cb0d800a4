"""NVIDIA's MIG manager on a node (gpu_nodes/proof/mig_manager.py): its marks as mig-parted's reconfigure code writes
them (pkg/mig/reconfigure/reconfigure.go), what the readiness check says of a node it paused, and a change since the
node was gated as drift."""

from __future__ import annotations

from gpu_nodes.proof.checklist import PLUGIN_RUNNING, Observation, degradation, plugin_problem
from gpu_nodes.proof.mig_manager import mig_change, mig_marks, mig_pause, mig_problem
from gpu_nodes.vocabulary import DEVICE_PLUGIN_DEPLOY_LABEL, MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, PAUSED_FOR_MIG_CHANGE
from tests.fakes import node, plugin_pod, target

# What the GPU Operator labels a GPU node with (controllers/state_manager.go, gpuStateLabels), and what a user asks of
# the MIG manager.
OPERATOR_NODE = {DEVICE_PLUGIN_DEPLOY_LABEL: "true", MIG_CONFIG_LABEL: "all-disabled", MIG_CONFIG_STATE_LABEL: "success"}
# The MIG manager at work on a new config: pending, the device plugin paused (shutdownKubernetesGPUClients).
RECONFIGURING = {
    DEVICE_PLUGIN_DEPLOY_LABEL: PAUSED_FOR_MIG_CHANGE,
    MIG_CONFIG_LABEL: "all-1g.10gb",
    MIG_CONFIG_STATE_LABEL: "pending",
}
# After it: the label back to true (restartKubernetesGPUClients), the state success (setState).
RECONFIGURED = {**RECONFIGURING, DEVICE_PLUGIN_DEPLOY_LABEL: "true", MIG_CONFIG_STATE_LABEL: "success"}


def test_the_marks_are_the_config_and_its_state_and_none_on_a_node_it_never_touched():
    assert mig_marks(node("n1", **OPERATOR_NODE)) == {"config": "all-disabled", "state": "success"}
    assert mig_marks(node("n1")) == {}


def test_a_node_the_mig_manager_paused_is_named_with_its_marks():
    pause = mig_pause(node("n1", gpus=0, **RECONFIGURING))
    assert pause == (
        "NVIDIA's MIG manager is reconfiguring its GPUs (nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change, "
        "nvidia.com/mig.config=all-1g.10gb, nvidia.com/mig.config.state=pending)"
    ), pause


def test_a_change_under_way_is_named_even_where_a_false_label_kept_the_plugin():
    """The MIG manager leaves a `false` deploy label as it is (maybeSetPaused): the state still says it is at work."""
    at_work = node("n1", **{**RECONFIGURING, DEVICE_PLUGIN_DEPLOY_LABEL: "false", MIG_CONFIG_STATE_LABEL: "rebooting"})
    assert mig_pause(at_work) is not None
    assert mig_pause(node("n1", **OPERATOR_NODE)) is None
    assert mig_pause(node("n1", **{**OPERATOR_NODE, MIG_CONFIG_STATE_LABEL: "failed"})) is None


def test_the_readiness_check_names_the_mig_manager_not_a_missing_plugin():
    """Paused: no plugin pod on the node, for a named reason."""
    paused = node("n1", gpus=0, **RECONFIGURING)
    problem = plugin_problem(target(), [], paused)
    assert problem is not None, "a paused node has no plugin pod"
    assert problem.startswith("no device plugin pod on it: NVIDIA's MIG manager is reconfiguring"), problem
    assert "devicePlugin.pauseForMigManager steps off the node until the MIG manager sets " in problem, problem
    assert PLUGIN_RUNNING.problems(Observation(target(), paused, [])) == [problem]
    # Without the MIG manager's marks, the plain reason.
    assert plugin_problem(target(), [], node("n1")).startswith("no device plugin pod on it (DaemonSet pods"), "plain reason"


def test_a_node_reconfigured_since_it_was_gated_is_drift():
    gated_with = mig_marks(node("n1", **OPERATOR_NODE))
    change = mig_change(gated_with, node("n1", **RECONFIGURED))
    assert change == (
        "NVIDIA's MIG manager changed its GPUs since it was gated (nvidia.com/mig.config all-disabled then, all-1g.10gb "
        "now): prove it again"
    ), change
    assert mig_change(gated_with, node("n1", **OPERATOR_NODE)) is None
    # A state from before the marks were kept: nothing to compare.
    assert mig_change(None, node("n1", **RECONFIGURED)) is None
    # The MIG manager's first run on a node (it labels the state even when the config was applied already).
    assert mig_change({}, node("n1", **RECONFIGURED)) is not None


def test_degradation_names_the_pause_once_and_a_change_done_since():
    gated_with = mig_marks(node("n1", **OPERATOR_NODE))
    paused = degradation(target(), node("n1", gpus=0, **RECONFIGURING), [], mig_marks=gated_with)
    assert len([line for line in paused if "MIG manager" in line]) == 1, paused
    assert paused[0].startswith("no device plugin pod on it: NVIDIA's MIG manager"), paused
    done = degradation(target(), node("n1", **RECONFIGURED), [plugin_pod("n1")], mig_marks=gated_with)
    assert done == [mig_problem(gated_with, node("n1", **RECONFIGURED))], done
    assert degradation(target(), node("n1", **OPERATOR_NODE), [plugin_pod("n1")], mig_marks=gated_with) == []
