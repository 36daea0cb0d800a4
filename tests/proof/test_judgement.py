"""What "proven" means: one look at a node (`judge`), one behaviour per test.

A node passes only when it is Ready, it exists, no one else holds it in quarantine, and every item
of the runbook's checklist passes: it carries our labels and taints, its device plugin runs on it,
it offers exactly the GPUs its group declares, and every verification Job of it succeeded; with
its group's label, its GPU facts agree with the group's too. A failed Job fails the node; an
unfinished one is waited for. On an open node whose GPUs others hold, the workload check waits for
the next run. A node short of GPUs under a settled device plugin pod names that pod (a restart of
it is what brings a GPU back).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpu_nodes.preflight.facts import GpuFacts, annotation
from gpu_nodes.proof.checklist import CHECKLIST_ITEMS, DEFERRED, FAIL, PASS, WORKLOAD_SUCCEEDED
from gpu_nodes.proof.evidence import BandwidthCheck, DiagnosticsCheck, ImexCheck, MetricsCheck
from gpu_nodes.proof.judgement import PLUGIN_SETTLE_SECONDS, Judgement, PodStories, Proof, failure_message, judge
from gpu_nodes.proof.target import DeclaredGpus, NodeTarget
from gpu_nodes.vocabulary import FACTS_ANNOTATION
from tests.dra_slices import H100, gpu_device, node_slices, resource_slice, tainted, uuid, xid_taint
from tests.fakes import (
    ACCESS_JOB,
    DCGM_JOB,
    GATE_TAINT,
    GPU_TAINT,
    JOBS,
    NCCL_JOB,
    PLUGIN_NAMESPACE,
    VERIFICATION_NAMESPACE,
    FakeCluster,
    busy_pod,
    ended_pod,
    gated_cluster,
    job,
    jobs_succeed,
    node,
    nvsentinel_quarantined,
    open_busy_node,
    pending_pod,
    plugin_lands,
    plugin_pod,
    registers,
    short_node_with_settled_plugin,
    target,
)
from tests.proof.recorded import h100_with_fb_used, recorded

# When the looks are taken: long after LONG_AGO, when every plugin pod Ready since then has settled.
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
PROOF = Proof(target(), VERIFICATION_NAMESPACE, JOBS, access_jobs=[ACCESS_JOB])
GROUP = {"gpu-nodes.dev/node-group": "a100"}
PLUGIN_POD = "nvidia-device-plugin-a100-n1"


def proven_cluster() -> FakeCluster:
    """n1 with all the runbook asks: labelled, tainted, its plugin Running, 4 GPUs, its Jobs succeeded;
    still gated, for the proof is what lifts the gate."""
    cluster = gated_cluster()
    plugin_lands(cluster)
    jobs_succeed(cluster)
    return cluster


def failing(judgement: Judgement) -> list[str | None]:
    """The checklist items (None: the node's own readiness or quarantine) the look found failing, in order."""
    return [item for item, _ in judgement.problems]


# --- a node passes only when every item passes ---------------------------------------------------


def test_a_node_passes_when_every_item_of_the_runbook_passes():
    judgement = judge(proven_cluster(), PROOF, NOW)
    assert judgement.passed, f"n1: {judgement.problems}"
    assert judgement.checklist == dict.fromkeys(CHECKLIST_ITEMS, PASS), f"n1: {judgement.checklist}"


def _unlabelled(cluster: FakeCluster) -> None:
    cluster.nodes["n1"]["metadata"]["labels"]["gpu-nodes.dev/node-group"] = "other"


def _untainted(cluster: FakeCluster) -> None:
    cluster.nodes["n1"]["spec"]["taints"] = [GATE_TAINT]


def _no_plugin(cluster: FakeCluster) -> None:
    cluster.pod_list.clear()


def _short_of_a_gpu(cluster: FakeCluster) -> None:
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"


def _a_job_not_done(cluster: FakeCluster) -> None:
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[1])] = job()


def _a_pod_given_no_gpu_sees_one(cluster: FakeCluster) -> None:
    cluster.jobs[(VERIFICATION_NAMESPACE, ACCESS_JOB)] = job(failed_reason="BackoffLimitExceeded")


