"""The taints resource: our taints and the gate on a node, and its health on refresh."""

from __future__ import annotations

import pytest

from gpu_nodes.errors import GpuNodesError
from gpu_nodes.proof.inputs import Change, keys
from gpu_nodes.proof.target import TARGET_KEYS, NodeTarget
from gpu_nodes.providers import taints as taints_module
from gpu_nodes.providers.taints import RERUN_KEYS, NodeTaintsProvider, TaintsInputs
from tests.dra_slices import H100, gpu_device, node_slices, resource_slice, tainted, uuid, xid_taint
from tests.fakes import GATE_TAINT, FakeCluster, FakeTaintApi, node, plugin_pod, target

GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
DEDICATED = {"key": "dedicated", "effect": "NoExecute"}
FOREIGN = {"key": "example.com/maintenance", "value": "true", "effect": "PreferNoSchedule"}


# --- the dynamic provider --------------------------------------------------------------


@pytest.fixture
def cluster(monkeypatch) -> FakeCluster:
    fake = FakeCluster([node("n1", taints=[FOREIGN])], [plugin_pod("n1")])
    monkeypatch.setattr(taints_module.NodeTaintsProvider, "_api", lambda self, props: FakeTaintApi(fake))
    monkeypatch.setattr(taints_module.NodeTaintsProvider, "_view", lambda self, props: fake)
    return fake


def props(*taints: dict, **overrides) -> dict:
    return {
        **target().to_props(),
        "taints": list(taints),
        "gate": GATE_TAINT,
        "kubeconfig": "secret",
        "context": None,
        **overrides,
    }


def taints_on(cluster: FakeCluster, name: str = "n1") -> list[dict]:
    return cluster.nodes[name]["spec"]["taints"]


def test_provider_create_gates_the_node_and_delete_removes_ours_and_the_gate(cluster):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    assert created.id == "n1" and taints_on(cluster) == [FOREIGN, GPU, GATE_TAINT], taints_on(cluster)
    assert (created.outs["round"], created.outs["health"]) == (1, []), created.outs
    provider.delete("n1", created.outs)
    assert taints_on(cluster) == [FOREIGN], taints_on(cluster)


def test_provider_update_swaps_only_our_taints_and_leaves_the_gate_off(cluster):
    provider = NodeTaintsProvider()
    provider.create(props(GPU, DEDICATED))
    cluster.nodes["n1"]["spec"]["taints"].remove(GATE_TAINT)  # the readiness check lifted it
    updated = provider.update("n1", {**props(GPU, DEDICATED), "round": 1, "health": []}, props(GPU))
    assert taints_on(cluster) == [FOREIGN, GPU], taints_on(cluster)
    assert updated.outs["round"] == 1, updated.outs


def test_provider_read_shows_a_taint_removed_out_of_band(cluster):
    provider = NodeTaintsProvider()
    provider.create(props(GPU))
    cluster.nodes["n1"]["spec"]["taints"] = [FOREIGN]  # kubectl taint node n1 nvidia.com/gpu-
    read = provider.read("n1", props(GPU))
    assert read.outs["taints"] == [], read.outs
    diff = provider.diff("n1", read.outs, props(GPU))
    assert diff.changes, "refresh must turn the missing taint into a pending change"


def test_provider_read_of_a_healthy_node_finds_no_degradation(cluster):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == [], read.outs
    assert not provider.diff("n1", read.outs, props(GPU)).changes


def test_a_degraded_node_is_drift_and_up_gates_it_again_in_a_new_round(cluster):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # opened
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"  # an XID error
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == ['status.allocatable["nvidia.com/gpu"] is 3, expected 4'], read.outs
    assert provider.diff("n1", read.outs, props(GPU)).changes, "a degraded node must be a pending change"
    updated = provider.update("n1", read.outs, props(GPU))
    assert GATE_TAINT in taints_on(cluster), "the degraded node was not gated again"
    assert (updated.outs["round"], updated.outs["health"]) == (2, []), updated.outs


def dra_props(*taints: dict) -> dict:
    """Node n1 of a DRA group, whose preflight found four H100s."""
    dra = NodeTarget(**{**vars(target(None)), "dra_gpus": {"count": 4}})
    devices = [{"uuid": uuid(i), "model": H100} for i in range(4)]
    return {**props(*taints), **dra.to_props(), "gpuDevices": devices}


