"""The mps check (69-check-mps.sh), --mps-replicas N: what the device plugin's MPS control daemon
needs of a machine. Each GPU out of MIG mode (current and pending) and in a compute mode the daemon
may take over, read from `nvidia-smi -q`; its compute capability (`--query-gpu=compute_cap`) at
least 3.5 and serving N clients (48 from 7.5 on, 16 below); the driver's MPS programs where the
container toolkit looks for them. The 2-GPU machine's `-q` is the fake machines' (fakehost.smi_q,
laid out as the H100 recording); the H100 SXM5 is the real recording (hopper.py), whose `Compute Mode`
line variants change and say so."""

from __future__ import annotations

import dataclasses

import pytest

from .check_cases import CheckCase, run_case
from .hopper import SXM_LINE, SXM_Q
from .preflight_node import FAILED_EXIT, GPU_LINES, MACHINE, PASSED_EXIT, USAGE_EXIT, FakeNode, fakehost, heredoc

TWO_GPUS_Q = fakehost.smi_q(dataclasses.replace(MACHINE, gpus=2))
BUSES = ("00000000:07:00.0", "00000000:08:00.0")
MODE_LINE = "    Compute Mode                          : Default\n"
assert MODE_LINE in SXM_Q and MODE_LINE in TWO_GPUS_Q, "the compute mode line moved"
MIG_LINES = (
    "    MIG Mode\n        Current                           : Disabled\n        Pending                           : Disabled\n"
)
assert MIG_LINES in TWO_GPUS_Q, "the MIG mode lines moved"


def compute_mode(q: str, mode: str, gpus: int = 0) -> str:
    """q with the compute mode of its first `gpus` GPUs (every GPU: 0) set to mode (a variant)."""
    return q.replace(MODE_LINE, MODE_LINE.replace("Default", mode), gpus or -1)


def mig_mode(q: str, current: str, pending: str) -> str:
    """q with its first GPU's MIG mode set (a variant)."""
    lines = MIG_LINES.replace("Current                           : Disabled", f"Current                           : {current}")
    return q.replace(
        MIG_LINES,
        lines.replace("Pending                           : Disabled", f"Pending                           : {pending}"),
        1,
    )


def mps_machine(q: str = TWO_GPUS_Q, caps: str | None = "8.0\n8.0", query: str = GPU_LINES, programs: str | None = "usr/bin"):
    """The node's nvidia-smi answering -q with q and compute_cap with caps (None: as a driver without that
    field does, the other --query-gpu answer), and the driver's MPS programs in programs (None: none)."""

    def arrange(node: FakeNode) -> None:
        cap_case = f"  *--query-gpu=compute_cap*)\n{heredoc(caps)}\n;;\n" if caps is not None else ""
        answers = (
            f"{cap_case}  *--query-gpu=*)\n{heredoc(query)}\n;;\n  -q)\n{heredoc(q)}\n;;\n"
            f"  -L)\n{heredoc(fakehost.smi_list(query))}\n;;\n  *)\n{heredoc(fakehost.smi_table(MACHINE))}\n;;"
        )
        node.command("nvidia-smi", f'case "$*" in\n{answers}\nesac')
        for program in fakehost.MPS_PROGRAMS if programs is not None else ():
            node.file(f"{programs}/{program}", "#!/bin/sh\n").chmod(0o755)

    return arrange


MPS = ("--mps-replicas", "4")
H100 = mps_machine(SXM_Q, "9.0", SXM_LINE)

