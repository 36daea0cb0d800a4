"""The readiness check: it waits for the checklist, lifts the gate, or fails naming the node and why."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import NodeNotReadyError
from gpu_nodes.preflight.facts import GpuFacts, annotation
from gpu_nodes.proof.checklist import CHECKLIST_ITEMS, FAIL, PASS
from gpu_nodes.proof.inputs import Change, keys
from gpu_nodes.proof.target import TARGET_KEYS, DeclaredGpus
from gpu_nodes.providers.cluster_resource import read_inputs
from gpu_nodes.providers.readiness import (
    GRACE_SECONDS,
    REPROVING_KEYS,
    NodeReadinessProvider,
    ReadinessInputs,
    diagnostics_input,
)
from gpu_nodes.vocabulary import FACTS_ANNOTATION
from tests.fakes import (
    DCGM_JOB,
    GATE_TAINT,
    GPU_TAINT,
    JOBS,
    LONG_AGO,
    NVSENTINEL_TAINT,
    VERIFICATION_NAMESPACE,
    FakeCluster,
    FakeTaintApi,
    busy_pod,
    ended_pod,
    gated_cluster,
    job,
    jobs_succeed,
    node,
    nvsentinel_quarantined,
    open_busy_node,
    plugin_lands,
    plugin_pod,
    registers,
    short_node_with_settled_plugin,
    target,
)
from tests.proof.recorded import recorded


def props(**overrides) -> dict:
    """n1's readiness inputs as the resource writes them (group a100, no preflight), with `overrides` by key."""
    inputs = ReadinessInputs(target(), VERIFICATION_NAMESPACE, JOBS, timeout_seconds=60, declared_gpus=DeclaredGpus(4, 1))
    return {**inputs.to_props(), "kubeconfig": "secret", "context": None, **overrides}


@pytest.fixture
def cluster(monkeypatch) -> FakeCluster:
    fake = gated_cluster()
    monkeypatch.setattr(NodeReadinessProvider, "_view", lambda self, p: fake)
    monkeypatch.setattr(NodeReadinessProvider, "_taint_api", lambda self, p: FakeTaintApi(fake))
    monkeypatch.setattr(NodeReadinessProvider, "_deleter", lambda self, p: fake)
    monkeypatch.setattr(NodeReadinessProvider, "_node_pods", lambda self, p: fake)
    monkeypatch.setattr(NodeReadinessProvider, "_outputs", lambda self, p: fake)
    return fake


def taints_on(cluster: FakeCluster) -> list[dict]:
    return cluster.nodes["n1"]["spec"]["taints"]


def opened_before() -> dict:
    """n1's state from the proof that opened it, with the Jobs of an earlier round: this run's prove it again."""
    earlier = props(jobs=["gpu-verify-a100-n1-1gpu-0000", "gpu-verify-a100-n1-2gpu-0000"])
    return {**earlier, "checklist": dict.fromkeys(CHECKLIST_ITEMS, PASS), "gate": "lifted"}


# --- create: wait, then lift the gate or fail ----------------------------------------------


def test_a_node_that_passes_is_opened(cluster):
    cluster.events = [plugin_lands, jobs_succeed]
    created = NodeReadinessProvider().create(props())
    assert created.id == "n1", created
    assert created.outs["checklist"] == dict.fromkeys(created.outs["checklist"], PASS), created.outs
    assert created.outs["gate"] == "lifted", created.outs
    assert taints_on(cluster) == [GPU_TAINT], "the gate is still on n1"


def test_waiting_takes_one_check_per_change(cluster):
    cluster.events = [plugin_lands, jobs_succeed]
    NodeReadinessProvider().create(props())
    assert cluster.checks == 3, f"checked {cluster.checks} times for 2 changes"


def test_a_node_whose_plugin_never_lands_stays_gated_and_is_named(cluster):
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props())
    message = str(failure.value)
    assert message.startswith(f"node n1 stays gated (gpu-nodes.dev/unverified=true:NoSchedule) after {60 + GRACE_SECONDS}s"), (
        message
    )
    assert "pluginRunning: no device plugin pod on it" in message, message
    assert GATE_TAINT in taints_on(cluster), "a failed node must stay gated"


def test_a_node_short_of_a_gpu_stays_gated_with_both_figures(cluster):
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    cluster.events = [plugin_lands, jobs_succeed]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props())
    message = str(failure.value)
    assert 'gpusRegistered: node n1: status.allocatable["nvidia.com/gpu"] is 3, expected 4 (gpusPerNode 4)' in message, message
    assert "pluginRunning" not in message and "workloadSucceeded" not in message, message
    assert GATE_TAINT in taints_on(cluster)