# Each item of the runbook, and what breaks it alone.
BROKEN = {
    "labelled": _unlabelled,
    "tainted": _untainted,
    "pluginRunning": _no_plugin,
    "gpusRegistered": _short_of_a_gpu,
    "workloadSucceeded": _a_job_not_done,
    "secureAccess": _a_pod_given_no_gpu_sees_one,
}


@pytest.mark.parametrize("item", BROKEN)
def test_a_node_fails_the_one_item_it_breaks_and_is_not_proven(item):
    cluster = proven_cluster()
    BROKEN[item](cluster)
    judgement = judge(cluster, PROOF, NOW)
    assert not judgement.passed, f"n1 passed with {item} broken"
    assert set(failing(judgement)) == {item}, f"n1, {item} broken: {judgement.problems}"
    assert judgement.checklist[item] == FAIL, f"n1: {judgement.checklist}"


def test_the_checklist_holds_every_item_every_node_is_proven_by():
    assert set(BROKEN) == set(CHECKLIST_ITEMS), sorted(BROKEN)


def test_a_node_that_is_not_ready_is_not_proven():
    cluster = proven_cluster()
    cluster.nodes["n1"]["status"]["conditions"][0]["status"] = "False"
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.problems == [(None, "NotReady (KubeletReady)")], f"n1: {judgement.problems}"


def test_a_node_that_does_not_exist_is_not_proven():
    cluster = proven_cluster()
    del cluster.nodes["n1"]
    judgement = judge(cluster, PROOF, NOW)
    assert (None, "the node does not exist") in judgement.problems, f"n1: {judgement.problems}"


def with_facts(node_object: dict, model: str) -> dict:
    node_object["metadata"]["annotations"] = {FACTS_ANNOTATION: annotation(GpuFacts((model,), (81559,), 4))}
    return node_object


def group_of_other_gpus() -> FakeCluster:
    """n1 with H100 PCIe, n2 and n3 of its group with H100 SXM: its GPUs are not the group's."""
    cluster = proven_cluster()
    with_facts(cluster.nodes["n1"], "NVIDIA H100 PCIe")
    for name in ("n2", "n3"):
        cluster.nodes[name] = with_facts(node(name), "NVIDIA H100 80GB HBM3")
    return cluster


def test_with_its_group_a_node_passes_only_when_its_gpus_are_the_groups_and_fails_at_once():
    judgement = judge(group_of_other_gpus(), Proof(target(), VERIFICATION_NAMESPACE, JOBS, group=GROUP), NOW)
    assert failing(judgement) == ["gpuFactsAgree"], f"n1: {judgement.problems}"
    assert judgement.final, "n1: its GPUs will not change: nothing to wait for"


def test_the_group_is_compared_only_when_the_look_asks():
    """The comparison reads every node of the group: a wait compares before it starts, and at its end."""
    judgement = judge(group_of_other_gpus(), Proof(target(), VERIFICATION_NAMESPACE, JOBS, group=GROUP), NOW, compare=False)
    assert judgement.passed, f"n1: {judgement.problems}"


def test_someone_elses_quarantine_keeps_a_node_unproven_though_every_item_passes():
    cluster = proven_cluster()
    nvsentinel_quarantined(cluster.nodes["n1"])
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.quarantine is not None and judgement.quarantine.by == "NVSentinel", f"n1: {judgement.quarantine}"
    assert failing(judgement) == [None], f"n1: {judgement.problems}"
    assert "keeps the gate on until NVSentinel releases the node" in judgement.problems[0][1], judgement.problems
    assert judgement.final and not judgement.passed, "n1: held by someone else, nothing to wait for"


@pytest.mark.parametrize("taints, up", [([GPU_TAINT, GATE_TAINT], True), ([GPU_TAINT], False)], ids=["gated", "open"])
def test_the_look_says_whether_the_gate_is_on(taints, up):
    cluster = proven_cluster()
    cluster.nodes["n1"]["spec"]["taints"] = taints
    assert judge(cluster, PROOF, NOW).gate_up is up, f"n1: {taints}"


# --- the verification Jobs ----------------------------------------------------------------------


