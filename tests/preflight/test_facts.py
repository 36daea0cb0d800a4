"""GPU facts: GPU Feature Discovery's labels from preflight's report, and the group comparison."""

from __future__ import annotations

import pytest

from gpu_nodes.preflight.facts import (
    GpuFacts,
    annotation,
    disagreement,
    facts_from_report,
    feature_labels,
    from_annotation,
    product_label,
)
from gpu_nodes.preflight.report import passing_report
from gpu_nodes.vocabulary import GpuSharing

SXM = GpuFacts(models=("NVIDIA H100 80GB HBM3",), memory_mib=(81559,), count=8, driver_version="550.54.15", cuda_version="12.4")
PCIE = GpuFacts(models=("NVIDIA H100 PCIe",), memory_mib=(81559,), count=8)


def test_facts_come_from_the_preflight_report():
    facts = facts_from_report(passing_report())
    assert facts == GpuFacts(("NVIDIA H100 80GB HBM3",), (81559,), 1, "550.54.15", "12.4"), facts
    assert facts_from_report({"gpus": []}) is None


def test_labels_use_gfds_keys_and_formats():
    labels = feature_labels(SXM, "none")
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3", labels
    assert (labels["nvidia.com/gpu.memory"], labels["nvidia.com/gpu.count"]) == ("81559", "8"), labels
    driver = {k: v for k, v in labels.items() if k.startswith("nvidia.com/cuda.driver")}
    assert driver == {
        "nvidia.com/cuda.driver-version.full": "550.54.15",
        "nvidia.com/cuda.driver-version.major": "550",
        "nvidia.com/cuda.driver-version.minor": "54",
        "nvidia.com/cuda.driver-version.revision": "15",
        "nvidia.com/cuda.driver.major": "550",
        "nvidia.com/cuda.driver.minor": "54",
        "nvidia.com/cuda.driver.rev": "15",
    }, driver
    assert labels["nvidia.com/cuda.runtime-version.full"] == "12.4" and labels["nvidia.com/cuda.runtime.minor"] == "4", labels


def test_without_time_slicing_gfd_writes_one_replica_and_no_sharing():
    """k8s-device-plugin internal/lm/resource.go baseLabeler: replicas 1 and sharing-strategy none
    when the plugin's config shares nothing (ours always has a config: flags at least)."""
    labels = feature_labels(SXM, "none")
    assert (labels["nvidia.com/gpu.replicas"], labels["nvidia.com/gpu.sharing-strategy"]) == ("1", "none"), labels


def test_with_time_slicing_the_product_is_shared_as_gfd_writes_it():
    """getProductName appends SHARED when the resource has replicas > 1 and is not renamed (ours is not)."""
    labels = feature_labels(SXM, "none", GpuSharing("timeSlicing", 4))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-SHARED", labels
    assert (labels["nvidia.com/gpu.replicas"], labels["nvidia.com/gpu.sharing-strategy"]) == ("4", "time-slicing"), labels


FEATURES = {"machine": "DGX H100", "migCapable": True, "clique": "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"}


def test_the_machine_mig_capability_and_clique_are_labelled_as_gfd_does():
    """k8s-device-plugin internal/lm: machine-type.go (spaces to '-'), nvml.go
    newMigCapabilityLabeler ("true"/"false"), imex.go (<ClusterUUID>.<CliqueId>)."""
    facts = facts_from_report({**passing_report(), "gpuFeatures": FEATURES})
    for strategy in ("none", "mixed"):
        labels = feature_labels(facts, strategy)
        assert labels["nvidia.com/gpu.machine"] == "DGX-H100", labels
        assert labels["nvidia.com/mig.capable"] == "true", labels
        assert labels["nvidia.com/gpu.clique"] == "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026", labels


def test_an_unknown_machine_is_unknown_as_gfd_writes_it_and_no_fabric_no_clique():
    facts = facts_from_report({**passing_report(), "gpuFeatures": {"machine": None, "migCapable": False, "clique": None}})
    labels = feature_labels(facts, "none")
    assert (labels["nvidia.com/gpu.machine"], labels["nvidia.com/mig.capable"]) == ("unknown", "false"), labels
    assert "nvidia.com/gpu.clique" not in labels, labels


def test_a_report_of_an_older_preflight_writes_none_of_them():
    labels = feature_labels(facts_from_report(passing_report()), "none")
    assert not {"nvidia.com/gpu.machine", "nvidia.com/mig.capable", "nvidia.com/gpu.clique"} & labels.keys(), labels