def test_time_slicing_by_the_older_spelling_is_explained_in_its_words(cluster):
    cluster.events = [plugin_lands, jobs_succeed]
    with pytest.raises(NodeNotReadyError, match=r"expected 8 \(gpusPerNode 4 x timeSlicingReplicas 2\)"):
        NodeReadinessProvider().create(props(expectedGpus=8, replicas=2))


def test_time_slicing_by_sharing_is_explained_naming_sharing_replicas(cluster):
    """A group that wrote `devicePlugin.sharing: {strategy: timeSlicing, replicas: 4}` is told of the key it set, not of
    timeSlicingReplicas, which it may not set beside sharing."""
    cluster.events = [plugin_lands, jobs_succeed]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props(expectedGpus=16, replicas=4, sharing="timeSlicing"))
    message = str(failure.value)
    assert "expected 16 (gpusPerNode 4 x sharing.replicas (timeSlicing) 4)" in message, message
    assert "timeSlicingReplicas" not in message and "MPS control daemon" not in message, message


def test_mps_is_explained_in_the_figure_and_its_daemon_named(cluster):
    cluster.events = [plugin_lands, jobs_succeed]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props(expectedGpus=16, replicas=4, sharing="mps"))
    message = str(failure.value)
    assert "expected 16 (gpusPerNode 4 x sharing.replicas (mps) 4)" in message, message
    assert "registers the GPUs only once its MPS control daemon on n1 is ready" in message, message


def test_renamed_replicas_are_counted_under_their_own_name(cluster):
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu.shared"] = "8"
    cluster.events = [plugin_lands, jobs_succeed]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props(expectedGpus=16, replicas=4, gpuResource="nvidia.com/gpu.shared"))
    assert 'status.allocatable["nvidia.com/gpu.shared"] is 8, expected 16' in str(failure.value), str(failure.value)


def test_a_node_short_of_a_declared_mig_device_stays_gated_naming_the_resource(cluster):
    cluster.events = [plugin_lands, jobs_succeed]
    # As the group writes them: the declared layout (7 devices on each of 4 GPUs) and what it puts on the node.
    mig = {"expectedGpus": None, "expectedMigDevices": {"nvidia.com/mig-1g.10gb": 28}, "migDevices": {"1g.10gb": 7}}
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props(**mig))
    message = str(failure.value)
    expected = 'status.allocatable["nvidia.com/mig-1g.10gb"] is not set (no GPU registered), expected 28'
    assert expected in message and "(gpusPerNode 4 x devicePlugin.migDevices)" in message, message
    assert GATE_TAINT in taints_on(cluster)


def test_an_open_node_that_fails_a_new_proof_is_gated_again(cluster):
    """A new CUDA image re-runs the Jobs of a node that passed before; its Job fails."""
    cluster.nodes["n1"]["spec"]["taints"] = [GPU_TAINT]
    cluster.pod_list.append(plugin_pod())
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job(failed_reason="BackoffLimitExceeded")
    with pytest.raises(
        NodeNotReadyError, match=r"node n1 is gated again \(gpu-nodes.dev/unverified=true:NoSchedule\)"
    ) as failure:
        NodeReadinessProvider().create(props())
    assert taints_on(cluster) == [GPU_TAINT, GATE_TAINT], taints_on(cluster)
    assert "then run `pulumi up --refresh`" in str(failure.value).splitlines()[-1], str(failure.value)


GROUP = {"gpu-nodes.dev/node-group": "a100"}


def in_group(node_object: dict) -> dict:
    node_object["metadata"].setdefault("labels", {}).update(GROUP)
    return node_object


def with_facts(node_object: dict, model: str) -> dict:
    facts = GpuFacts(models=(model,), memory_mib=(81559,), count=4)
    node_object["metadata"]["annotations"] = {FACTS_ANNOTATION: annotation(facts)}
    return node_object


def test_a_node_whose_gpus_differ_from_its_groups_fails_at_once_naming_both(cluster):
    with_facts(in_group(cluster.nodes["n1"]), "NVIDIA H100 PCIe")
    for name in ("n2", "n3"):
        cluster.nodes[name] = with_facts(in_group(node(name)), "NVIDIA H100 80GB HBM3")
    never_reached = []
    cluster.events = [plugin_lands, jobs_succeed, never_reached.append]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props(groupLabel=GROUP))
    message = str(failure.value)
    assert "gpuFactsAgree: node n1 has 4 x NVIDIA H100 PCIe (81559 MiB), unlike 2 of the group's 3" in message, message
    assert "which have 4 x NVIDIA H100 80GB HBM3" in message, message
    assert never_reached == [], "the wait went on though the GPUs will not change"
    assert GATE_TAINT in taints_on(cluster)