def test_a_failed_job_fails_the_node_at_once():
    cluster = proven_cluster()
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job(failed_reason="BackoffLimitExceeded")
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.failed_jobs == [JOBS[0]], f"{JOBS[0]}: {judgement.failed_jobs}"
    assert judgement.final, f"{JOBS[0]} failed: nothing more to wait for"
    assert "failed (BackoffLimitExceeded: it failed)" in judgement.problems[0][1], judgement.problems


def test_an_unfinished_job_is_waited_for():
    cluster = proven_cluster()
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job()
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.unfinished_jobs == [JOBS[0]] and not judgement.failed_jobs, f"{JOBS[0]}: {judgement}"
    assert not judgement.final, f"{JOBS[0]} may still succeed"


def test_a_missing_job_is_unproven_not_failed():
    """Deleted after a failed run, say: a refresh makes it anew."""
    cluster = proven_cluster()
    del cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])]
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.unfinished_jobs == [JOBS[0]] and not judgement.failed_jobs, f"{JOBS[0]}: {judgement}"
    assert "does not exist (deleted after a failed run?)" in judgement.problems[0][1], judgement.problems


def test_stories_persist_across_looks_when_the_jobs_pods_are_gone():
    """The Job controller deletes a Job's pods at its deadline: the failure says what the last look saw of them."""
    cluster = proven_cluster()
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job()
    cluster.pod_list.append(pending_pod(JOBS[0]))
    first = judge(cluster, PROOF, NOW)
    cluster.pod_list = [plugin_pod()]
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job(failed_reason="DeadlineExceeded")
    judgement = judge(cluster, PROOF, NOW, first.stories)
    (item, problem), *_ = judgement.problems
    assert item == WORKLOAD_SUCCEEDED.key, f"{JOBS[0]}: {judgement.problems}"
    assert "failed (DeadlineExceeded: it failed); pod" in problem and "untolerated taint" in problem, f"{JOBS[0]}: {problem}"


def test_a_look_returns_the_stories_it_saw_and_leaves_those_it_was_given():
    cluster = proven_cluster()
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job()
    cluster.pod_list.append(pending_pod(JOBS[0]))
    seen = PodStories({JOBS[1]: "an older story"})
    judgement = judge(cluster, PROOF, NOW, seen)
    assert seen == PodStories({JOBS[1]: "an older story"}), f"{JOBS[1]}: the caller's stories changed"
    assert "untolerated taint" in judgement.stories.by_job[JOBS[0]], f"{JOBS[0]}: {judgement.stories}"
    assert judgement.stories.by_job[JOBS[1]] == "an older story", f"{JOBS[1]}: {judgement.stories}"


# --- an open busy node: the workload check may wait for the next run -------------------------------


def busy(tenant_gpus: int = 4) -> FakeCluster:
    """n1 open, its Jobs' pods waiting for GPUs, a tenant holding `tenant_gpus` of its 4."""
    cluster = proven_cluster()
    for name in JOBS:
        cluster.jobs[(VERIFICATION_NAMESPACE, name)] = job()
    cluster.pod_list.clear()
    open_busy_node(cluster, tenant_gpus)
    return cluster


def test_an_open_busy_node_defers_its_workload_check_when_others_hold_the_gpus_its_jobs_wait_for():
    cluster = busy()
    judgement = judge(cluster, PROOF, NOW, node_pods=cluster)
    assert judgement.passed, f"n1: {judgement.problems}"
    assert judgement.checklist[WORKLOAD_SUCCEEDED.key] == DEFERRED, f"n1: {judgement.checklist}"
    assert judgement.deferred_jobs == JOBS, f"n1: {judgement.deferred_jobs}"


@pytest.mark.parametrize(
    "tenant_gpus", [3, 0], ids=["a tenant leaves one GPU: the 1-GPU Job runs", "no tenant: the Jobs wait on the scheduler"]
)
def test_jobs_that_could_get_their_gpus_are_waited_for_not_deferred(tenant_gpus):
    cluster = busy(tenant_gpus)
    judgement = judge(cluster, PROOF, NOW, node_pods=cluster)
    assert not judgement.deferred_jobs and not judgement.passed, f"n1, tenant holding {tenant_gpus}: {judgement}"