CASES = [
    CheckCase("not asked", detail="not requested", ok=True),
    CheckCase(
        "two A100s out of MIG mode, compute mode Default",
        mps_machine(),
        MPS,
        exit=PASSED_EXIT,
        ok=True,
        detail="2 GPU(s) ready for MPS with 4 replicas each: none in MIG mode, compute modes the MPS control daemon may "
        "set, compute capability 8.0, 8.0; /usr/bin/nvidia-cuda-mps-control /usr/bin/nvidia-cuda-mps-server",
    ),
    CheckCase("the real H100 recording", H100, MPS, gpus=1, exit=PASSED_EXIT, ok=True, says=("compute capability 9.0",)),
    CheckCase(
        "a compute mode the daemon set before (Exclusive_Process)",
        mps_machine(compute_mode(TWO_GPUS_Q, "Exclusive_Process")),
        MPS,
        ok=True,
    ),
    CheckCase(
        "a GPU someone prohibited",
        mps_machine(compute_mode(TWO_GPUS_Q, "Prohibited", gpus=1)),
        MPS,
        exit=FAILED_EXIT,
        ok=False,
        starts="devicePlugin.sharing shares each GPU 4 ways through MPS, and this machine cannot: ",
        says=(
            f"GPU 0 (bus {BUSES[0]}) is in compute mode Prohibited, which the MPS control daemon would overrule",
            "nvidia-smi -i 0 -c DEFAULT",
        ),
        never=(f"GPU 1 (bus {BUSES[1]})",),
    ),
    CheckCase(
        "the deprecated Exclusive_Thread",
        mps_machine(compute_mode(SXM_Q, "Exclusive_Thread"), "9.0", SXM_LINE),
        MPS,
        gpus=1,
        ok=False,
        says=("GPU 0 (bus 00000000:18:00.0) is in compute mode Exclusive_Thread",),
    ),
    CheckCase(
        "a GPU in MIG mode",
        mps_machine(mig_mode(TWO_GPUS_Q, "Enabled", "Enabled")),
        MPS,
        ok=False,
        says=(f"GPU 0 (bus {BUSES[0]}) is in MIG mode: the device plugin does not share MIG devices through MPS", "-mig 0"),
    ),
    CheckCase(
        "MIG mode pending",
        mps_machine(mig_mode(TWO_GPUS_Q, "Disabled", "Enabled")),
        MPS,
        ok=False,
        says=("has MIG mode Enabled pending, which takes effect at its next reset",),
    ),
    CheckCase(
        "more replicas than a pre-Turing GPU's MPS server takes",
        mps_machine(caps="7.0\n7.0"),
        ("--mps-replicas", "17"),
        ok=False,
        says=(
            "has compute capability 7.0, whose MPS server takes at most 16 clients, fewer than devicePlugin.sharing.replicas 17",
        ),
    ),
    CheckCase("16 on a pre-Turing GPU", mps_machine(caps="7.0\n7.0"), ("--mps-replicas", "16"), ok=True),
    CheckCase("48 from 7.5 on", mps_machine(caps="7.5\n7.5"), ("--mps-replicas", "48"), ok=True),
    CheckCase(
        "49 anywhere",
        mps_machine(),
        ("--mps-replicas", "49"),
        ok=False,
        says=("compute capability 8.0, whose MPS server takes at most 48 clients",),
    ),
    CheckCase(
        "a GPU too old for MPS",
        mps_machine(caps="3.0\n3.0"),
        MPS,
        ok=False,
        says=("has compute capability 3.0: CUDA MPS needs 3.5 or later",),
    ),
    CheckCase(
        "a driver whose nvidia-smi has no compute_cap",
        mps_machine(caps=None),
        MPS,
        ok=False,
        says=("nvidia-smi --query-gpu=compute_cap gave no compute capability (exit 0: 0, NVIDIA A100-SXM4-80GB",),
    ),
    CheckCase(
        "no MPS programs",
        mps_machine(programs=None),
        MPS,
        ok=False,
        says=(
            "nvidia-cuda-mps-control and nvidia-cuda-mps-server not found under the driver root /",
            "Ubuntu's nvidia-compute-utils-<branch>",
        ),
    ),
    CheckCase(
        "the MPS programs under a containerized driver's root",
        mps_machine(programs="run/nvidia/driver/usr/bin"),
        (*MPS, "--mps-driver-root", "/run/nvidia/driver"),
        ok=True,
        ends="/run/nvidia/driver/usr/bin/nvidia-cuda-mps-control /run/nvidia/driver/usr/bin/nvidia-cuda-mps-server",
    ),
    CheckCase(
        "the host's programs are not the driver root's",
        mps_machine(),
        (*MPS, "--mps-driver-root", "/run/nvidia/driver"),
        ok=False,
        says=("not found under the driver root /run/nvidia/driver",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mps(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "mps")


def test_a_driver_that_does_not_answer_leaves_the_modes_unknown(node: FakeNode) -> None:
    node.nvidia_smi(fakehost.SMI_DRIVER_ERROR, exit_code=9)
    mps = node.preflight(*MPS).check("mps")
    assert mps["ok"] is False and "their MIG and compute modes" in mps["detail"] and "unknown" in mps["detail"], mps


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--mps-replicas", "1"), "--mps-replicas wants a whole number of 2 or more"),
        (("--mps-replicas", "four"), "--mps-replicas wants a whole number of 2 or more"),
        (("--mps-driver-root", "/run/nvidia/driver"), "--mps-driver-root needs --mps-replicas"),
        ((*MPS, "--mps-driver-root", "run/nvidia/driver"), "--mps-driver-root wants an absolute path"),
    ],
)
def test_a_wrong_mps_argument_is_a_usage_error(node: FakeNode, args: tuple[str, ...], says: str) -> None:
    result = node.preflight(*args)
    assert result.returncode == USAGE_EXIT, result.stderr
    assert says in result.check("usage")["detail"], result.report