def test_a_node_that_matches_its_group_opens_and_says_so(cluster):
    with_facts(in_group(cluster.nodes["n1"]), "NVIDIA H100 80GB HBM3")
    cluster.nodes["n2"] = with_facts(in_group(node("n2")), "NVIDIA H100 80GB HBM3")
    # A node of another group, with other GPUs, is not compared.
    cluster.nodes["l4-1"] = with_facts(node("l4-1"), "NVIDIA L4")
    cluster.events = [plugin_lands, jobs_succeed]
    outs = NodeReadinessProvider().create(props(groupLabel=GROUP)).outs
    assert outs["checklist"]["gpuFactsAgree"] == PASS and outs["gate"] == "lifted", outs


def test_a_refresh_compares_the_node_with_the_whole_group(cluster):
    """The odd node proven before the others were checked shows as drift on the next refresh."""
    cluster.nodes["n1"]["spec"]["taints"] = [GPU_TAINT]
    cluster.pod_list.append(plugin_pod())
    jobs_succeed(cluster)
    with_facts(in_group(cluster.nodes["n1"]), "NVIDIA H100 PCIe")
    for name in ("n2", "n3"):
        cluster.nodes[name] = with_facts(in_group(node(name)), "NVIDIA H100 80GB HBM3")
    outs = NodeReadinessProvider().read("n1", {**props(groupLabel=GROUP), "checklist": {}, "gate": "lifted"}).outs
    assert outs["checklist"]["gpuFactsAgree"] == "fail", outs


def new_plugin_pod(gpus: str):
    def land(cluster: FakeCluster) -> None:
        cluster.pod_list.append(plugin_pod(ready_since=LONG_AGO, suffix="-new"))
        cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = gpus

    return land


PREFLIGHT = {"preflightRun": "a100-n1-preflight-1a2b3c4d", "preflightResource": "a100-n1-preflight"}
FRESH_PREFLIGHT = {**PREFLIGHT, "preflightRun": "a100-n1-preflight-5e6f7a8b"}


def proven_before() -> dict:
    """n1's state from the proof that opened it, under PREFLIGHT's run."""
    return {**props(**PREFLIGHT), "checklist": dict.fromkeys(["gpusRegistered"], PASS), "gate": "lifted"}


def test_a_new_node_short_of_a_gpu_its_preflight_just_found_healthy_gets_a_new_plugin_pod_and_opens(cluster):
    short_node_with_settled_plugin(cluster)
    cluster.events = [new_plugin_pod("4")]
    outs = NodeReadinessProvider().create(props(**PREFLIGHT)).outs
    assert cluster.deleted_pods == ["nvidia-device-plugin-a100-n1"], cluster.deleted_pods
    assert outs["recovery"] == (
        "restarted device plugin pod nvidia-device-plugin-a100-n1 after preflight a100-n1-preflight-1a2b3c4d "
        "found every GPU healthy: its GPUs came back"
    ), outs
    assert outs["gate"] == "lifted" and GATE_TAINT not in taints_on(cluster), outs


def test_a_gpu_lost_since_the_last_proof_keeps_the_gate_until_a_fresh_preflight(cluster):
    short_node_with_settled_plugin(cluster)
    never_reached = []
    cluster.events = [never_reached.append]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().update_own("n1", proven_before(), props(**PREFLIGHT))
    message = str(failure.value)
    assert cluster.deleted_pods == [], "a restart alone would advertise the faulty GPU as healthy"
    assert never_reached == [], "nothing to wait for: only a fresh preflight can reopen the node"
    assert "node n1" in message and "k8s-device-plugin issue 111" in message, message
    assert "run a fresh preflight of the machine: `pulumi up --target-replace` its a100-n1-preflight" in message, message
    assert "or a new preflight.recheck" in message, message
    assert GATE_TAINT in taints_on(cluster), "gated again"


def test_a_refused_restart_still_lets_the_nodes_jobs_finish_before_failing(cluster):
    """The new round's Jobs run on the GPUs left, so their verdicts are known (and kept) when it fails."""
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    cluster.pod_list.append(plugin_pod(ready_since=LONG_AGO))  # the Jobs of the new round still run
    never_reached = []
    cluster.events = [jobs_succeed, never_reached.append]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().update_own("n1", proven_before(), props(**PREFLIGHT))
    assert "run a fresh preflight of the machine" in str(failure.value), failure.value
    assert cluster.deleted_jobs == [], "the Jobs had succeeded: nothing to run again"
    assert never_reached == [], "the wait went on once the Jobs were done"