def _gated(cluster: FakeCluster) -> None:
    cluster.nodes["n1"]["spec"]["taints"].append(GATE_TAINT)


def _failed_job(cluster: FakeCluster) -> None:
    cluster.jobs[(VERIFICATION_NAMESPACE, JOBS[0])] = job(failed_reason="BackoffLimitExceeded")


def _running_job(cluster: FakeCluster) -> None:
    cluster.pod_list = [p for p in cluster.pod_list if p["metadata"]["name"] != busy_pod(JOBS[0])["metadata"]["name"]]


# What keeps a busy node's workload check from waiting for the next run: it must be proven now.
NOT_DEFERRED = {
    "a gated node is proven in full": _gated,
    "a node short of a GPU": _short_of_a_gpu,
    "a failed Job": _failed_job,
    "a Job that does not wait for GPUs": _running_job,
}


@pytest.mark.parametrize("case", NOT_DEFERRED)
def test_a_busy_node_defers_nothing_when(case):
    cluster = busy()
    NOT_DEFERRED[case](cluster)
    judgement = judge(cluster, PROOF, NOW, node_pods=cluster)
    assert not judgement.deferred_jobs, f"n1, {case}: {judgement.deferred_jobs}"
    assert judgement.checklist[WORKLOAD_SUCCEEDED.key] == FAIL, f"n1, {case}: {judgement.checklist}"


def test_without_a_list_of_the_nodes_pods_nothing_is_deferred():
    """Only that list says whose pods hold the node's GPUs (a refresh's look has none to spare)."""
    judgement = judge(busy(), PROOF, NOW)
    assert not judgement.deferred_jobs and not judgement.passed, f"n1: {judgement}"


def test_a_job_deleted_after_a_deferral_is_unproven_not_failed_and_defers_again():
    """A plain run after a deferral: its Jobs were deleted then, and only a refresh makes them anew."""
    cluster = busy()
    for name in JOBS:
        del cluster.jobs[(VERIFICATION_NAMESPACE, name)]
    judgement = judge(cluster, PROOF, NOW, deferred_before=True, node_pods=cluster)
    assert not judgement.failed_jobs and judgement.unfinished_jobs == JOBS, f"n1: {judgement}"
    assert judgement.deferred_jobs == JOBS and judgement.passed, f"n1: {judgement.problems}"


# --- a node short of GPUs: which plugin pod a restart would renew --------------------------------


def test_a_node_short_of_gpus_under_a_settled_plugin_pod_names_the_pod():
    cluster = gated_cluster()
    short_node_with_settled_plugin(cluster)
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.short_plugin == PLUGIN_POD, f"n1: {judgement.short_plugin}"
    assert failing(judgement) == ["gpusRegistered"], f"n1: {judgement.problems}"


# What a short node's plugin pod does not hold unhealthy: a new pod brings none of it back.
def _a_gpu_missing(cluster: FakeCluster) -> None:
    registers(cluster, 3)


def _nothing_registered_yet(cluster: FakeCluster) -> None:
    # A plugin still starting, or under MPS waiting for its daemon (k8s-device-plugin internal/plugin/mps.go).
    registers(cluster, None)


NOT_HELD_UNHEALTHY = {"a GPU missing": _a_gpu_missing, "nothing registered yet": _nothing_registered_yet}


@pytest.mark.parametrize("case", NOT_HELD_UNHEALTHY)
def test_a_short_node_whose_plugin_holds_no_gpu_unhealthy_names_no_plugin_pod(case):
    cluster = gated_cluster()
    short_node_with_settled_plugin(cluster)
    NOT_HELD_UNHEALTHY[case](cluster)
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.short_plugin is None, f"n1, {case}: {judgement.short_plugin}"
    assert failing(judgement) == ["gpusRegistered"], f"n1, {case}: {judgement.problems}"


READY_SINCE = "2026-12-01T12:00:00Z"