def test_a_gpu_gone_from_a_dra_nodes_slice_is_drift_naming_the_node_and_the_device(cluster):
    provider = NodeTaintsProvider()
    cluster.slices = node_slices("n1", 4)
    created = provider.create(dra_props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # opened
    assert provider.read("n1", created.outs).outs["health"] == [], "a DRA node whose slice lists its four GPUs"
    cluster.slices = [resource_slice("n1", [gpu_device(i) for i in range(3)])]
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == [f"device {uuid(3)} of node n1 is gone from its ResourceSlice"], read.outs
    assert provider.diff("n1", read.outs, dra_props(GPU)).changes, "a GPU gone from a DRA node must be a pending change"


def test_a_gpu_the_dra_driver_tainted_is_drift_naming_the_device_and_its_taint(cluster):
    """A GPU the DRA driver's health check found failed is not offered, as a lost GPU under the device plugin."""
    provider = NodeTaintsProvider()
    cluster.slices = node_slices("n1", 4)
    created = provider.create(dra_props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # opened
    cluster.slices = [resource_slice("n1", [*(gpu_device(i) for i in range(3)), tainted(gpu_device(3), xid_taint(79))])]
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == [
        f"device {uuid(3)} (gpu-3) of node n1 is tainted gpu.nvidia.com/xid=79:NoSchedule in its ResourceSlice: not offered"
    ], read.outs
    provider.update("n1", read.outs, dra_props(GPU))
    assert GATE_TAINT in taints_on(cluster), "a node with a tainted GPU must be gated again"


def test_an_existing_node_from_before_the_gate_is_gated_once(cluster):
    provider = NodeTaintsProvider()
    old = {k: v for k, v in props(GPU).items() if k != "gate"}
    provider.create(old)
    assert provider.diff("n1", old, props(GPU)).changes
    provider.update("n1", old, props(GPU))
    assert taints_on(cluster) == [FOREIGN, GPU, GATE_TAINT], taints_on(cluster)


def test_provider_create_on_a_node_not_in_the_cluster_is_an_operator_error(cluster):
    with pytest.raises(GpuNodesError, match="node ghost not found"):
        NodeTaintsProvider().create(props(GPU, node="ghost"))


def test_provider_delete_of_a_vanished_node_succeeds(cluster):
    NodeTaintsProvider().delete("gone", props(GPU, node="gone"))


def test_rotated_credentials_are_a_change_that_keeps_the_taints():
    diff = NodeTaintsProvider().diff("n1", props(GPU), props(GPU, kubeconfig="rotated"))
    assert diff.changes and not diff.replaces, vars(diff)


def test_provider_diff_replaces_on_another_node():
    diff = NodeTaintsProvider().diff("n1", props(GPU), props(GPU, node="n2"))
    assert diff.replaces == ["node"] and diff.delete_before_replace, diff


def test_every_input_is_work_the_nodes_target_the_gate_and_the_gpus_its_preflight_found():
    """Each is what the node carries of ours or what its health on refresh is judged against."""
    assert keys(TaintsInputs) == (*TARGET_KEYS, "gate", "gpuDevices"), keys(TaintsInputs)
    assert keys(TaintsInputs) == RERUN_KEYS, keys(TaintsInputs, Change.STATE_ONLY)


@pytest.mark.parametrize("key", RERUN_KEYS)
def test_a_change_of_an_input_is_work_not_only_state(key):
    olds = {**props(GPU), "round": 1, "health": []}
    news = {**props(GPU), key: [DEDICATED] if key == "taints" else "changed"}
    assert NodeTaintsProvider().diff_own("n1", olds, news).changes, f"n1: {key}"


def test_the_inputs_read_back_as_written():
    written = TaintsInputs(NodeTarget(**{**vars(target()), "dra_gpus": {"count": 4}}), gpu_devices=[{"uuid": uuid(0)}])
    assert TaintsInputs.from_props(written.to_props()) == written, written.to_props()


def test_a_state_from_before_the_gate_is_gated_once_and_keeps_its_taints(cluster):
    """Such a state holds the node and its taints only: the update puts the gate on with them."""
    provider = NodeTaintsProvider()
    cluster.nodes["n1"]["spec"]["taints"] = [FOREIGN, GPU, DEDICATED]
    before_the_gate = {"node": "n1", "taints": [GPU, DEDICATED], "kubeconfig": "secret", "context": None}
    assert provider.diff("n1", before_the_gate, props(GPU)).changes, "n1: from before the gate"
    updated = provider.update("n1", before_the_gate, props(GPU))
    assert taints_on(cluster) == [FOREIGN, GPU, GATE_TAINT], f"n1: {taints_on(cluster)}"
    assert updated.outs["round"] == 1, f"n1: {updated.outs}"


# --- a node whose group changes allocator ------------------------------------------------------


def tenant_pod(name: str, gpus: int = 0, claims: bool = False, node_name: str = "n1", extended: bool = False) -> dict:
    """Someone else's pod on the node: with `gpus` nvidia.com/gpu, or GPUs through ResourceClaims; `extended`:
    its plain nvidia.com/gpu request served through DRA, by the claim the scheduler made for it."""
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
    spec: dict = {"nodeName": node_name, "containers": [{"name": "work", "resources": resources}]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "h100-1gpu"}]
    status: dict = {"phase": "Running"}
    if extended:
        mapping = {"containerName": "work", "resourceName": "nvidia.com/gpu", "requestName": "container-0-request-0"}
        claim = f"{name}-extended-resources-x7k2p"
        status["extendedResourceClaimStatus"] = {"resourceClaimName": claim, "requestMappings": [mapping]}
    return {"metadata": {"name": name, "namespace": "team-a", "labels": {}}, "spec": spec, "status": status}


class FakeEvictor:
    """The Eviction API over the fake cluster: an accepted eviction removes the pod; `refuse` names pods a
    PodDisruptionBudget holds."""

    def __init__(self, cluster: FakeCluster, refuse: set[str] = frozenset()) -> None:
        self.cluster, self.refuse, self.evicted = cluster, refuse, []

    def evict(self, namespace: str, name: str) -> str | None:
        if name in self.refuse:
            return "eviction refused (HTTP 429 Too Many Requests)"
        self.evicted.append(name)
        self.cluster.pod_list = [p for p in self.cluster.pod_list if p["metadata"]["name"] != name]
        return None


@pytest.fixture
def evictor(cluster, monkeypatch) -> FakeEvictor:
    made = FakeEvictor(cluster)
    monkeypatch.setattr(taints_module.NodeTaintsProvider, "_pods", lambda self, props: (cluster, made))
    monkeypatch.setattr(taints_module, "DRAIN_POLL_SECONDS", 0.0)
    return made


def test_a_node_that_changes_to_dra_sheds_the_pods_holding_gpus_through_the_device_plugin(cluster, evictor):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # opened
    cluster.pod_list += [tenant_pod("trainer", gpus=2), tenant_pod("web"), tenant_pod("claimer", claims=True)]

    provider.update("n1", created.outs, dra_props(GPU))

    assert evictor.evicted == ["trainer"], evictor.evicted
    assert GATE_TAINT in taints_on(cluster), "a node that changes allocator must be gated again"


def test_a_node_that_leaves_dra_sheds_the_pods_holding_gpus_through_claims(cluster, evictor):
    provider = NodeTaintsProvider()
    created = provider.create(dra_props(GPU))
    cluster.pod_list += [tenant_pod("trainer", gpus=2), tenant_pod("claimer", claims=True), tenant_pod("plain", 1, extended=True)]

    provider.update("n1", created.outs, props(GPU))

    assert evictor.evicted == ["claimer", "plain"], evictor.evicted


def test_a_plain_pod_served_through_dra_is_not_the_device_plugins_to_drain(cluster, evictor):
    """Its nvidia.com/gpu request names no device plugin GPU: the scheduler gave it a DRA device."""
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # opened
    cluster.pod_list += [tenant_pod("plain", 1, extended=True)]

    provider.update("n1", created.outs, dra_props(GPU))

    assert evictor.evicted == [], evictor.evicted


def test_a_pod_a_disruption_budget_holds_keeps_the_node_gated_and_is_named(cluster, evictor, monkeypatch):
    monkeypatch.setattr(taints_module, "DRAIN_SECONDS", 0)
    evictor.refuse = {"trainer"}
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    cluster.pod_list.append(tenant_pod("trainer", gpus=1))

    with pytest.raises(GpuNodesError, match=r"team-a/trainer: eviction refused \(HTTP 429"):
        provider.update("n1", created.outs, dra_props(GPU))
    assert GATE_TAINT in taints_on(cluster), "the node must stay gated"


def test_the_same_allocator_evicts_nothing(cluster, evictor):
    provider = NodeTaintsProvider()
    created = provider.create(props(GPU))
    cluster.pod_list.append(tenant_pod("trainer", gpus=1))

    provider.update("n1", created.outs, props(GPU, DEDICATED))

    assert evictor.evicted == [], evictor.evicted


# --- NVIDIA's MIG manager ----------------------------------------------------------------

# The GPU Operator's labels on a GPU node, and the MIG manager's at work (mig-parted pkg/mig/reconfigure/reconfigure.go).
OPERATOR_LABELS = {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mig.config": "all-disabled"}
PAUSED = {
    "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
    "nvidia.com/mig.config": "all-1g.10gb",
    "nvidia.com/mig.config.state": "pending",
}
DONE = {**PAUSED, "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mig.config.state": "success"}


def relabel(cluster: FakeCluster, labels: dict[str, str]) -> None:
    cluster.nodes["n1"]["metadata"]["labels"].update(labels)


def test_the_mig_managers_marks_are_kept_when_the_node_is_gated(cluster):
    relabel(cluster, OPERATOR_LABELS)
    created = NodeTaintsProvider().create(props(GPU))
    assert created.outs["migMarks"] == {"config": "all-disabled"}, created.outs
    assert "migMarks" in NodeTaintsProvider.computed, "a computed output, not an input whose change is work"


def test_a_node_the_mig_manager_pauses_is_drift_named_and_gated_again(cluster):
    provider = NodeTaintsProvider()
    relabel(cluster, OPERATOR_LABELS)
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)  # proven, opened
    relabel(cluster, PAUSED)
    cluster.pod_list.clear()  # the DaemonSet controller took the plugin pod off the paused node
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    read = provider.read("n1", created.outs)
    named = "no device plugin pod on it: NVIDIA's MIG manager is reconfiguring its GPUs"
    assert read.outs["health"][0].startswith(named), read.outs
    assert provider.diff("n1", read.outs, props(GPU)).changes, "a node the MIG manager reconfigures must be a pending change"
    updated = provider.update("n1", read.outs, props(GPU))
    assert GATE_TAINT in taints_on(cluster), "the node was not gated again"
    assert updated.outs["round"] == 2, updated.outs


def test_a_node_reconfigured_since_it_was_gated_is_drift_though_healthy_again(cluster):
    """The plugin came back and registers the GPUs: the node looks healthy, but not with the GPUs it was proven with."""
    provider = NodeTaintsProvider()
    relabel(cluster, OPERATOR_LABELS)
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)
    relabel(cluster, DONE)
    read = provider.read("n1", created.outs)
    assert read.outs["health"] == [
        "NVIDIA's MIG manager changed its GPUs since it was gated (nvidia.com/mig.config all-disabled then, all-1g.10gb now; "
        "nvidia.com/mig.config.state unset then, success now): prove it again"
    ], read.outs
    updated = provider.update("n1", read.outs, props(GPU))
    assert GATE_TAINT in taints_on(cluster) and updated.outs["round"] == 2, updated.outs
    assert updated.outs["migMarks"] == {"config": "all-1g.10gb", "state": "success"}, "the new marks, for the next refresh"
    assert provider.read("n1", updated.outs).outs["health"] == [], "proven again: no drift"


def test_an_update_for_another_reason_finds_the_mig_change_too(cluster):
    """No refresh in between: an input change updates the resource, which gates the reconfigured node all the same."""
    provider = NodeTaintsProvider()
    relabel(cluster, OPERATOR_LABELS)
    created = provider.create(props(GPU, DEDICATED))
    taints_on(cluster).remove(GATE_TAINT)
    relabel(cluster, DONE)
    updated = provider.update("n1", created.outs, props(GPU))
    assert GATE_TAINT in taints_on(cluster) and updated.outs["round"] == 2, updated.outs


def test_a_state_from_before_the_marks_takes_them_as_they_are(cluster):
    """A stack deployed before the marks were kept: its first refresh records them, and finds no drift in them."""
    provider = NodeTaintsProvider()
    relabel(cluster, DONE)
    created = provider.create(props(GPU))
    taints_on(cluster).remove(GATE_TAINT)
    old = {k: v for k, v in created.outs.items() if k != "migMarks"}
    read = provider.read("n1", old)
    assert read.outs["health"] == [] and read.outs["migMarks"] == {"config": "all-1g.10gb", "state": "success"}, read.outs
    assert not provider.diff("n1", read.outs, props(GPU)).changes