def test_a_plugin_that_registers_no_gpu_yet_is_waited_for_not_refused(cluster):
    """Under MPS the plugin registers nothing until its daemon is ready (k8s-device-plugin
    internal/plugin/mps.go, waitForDaemon): a daemon put back by this run comes up while the Jobs'
    pods wait for GPUs. No GPU is held unhealthy, so nothing is refused or restarted: the check waits."""
    registers(cluster, None)
    cluster.pod_list += [plugin_pod(ready_since=LONG_AGO), busy_pod(JOBS[0], gpus=1), busy_pod(JOBS[1], gpus=2)]

    def daemon_ready_and_jobs_run(fake: FakeCluster) -> None:
        registers(fake, 4)
        jobs_succeed(fake)

    cluster.events = [daemon_ready_and_jobs_run]
    outs = NodeReadinessProvider().update_own("n1", proven_before(), props(**PREFLIGHT)).outs
    assert outs["gate"] == "lifted" and outs["recovery"] is None, f"n1: {outs}"
    assert cluster.deleted_pods == [], f"n1: plugin pods deleted {cluster.deleted_pods}"


def test_after_a_fresh_preflight_found_every_gpu_healthy_the_plugin_is_restarted_and_the_node_opens(cluster):
    short_node_with_settled_plugin(cluster)
    cluster.events = [new_plugin_pod("4")]
    outs = NodeReadinessProvider().update("n1", proven_before(), props(**FRESH_PREFLIGHT)).outs
    assert cluster.deleted_pods == ["nvidia-device-plugin-a100-n1"], cluster.deleted_pods
    assert "after preflight a100-n1-preflight-5e6f7a8b found every GPU healthy" in outs["recovery"], outs
    assert outs["gate"] == "lifted", outs


def test_without_preflight_the_plugin_is_never_restarted(cluster):
    short_node_with_settled_plugin(cluster)
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props())
    message = str(failure.value)
    assert cluster.deleted_pods == [], cluster.deleted_pods
    assert "preflight is off for this group" in message, message
    assert "nvidia-smi -q" in message and "nvidia-device-plugin-a100-n1" in message, message


def test_a_gpu_that_stays_broken_fails_once_the_new_pod_has_settled_saying_it_restarted_once(cluster):
    short_node_with_settled_plugin(cluster)
    never_reached = []
    cluster.events = [new_plugin_pod("3"), never_reached.append]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props(**PREFLIGHT))
    message = str(failure.value)
    assert 'status.allocatable["nvidia.com/gpu"] is 3, expected 4' in message, message
    assert "recovery: its device plugin pod nvidia-device-plugin-a100-n1 was restarted once" in message, message
    assert cluster.deleted_pods == ["nvidia-device-plugin-a100-n1"], "restarted more than once"
    assert never_reached == [], "the wait went on after the new pod settled short"