@pytest.mark.parametrize("seconds, named", [(PLUGIN_SETTLE_SECONDS - 1, None), (PLUGIN_SETTLE_SECONDS, PLUGIN_POD)])
def test_a_plugin_pod_is_named_only_once_it_has_settled(seconds, named):
    """A pod that only just started may not have registered every GPU it will."""
    cluster = gated_cluster()
    _short_of_a_gpu(cluster)
    jobs_succeed(cluster)
    cluster.pod_list.append(plugin_pod(ready_since=READY_SINCE))
    ready = datetime.fromisoformat(READY_SINCE).timestamp()
    judgement = judge(cluster, PROOF, ready + seconds)
    assert judgement.short_plugin == named, f"n1, {seconds}s after Ready: {judgement.short_plugin}"


def _not_ready(cluster: FakeCluster) -> None:
    cluster.nodes["n1"]["status"]["conditions"][0]["status"] = "False"


# What makes a short node's plugin pod no cure: the node fails for another reason.
OTHER_CAUSES = {"not Ready": _not_ready, "a failed Job": _failed_job}


@pytest.mark.parametrize("case", OTHER_CAUSES)
def test_a_short_node_names_no_plugin_pod_when_it_fails_for_another_reason(case):
    cluster = gated_cluster()
    short_node_with_settled_plugin(cluster)
    OTHER_CAUSES[case](cluster)
    judgement = judge(cluster, PROOF, NOW)
    assert judgement.short_plugin is None, f"n1, {case}: {judgement.short_plugin}"


DRA_TARGET = NodeTarget(**{**vars(target(None)), "dra_gpus": {"count": 4}})
DEVICES = [{"uuid": uuid(i), "model": H100} for i in range(4)]


def test_under_dra_a_node_passes_only_when_its_slices_list_the_gpus_its_preflight_found():
    cluster = proven_cluster()
    cluster.slices = node_slices("n1", 4)
    proof = Proof(DRA_TARGET, VERIFICATION_NAMESPACE, JOBS, devices=DEVICES)
    assert judge(cluster, proof, NOW).passed, "n1: its slices list its four GPUs"
    cluster.slices = [resource_slice("n1", [gpu_device(i) for i in range(3)])]
    judgement = judge(cluster, proof, NOW)
    assert failing(judgement) == ["gpusRegistered"] and uuid(3) in judgement.problems[0][1], f"n1: {judgement.problems}"


def test_under_dra_a_gpu_the_driver_tainted_keeps_the_node_gated_naming_the_device_and_the_taint():
    cluster = proven_cluster()
    cluster.slices = [resource_slice("n1", [*(gpu_device(i) for i in range(3)), tainted(gpu_device(3), xid_taint(79))])]
    judgement = judge(cluster, Proof(DRA_TARGET, VERIFICATION_NAMESPACE, JOBS, devices=DEVICES), NOW)
    assert failing(judgement) == ["gpusRegistered"], f"n1: {judgement.problems}"
    assert f"{uuid(3)} (gpu-3) gpu.nvidia.com/xid=79:NoSchedule" in judgement.problems[0][1], f"n1: {judgement.problems}"
    message = failure_message(DRA_TARGET, judgement, 120, DeclaredGpus(4, 1))
    assert "its kubelet plugin pod restarts" in message and "untainted" in message, message


def test_under_dra_a_short_node_names_no_plugin_pod():
    """NVIDIA's DRA driver is not restarted to bring a GPU back: the restart rule is the device plugin's."""
    cluster = gated_cluster()
    short_node_with_settled_plugin(cluster)
    cluster.slices = [resource_slice("n1", [gpu_device(i) for i in range(3)])]
    judgement = judge(cluster, Proof(DRA_TARGET, VERIFICATION_NAMESPACE, JOBS, devices=DEVICES), NOW)
    assert failing(judgement) == ["gpusRegistered"], f"n1: {judgement.problems}"
    assert judgement.short_plugin is None, f"n1: {judgement.short_plugin}"


def test_jobs_starved_of_gpus_on_a_short_node_count_as_done():
    """Nothing more to learn from them: the readiness check may decide on the node's GPUs."""
    cluster = busy()
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    judgement = judge(cluster, PROOF, NOW, node_pods=cluster)
    assert judgement.starved_jobs == JOBS and judgement.jobs_done, f"n1: {judgement.starved_jobs}"
    # Its plugin pod has no Ready time yet: not settled, not named.
    assert judgement.short_plugin is None, f"n1: {judgement.short_plugin}"


