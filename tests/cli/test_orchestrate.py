"""Order and failure: the owner first on up and last on destroy, --parallel, --fail-fast, and
what one stack's failure does to the others (stacks stand in for real runs here: e2e runs them)."""

from __future__ import annotations

import threading
import time

from gpu_nodes.cli.orchestrate import objects_in_state, run_phases, shared_objects
from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.cli.progress import StackProgress
from tests.cli.fleets import fleet, group

NEEDED = {"Namespace/gpu-verification", "Namespace/nvidia-device-plugin", "RuntimeClass/nvidia"}


def four_stacks():
    return plan_fleet(fleet(group("a", "n1"), group("b", "n2"), group("c", "n3"), group("d", "n4")))


class Recorder:
    """Runs each stack as told: records the order, the stacks at once, and fails those named."""

    def __init__(self, failing: tuple[str, ...] = (), seconds: float = 0.05):
        self.failing, self.seconds = failing, seconds
        self.order: list[str] = []
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def __call__(self, name: str, progress: StackProgress) -> bool:
        with self.lock:
            self.order.append(name)
            self.running += 1
            self.most = max(self.most, self.running)
        progress.start("x")
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        progress.finish(name not in self.failing, "boom" if name in self.failing else "")
        return name not in self.failing


def run(command: str, recorder: Recorder, parallel: int = 1, fail_fast: bool = False, state: set[str] = frozenset()):
    plan = four_stacks()
    progress = {s.name: StackProgress(s.name, s.nodes, owner=s.owner) for s in plan.stacks}
    run_phases(plan, command, progress, recorder, parallel, fail_fast, lambda: set(state), NEEDED)
    return {name: (p.state, p.reason) for name, p in progress.items()}


def test_up_runs_the_owner_alone_first_then_the_others_parallel_at_a_time():
    recorder = Recorder()
    result = run("up", recorder, parallel=2)
    assert recorder.order[0] == "a" and sorted(recorder.order[1:]) == ["b", "c", "d"], recorder.order
    assert recorder.most == 2 and all(state == "passed" for state, _ in result.values()), (recorder.most, result)


def test_destroy_runs_the_owner_last():
    recorder = Recorder()
    run("destroy", recorder, parallel=3)
    assert recorder.order[-1] == "a" and recorder.most == 3, (recorder.order, recorder.most)


def test_a_failed_stack_does_not_stop_the_others():
    result = run("up", Recorder(failing=("b",)))
    assert result["b"] == ("failed", "boom") and result["c"][0] == result["d"][0] == "passed", result


def test_fail_fast_starts_no_stack_after_a_failure():
    result = run("up", Recorder(failing=("b",)), parallel=1, fail_fast=True)
    assert result["b"][0] == "failed", result
    assert [result[s][0] for s in "cd"] == ["skipped", "skipped"] and "--fail-fast" in result["c"][1], result


def test_an_owner_that_failed_before_creating_the_shared_objects_holds_the_others_back():
    result = run("up", Recorder(failing=("a",)), state={"Namespace/gpu-verification"})
    assert all(result[s][0] == "skipped" for s in "bcd"), result
    assert "the owner a failed before it created Namespace/nvidia-device-plugin, RuntimeClass/nvidia" in result["b"][1], result


def test_an_owner_that_failed_after_creating_the_shared_objects_lets_the_others_run():
    result = run("up", Recorder(failing=("a",)), state=set(NEEDED))
    assert result["a"][0] == "failed" and all(result[s][0] == "passed" for s in "bcd"), result


def test_destroy_keeps_the_owner_while_another_stack_did_not_come_down():
    result = run("destroy", Recorder(failing=("c",)))
    assert result["a"][0] == "skipped" and "c did not come down" in result["a"][1], result
    assert result["b"][0] == result["d"][0] == "passed", result


def test_the_others_need_the_namespaces_they_reference_and_the_class_the_owner_creates():
    assert shared_objects(four_stacks(), "nvidia") == NEEDED
    assert shared_objects(four_stacks(), None) == NEEDED - {"RuntimeClass/nvidia"}


def test_the_shared_objects_in_a_state_are_read_by_kind_and_name():
    resources = [
        {"type": "kubernetes:core/v1:Namespace", "outputs": {"metadata": {"name": "gpu-verification"}}},
        {"type": "kubernetes:node.k8s.io/v1:RuntimeClass", "outputs": {"metadata": {"name": "nvidia"}}},
        {"type": "kubernetes:apps/v1:DaemonSet", "outputs": {"metadata": {"name": "x"}}},
        {"type": "pulumi:pulumi:Stack"},
    ]
    assert objects_in_state(resources) == {"Namespace/gpu-verification", "RuntimeClass/nvidia"}
