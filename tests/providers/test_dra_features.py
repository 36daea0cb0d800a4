"""Which DRA fields the cluster's API server keeps, asked by a dry-run create of each probe."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpu_nodes.errors import ClusterFeatureError
from gpu_nodes.providers.dra_features import (
    PROBE_CLASS,
    PROBE_SLICE,
    DraFeaturesInputs,
    DraFeaturesProvider,
    Kept,
    ask,
    extended_resource_problem,
    kept_from,
    partitionable_problem,
)


class Answer:
    """What the client hands back with `_preload_content=False`: the raw body."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.data = json.dumps(body).encode()


def stored(body: dict[str, Any], *, taints: bool, extended: bool, partitionable: bool = False) -> dict[str, Any]:
    """The object as an API server returns a dry-run create: named from generateName, the gated
    fields dropped where the gate is off (the strategies' dropDisabled...Fields)."""
    found = copy.deepcopy(body)
    found["metadata"] = {"name": body["metadata"]["generateName"] + "x7k2p", "generateName": body["metadata"]["generateName"]}
    for device in found["spec"].get("devices", []):
        if taints:
            device["taints"] = [{**t, "timeAdded": "2026-12-06T10:00:00Z"} for t in device["taints"]]
        else:
            device.pop("taints")
        if not partitionable:
            device.pop("consumesCounters")
    if not extended:
        found["spec"].pop("extendedResourceName", None)
    return found


class FakeResourceApi:
    """resource.k8s.io/v1 as a server with or without the three gates answers a dry-run create."""

    calls: list[tuple[str, str]] = []

    def __init__(
        self, *, taints: bool = True, extended: bool = True, partitionable: bool = False, status: int | None = None
    ) -> None:
        self.taints, self.extended, self.partitionable, self.status = taints, extended, partitionable, status

    def _create(self, kind: str, body: dict[str, Any], dry_run: str | None = None, _preload_content: bool = True) -> Answer:
        FakeResourceApi.calls.append((kind, str(dry_run)))
        assert not _preload_content, "the raw answer is read: the client's models may lack the fields"
        if self.status:
            raise ApiException(status=self.status, reason={403: "Forbidden", 404: "Not Found"}[self.status])
        return Answer(stored(body, taints=self.taints, extended=self.extended, partitionable=self.partitionable))

    def create_resource_slice(self, body: dict[str, Any], **kwargs: Any) -> Answer:
        return self._create("ResourceSlice", body, **kwargs)

    def create_device_class(self, body: dict[str, Any], **kwargs: Any) -> Answer:
        return self._create("DeviceClass", body, **kwargs)


@pytest.fixture
def server(monkeypatch):
    def serve(**how: Any) -> None:
        FakeResourceApi.calls = []
        monkeypatch.setattr(client, "ResourceV1Api", lambda api: FakeResourceApi(**how))

    return serve


@pytest.mark.parametrize(
    ("taints", "extended", "partitionable"),
    [(True, True, True), (False, False, False), (True, False, False), (False, True, False), (False, False, True)],
)
def test_each_field_is_kept_only_where_the_server_keeps_it(server, taints, extended, partitionable):
    server(taints=taints, extended=extended, partitionable=partitionable)
    assert ask(None) == Kept(device_taints=taints, extended_resource_name=extended, partitionable_devices=partitionable)
    assert FakeResourceApi.calls == [("ResourceSlice", "All"), ("DeviceClass", "All")], "both asked as dry runs"


def test_a_server_without_resource_k8s_io_v1_keeps_neither(server):
    server(status=404)
    assert ask(None) == Kept(device_taints=False, extended_resource_name=False)


def test_a_server_that_forbids_the_dry_run_is_named_with_the_rights_it_needs(server):
    server(status=403)
    with pytest.raises(ClusterFeatureError, match=r"HTTP 403 Forbidden.*create on resourceslices and deviceclasses"):
        ask(None)


def test_the_probes_name_no_node_and_no_real_driver_or_resource():
    assert PROBE_SLICE["spec"]["allNodes"] is True and "nodeName" not in PROBE_SLICE["spec"], PROBE_SLICE
    assert PROBE_SLICE["spec"]["driver"] != "gpu.nvidia.com", PROBE_SLICE
    assert PROBE_CLASS["spec"]["extendedResourceName"].startswith("gpu-nodes.dev/"), PROBE_CLASS


