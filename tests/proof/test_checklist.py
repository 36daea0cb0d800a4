"""Judging a node from its objects: the checklist items, the gate, and what drift covers."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.checklist import (
    BANDWIDTH_MET,
    CHECKLIST_ITEMS,
    DEFERRED,
    DIAGNOSTICS_PASSED,
    FAIL,
    GPU_FACTS_AGREE,
    GPUS_REGISTERED,
    IMEX_CHANNEL,
    ITEMS,
    ITEMS_BY_KEY,
    LABELLED,
    METRICS_EXPORTED,
    PASS,
    PLUGIN_RUNNING,
    RUNBOOK,
    SECURE_ACCESS,
    TAINTED,
    WORKLOAD_SUCCEEDED,
    Observation,
    checklist,
    clique_problem,
    degradation,
    gated,
    gpu_problem,
    item_problems,
    items_of,
    not_ready,
    plugin_problem,
)
from gpu_nodes.resources.node_builders import node_target
from gpu_nodes.vocabulary import GATE
from tests.fakes import GATE_TAINT, GPU_TAINT, crash_looping_plugin_pod, node, nvsentinel_quarantined, plugin_pod, target
from tests.specs import group_spec


def test_the_gate_is_the_documented_taint():
    assert str(GATE) == "gpu-nodes.dev/unverified=true:NoSchedule"
    assert GATE.to_k8s() == GATE_TAINT


def test_a_healthy_node_passes_every_item():
    items = checklist(item_problems(Observation(target(), node(), [plugin_pod()])))
    assert items == dict.fromkeys(("labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded"), PASS)


def test_each_item_fails_on_its_own():
    bare = node(gpus=3, taints=[], **{"gpu-nodes.dev/node-group": "other"})
    items = checklist(item_problems(Observation(target(), bare, [], ["the Job failed"])))
    assert items == dict.fromkeys(items, FAIL), items


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_under_mig_without_a_declared_layout_any_gpu_resource_will_do(strategy):
    extra = {"verification": {"migResources": {"nvidia.com/mig-1g.10gb": 1}}} if strategy == "mixed" else {}
    spec = group_spec(devicePlugin={"migStrategy": strategy}, **extra)
    assert node_target(spec, "n1").expected_gpus is None
    assert node_target(spec, "n1").expected_mig_devices is None
    mig_node = node(gpus=None)
    mig_node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "7"
    assert gpu_problem(target(expected=None), mig_node) is None
    assert "no nvidia.com/* GPU resource" in (gpu_problem(target(expected=None), node(gpus=None)) or "")


def test_mixed_mig_with_a_declared_layout_expects_each_profile_exactly():
    spec = group_spec(
        gpusPerNode=2,
        devicePlugin={"migStrategy": "mixed", "migDevices": {"1g.10gb": 3, "2g.20gb": 2}},
        verification={"migResources": {"nvidia.com/mig-1g.10gb": 1}},
    )
    mig_target = node_target(spec, "n1")
    assert mig_target.expected_mig_devices == {"nvidia.com/mig-1g.10gb": 6, "nvidia.com/mig-2g.20gb": 4}, mig_target
    short = node(gpus=None)
    short["status"]["allocatable"].update({"nvidia.com/mig-1g.10gb": "6", "nvidia.com/mig-2g.20gb": "3"})
    assert gpu_problem(mig_target, short) == 'status.allocatable["nvidia.com/mig-2g.20gb"] is 3, expected 4'
    short["status"]["allocatable"]["nvidia.com/mig-2g.20gb"] = "4"
    assert gpu_problem(mig_target, short) is None


def test_gpu_figures_say_what_was_found_and_expected():
    assert gpu_problem(target(), node(gpus=3)) == 'status.allocatable["nvidia.com/gpu"] is 3, expected 4'
    assert gpu_problem(target(), node(gpus=5)) == 'status.allocatable["nvidia.com/gpu"] is 5, expected 4'
    assert (
        gpu_problem(target(), node(gpus=None))
        == 'status.allocatable["nvidia.com/gpu"] is not set (no GPU registered), expected 4'
    )


def test_shared_replicas_are_counted_under_the_name_the_plugin_gives_them():
    """renameByDefault: the replicas are nvidia.com/gpu.shared (k8s-device-plugin api/config/v1/replicas.go)."""
    spec = group_spec(gpusPerNode=2, devicePlugin={"sharing": {"strategy": "mps", "replicas": 4, "renameByDefault": True}})
    shared = node_target(spec, "n1")
    assert (shared.expected_gpus, shared.gpu_resource) == (8, "nvidia.com/gpu.shared"), shared
    renamed = node(gpus=None)
    renamed["status"]["allocatable"]["nvidia.com/gpu.shared"] = "8"
    assert gpu_problem(shared, renamed) is None
    assert (
        gpu_problem(shared, node(gpus=8))
        == 'status.allocatable["nvidia.com/gpu.shared"] is not set (no GPU registered), expected 8'
    )


def test_the_plugin_must_be_running_on_this_node():
    assert plugin_problem(target(), [plugin_pod()]) is None
    assert "no device plugin pod on it" in (plugin_problem(target(), [plugin_pod("n2")]) or "")
    pending = plugin_problem(target(), [plugin_pod(phase="Pending")])
    assert pending == "the device plugin pod is not Running (nvidia-device-plugin-a100-n1 Pending)", pending


def test_a_crash_looping_plugin_is_not_running():
    """Its pod stays in phase Running while its container waits to be restarted."""
    problem = plugin_problem(target(), [crash_looping_plugin_pod(restarts=5)]) or ""
    assert problem.startswith("the device plugin pod is not Running"), problem
    assert "nvidia-device-plugin-ctr CrashLoopBackOff after 5 restarts" in problem, problem
    assert "last exit 1 (Error)" in problem, problem


def test_a_plugin_container_not_ready_is_not_running():
    pod = plugin_pod()
    pod["status"]["containerStatuses"][0]["ready"] = False
    problem = plugin_problem(target(), [pod]) or ""
    assert "nvidia-device-plugin-ctr not ready" in problem, problem


def test_a_running_pod_without_container_statuses_is_not_running_yet():
    pod = plugin_pod()
    del pod["status"]["containerStatuses"]
    assert "no container status yet" in (plugin_problem(target(), [pod]) or ""), pod


def test_a_plugin_that_restarted_and_runs_again_is_running():
    """Restarts long ago (a node reboot, say) do not count against a container that is ready now."""
    pod = plugin_pod()
    pod["status"]["containerStatuses"][0]["restartCount"] = 3
    assert plugin_problem(target(), [pod]) is None, pod


def test_one_ready_plugin_pod_beside_a_crash_looping_one_is_enough():
    """During a rollout the old pod may still be there."""
    assert plugin_problem(target(), [crash_looping_plugin_pod(), plugin_pod(suffix="-new")]) is None


def test_a_crash_looping_plugin_is_degradation():
    found = degradation(target(), node(), [crash_looping_plugin_pod()])
    assert any("CrashLoopBackOff" in problem for problem in found), found


def test_not_ready_names_the_reason():
    down = node(ready=False)
    down["status"]["conditions"][0]["reason"] = "NodeStatusUnknown"
    assert not_ready(down) == "NotReady (NodeStatusUnknown)"
    assert not_ready(node()) is None
    assert not_ready(None) == "the node does not exist"


def test_degradation_lists_each_problem_and_nothing_for_a_healthy_node():
    assert degradation(target(), node(), [plugin_pod()]) == []
    found = degradation(target(), node(gpus=3, ready=False), [])
    assert len(found) == 3 and found[0].startswith("NotReady") and "expected 4" in found[2], found


def test_a_quarantine_since_the_last_run_is_degradation():
    """NVSentinel's quarantine of an open node is drift: a refresh puts the gate back (providers/taints.py)."""
    found = degradation(target(), nvsentinel_quarantined(node()), [plugin_pod()])
    assert found == ["NVSentinel's quarantine (state quarantined): cordoned, condition SysLogsXIDError"], found