def test_a_plugin_that_only_just_started_is_not_restarted(cluster):
    from datetime import UTC, datetime

    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    cluster.pod_list.append(plugin_pod(ready_since=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
    jobs_succeed(cluster)
    with pytest.raises(NodeNotReadyError):
        NodeReadinessProvider().create(props(**PREFLIGHT))
    assert cluster.deleted_pods == [], cluster.deleted_pods


def test_an_open_busy_node_keeps_serving_and_its_workload_check_is_deferred(cluster):
    open_busy_node(cluster)
    outs = NodeReadinessProvider().update("n1", opened_before(), props()).outs
    assert outs["checklist"]["workloadSucceeded"] == "deferred", outs["checklist"]
    assert outs["checklist"]["gpusRegistered"] == PASS and outs["gate"] == "lifted", outs
    assert sorted(cluster.deleted_jobs) == sorted(JOBS), "the pending Jobs would run, or fail, later"
    assert GATE_TAINT not in taints_on(cluster)


def test_jobs_that_waited_out_a_plugin_restart_are_waited_for_not_deferred(cluster):
    """The plugin's restart took the GPUs off allocatable for a moment and the Jobs' pods were
    found unschedulable then; no one else holds the GPUs now, so the scheduler will place them."""
    open_busy_node(cluster, tenant_gpus=0)
    cluster.events = [jobs_succeed]
    outs = NodeReadinessProvider().update("n1", opened_before(), props()).outs
    assert outs["checklist"]["workloadSucceeded"] == PASS, outs["checklist"]
    assert cluster.deleted_jobs == [], f"n1: Jobs deleted {cluster.deleted_jobs}"


def test_a_tenant_holding_too_few_gpus_to_block_every_job_defers_nothing(cluster):
    """Three GPUs in use leave one: the 1-GPU Job runs and the 2-GPU one follows it, so the run waits."""
    open_busy_node(cluster, tenant_gpus=3)
    cluster.events = [jobs_succeed]
    outs = NodeReadinessProvider().update("n1", opened_before(), props()).outs
    assert outs["checklist"]["workloadSucceeded"] == PASS, outs["checklist"]


def test_a_deferred_check_is_proven_again_on_the_next_run():
    olds = {**props(), "checklist": {"workloadSucceeded": "deferred"}, "gate": "lifted"}
    assert NodeReadinessProvider().diff("n1", olds, props()).changes is True


def test_a_plain_run_after_a_deferral_defers_again_and_does_not_gate_the_node(cluster):
    """The deferred Jobs were deleted; only `pulumi up --refresh` makes them anew."""
    cluster.nodes["n1"]["spec"]["taints"] = [GPU_TAINT]
    cluster.pod_list.append(plugin_pod())
    cluster.jobs.clear()
    olds = {**props(), "checklist": {"workloadSucceeded": "deferred"}, "gate": "lifted"}
    outs = NodeReadinessProvider().update("n1", olds, props()).outs
    assert outs["checklist"]["workloadSucceeded"] == "deferred" and outs["gate"] == "lifted", outs
    assert GATE_TAINT not in taints_on(cluster)


def test_missing_jobs_on_a_node_never_deferred_still_fail(cluster):
    cluster.nodes["n1"]["spec"]["taints"] = [GPU_TAINT]
    cluster.pod_list.append(plugin_pod())
    cluster.jobs.clear()
    with pytest.raises(NodeNotReadyError, match="does not exist"):
        NodeReadinessProvider().update("n1", {**props(), "checklist": {"workloadSucceeded": FAIL}, "gate": "lifted"}, props())


def test_a_gated_node_is_never_deferred(cluster):
    """A new node (or one gated again) proves it all: its Jobs must run."""
    cluster.pod_list += [plugin_pod(), busy_pod(JOBS[0]), busy_pod(JOBS[1])]
    with pytest.raises(NodeNotReadyError, match="Insufficient nvidia.com/gpu"):
        NodeReadinessProvider().create(props())
    assert GATE_TAINT in taints_on(cluster)


def test_a_busy_node_short_of_gpus_is_not_deferred(cluster):
    open_busy_node(cluster)
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    with pytest.raises(NodeNotReadyError, match=r"is 3, expected 4"):
        NodeReadinessProvider().update("n1", opened_before(), props())


def test_a_failed_job_ends_the_wait_and_is_deleted_to_run_again(cluster):
    def job_fails(c: FakeCluster) -> None:
        c.jobs[(VERIFICATION_NAMESPACE, JOBS[1])] = job(failed_reason="BackoffLimitExceeded")

    never_reached = []
    cluster.events = [plugin_lands, job_fails, never_reached.append]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props())
    assert never_reached == [], "the wait went on after a Job failed"
    assert cluster.deleted_jobs == [JOBS[1], JOBS[0]], cluster.deleted_jobs
    assert "failed (BackoffLimitExceeded: it failed)" in str(failure.value)
    assert "pulumi up --refresh" in str(failure.value)


def test_a_proof_makes_one_api_client_for_all_it_does(cluster, monkeypatch):
    """It lists n1's pods, deletes the failed Job and gates the open node again, all through one client."""
    made, used = [], []
    monkeypatch.setattr("gpu_nodes.providers.readiness.api_client_from_props", lambda access: made.append(access) or object())
    monkeypatch.setattr(NodeReadinessProvider, "_node_pods", lambda self, api: used.append(api()) or cluster)
    monkeypatch.setattr(NodeReadinessProvider, "_deleter", lambda self, api: used.append(api()) or cluster)
    monkeypatch.setattr(NodeReadinessProvider, "_taint_api", lambda self, api: used.append(api()) or FakeTaintApi(cluster))
    cluster.nodes["n1"]["spec"]["taints"] = [GPU_TAINT]
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job(failed_reason="BackoffLimitExceeded")
    with pytest.raises(NodeNotReadyError):
        NodeReadinessProvider().update("n1", opened_before(), props())
    assert len(made) == 1 and len(used) == 3, f"n1: {len(made)} clients made for {len(used)} uses"
    assert all(api is used[0] for api in used), "n1: the uses got different clients"


def test_a_missing_job_says_so(cluster):
    del cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])]
    cluster.events = [plugin_lands]
    with pytest.raises(NodeNotReadyError, match=r"does not exist \(deleted after a failed run\?\)"):
        NodeReadinessProvider().create(props())


