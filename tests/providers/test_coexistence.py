"""The coexistence check: another NVIDIA device plugin on the cluster stops the run, named."""

from __future__ import annotations

import pytest

from gpu_nodes.providers.coexistence import (
    CoexistenceProvider,
    OtherPlugin,
    OtherPluginError,
    operator_policies,
    plugin_daemonsets,
    problems,
)

CHART = {
    "metadata": {
        "name": "nvdp-nvidia-device-plugin",
        "namespace": "kube-system",
        "labels": {"app.kubernetes.io/name": "nvidia-device-plugin"},
    },
    "spec": {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "nvidia-device-plugin"}},
        "template": {
            "spec": {"containers": [{"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}]}
        },
    },
}
OURS = {
    "metadata": {
        "name": "nvidia-device-plugin-a100",
        "namespace": "nvidia-device-plugin",
        "labels": {"app.kubernetes.io/part-of": "gpu-nodes"},
    },
    "spec": {"template": {"spec": {"containers": [{"image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]}}},
}
OTHER = {
    "metadata": {"name": "fluent-bit", "namespace": "logging"},
    "spec": {"template": {"spec": {"containers": [{"image": "fluent/fluent-bit:3.0"}]}}},
}


def test_a_chart_daemonset_is_found_ours_and_unrelated_ones_are_not():
    found = plugin_daemonsets([OURS, OTHER, CHART])
    assert [p.ref for p in found] == ["kube-system/nvdp-nvidia-device-plugin"], found
    assert found[0].what == "DaemonSet kube-system/nvdp-nvidia-device-plugin (image nvcr.io/nvidia/k8s-device-plugin:v0.17.1)"


def test_a_cluster_policy_counts_unless_its_device_plugin_is_off():
    on = {"metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": True}}}
    off = {"metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": False}}}
    assert [p.ref for p in operator_policies([on])] == ["ClusterPolicy/cluster-policy"]
    assert operator_policies([off]) == []


def test_an_install_not_handed_over_stops_the_run_naming_the_way_out():
    lines = problems(plugin_daemonsets([CHART]), [], {})
    assert len(lines) == 1 and "is on the cluster" in lines[0], lines
    assert "list 'kube-system/nvdp-nvidia-device-plugin' in gpu-nodes:handOver" in lines[0], lines


def test_a_handed_over_install_off_our_nodes_is_fine_and_on_them_is_not():
    found = plugin_daemonsets([CHART])
    assert problems(found, ["kube-system/nvdp-nvidia-device-plugin"], {}) == []
    on_ours = {"kube-system/nvdp-nvidia-device-plugin": ["nvdp-x on gpu-node-1"]}
    lines = problems(found, ["kube-system/nvdp-nvidia-device-plugin"], on_ours)
    assert len(lines) == 1 and "still runs on this stack's nodes (nvdp-x on gpu-node-1)" in lines[0], lines


def fake_look(others: list[OtherPlugin], stops: list[str]):
    return lambda self, props: (others, stops)


def test_the_provider_stops_the_run_with_every_line(monkeypatch):
    monkeypatch.setattr(CoexistenceProvider, "_look", fake_look(plugin_daemonsets([CHART]), ["first", "second"]))
    with pytest.raises(OtherPluginError) as failure:
        CoexistenceProvider().create({"nodes": ["n1"], "handOver": []})
    assert str(failure.value).splitlines() == ["another NVIDIA device plugin would share this stack's nodes:", "first", "second"]


def test_a_refresh_shows_a_plugin_that_appeared_since_as_drift(monkeypatch):
    monkeypatch.setattr(CoexistenceProvider, "_look", fake_look(plugin_daemonsets([CHART]), ["a chart appeared"]))
    outs = CoexistenceProvider().read("x", {"nodes": ["n1"], "handOver": [], "found": []}).outs
    assert outs["found"] == ["a chart appeared"], outs
    assert CoexistenceProvider().diff("x", outs, {"nodes": ["n1"], "handOver": []}).changes is True


def test_nothing_new_is_no_change():
    olds = {"nodes": ["n1"], "handOver": [], "found": []}
    assert CoexistenceProvider().diff("x", olds, {"nodes": ["n1"], "handOver": []}).changes is False
    assert CoexistenceProvider().diff("x", olds, {"nodes": ["n1", "n2"], "handOver": []}).changes is True
