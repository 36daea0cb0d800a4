"""What GFD labels that preflight reads from nvidia-smi -q and the machine (36-nvidia-smi-q.sh): the
fabric's clique, the machine's DMI name, whether any GPU is MIG capable, the compute capability.
The machine is the real 8 x H100 SXM5 recording (hopper.py, fixtures/README.md)."""

from __future__ import annotations

import dataclasses

from .hopper import FABRIC, FABRIC_R580, SXM_LINE, SXM_Q, q_with, sxm
from .preflight_node import FIXTURES, MACHINE, FakeNode, fakehost


def test_the_report_carries_the_facts_gfd_labels_from_the_fabric_and_the_machine(node: FakeNode) -> None:
    """gpu.clique is the fabric's ClusterUUID and CliqueId (k8s-device-plugin internal/lm/imex.go),
    gpu.machine the DMI product name (machine-type.go), mig.capable whether any GPU has a MIG mode."""
    node.file("sys/class/dmi/id/product_name", "DGX H100\n")
    sxm(node, q_with(FABRIC, FABRIC_R580))
    report = node.preflight(gpus=1).report
    assert report["gpuFeatures"] == {
        "machine": "DGX H100",
        "migCapable": True,
        "clique": "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026",
        "computeCapability": None,
    }, report


def test_without_a_fabric_or_a_dmi_name_those_facts_are_null(node: FakeNode) -> None:
    # The fake machines' -q: Ampere, fabric N/A; MIG Disabled (capable). No /sys/class/dmi here.
    sxm(node, fakehost.smi_q(dataclasses.replace(MACHINE, gpus=1)))
    assert node.preflight(gpus=1).report["gpuFeatures"] == {
        "machine": None,
        "migCapable": True,
        "clique": None,
        "computeCapability": None,
    }


def test_a_gpu_without_a_mig_mode_is_not_mig_capable(node: FakeNode) -> None:
    nvl = (FIXTURES / "nvidia-smi-q-h100-nvl-pcie.txt").read_text()
    no_mig = nvl.replace(
        "        Current                           : Disabled\n        Pending                           : Disabled\n",
        "        Current                           : N/A\n        Pending                           : N/A\n",
        1,
    )
    sxm(node, no_mig)
    assert node.preflight(gpus=1).report["gpuFeatures"]["migCapable"] is False


def test_the_compute_capability_of_the_first_gpu_is_reported(node: FakeNode) -> None:
    """`nvidia-smi --query-gpu=compute_cap --format=csv,noheader` prints "X.Y" per GPU; GFD labels
    the node by its first GPU (internal/lm/resource.go newArchitectureLabels)."""
    answers = f"{SXM_LINE.strip()}\n"
    node.command(
        "nvidia-smi",
        'case "$*" in\n  *--query-gpu=compute_cap*) printf "9.0\\n9.0\\n" ;;\n'
        f"  *--query-gpu=*) printf '%s' '{answers}' ;;\n"
        f"  -q) cat <<'__END__'\n{SXM_Q}\n__END__\n;;\n"
        f"  *) cat <<'__END__'\n{fakehost.smi_table(MACHINE)}\n__END__\n;;\nesac",
    )
    assert node.preflight(gpus=1).report["gpuFeatures"]["computeCapability"] == "9.0"


def test_an_answer_that_is_no_compute_capability_is_none(node: FakeNode) -> None:
    # Stubs that answer every --query-gpu with the GPU lines, as an unknown field would not.
    sxm(node)
    assert node.preflight(gpus=1).report["gpuFeatures"]["computeCapability"] is None