def test_a_not_ready_node_is_not_opened(monkeypatch):
    fake = gated_cluster(ready=False)
    jobs_succeed(fake)
    plugin_lands(fake)
    monkeypatch.setattr(NodeReadinessProvider, "_view", lambda self, p: fake)
    monkeypatch.setattr(NodeReadinessProvider, "_node_pods", lambda self, p: fake)
    with pytest.raises(NodeNotReadyError, match=r"- NotReady \(KubeletReady\)"):
        NodeReadinessProvider().create(props())


# --- someone else's quarantine (NVSentinel) ------------------------------------------------------


def test_a_node_nvsentinel_holds_is_never_opened_and_fails_at_once_naming_its_quarantine(cluster):
    nvsentinel_quarantined(cluster.nodes["n1"], taints=[NVSENTINEL_TAINT])
    plugin_lands(cluster)
    jobs_succeed(cluster)
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(props())
    message = str(failure.value)
    assert message.startswith("node n1 stays gated (gpu-nodes.dev/unverified=true:NoSchedule)"), message
    held = "NVSentinel's quarantine (state quarantined): cordoned, taint nvidia.com/gpu-error=fatal:NoSchedule"
    assert held in message, message
    assert "leaves its cordon and taints alone" in message, message
    assert cluster.checks == 0, f"waited {cluster.checks} looks for a node NVSentinel holds"
    assert GATE_TAINT in taints_on(cluster) and NVSENTINEL_TAINT in taints_on(cluster), taints_on(cluster)
    assert cluster.nodes["n1"]["spec"]["unschedulable"] is True, "their cordon must stay"


def test_an_open_node_nvsentinel_quarantined_since_is_gated_again_beside_their_marks(cluster):
    plugin_lands(cluster)
    jobs_succeed(cluster)
    created = NodeReadinessProvider().create(props())
    nvsentinel_quarantined(cluster.nodes["n1"], taints=[NVSENTINEL_TAINT])
    refreshed = NodeReadinessProvider().read("n1", created.outs).outs
    with pytest.raises(NodeNotReadyError, match="is gated again"):
        NodeReadinessProvider().update("n1", refreshed, props())
    assert taints_on(cluster) == [
        GPU_TAINT,
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        NVSENTINEL_TAINT,
        GATE_TAINT,
    ], taints_on(cluster)
    assert cluster.nodes["n1"]["spec"]["unschedulable"] is True


def test_a_refresh_shows_nvsentinels_quarantine_and_up_proves_the_node_again(cluster):
    plugin_lands(cluster)
    jobs_succeed(cluster)
    created = NodeReadinessProvider().create(props())
    assert created.outs["quarantine"] is None, created.outs
    nvsentinel_quarantined(cluster.nodes["n1"])
    read = NodeReadinessProvider().read("n1", created.outs)
    assert read.outs["quarantine"] == {
        "by": "NVSentinel",
        "state": "quarantined",
        "cordoned": True,
        "taints": [],
        "conditions": ["SysLogsXIDError"],
    }, read.outs
    assert NodeReadinessProvider().diff("n1", read.outs, props()).changes, "a quarantine must be a pending change"


# --- refresh and diff ------------------------------------------------------------------------


def test_refresh_of_a_healthy_node_changes_nothing(cluster):
    plugin_lands(cluster)
    jobs_succeed(cluster)
    created = NodeReadinessProvider().create(props())
    read = NodeReadinessProvider().read("n1", created.outs)
    assert read.outs == created.outs, read.outs
    assert not NodeReadinessProvider().diff("n1", read.outs, props()).changes


def test_refresh_shows_what_degraded_and_up_proves_the_node_again(cluster):
    plugin_lands(cluster)
    jobs_succeed(cluster)
    created = NodeReadinessProvider().create(props())
    cluster.pod_list.clear()  # the plugin pod stopped
    read = NodeReadinessProvider().read("n1", created.outs)
    assert read.outs["checklist"]["pluginRunning"] == "fail", read.outs
    assert NodeReadinessProvider().diff("n1", read.outs, props()).changes, "a failing item must be a pending change"


def test_refresh_shows_a_gate_put_back(cluster):
    plugin_lands(cluster)
    jobs_succeed(cluster)
    created = NodeReadinessProvider().create(props())
    taints_on(cluster).append(GATE_TAINT)
    read = NodeReadinessProvider().read("n1", created.outs)
    assert read.outs["gate"] == "up", read.outs


