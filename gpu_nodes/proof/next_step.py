"""What the readiness check does after a look at the node: wait, restart the plugin pod, refuse
to, lift the node's gate (it is proven) or keep it (gpu_nodes/providers/readiness.py carries it out; the
recovery rule is in its docstring). Waiting, its deadline and its polling are the provider's; what it waits
for is here. Whether an item passes is the checklist's (gpu_nodes/proof/checklist.py, `ItemStatus`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpu_nodes.proof.judgement import Judgement

Action = Literal["wait", "restart", "refuse", "lift", "keep"]


@dataclass(frozen=True)
class Step:
    """The next thing to do; `pod`, the plugin pod to restart or not restart."""

    action: Action
    pod: str | None = None


@dataclass(frozen=True)
class Progress:
    """How far one proof of the node has gone."""

    # A preflight of the machine ran since the node's last proof and passed: a restart may bring a GPU back.
    fresh_run: bool
    # The plugin pod restarted in this proof (once at most), or None.
    restarted: str | None = None
    # The wait is over, its answer come or its deadline passed: what has not passed now fails.
    waited: bool = False


# Wait for the next look; lift the gate (the node is proven); keep it (the node fails, and the check says why).
WAIT, LIFT, KEEP = Step("wait"), Step("lift"), Step("keep")


def next_step(judgement: Judgement, progress: Progress) -> Step:
    """The step after this look. A node short of GPUs under a settled plugin pod gets the pod
    restarted once after a fresh preflight, else a refusal once its Jobs are done (their verdicts
    kept) or the wait is over; after a restart, the wait ends when another plugin pod has settled
    and the node is still short."""
    if judgement.passed:
        return LIFT
    if judgement.final:
        return KEEP
    short = judgement.short_plugin
    if progress.restarted is None and short:
        # The plugin never takes back a GPU it marked unhealthy (an XID), only a new plugin pod does.
        if progress.fresh_run:
            return Step("restart", short)
        if judgement.jobs_done or progress.waited:
            return Step("refuse", short)
    if progress.restarted is not None and short not in (None, progress.restarted):
        return KEEP
    return KEEP if progress.waited else WAIT


def answered(judgement: Judgement, progress: Progress) -> bool:
    """What a wait waits for: a look after which the next step is no longer to wait."""
    return next_step(judgement, progress).action != "wait"


def verdict(judgement: Judgement) -> Step:
    """The step after the proof's last look: it passes or fails."""
    return LIFT if judgement.passed else KEEP