def test_an_answer_without_devices_keeps_no_taints():
    assert kept_from({"spec": {}}, {"spec": {"extendedResourceName": "x/y"}}) == Kept(False, True)


def test_groups_that_ask_for_plain_requests_are_named_where_the_field_is_dropped():
    problem = extended_resource_problem(["h100", "b200"], Kept(device_taints=True, extended_resource_name=False))
    assert problem is not None and "group h100, b200" in problem and "DRAExtendedResource is off" in problem, problem
    assert "set dra.extendedResourceName false" in problem, problem
    assert extended_resource_problem(["h100"], Kept(True, True)) is None
    assert extended_resource_problem([], Kept(True, False)) is None


def test_create_fails_naming_the_groups_and_keeps_what_it_found_otherwise(monkeypatch):
    monkeypatch.setattr(DraFeaturesProvider, "_ask", lambda self, props: Kept(True, False))
    with pytest.raises(ClusterFeatureError, match="group h100"):
        DraFeaturesProvider().create(DraFeaturesInputs(["h100"]).to_props())
    outs = DraFeaturesProvider().create(DraFeaturesInputs().to_props()).outs
    assert (outs["deviceTaints"], outs["extendedResourceName"]) == (True, False), outs


def test_a_refresh_asks_again_and_a_new_group_asking_is_a_change(monkeypatch):
    monkeypatch.setattr(DraFeaturesProvider, "_ask", lambda self, props: Kept(False, False))
    olds = DraFeaturesProvider().create(DraFeaturesInputs().to_props()).outs
    monkeypatch.setattr(DraFeaturesProvider, "_ask", lambda self, props: Kept(True, True))
    read = DraFeaturesProvider().read("dra-features", olds).outs
    assert read["deviceTaints"] is True, read
    assert DraFeaturesProvider().diff("dra-features", read, DraFeaturesInputs().to_props()).changes is False
    assert DraFeaturesProvider().diff("dra-features", read, DraFeaturesInputs(["h100"]).to_props()).changes is True


def test_a_stack_without_a_group_asking_has_no_such_input():
    assert DraFeaturesInputs().to_props() == {}, DraFeaturesInputs().to_props()
    assert DraFeaturesInputs(["b", "a"]).to_props() == {"extendedResourceGroups": ["a", "b"]}


def test_the_slice_probe_asks_for_a_device_that_consumes_counters_and_no_counter_set():
    device = PROBE_SLICE["spec"]["devices"][0]
    assert device["consumesCounters"][0]["counterSet"] == "probe", device
    # The API refuses a slice with both sharedCounters and devices (validateResourceSliceSpec, v1.35.4).
    assert "sharedCounters" not in PROBE_SLICE["spec"], PROBE_SLICE


def test_groups_that_prove_mig_devices_are_refused_naming_the_gate_where_counters_are_dropped():
    problem = partitionable_problem(["gb200"], Kept(True, True, partitionable_devices=False))
    assert problem is not None and "group gb200" in problem and "DRAPartitionableDevices is off" in problem, problem
    assert "remove dra.migProfiles" in problem, problem
    assert partitionable_problem(["gb200"], Kept(False, False, partitionable_devices=True)) is None
    assert partitionable_problem([], Kept(False, False)) is None


def test_create_fails_naming_both_gates_when_both_are_missing(monkeypatch):
    monkeypatch.setattr(DraFeaturesProvider, "_ask", lambda self, props: Kept(True, False, False))
    with pytest.raises(ClusterFeatureError, match="DRAExtendedResource is off.*; .*DRAPartitionableDevices is off"):
        DraFeaturesProvider().create(DraFeaturesInputs(["h100"], ["a100"]).to_props())
    outs = DraFeaturesProvider().create(DraFeaturesInputs().to_props()).outs
    assert outs["partitionableDevices"] is False, outs
    assert DraFeaturesInputs(mig_groups=["b", "a"]).to_props() == {"migGroups": ["a", "b"]}