# --- the proof beyond the runbook: DCGM's, NCCL's and the exporter's reports ----------------------

DIAGNOSED = Proof(
    target(),
    VERIFICATION_NAMESPACE,
    JOBS,
    access_jobs=[ACCESS_JOB],
    diagnostics=DiagnosticsCheck(DCGM_JOB, 1),
    performance=BandwidthCheck(NCCL_JOB, 4, floor_gbps=200.0),
    metrics=MetricsCheck(PLUGIN_NAMESPACE, {"app.kubernetes.io/name": "dcgm-exporter"}, 9400, gpus=4),
)
EXPORTER_POD = "dcgm-exporter-a100-n1"


def exporter_pod() -> dict:
    pod = plugin_pod()
    pod["metadata"] = {"name": EXPORTER_POD, "namespace": PLUGIN_NAMESPACE, "labels": {"app.kubernetes.io/name": "dcgm-exporter"}}
    return pod


def four_gpu_page() -> str:
    """The recorded H100 scrape (with FB_USED) of GPUs 0-3 only: a node of four."""
    return "\n".join(line for line in h100_with_fb_used().splitlines() if not any(f'gpu="{i}"' in line for i in range(4, 8)))


def tools_ran(cluster: FakeCluster, dcgm: tuple[int, str], nccl: tuple[int, str]) -> FakeCluster:
    """n1's DCGM and NCCL Jobs ended with these exit codes and logs, and its exporter serves four GPUs."""
    for name, container, (code, log) in ((DCGM_JOB, "dcgm", dcgm), (NCCL_JOB, "nccl", nccl)):
        ended = job(succeeded=1) if code == 0 else job(failed_reason="BackoffLimitExceeded")
        cluster.jobs[(VERIFICATION_NAMESPACE, name)] = ended
        pod = ended_pod(name, container, code)
        cluster.pod_list.append(pod)
        cluster.logs[(VERIFICATION_NAMESPACE, pod["metadata"]["name"], container)] = log
    cluster.pod_list.append(exporter_pod())
    cluster.pages[(PLUGIN_NAMESPACE, EXPORTER_POD, 9400)] = four_gpu_page()
    return cluster


PASSING_DCGM = (0, recorded("dcgmi-diag-r3-8gpu-pass.composed.json"))
FAILING_DCGM = (226, recorded("dcgmi-diag-r1-dcgm4.2.3-gb10-persistence-fail.json"))
GOOD_NCCL = (0, recorded("all_reduce_perf-dgx-a100-4gpu-nvswitch.table.txt"))
DEGRADED_NCCL = (0, recorded("all_reduce_perf-dgx-a100-4gpu-p2p-disabled-degraded.table.txt"))


def test_a_node_that_passes_every_item_it_runs_is_proven_and_its_figures_kept():
    judgement = judge(cluster := tools_ran(proven_cluster(), PASSING_DCGM, GOOD_NCCL), DIAGNOSED, NOW, outputs=cluster)
    assert judgement.passed, f"n1: {judgement.problems}"
    assert {"diagnosticsPassed", "bandwidthMet", "metricsExported"} <= judgement.checklist.keys(), judgement.checklist
    measured = judgement.measured
    assert measured.bus_bandwidth is not None and measured.bus_bandwidth["gbps"] >= 200, measured
    assert measured.metrics is not None and measured.metrics["gpus"] == 4, measured


def test_a_failed_dcgm_test_fails_its_item_at_once_and_its_job_is_deleted_to_run_again():
    cluster = tools_ran(proven_cluster(), FAILING_DCGM, GOOD_NCCL)
    judgement = judge(cluster, DIAGNOSED, NOW, outputs=cluster)
    assert failing(judgement) == ["diagnosticsPassed"], f"n1: {judgement.problems}"
    assert "Persistence mode for GPU 0 is disabled" in judgement.problems[0][1], judgement.problems
    assert judgement.final and DCGM_JOB in judgement.failed_jobs, f"n1: {judgement}"


