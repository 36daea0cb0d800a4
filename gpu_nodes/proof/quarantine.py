"""Someone else's quarantine on a node, which gpu-nodes leaves alone: NVSentinel's.

NVSentinel (NVIDIA/NVSentinel) quarantines a node on a fatal health event. Its fault-quarantine
module cordons the node (`spec.unschedulable`; every rule set of its chart has
`cordon.shouldCordon: true`), adds the taints a rule set names (none by default: the chart's
`taint` blocks are commented out, distros/kubernetes/nvsentinel/charts/fault-quarantine/values.yaml),
and records the session on the node (fault-quarantine/pkg/common/common.go, reconciler.go
`prepareAnnotations`): annotation `quarantineHealthEvent` (the events, a JSON list),
`quarantineHealthEventIsCordoned: "True"`, `quarantineHealthEventAppliedTaints` (a JSON list of
`{key, value, effect}`), and label `dgxc.nvidia.com/nvsentinel-state`: `quarantined`, then the
node-drainer's and fault-remediation's states; the failed ones stay (commons/pkg/statemanager/
statemanager.go). Its platform connector sets one node condition per failed check: type the check
name, reason `<check>IsNotHealthy`, status True (platform-connectors/pkg/connectors/kubernetes/
process_node_events.go).

When every event has recovered, NVSentinel itself uncordons the node, removes its taints and
annotations (fault-quarantine/pkg/informer/k8s_client.go `UnQuarantineNodeAndRemoveAnnotations`); a
node uncordoned or untainted by hand ends its session (`HandleManualUncordonCleanup`). So gpu-nodes
never uncordons and never removes a taint of theirs (it writes only its own taints, node_taints.py),
and keeps its readiness gate on a quarantined node: a gate lifted under their cordon would leave the
node open, unproven, the moment NVSentinel lets it go.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_nodes.vocabulary import Taint

NVSENTINEL = "NVSentinel"
EVENTS_ANNOTATION = "quarantineHealthEvent"
CORDONED_ANNOTATION = "quarantineHealthEventIsCordoned"
APPLIED_TAINTS_ANNOTATION = "quarantineHealthEventAppliedTaints"
STATE_LABEL = "dgxc.nvidia.com/nvsentinel-state"
# The state a session starts in, and what a node that carries only the events annotation is in.
QUARANTINED = "quarantined"


@dataclass(frozen=True)
class Quarantine:
    """Who holds the node, in which state, and with what: its cordon, its taints, the failed checks."""

    by: str
    state: str
    cordoned: bool
    taints: tuple[str, ...]
    conditions: tuple[str, ...]

    def __str__(self) -> str:
        holds = [
            *(["cordoned"] if self.cordoned else []),
            *(f"taint {t}" for t in self.taints),
            *(f"condition {c}" for c in self.conditions),
        ]
        return f"{self.by}'s quarantine (state {self.state})" + (f": {', '.join(holds)}" if holds else "")

    def as_output(self) -> dict[str, Any]:
        """As a stack output (the node report)."""
        return {
            "by": self.by,
            "state": self.state,
            "cordoned": self.cordoned,
            "taints": list(self.taints),
            "conditions": list(self.conditions),
        }


def quarantine_of(node: Mapping[str, Any] | None) -> Quarantine | None:
    """NVSentinel's quarantine of the node (a Node as the API returns it), or None."""
    metadata = (node or {}).get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    state = (metadata.get("labels") or {}).get(STATE_LABEL)
    if not state and not _holds_events(annotations.get(EVENTS_ANNOTATION)):
        return None
    spec = (node or {}).get("spec") or {}
    return Quarantine(
        by=NVSENTINEL,
        state=state or QUARANTINED,
        cordoned=annotations.get(CORDONED_ANNOTATION) == "True" and bool(spec.get("unschedulable")),
        taints=_their_taints(annotations.get(APPLIED_TAINTS_ANNOTATION), spec.get("taints") or []),
        conditions=_failed_checks(node or {}),
    )


def _holds_events(value: Any) -> bool:
    """Whether the events annotation is there and not empty; one we cannot read counts as held."""
    if not value or not str(value).strip():
        return False
    try:
        return bool(json.loads(str(value)))
    except ValueError:
        return True


def _their_taints(applied: Any, on_node: list[Mapping[str, Any]]) -> tuple[str, ...]:
    """The taints NVSentinel applied that the node still carries."""
    try:
        listed = json.loads(str(applied)) if applied else []
    except ValueError:
        listed = []
    present = {Taint.from_k8s(dict(t)) for t in on_node}
    theirs = [Taint.from_k8s(t) for t in listed if isinstance(t, dict) and t.get("key") and t.get("effect")]
    return tuple(sorted(str(t) for t in theirs if t in present))


def _failed_checks(node: Mapping[str, Any]) -> tuple[str, ...]:
    conditions = (node.get("status") or {}).get("conditions") or []
    return tuple(
        sorted(
            str(c["type"])
            for c in conditions
            if c.get("type") and c.get("status") == "True" and c.get("reason") == f"{c['type']}IsNotHealthy"
        )
    )