@pytest.mark.parametrize(
    "capability, family",
    [
        ("1.3", "tesla"),
        ("2.1", "fermi"),
        ("3.7", "kepler"),
        ("4.0", "undefined"),
        ("5.2", "maxwell"),
        ("6.0", "pascal"),
        ("7.0", "volta"),
        ("7.2", "volta"),
        ("7.5", "turing"),
        ("8.0", "ampere"),
        ("8.6", "ampere"),
        ("8.7", "ampere"),
        ("8.9", "ada-lovelace"),
        ("9.0", "hopper"),
        ("10.0", "blackwell"),
        ("10.3", "blackwell"),
        ("11.0", "undefined"),
        ("12.0", "blackwell"),
        ("12.1", "blackwell"),
        ("13.0", "rubin"),
        ("14.0", "undefined"),
    ],
)
def test_the_family_and_compute_capability_as_gfd_labels_them(capability, family):
    """internal/lm/resource.go newArchitectureLabels and getArchFamily, every major it maps (v0.20.0,
    whose CHANGELOG adds the Rubin family, #1909) and the ones it does not."""
    facts = facts_from_report({**passing_report(), "gpuFeatures": {**FEATURES, "computeCapability": capability}})
    labels = feature_labels(facts, "none")
    major, minor = capability.split(".")
    assert labels["nvidia.com/gpu.family"] == family, labels
    assert (labels["nvidia.com/gpu.compute.major"], labels["nvidia.com/gpu.compute.minor"]) == (major, minor), labels
    assert "nvidia.com/gpu.family" not in feature_labels(facts, "single"), "GFD writes them for full GPUs only"


def test_a_two_part_driver_version_has_an_empty_revision_as_gfd_writes_it():
    labels = feature_labels(GpuFacts(("NVIDIA A40",), (46068,), 1, "550.120", "12.4"), "none")
    assert labels["nvidia.com/cuda.driver-version.revision"] == "" and labels["nvidia.com/cuda.driver.rev"] == "", labels


def test_the_product_is_sanitised_as_gfd_does():
    assert product_label("NVIDIA A100-SXM4-80GB") == "NVIDIA-A100-SXM4-80GB"
    assert product_label("Tesla V100-SXM2-16GB (rev a1)") == "Tesla-V100-SXM2-16GB-rev-a1"


def test_under_mig_only_the_versions_are_labelled():
    labels = feature_labels(SXM, "single")
    assert "nvidia.com/gpu.product" not in labels and "nvidia.com/gpu.count" not in labels, labels
    assert "nvidia.com/gpu.replicas" not in labels, labels
    assert labels["nvidia.com/cuda.driver-version.major"] == "550", labels


def test_the_annotation_reads_back_and_junk_reads_as_nothing():
    back = from_annotation(annotation(SXM))
    assert back is not None and back.kind == SXM.kind and back.count == 8, back
    assert from_annotation("not json") is None and from_annotation('{"models": 1}') is None and from_annotation(None) is None


def test_the_odd_node_fails_naming_both_kinds():
    group = {"n1": SXM, "n2": PCIE, "n3": SXM}
    problem = disagreement("n2", group)
    assert problem is not None and "node n2 has 8 x NVIDIA H100 PCIe (81559 MiB)" in problem, problem
    assert "unlike 2 of the group's 3 checked nodes (n1, n3), which have 8 x NVIDIA H100 80GB HBM3" in problem, problem
    assert disagreement("n1", group) is None and disagreement("n3", group) is None


def test_a_tie_goes_to_the_node_listed_first():
    assert disagreement("n1", {"n1": PCIE, "n2": SXM}) is None
    assert "node n2 has" in (disagreement("n2", {"n1": PCIE, "n2": SXM}) or "")


def test_nodes_not_checked_yet_are_left_out():
    assert disagreement("n1", {"n1": SXM, "n2": None}) is None
    assert disagreement("n2", {"n1": SXM, "n2": None}) is None


def test_two_models_on_one_node_fail():
    mixed = GpuFacts(models=("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"), memory_mib=(81559,), count=8)
    problem = disagreement("n1", {"n1": mixed, "n2": SXM})
    assert problem == "node n1 has GPUs of 2 models: 8 x NVIDIA H100 80GB HBM3 + NVIDIA H100 PCIe (81559 MiB)", problem


def test_the_same_model_with_other_memory_differs():
    small = GpuFacts(models=SXM.models, memory_mib=(40960,), count=8)
    assert "40960 MiB" in (disagreement("n3", {"n1": SXM, "n2": SXM, "n3": small}) or "")


def test_under_mps_gfd_says_mps_and_mps_capable():
    """internal/lm/resource.go baseLabeler (SharingStrategy mps) and nvml.go newSharingLabeler (mps.capable)."""
    labels = feature_labels(SXM, "none", GpuSharing("mps", 4))
    assert (labels["nvidia.com/gpu.replicas"], labels["nvidia.com/gpu.sharing-strategy"]) == ("4", "mps"), labels
    assert labels["nvidia.com/mps.capable"] == "true" and labels["nvidia.com/gpu.product"].endswith("-SHARED"), labels


def test_a_renamed_shared_resource_keeps_the_plain_product_name():
    """getProductName: no SHARED for a renamed resource (renameByDefault gives it `nvidia.com/gpu.shared`)."""
    labels = feature_labels(SXM, "none", GpuSharing("timeSlicing", 4, renamed=True))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3", labels
    assert "nvidia.com/mps.capable" not in labels, "GFD writes false there; we write nothing where MPS is not used"
