"""A fleet command over its stacks: the phases in order, each phase's stacks `--parallel` at a
time, and what one stack's failure means for the others.

- up: the owner alone first. If it fails, the others still run when its state holds the
  shared namespaces and RuntimeClass they reference; otherwise they are skipped, saying why.
- destroy: the owner alone last, and only when every other stack came down: its namespaces
  would take along the objects of a stack that still has them in its state.
- a failed stack stops no other, unless `--fail-fast`: then no stack starts after a failure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpu_nodes.cli.plan import FleetPlan, phases
from gpu_nodes.cli.progress import StackProgress

# Kubernetes types as the provider names them in the state.
STATE_KINDS = {"kubernetes:core/v1:Namespace": "Namespace", "kubernetes:node.k8s.io/v1:RuntimeClass": "RuntimeClass"}

RunOne = Callable[[str, StackProgress], bool]


def objects_in_state(resources: Iterable[dict[str, Any]]) -> set[str]:
    """`Namespace/<name>` and `RuntimeClass/<name>` for each such object a stack's state holds."""
    found = set()
    for resource in resources:
        kind = STATE_KINDS.get(resource.get("type", ""))
        name = ((resource.get("outputs") or {}).get("metadata") or {}).get("name")
        if kind and isinstance(name, str):
            found.add(f"{kind}/{name}")
    return found


def shared_objects(plan: FleetPlan, runtime_class: str | None) -> set[str]:
    """What the other stacks need of the owner: the namespaces it creates that they name, its RuntimeClass."""
    owner = plan.owner
    needed = {f"Namespace/{ns}" for s in plan.stacks if not s.owner for ns in s.references if ns in owner.creates}
    if runtime_class is not None:
        needed.add(f"RuntimeClass/{runtime_class}")
    return needed


def run_phases(
    plan: FleetPlan,
    command: str,
    progress: dict[str, StackProgress],
    run_one: RunOne,
    parallel: int,
    fail_fast: bool,
    owner_state: Callable[[], set[str]],
    needed_of_owner: set[str],
) -> None:
    """Runs every stack's command in order; each StackProgress ends passed, failed or skipped."""
    stop = threading.Event()
    for index, phase in enumerate(phases(plan, command)):
        blocked = _blocked(plan, command, progress, index, owner_state, needed_of_owner)
        if blocked:
            for name in phase:
                progress[name].skip(blocked)
            continue

        def one(name: str) -> None:
            if stop.is_set():
                progress[name].skip("not started: --fail-fast, after another stack failed")
                return
            if not run_one(name, progress[name]) and fail_fast:
                stop.set()

        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            list(pool.map(one, phase))


def _blocked(
    plan: FleetPlan,
    command: str,
    progress: dict[str, StackProgress],
    index: int,
    owner_state: Callable[[], set[str]],
    needed_of_owner: set[str],
) -> str:
    """Why a phase must not run (empty: it may)."""
    if index == 0:
        return ""
    owner = plan.owner.name
    if command == "up" and progress[owner].state != "passed":
        if progress[owner].state == "skipped":
            return f"not started: the owner {owner} did not run"
        missing = sorted(needed_of_owner - owner_state())
        if missing:
            return f"not started: the owner {owner} failed before it created {', '.join(missing)}"
    if command == "destroy":
        left = [s.name for s in plan.stacks if not s.owner and progress[s.name].state != "passed"]
        if left:
            return (
                f"not destroyed: {', '.join(left)} did not come down, and this stack's namespaces would take their "
                "objects along; destroy them first"
            )
    return ""
