"""The GPU Operator and MIG manager releases on the cluster against NVIDIA's bulletins
(gpu_nodes/providers/handed_over.py), and the allocator check's warnings of them. The objects are
shaped as the operator's chart renders them (gpu-operator deployments/gpu-operator/templates/
clusterpolicy.yaml and gpucluster.yaml, labels from _helpers.tpl `gpu-operator.labels`)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_nodes.providers.coexistence import CoexistenceProvider
from gpu_nodes.providers.handed_over import mig_manager_release, operator_advisories, operator_age, operator_release


def chart_labels(app_version: str) -> dict[str, str]:
    """`gpu-operator.labels` for a release: its chart is `gpu-operator-<version>`, its appVersion `<version>`."""
    return {
        "app.kubernetes.io/name": "gpu-operator",
        "helm.sh/chart": f"gpu-operator-{app_version}",
        "app.kubernetes.io/instance": "gpu-operator",
        "app.kubernetes.io/version": app_version,
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/component": "gpu-operator",
    }


def cluster_policy(release: str | None, mig: str | None = "v0.13.1", cdi: bool = True, **labels: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "cluster-policy", "labels": {**(chart_labels(release) if release else {}), **labels}}
    spec: dict[str, Any] = {"cdi": {"enabled": cdi, "default": False}, "devicePlugin": {"enabled": False}}
    if mig is not None:
        spec["migManager"] = {
            "enabled": True,
            "repository": "nvcr.io/nvidia/cloud-native",
            "image": "k8s-mig-manager",
            "version": mig,
        }
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": metadata, "spec": spec}


def gpu_cluster(release: str) -> dict[str, Any]:
    return {"kind": "GPUCluster", "metadata": {"name": "gpu-cluster", "labels": chart_labels(release)}, "spec": {}}


@pytest.mark.parametrize(
    ("labels", "release"),
    [
        (chart_labels("v26.3.1"), "26.3.1"),
        ({"helm.sh/chart": "gpu-operator-v25.10.1"}, "25.10.1"),
        ({}, None),
    ],
)
def test_the_operator_release_is_read_from_the_charts_labels(labels, release):
    assert operator_release({"metadata": {"labels": labels}}) == release


def test_the_mig_manager_release_is_its_version_or_its_images_tag():
    assert mig_manager_release(cluster_policy("v26.7.0", mig="v0.12.1")) == "0.12.1"
    policy = {"spec": {"migManager": {"image": "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.11.0-ubuntu20.04"}}}
    assert mig_manager_release(policy) == "0.11.0"


def test_an_operator_up_to_26_3_1_is_named_with_bulletin_5850():
    warnings, unknown = operator_advisories([cluster_policy("v26.3.1")], [])
    assert unknown == [] and len(warnings) == 1, warnings
    assert warnings[0].startswith("the GPU Operator of ClusterPolicy/cluster-policy is 26.3.1, open to CVE-2026-24260"), warnings
    assert "bulletin 5850" in warnings[0] and "fixed in 26.3.2" in warnings[0]


def test_an_operator_of_25_3_1_is_named_with_both_bulletins_cdi_or_not():
    [warning] = operator_advisories([cluster_policy("v25.3.1", cdi=False)], [])[0]
    assert "CVE-2025-23266, CVE-2025-23267 (NVIDIA security bulletin 5659" in warning and "fixed in 25.3.2" in warning
    assert "CVE-2026-24260 (NVIDIA security bulletin 5850" in warning


def test_a_mig_manager_up_to_0_12_1_is_named_only_with_cdi_on():
    warnings, _ = operator_advisories([cluster_policy("v26.7.0", mig="v0.12.1", cdi=True)], [])
    assert warnings == [
        "the MIG manager of ClusterPolicy/cluster-policy (CDI on) is 0.12.1, open to CVE-2025-23266, CVE-2025-23267 "
        "(NVIDIA security bulletin 5659 (July 2025, revision 2.0.0 of 2025-08-12); fixed in 0.12.2): upgrade it "
        "(gpu-nodes does not run it)"
    ], warnings
    assert operator_advisories([cluster_policy("v26.7.0", mig="v0.12.1", cdi=False)], []) == ([], [])


def test_a_current_operator_and_gpu_cluster_are_not_named():
    assert operator_advisories([cluster_policy("v26.7.0")], [gpu_cluster("v26.7.0")]) == ([], [])


def test_a_gpu_cluster_up_to_26_3_1_is_named():
    [warning] = operator_advisories([], [gpu_cluster("v26.3.0")])[0]
    assert warning.startswith("the GPU Operator of GPUCluster/gpu-cluster is 26.3.0, open to CVE-2026-24260"), warning


def test_a_release_that_cannot_be_read_is_said_unchecked():
    warnings, unknown = operator_advisories([cluster_policy(None, mig="")], [])
    assert warnings == [] and len(unknown) == 2, unknown
    assert "its release is not on it" in unknown[0] and "spec.migManager names no release" in unknown[1]


def test_the_check_returns_its_advisories_for_the_program_to_warn_of(monkeypatch):
    lines = ["the GPU Operator of ClusterPolicy/cluster-policy is 26.3.1, open to ..."]
    monkeypatch.setattr(CoexistenceProvider, "_look", lambda self, props: ([], [], [], lines))
    outs = CoexistenceProvider()._check({"nodes": ["gpu-0"], "handOver": ["ClusterPolicy/cluster-policy"]})
    assert outs["advisories"] == lines and outs["unchecked"] == [], outs
    read = CoexistenceProvider().read("device-plugin-coexistence", {"nodes": ["gpu-0"], "handOver": []})
    assert read.outs["advisories"] == lines, read.outs


# --- the Operator's DCGM and dcgm-exporter, held to the floors gpu-nodes' own proof images are --------


def with_dcgm(policy: dict[str, Any], exporter: str | None = None, dcgm: str | None = None) -> dict[str, Any]:
    """The ClusterPolicy's exporter and DCGM as the chart writes them (values.yaml `dcgmExporter`, `dcgm`)."""
    if exporter is not None:
        policy["spec"]["dcgmExporter"] = {
            "enabled": True,
            "repository": "nvcr.io/nvidia/k8s",
            "image": "dcgm-exporter",
            "version": exporter,
        }
    if dcgm is not None:
        policy["spec"]["dcgm"] = {"enabled": True, "repository": "nvcr.io/nvidia/cloud-native", "image": "dcgm", "version": dcgm}
    return policy