@pytest.mark.parametrize(
    "change",
    [
        {"jobs": ["gpu-verify-a100-n1-1gpu-cccc"]},
        {"expectedGpus": 8},
        {"timeoutSeconds": 120},
        {"expectedMigDevices": {"nvidia.com/mig-1g.10gb": 28}},
        {"groupLabel": GROUP, "gpuFacts": '{"count":4,"memoryMiB":[81559],"models":["NVIDIA H100 PCIe"]}'},
        {"preflightRun": "a100-n1-preflight-5e6f7a8b"},
    ],
    ids=["new Jobs (a new plugin or round)", "another count", "another wait", "a MIG layout", "new GPU facts", "new preflight"],
)
def test_what_makes_a_new_wait(change):
    olds = {**props(), "checklist": dict.fromkeys(["labelled"], PASS), "gate": "lifted"}
    assert NodeReadinessProvider().diff("n1", olds, props(**change)).changes, change


# --- what the resource is given, and what a change of it does --------------------------------------

# Every deployed stack's state holds them: a renamed key is a new proof of every node.
READINESS_KEYS = (
    *TARGET_KEYS,
    "namespace",
    "jobs",
    "timeoutSeconds",
    "gpusPerNode",
    "replicas",
    "sharing",
    "groupLabel",
    "gpuFacts",
    "preflightResource",
    "preflightRun",
    "gpuDevices",
    "accessJobs",
    "diagnostics",
    "performance",
    "metrics",
    "imex",
)
# Stored only: the group's figures for the message (its GPUs, replicas, MPS), and the preflight's name.
STATE_ONLY_KEYS = ("gpusPerNode", "replicas", "sharing", "preflightResource")


def test_the_readiness_inputs_keep_their_keys():
    assert keys(ReadinessInputs) == READINESS_KEYS, keys(ReadinessInputs)


def test_what_proves_the_node_again_is_what_its_inputs_declare():
    reproving = tuple(key for key in READINESS_KEYS if key not in STATE_ONLY_KEYS)
    assert reproving == REPROVING_KEYS, REPROVING_KEYS
    assert keys(ReadinessInputs, Change.STATE_ONLY) == STATE_ONLY_KEYS, keys(ReadinessInputs, Change.STATE_ONLY)


@pytest.mark.parametrize("key", REPROVING_KEYS)
def test_a_change_of_a_reproving_input_makes_a_new_wait(key):
    olds = {**props(), "checklist": dict.fromkeys(["labelled"], PASS), "gate": "lifted"}
    assert NodeReadinessProvider().diff_own("n1", olds, {**props(), key: "changed"}).changes, f"n1: {key}"


@pytest.mark.parametrize("key", STATE_ONLY_KEYS)
def test_a_change_of_a_state_only_input_is_stored_and_the_last_proof_stands(key):
    # No cluster fixture: a wait would fail to reach the API server.
    olds = {**props(), "checklist": dict.fromkeys(["labelled"], PASS), "gate": "lifted"}
    news = props(**{key: "changed"})
    assert not NodeReadinessProvider().diff_own("n1", olds, news).changes, f"n1: {key}"
    outs = NodeReadinessProvider().update("n1", olds, news).outs
    assert outs == {**olds, key: "changed"}, f"n1: {outs}"


def test_the_inputs_read_back_as_written():
    written = ReadinessInputs(
        target(),
        VERIFICATION_NAMESPACE,
        JOBS,
        timeout_seconds=60,
        declared_gpus=DeclaredGpus(4, 4, "timeSlicing"),
        group_label=GROUP,
        gpu_facts='{"count":4}',
        preflight_resource=PREFLIGHT["preflightResource"],
        preflight_run=PREFLIGHT["preflightRun"],
        gpu_devices=[{"uuid": "GPU-0", "model": "NVIDIA H100 80GB HBM3"}],
    )
    assert ReadinessInputs.from_props(written.to_props()) == written, written.to_props()


def test_a_state_reads_with_whole_numbers_and_without_the_inputs_its_group_never_had():
    """The engine hands numbers over as floats; a group without preflight or compared facts has no such inputs."""
    state = {**props(), "timeoutSeconds": 60.0, "gpusPerNode": 4.0, "replicas": 1.0, "expectedGpus": 4.0}
    read_back = read_inputs(ReadinessInputs, state)
    declared = read_back.declared_gpus
    figures = (read_back.timeout_seconds, declared.gpus_per_node, declared.replicas, read_back.target.expected_gpus)
    assert figures == (60, 4, 1, 4) and all(isinstance(f, int) for f in figures), f"n1: {figures}"
    absent = (read_back.group_label, read_back.gpu_facts, read_back.preflight_run, read_back.gpu_devices)
    assert absent == (None, None, None, None), f"n1: {absent}"


