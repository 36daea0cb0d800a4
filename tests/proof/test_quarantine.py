"""Another's quarantine on a node, read from the marks NVSentinel leaves (tests/fakes.py,
`nvsentinel_quarantined`, names the upstream source of each)."""

from __future__ import annotations

from gpu_nodes.proof.quarantine import Quarantine, quarantine_of
from tests.fakes import GPU_TAINT, NVSENTINEL_STATE_LABEL, NVSENTINEL_TAINT, node, nvsentinel_quarantined


def test_a_node_nvsentinel_cordoned_is_quarantined_naming_its_state_and_why():
    found = quarantine_of(nvsentinel_quarantined(node()))
    assert found == Quarantine(by="NVSentinel", state="quarantined", cordoned=True, taints=(), conditions=("SysLogsXIDError",))


def test_the_taints_of_nvsentinels_rule_sets_are_named_as_theirs():
    found = quarantine_of(nvsentinel_quarantined(node(), taints=[NVSENTINEL_TAINT]))
    assert found is not None and found.taints == ("nvidia.com/gpu-error=fatal:NoSchedule",), found


def test_a_quarantine_is_told_in_one_line():
    found = quarantine_of(nvsentinel_quarantined(node(), taints=[NVSENTINEL_TAINT], state="remediating"))
    assert str(found) == (
        "NVSentinel's quarantine (state remediating): cordoned, taint nvidia.com/gpu-error=fatal:NoSchedule, "
        "condition SysLogsXIDError"
    ), str(found)


def test_a_later_state_of_nvsentinels_lifecycle_is_still_its_quarantine():
    """node-drainer and fault-remediation move the state label on; a failed remediation stays (statemanager.go)."""
    found = quarantine_of(nvsentinel_quarantined(node(), state="remediation-failed"))
    assert found is not None and found.state == "remediation-failed", found


def test_a_healthy_node_and_a_node_cordoned_by_hand_are_not_quarantined():
    by_hand = node(taints=[GPU_TAINT, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    by_hand["spec"]["unschedulable"] = True
    assert quarantine_of(node()) is None
    assert quarantine_of(by_hand) is None
    assert quarantine_of(None) is None


def test_a_node_nvsentinel_released_is_not_quarantined():
    """On recovery fault-quarantine uncordons, drops its taints and annotations (UnQuarantineNodeAndRemoveAnnotations),
    and the state label goes with the healthy event; the conditions turn False, `<check>IsHealthy`."""
    released = nvsentinel_quarantined(node())
    released["spec"]["unschedulable"] = False
    released["metadata"]["annotations"] = {}
    del released["metadata"]["labels"][NVSENTINEL_STATE_LABEL]
    condition = released["status"]["conditions"][-1]
    condition.update(status="False", reason="SysLogsXIDErrorIsHealthy", message="No Health Failures")
    assert quarantine_of(released) is None


def test_an_empty_events_annotation_without_the_state_label_is_no_quarantine():
    empty = node()
    empty["metadata"]["annotations"] = {"quarantineHealthEvent": "[]"}
    assert quarantine_of(empty) is None


def test_a_quarantine_travels_as_a_plain_mapping():
    found = quarantine_of(nvsentinel_quarantined(node(), taints=[NVSENTINEL_TAINT]))
    assert found is not None
    assert found.as_output() == {
        "by": "NVSentinel",
        "state": "quarantined",
        "cordoned": True,
        "taints": ["nvidia.com/gpu-error=fatal:NoSchedule"],
        "conditions": ["SysLogsXIDError"],
    }