def test_an_operators_exporter_open_to_bulletin_5857_is_named_with_its_version():
    """The Operator v26.3.0 and v26.3.1 ship dcgm-exporter 4.5.1-4.8.0 (its values.yaml at those tags)."""
    [warning], _ = operator_advisories([with_dcgm(cluster_policy("v26.7.0"), exporter="4.5.1-4.8.0-distroless")], [])
    assert "the dcgm-exporter of ClusterPolicy/cluster-policy (spec.dcgmExporter.version 4.5.1-4.8.0-distroless)" in warning
    assert "CVE-2026-47483" in warning and "fixed in 4.8.2" in warning, warning


def test_an_operators_dcgm_open_to_bulletin_5857_is_named():
    [warning], _ = operator_advisories([with_dcgm(cluster_policy("v26.7.0"), dcgm="4.5.2-1-ubuntu22.04")], [])
    assert "the DCGM of ClusterPolicy/cluster-policy" in warning and "fixed in 4.5.3" in warning, warning


def test_a_current_exporter_and_dcgm_are_not_named():
    policy = with_dcgm(cluster_policy("v26.7.0"), exporter="4.6.0-4.8.3-distroless", dcgm="4.6.0-1-ubuntu24.04")
    assert operator_advisories([policy], []) == ([], [])


def test_an_exporter_pinned_by_digest_is_said_unchecked():
    policy = with_dcgm(
        cluster_policy("v26.7.0"), exporter="sha256:613ab03c11d442fd960ff515f547e9921537454a712d08160bc8f677f89f1c35"
    )
    warnings, [unknown] = operator_advisories([policy], [])
    assert warnings == [] and "spec.dcgmExporter.version" in unknown and "names no release" in unknown, unknown


# --- the Operator's own age: NVIDIA's life-cycle table (gpu_nodes/advisories.py, OPERATOR_LINES) -----------------


@pytest.mark.parametrize(
    ("release", "ended", "deprecated"),
    [("v26.7.1", 0, 0), ("v26.3.3", 0, 1), ("v25.10.1", 1, 0), ("v25.3.4", 1, 0), ("v26.11.0", 0, 0)],
    ids=["supported", "deprecated", "25.10 ended", "25.3 ended", "newer than the table"],
)
def test_an_operator_is_judged_by_its_line_in_nvidias_life_cycle_table(release, ended, deprecated):
    found_ended, found_deprecated = operator_age([cluster_policy(release)], [])
    assert (len(found_ended), len(found_deprecated)) == (ended, deprecated), (found_ended, found_deprecated)


def test_an_ended_operator_is_named_with_its_object_release_and_the_table():
    [line], [] = operator_age([], [gpu_cluster("v25.10.1")])
    assert line.startswith("the GPU Operator of GPUCluster/gpu-cluster is 25.10.1, past its end of support"), line
    assert "25.10.x and lower End of Support" in line and "one major version at a time" in line


def test_an_operator_whose_release_cannot_be_read_is_not_judged_by_age():
    assert operator_age([cluster_policy(None, mig="")], []) == ([], [])


def fake_cluster(monkeypatch, policies: list[dict[str, Any]]) -> None:
    """The check's look at a cluster that holds only these ClusterPolicies (none of them running a device plugin)."""
    import gpu_nodes.providers.coexistence as coexistence

    class Listed:
        def __init__(self, items: list[Any]) -> None:
            self.items = items

    class Source:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def list(self) -> Listed:
            return Listed([])

    monkeypatch.setattr(coexistence, "api_client_from_props", lambda access: None)
    monkeypatch.setattr(coexistence, "KubernetesSource", Source)
    monkeypatch.setattr(coexistence, "read_operator_configs", lambda custom: (policies, []))
    monkeypatch.setattr(coexistence, "read_gpu_slices", lambda custom: ([], None))


def test_an_ended_operator_is_a_warning_unless_the_stack_refuses_advisories(monkeypatch):
    from gpu_nodes.errors import OtherPluginError

    fake_cluster(monkeypatch, [cluster_policy("v25.10.1", mig=None)])
    props = {"nodes": ["gpu-0"], "handOver": ["ClusterPolicy/cluster-policy"]}
    outs = CoexistenceProvider()._check(dict(props))
    assert any("past its end of support" in line for line in outs["advisories"]), outs
    with pytest.raises(OtherPluginError, match=r"25\.10\.1, past its end of support.*refused: a group of this stack sets"):
        CoexistenceProvider()._check({**props, "refuseUnsupported": True})


def test_a_deprecated_operator_stays_a_warning_even_where_the_stack_refuses_advisories(monkeypatch):
    fake_cluster(monkeypatch, [cluster_policy("v26.3.3", mig=None)])
    outs = CoexistenceProvider()._check({"nodes": ["gpu-0"], "handOver": [], "refuseUnsupported": True})
    assert [line for line in outs["advisories"] if "deprecated" in line], outs
