"""The nvlink-domain check (71-check-nvlink-domain.sh), --nvlink-clique (the group's nvlinkDomain.clique): every GPU
attached to the NVLink fabric (State Completed, Status Success) in the declared clique, <ClusterUUID>.<CliqueId> as
GPU Feature Discovery labels it. The fabric blocks are the fake machines' (fakehost._fabric), laid out as the recorded
H100 prints its own (fixtures/nvidia-smi-q-h100-sxm5-fabric-completed.txt); other states change one line each."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .preflight_node import FAILED_EXIT, GPU_LINES, PASSED_EXIT, FakeNode, fakehost

CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"
OTHER = "0b5f8a2c-7d61-4e0f-9a3b-2c4d6e8f0a1b.7"


def in_clique(clique: str, replace: tuple[str, str] | None = None, first_only: bool = False):
    """The machine's nvidia-smi -q with both GPUs in `clique`; `replace` changes a line of the first GPU (or every)."""

    def arrange(node: FakeNode) -> None:
        machine = fakehost.MachineSpec(gpus=2, nvlink_clique=clique)
        q = fakehost.smi_q(machine)
        if replace is not None:
            q = q.replace(*replace, 1) if first_only else q.replace(*replace)
        node.nvidia_smi_with_table(GPU_LINES, fakehost.smi_table(machine), q)

    return arrange


NVLINK = ("--nvlink-clique", CLIQUE)
WHY = f"the machine is not in the NVLink domain nvlinkDomain.clique names ({CLIQUE})"

CASES = [
    CheckCase("not requested", args=(), ok=True, detail="not requested"),
    CheckCase(
        "every GPU in the clique passes",
        in_clique(CLIQUE),
        NVLINK,
        exit=PASSED_EXIT,
        ok=True,
        detail=f"2 GPU(s) attached to the NVLink fabric in clique {CLIQUE}, the one nvlinkDomain.clique names",
    ),
    CheckCase(
        "the UUID is compared without regard to case",
        in_clique(CLIQUE.upper()),
        NVLINK,
        ok=True,
    ),
    CheckCase(
        "a machine of another clique fails naming its clique",
        in_clique(OTHER),
        NVLINK,
        exit=FAILED_EXIT,
        ok=False,
        starts=WHY,
        says=(f"GPU 00000000:07:00.0: in clique {OTHER}", "a machine of another clique belongs to another group"),
    ),
    CheckCase(
        "a GPU whose fabric is still training fails naming it alone",
        in_clique(CLIQUE, (": Completed", ": In Progress"), first_only=True),
        NVLINK,
        exit=FAILED_EXIT,
        ok=False,
        says=("GPU 00000000:07:00.0: fabric State In Progress, Status Success", "nvidia-fabricmanager"),
        never=("00000000:08:00.0",),
    ),
    CheckCase(
        "GPUs on no NVLink fabric (Ampere's N/A) fail",
        lambda node: None,
        NVLINK,
        exit=FAILED_EXIT,
        ok=False,
        says=("fabric State N/A, Status N/A",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_nvlink_domain(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "nvlink-domain")


def test_the_driver_that_does_not_answer_leaves_the_domain_unknown(node: FakeNode) -> None:
    node.nvidia_smi(fakehost.SMI_DRIVER_ERROR, 9)
    check = node.preflight(*NVLINK).check("nvlink-domain")
    assert check["ok"] is False and "unknown (see the driver check)" in check["detail"], check
