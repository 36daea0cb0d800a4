"""The gpu-health check (39-check-gpu-health.sh), from nvidia-smi -q: a GPU the driver says to
reset, reboot or drain, whose memory has rows or pages waiting for a reset, or whose NVLink fabric
is unhealthy fails the check, named by its bus id with the field and what to do. The machine is
the real 8 x H100 SXM5 recording (header and first GPU, healthy in every field; hopper.py); each
case puts a real faulty block in place of its healthy one, or changes one value where no real
recording of that state was found (fixtures/README.md says which)."""

from __future__ import annotations

import dataclasses

import pytest

from .hopper import FABRIC, FABRIC_R580, SXM_LINE, SXM_Q, q_with, sxm
from .preflight_node import FAILED_EXIT, FIXTURES, MACHINE, PASSED_EXIT, FakeNode, fakehost

BUS = "00000000:18:00.0"
# The recording's healthy blocks, as they stand in it.
RESET_STATUS = (
    "    GPU Reset Status\n"
    "        Reset Required                    : No\n"
    "        Drain and Reset Recommended       : No\n"
    "    GPU Recovery Action                   : None\n"
)
REMAPPED_ROWS = (
    "    Remapped Rows\n"
    "        Correctable Error                 : 0\n"
    "        Uncorrectable Error               : 0\n"
    "        Pending                           : No\n"
)
REMAP_FAILURE = "        Remapping Failure Occurred        : No\n"
PENDING_PAGES = "        Pending Page Blacklist            : N/A\n"
# Real faulty blocks (fixtures/README.md).
RECOVERY_RESET = (FIXTURES / "nvidia-smi-q-recovery-action-reset.txt").read_text()
ROWS_PENDING = (FIXTURES / "nvidia-smi-q-remapped-rows-pending.txt").read_text()


def r580_fabric(field: str, value: str) -> str:
    """The recording with the R580 Fabric block, one of its Health fields set to value (a variant)."""
    line = next(line for line in FABRIC_R580.splitlines() if line.strip().startswith(f"{field} "))
    changed = line[: line.index(":") + 2] + value
    return q_with(FABRIC, FABRIC_R580.replace(line, changed))


def health(node: FakeNode, q: str) -> dict[str, object]:
    """The gpu-health check of a preflight run whose nvidia-smi -q prints q."""
    return sxm(node, q).preflight(gpus=1).check("gpu-health")


def test_the_healthy_recording_passes(node: FakeNode) -> None:
    assert sxm(node).preflight(gpus=1).returncode == PASSED_EXIT
    assert health(node, SXM_Q) == {
        "name": "gpu-health",
        "ok": True,
        "detail": "1 GPU(s) healthy: no recovery action, pending reset, row remap, page retirement or fabric fault",
    }


def test_a_healthy_r580_fabric_passes(node: FakeNode) -> None:
    assert health(node, q_with(FABRIC, FABRIC_R580))["ok"] is True