def test_gated_looks_for_the_gate_only():
    assert gated(node(taints=[GPU_TAINT, GATE_TAINT]))
    assert not gated(node())


# --- the items as values ------------------------------------------------------------------

# Every deployed stack's `checklist` output holds these keys, and the node report these columns.
KEYS_AND_COLUMNS = [
    ("labelled", "LABEL"),
    ("tainted", "TAINT"),
    ("pluginRunning", "PLUGIN"),
    ("gpusRegistered", "GPUS-REGISTERED"),
    ("workloadSucceeded", "GPU-WORKLOAD"),
    ("secureAccess", "ACCESS"),
    ("diagnosticsPassed", "DCGM"),
    ("bandwidthMet", "BUSBW"),
    ("metricsExported", "METRICS"),
    ("imexChannel", "IMEX"),
    ("gpuFactsAgree", None),
]


def test_the_items_keep_their_keys_columns_and_order():
    found = [(item.key, item.column) for item in ITEMS]
    assert found == KEYS_AND_COLUMNS, found


def test_every_checklist_holds_the_runbooks_five_items_and_secure_access():
    expected = ("labelled", "tainted", "pluginRunning", "gpusRegistered", "workloadSucceeded", "secureAccess")
    assert expected == CHECKLIST_ITEMS, CHECKLIST_ITEMS


# A look at n1 that fails one item only, by item.
def _unlabelled() -> Observation:
    return Observation(target(), node(**{"gpu-nodes.dev/node-group": "other"}), [plugin_pod()])