def test_a_bandwidth_below_the_floor_fails_its_item_at_once_though_its_job_succeeded():
    cluster = tools_ran(proven_cluster(), PASSING_DCGM, DEGRADED_NCCL)
    judgement = judge(cluster, DIAGNOSED, NOW, outputs=cluster)
    assert failing(judgement) == ["bandwidthMet"], f"n1: {judgement.problems}"
    assert judgement.final and NCCL_JOB in judgement.failed_jobs, "waiting will not raise a finished run's figure"


def test_an_exporter_that_does_not_answer_is_waited_for():
    cluster = tools_ran(proven_cluster(), PASSING_DCGM, GOOD_NCCL)
    del cluster.pages[(PLUGIN_NAMESPACE, EXPORTER_POD, 9400)]
    judgement = judge(cluster, DIAGNOSED, NOW, outputs=cluster)
    assert failing(judgement) == ["metricsExported"], f"n1: {judgement.problems}"
    assert not judgement.final, "an exporter answers a while after it starts"


def test_dcgm_and_nccl_still_running_are_waited_for():
    cluster = proven_cluster()
    cluster.jobs[(VERIFICATION_NAMESPACE, DCGM_JOB)] = job()
    cluster.jobs[(VERIFICATION_NAMESPACE, NCCL_JOB)] = job()
    judgement = judge(cluster, DIAGNOSED, NOW, outputs=cluster)
    assert {"diagnosticsPassed", "bandwidthMet"} <= set(failing(judgement)) and not judgement.final, judgement


def test_a_refresh_judges_the_tools_by_their_jobs_and_the_exporter_by_its_pod_reading_no_report():
    cluster = tools_ran(proven_cluster(), PASSING_DCGM, DEGRADED_NCCL)
    judgement = judge(cluster, DIAGNOSED, NOW)
    assert judgement.passed and judgement.measured.bus_bandwidth is None, f"n1: {judgement}"


# --- NVLink-domain machines: the node's IMEX channel Job and its clique label --------------------------

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
IMEX_JOB = "gpu-verify-a100-n1-imex-eeee"
IMEX_PROOF = Proof(target(), VERIFICATION_NAMESPACE, JOBS, access_jobs=[ACCESS_JOB], imex=ImexCheck(IMEX_JOB, CLIQUE))


def domain_cluster(clique: str | None = CLIQUE, imex_job: dict | None = None) -> FakeCluster:
    cluster = proven_cluster()
    if clique is not None:
        cluster.nodes["n1"]["metadata"]["labels"]["nvidia.com/gpu.clique"] = clique
    cluster.jobs[(VERIFICATION_NAMESPACE, IMEX_JOB)] = imex_job or job(succeeded=1)
    return cluster


def test_a_node_of_the_domain_passes_with_its_channel_found_and_its_clique_labelled():
    judgement = judge(domain_cluster(), IMEX_PROOF, NOW)
    assert judgement.passed and judgement.checklist["imexChannel"] == PASS, judgement.problems
    assert IMEX_JOB in IMEX_PROOF.all_jobs


def test_a_failed_imex_job_fails_the_imex_item_only():
    judgement = judge(domain_cluster(imex_job=job(failed_reason="BackoffLimitExceeded")), IMEX_PROOF, NOW)
    assert failing(judgement) == ["imexChannel"], judgement.problems
    assert judgement.checklist["imexChannel"] == FAIL, judgement.checklist


@pytest.mark.parametrize("clique", [None, "9c6f5af3-53bf-49b5-a436-b66766c413c3.7"])
def test_a_node_without_the_declared_clique_fails_labelled_naming_it(clique):
    judgement = judge(domain_cluster(clique=clique), IMEX_PROOF, NOW)
    assert failing(judgement) == ["labelled"], judgement.problems
    line = str(dict(judgement.problems)["labelled"])
    assert CLIQUE in line and "nvidia.com/gpu.clique" in line, line


def test_a_node_outside_a_domain_has_no_imex_item():
    judgement = judge(proven_cluster(), PROOF, NOW)
    assert "imexChannel" not in judgement.checklist, judgement.checklist