FAULTS = {
    # name: (nvidia-smi -q, the field as named, what to do)
    "recovery action Reset (real)": (
        q_with(RESET_STATUS, RECOVERY_RESET),
        "GPU Recovery Action: Reset",
        f"drain the node, then reset the GPU (nvidia-smi -r -i {BUS})",
    ),
    "recovery action Reboot": (
        q_with(RESET_STATUS, RESET_STATUS.replace(": None", ": Reboot")),
        "GPU Recovery Action: Reboot",
        "drain the node and reboot the machine",
    ),
    "recovery action Drain P2P": (
        q_with(RESET_STATUS, RESET_STATUS.replace(": None", ": Drain P2P")),
        "GPU Recovery Action: Drain P2P",
        "stop the work that uses peer-to-peer (NVLink) traffic on it",
    ),
    "recovery action Drain and Reset": (
        q_with(RESET_STATUS, RESET_STATUS.replace(": None", ": Drain and Reset")),
        "GPU Recovery Action: Drain and Reset",
        f"drain the node, then reset the GPU (nvidia-smi -r -i {BUS})",
    ),
    "reset required": (
        q_with(RESET_STATUS, RESET_STATUS.replace("Required                    : No", "Required                    : Yes")),
        "GPU Reset Status > Reset Required: Yes",
        f"drain the node, then reset the GPU (nvidia-smi -r -i {BUS})",
    ),
    "drain and reset recommended": (
        q_with(RESET_STATUS, RESET_STATUS.replace("Recommended       : No", "Recommended       : Yes")),
        "GPU Reset Status > Drain and Reset Recommended: Yes",
        f"drain the node, then reset the GPU (nvidia-smi -r -i {BUS})",
    ),
    "remapped rows pending (real)": (
        q_with(REMAPPED_ROWS, ROWS_PENDING),
        "Remapped Rows > Pending: Yes",
        f"drain the node, then reset the GPU (nvidia-smi -r -i {BUS}) so that the rows are remapped",
    ),
    "row remapping failure": (
        q_with(REMAP_FAILURE, REMAP_FAILURE.replace(": No", ": Yes")),
        "Remapped Rows > Remapping Failure Occurred: Yes",
        "replace the GPU",
    ),
    "retired pages pending": (
        q_with(PENDING_PAGES, PENDING_PAGES.replace(": N/A", ": Yes")),
        "Retired Pages > Pending Page Blacklist: Yes",
        f"drain the node, then reset the GPU (nvidia-smi -r -i {BUS}) so that the pages are retired",
    ),
    "fabric summary unhealthy": (
        r580_fabric("Summary", "Unhealthy"),
        "Fabric > Health > Summary: Unhealthy",
        "check systemctl status nvidia-fabricmanager",
    ),
    "fabric limited capacity": (
        r580_fabric("Summary", "Limited Capacity"),
        "Fabric > Health > Summary: Limited Capacity",
        "check systemctl status nvidia-fabricmanager",
    ),
    "fabric bandwidth degraded": (
        r580_fabric("Bandwidth", "Degraded"),
        "Fabric > Health > Bandwidth: Degraded",
        "check systemctl status nvidia-fabricmanager",
    ),
    "fabric route recovery": (
        r580_fabric("Route Recovery in progress", "True"),
        "Fabric > Health > Route Recovery in progress: True",
        "check systemctl status nvidia-fabricmanager",
    ),
    "fabric route unhealthy": (
        r580_fabric("Route Unhealthy", "True"),
        "Fabric > Health > Route Unhealthy: True",
        "check systemctl status nvidia-fabricmanager",
    ),
    "fabric access timeout recovery": (
        r580_fabric("Access Timeout Recovery", "True"),
        "Fabric > Health > Access Timeout Recovery: True",
        "check systemctl status nvidia-fabricmanager",
    ),
    "fabric incorrect configuration": (
        r580_fabric("Incorrect Configuration", "Insufficient NVLinks"),
        "Fabric > Health > Incorrect Configuration: Insufficient NVLinks",
        "check systemctl status nvidia-fabricmanager",
    ),
}


@pytest.mark.parametrize("q, field, remedy", FAULTS.values(), ids=FAULTS.keys())
def test_a_faulty_gpu_fails_naming_its_bus_the_field_and_what_to_do(node: FakeNode, q: str, field: str, remedy: str) -> None:
    result = sxm(node, q).preflight(gpus=1)
    check = result.check("gpu-health")
    assert result.returncode == FAILED_EXIT and check["ok"] is False, check
    assert f"GPU {BUS}: {field}" in check["detail"], check
    assert remedy in check["detail"], check


def test_a_fabric_fault_names_nvlsm_and_ib_umad_for_nvlink_5(node: FakeNode) -> None:
    check = health(node, r580_fabric("Route Unhealthy", "True"))
    assert "NVLSM" in check["detail"] and "ib_umad" in check["detail"], check
    assert "HGX B200, GB200" in check["detail"], check


def test_fields_older_drivers_do_not_report_are_not_faults(node: FakeNode) -> None:
    # The fake machines' -q (no reset, remap or health fields at all) and deprecated values.
    assert health(node, fakehost.smi_q(dataclasses.replace(MACHINE, gpus=1)))["ok"] is True
    deprecated = RECOVERY_RESET.replace(": Reset", ": None")
    assert health(node, q_with(RESET_STATUS, deprecated))["ok"] is True


def test_every_faulty_gpu_is_named_the_healthy_ones_are_not(node: FakeNode) -> None:
    # The fake machines' -q, its second GPU (00000000:08:00.0) the one break.sh reset-required faults.
    faulty = fakehost.smi_q(dataclasses.replace(MACHINE, gpus=3), reset_required=1)
    check = health(node, faulty)
    assert check["ok"] is False and "GPU 00000000:08:00.0: GPU Recovery Action: Reset" in check["detail"], check
    assert "00000000:07:00.0" not in check["detail"] and "00000000:09:00.0" not in check["detail"], check


def test_an_unanswered_q_is_unknown_not_healthy(node: FakeNode) -> None:
    node.nvidia_smi_with_table(SXM_LINE, fakehost.smi_table(MACHINE))  # -q prints the table
    check = node.preflight(gpus=1).check("gpu-health")
    assert check["ok"] is False and "nvidia-smi -q listed no GPU" in check["detail"], check