BROKEN_LOOKS = {
    LABELLED: _unlabelled,
    TAINTED: lambda: Observation(target(), node(taints=[]), [plugin_pod()]),
    PLUGIN_RUNNING: lambda: Observation(target(), node(), []),
    GPUS_REGISTERED: lambda: Observation(target(), node(gpus=3), [plugin_pod()]),
    WORKLOAD_SUCCEEDED: lambda: Observation(target(), node(), [plugin_pod()], ["verification Job v/j failed"]),
    GPU_FACTS_AGREE: lambda: Observation(target(), node(), [plugin_pod()], facts="n1 has 4 x H100, the group 4 x A100"),
    SECURE_ACCESS: lambda: Observation(
        target(), node(), [plugin_pod()], access=["verification Job v/a failed; sees /dev/nvidia0"]
    ),
    DIAGNOSTICS_PASSED: lambda: Observation(
        target(), node(), [plugin_pod()], diagnostics=["DCGM diagnostics level 1 failed: pcie"]
    ),
    BANDWIDTH_MET: lambda: Observation(target(), node(), [plugin_pod()], bandwidth=["bus bandwidth 5.2 GB/s, below 200"]),
    METRICS_EXPORTED: lambda: Observation(target(), node(), [plugin_pod()], metrics=["GPU 2: no DCGM_FI_DEV_GPU_TEMP"]),
    IMEX_CHANNEL: lambda: Observation(
        target(), node(), [plugin_pod()], imex=["verification Job v/imex failed: ls: cannot access"]
    ),
}


@pytest.mark.parametrize("item", ITEMS, ids=lambda item: item.key)
def test_a_look_that_breaks_one_item_fails_that_item_only(item):
    found = checklist(item_problems(BROKEN_LOOKS[item](), ITEMS))
    assert [key for key, value in found.items() if value == FAIL] == [item.key], (item.key, found)


@pytest.mark.parametrize("item", ITEMS, ids=lambda item: item.key)
def test_a_healthy_look_passes_each_item(item):
    lines = item.problems(Observation(target(), node(), [plugin_pod()]))
    assert lines == [], (item.key, lines)


def test_a_failing_item_says_why_in_its_own_words():
    lines = TAINTED.problems(BROKEN_LOOKS[TAINTED]())
    assert lines == ["missing nvidia.com/gpu=present:NoSchedule"], (TAINTED.key, lines)


def test_the_workload_item_has_one_line_per_job_that_has_not_succeeded():
    lines = WORKLOAD_SUCCEEDED.problems(Observation(target(), node(), [plugin_pod()], ["job a failed", "job b pending"]))
    assert lines == ["job a failed", "job b pending"], (WORKLOAD_SUCCEEDED.key, lines)


@pytest.mark.parametrize("item", ITEMS, ids=lambda item: item.key)
def test_only_the_items_whose_jobs_hold_gpus_may_be_deferred(item):
    # The IMEX channel's Job holds a GPU of the device plugin's (the plugin adds its channels to a GPU's container).
    assert item.deferrable == (item in (WORKLOAD_SUCCEEDED, DIAGNOSTICS_PASSED, BANDWIDTH_MET, IMEX_CHANNEL)), item.key


def test_a_node_labelled_with_another_clique_fails_labelled_naming_both():
    clique = "7f0e5d1c-0d3e-4e3b-9d0e-2a6d0f3b1c11.1"
    labelled = node(**{"nvidia.com/gpu.clique": "7F0E5D1C-0D3E-4E3B-9D0E-2A6D0F3B1C11.1"})
    assert clique_problem(labelled, clique) is None, "the UUID part is compared without case"
    other = clique_problem(node(**{"nvidia.com/gpu.clique": "aaaa.2"}), clique)
    assert other is not None and "is aaaa.2" in other and clique in other, other
    unset = clique_problem(node(), clique)
    assert unset is not None and "is not set" in unset, unset
    found = checklist(item_problems(Observation(target(), node(), [plugin_pod()], clique=unset), ITEMS))
    assert [key for key, value in found.items() if value == FAIL] == ["labelled"], found


@pytest.mark.parametrize("item", ITEMS, ids=lambda item: item.key)
def test_only_the_gpu_facts_end_the_wait_and_compare_the_group(item):
    assert (item.final, item.compares_group) == ((item is GPU_FACTS_AGREE),) * 2, item.key


def test_a_node_is_judged_by_the_group_comparison_only_where_the_group_is_compared():
    assert items_of(compares_group=False) == (*RUNBOOK, SECURE_ACCESS), items_of(compares_group=False)
    assert items_of(compares_group=True) == (*RUNBOOK, SECURE_ACCESS, GPU_FACTS_AGREE), items_of(compares_group=True)


def test_the_items_a_group_runs_beyond_the_runbook_are_judged_only_where_it_runs_them():
    found = items_of(compares_group=False, optional={DIAGNOSTICS_PASSED, METRICS_EXPORTED})
    assert found == (*RUNBOOK, SECURE_ACCESS, DIAGNOSTICS_PASSED, METRICS_EXPORTED), found


@pytest.mark.parametrize("item", RUNBOOK, ids=lambda item: item.key)
def test_a_deferred_check_is_deferred_and_the_other_items_keep_their_verdict(item):
    found = checklist(item_problems(BROKEN_LOOKS[WORKLOAD_SUCCEEDED]()), deferred=True)
    assert found[item.key] == (DEFERRED if item.deferrable else PASS), (item.key, found)


def test_the_items_are_found_by_their_key():
    assert {key: item.key for key, item in ITEMS_BY_KEY.items()} == {key: key for key, _ in KEYS_AND_COLUMNS}, ITEMS_BY_KEY