def test_a_group_without_preflight_or_compared_facts_gives_no_such_inputs():
    """None stays off the wire: the state of such a group holds no key for them (tests/golden/*.json)."""
    given = {key for key, value in props().items() if value is not None}
    assert not given & {"groupLabel", "gpuFacts", "preflightResource", "preflightRun", "gpuDevices"}, sorted(given)


def test_a_failure_message_says_the_groups_figures_as_whole_numbers(cluster):
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    cluster.events = [plugin_lands, jobs_succeed]
    with pytest.raises(NodeNotReadyError, match=r"expected 4 \(gpusPerNode 4\)"):
        NodeReadinessProvider().create(props(gpusPerNode=4.0, replicas=1.0, expectedGpus=4.0))


def test_a_state_that_kept_the_group_as_a_node_list_takes_the_label_without_a_new_proof():
    # No cluster fixture: a wait would fail to reach the API server.
    facts = '{"count":4,"memoryMiB":[81559],"models":["NVIDIA H100 PCIe"]}'
    olds = {**props(groupNodes=["n1", "n2"], gpuFacts=facts), "checklist": {"gpuFactsAgree": PASS}, "gate": "lifted"}
    news = props(groupLabel=GROUP, gpuFacts=facts)
    assert NodeReadinessProvider().diff("n1", olds, news).changes
    outs = NodeReadinessProvider().update("n1", olds, news).outs
    assert outs == {**news, "checklist": {"gpuFactsAgree": PASS}, "gate": "lifted"}, outs


def test_rotated_credentials_are_stored_and_the_node_is_not_proven_again():
    # No cluster fixture: a wait would fail to reach the API server.
    olds = {**props(), "checklist": dict.fromkeys(["labelled"], PASS), "gate": "lifted"}
    assert NodeReadinessProvider().diff("n1", olds, props(kubeconfig="rotated")).changes
    outs = NodeReadinessProvider().update("n1", olds, props(kubeconfig="rotated")).outs
    assert outs == {**olds, "kubeconfig": "rotated"}, outs


# --- the proof beyond the runbook ----------------------------------------------------------------


def dcgm_ran(exit_code: int, log: str):
    """An event: n1's DCGM Job ends with `exit_code`, its container's log `log`."""

    def event(cluster: FakeCluster) -> None:
        cluster.jobs[(VERIFICATION_NAMESPACE, DCGM_JOB)] = (
            job(succeeded=1) if exit_code == 0 else job(failed_reason="BackoffLimitExceeded")
        )
        pod = ended_pod(DCGM_JOB, "dcgm", exit_code)
        cluster.pod_list.append(pod)
        cluster.logs[(VERIFICATION_NAMESPACE, pod["metadata"]["name"], "dcgm")] = log

    return event


def with_diagnostics() -> dict:
    return props(diagnostics=diagnostics_input(DCGM_JOB, 1))


def test_a_node_whose_diagnostics_pass_opens_with_what_dcgm_ran(cluster):
    cluster.jobs[(VERIFICATION_NAMESPACE, DCGM_JOB)] = job()
    cluster.events = [plugin_lands, jobs_succeed, dcgm_ran(0, recorded("dcgmi-diag-r3-8gpu-pass.composed.json"))]
    created = NodeReadinessProvider().create(with_diagnostics())
    assert created.outs["checklist"]["diagnosticsPassed"] == PASS, created.outs
    assert created.outs["measured"]["diagnostics"]["failures"] == [], created.outs["measured"]
    assert taints_on(cluster) == [GPU_TAINT], "the gate is still on n1"


def test_a_node_whose_diagnostics_fail_stays_gated_in_dcgms_words_and_its_job_runs_again(cluster):
    cluster.jobs[(VERIFICATION_NAMESPACE, DCGM_JOB)] = job()
    failed = recorded("dcgmi-diag-r1-dcgm4.2.3-gb10-persistence-fail.json")
    cluster.events = [plugin_lands, jobs_succeed, dcgm_ran(226, failed)]
    with pytest.raises(NodeNotReadyError) as failure:
        NodeReadinessProvider().create(with_diagnostics())
    message = str(failure.value)
    assert "- diagnosticsPassed: DCGM diagnostics level 1 failed: software, GPU 0:" in message, message
    assert "(DCGM error 29)" in message, message
    assert DCGM_JOB in cluster.deleted_jobs, cluster.deleted_jobs
    assert GATE_TAINT in taints_on(cluster), "a node that fails DCGM's diagnostics stays gated"
