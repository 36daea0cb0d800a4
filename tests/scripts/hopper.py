"""Hopper machines as nvidia-smi reports them: an 8 x H100 SXM5 node with a trained NVSwitch fabric,
and an H100 NVL (PCIe) node without one. Each -q is a real recording, header and first GPU
(fixtures/README.md); the --query-gpu line is that GPU's fields from the same recording."""

from __future__ import annotations

from .preflight_node import FIXTURES, MACHINE, FakeNode, fakehost

SXM_Q = (FIXTURES / "nvidia-smi-q-h100-sxm5-fabric-completed.txt").read_text()
NVL_Q = (FIXTURES / "nvidia-smi-q-h100-nvl-pcie.txt").read_text()
SXM_LINE = "0, NVIDIA H100 80GB HBM3, GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1, 565.57.01, 81559\n"
NVL_LINE = "0, NVIDIA H100 NVL, GPU-806f8ea2-6428-1096-a076-bb687fb45fb0, 550.54.14, 95830\n"
# The SXM recording's healthy Fabric block, as it stands in it, and a real R580 one with its Health fields.
FABRIC = (
    "    Fabric\n"
    "        State                             : Completed\n"
    "        Status                            : Success\n"
    "        CliqueId                          : 0\n"
    "        ClusterUUID                       : 00000000-0000-0000-0000-000000000000\n"
    "        Health\n"
    "            Bandwidth                     : N/A\n"
)
FABRIC_R580 = (FIXTURES / "nvidia-smi-q-fabric-health-healthy-r580.txt").read_text()


def q_with(old: str, new: str) -> str:
    """The SXM recording with its block old replaced by new."""
    assert old in SXM_Q, old
    return SXM_Q.replace(old, new)


def sxm(node: FakeNode, q: str = SXM_Q) -> FakeNode:
    """The node's nvidia-smi as on the H100 SXM5 machine, its -q printing q."""
    node.nvidia_smi_with_table(SXM_LINE, fakehost.smi_table(MACHINE), q)
    return node


def nvl(node: FakeNode) -> FakeNode:
    """The node's nvidia-smi as on the H100 NVL (PCIe) machine."""
    node.nvidia_smi_with_table(NVL_LINE, fakehost.smi_table(MACHINE), NVL_Q)
    return node
