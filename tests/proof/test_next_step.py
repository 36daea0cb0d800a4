"""What the readiness check does after a look at the node: one row per case of the rule."""

from __future__ import annotations

import pytest

from gpu_nodes.proof.judgement import Judgement
from gpu_nodes.proof.next_step import Progress, Step, answered, next_step, verdict
from gpu_nodes.proof.quarantine import Quarantine

NODE = "n1"
OLD_POD = "nvidia-device-plugin-a100-n1"
NEW_POD = "nvidia-device-plugin-a100-n1-new"
SHORT = ("gpusRegistered", f'node {NODE}: status.allocatable["nvidia.com/gpu"] is 3, expected 4')


def look(
    problems: list[tuple[str | None, str]] | None = None,
    short_plugin: str | None = None,
    failed: list[str] | None = None,
    unfinished: list[str] | None = None,
    quarantine: Quarantine | None = None,
) -> Judgement:
    """A judgement of n1, passed unless told what fails."""
    return Judgement(
        checklist={},
        problems=problems or [],
        failed_jobs=failed or [],
        unfinished_jobs=unfinished or [],
        gate_up=True,
        short_plugin=short_plugin,
        quarantine=quarantine,
    )


HELD = Quarantine(by="NVSentinel", state="quarantined", cordoned=True, taints=(), conditions=())
JOB_LINE = ("workloadSucceeded", f"verification Job v/{NODE}-1gpu has not succeeded (active 1, failed 0)")

CASES = {
    "a node that passes passes": (look(), Progress(fresh_run=False), Step("lift")),
    "a failed Job fails at once": (look([JOB_LINE], failed=["j"]), Progress(fresh_run=False), Step("keep")),
    "GPUs not the group's fail at once": (
        look([("gpuFactsAgree", f"{NODE} has 4 x H100, the group 4 x A100")]),
        Progress(fresh_run=False),
        Step("keep"),
    ),
    "someone else's quarantine fails at once": (
        look([(None, f"{NODE} held")], quarantine=HELD),
        Progress(fresh_run=False),
        Step("keep"),
    ),
    "a node not proven yet is waited for": (look([JOB_LINE], unfinished=["j"]), Progress(fresh_run=False), Step("wait")),
    "a node not proven when the wait is over fails": (
        look([JOB_LINE], unfinished=["j"]),
        Progress(fresh_run=False, waited=True),
        Step("keep"),
    ),
    "short under a settled plugin after a fresh preflight: restart the pod": (
        look([SHORT], short_plugin=OLD_POD, unfinished=["j"]),
        Progress(fresh_run=True),
        Step("restart", OLD_POD),
    ),
    "short without a fresh preflight, Jobs still running: wait for their verdicts": (
        look([SHORT, JOB_LINE], short_plugin=OLD_POD, unfinished=["j"]),
        Progress(fresh_run=False),
        Step("wait"),
    ),
    "short without a fresh preflight, Jobs done: refuse the restart": (
        look([SHORT], short_plugin=OLD_POD),
        Progress(fresh_run=False),
        Step("refuse", OLD_POD),
    ),
    "short without a fresh preflight when the wait is over: refuse the restart": (
        look([SHORT, JOB_LINE], short_plugin=OLD_POD, unfinished=["j"]),
        Progress(fresh_run=False, waited=True),
        Step("refuse", OLD_POD),
    ),
    "after the restart, no settled pod yet: wait": (
        look([SHORT]),
        Progress(fresh_run=True, restarted=OLD_POD),
        Step("wait"),
    ),
    "after the restart, the old pod still seen: wait": (
        look([SHORT], short_plugin=OLD_POD),
        Progress(fresh_run=True, restarted=OLD_POD),
        Step("wait"),
    ),
    "after the restart, the new pod settled short: fail, no second restart": (
        look([SHORT], short_plugin=NEW_POD),
        Progress(fresh_run=True, restarted=OLD_POD),
        Step("keep"),
    ),
    "after the restart, the wait over: fail": (
        look([SHORT]),
        Progress(fresh_run=True, restarted=OLD_POD, waited=True),
        Step("keep"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_next_step(case):
    judgement, progress, expected = CASES[case]
    step = next_step(judgement, progress)
    assert step == expected, f"{NODE}, {case}: {step} ({progress}, problems {judgement.problems})"


@pytest.mark.parametrize("case", CASES)
def test_a_wait_ends_on_every_step_but_waiting(case):
    judgement, progress, expected = CASES[case]
    assert answered(judgement, progress) == (expected.action != "wait"), f"{NODE}, {case}"


def test_the_last_look_passes_or_fails():
    assert (verdict(look()), verdict(look([SHORT], short_plugin=OLD_POD))) == (Step("lift"), Step("keep")), NODE
