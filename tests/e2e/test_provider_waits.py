"""More failing nodes than Pulumi's dynamic provider runs calls at once, beside healthy ones.

A stack of its own (`waits`) on gpu-node-4..12 (the story's stack keeps gpu-node-1..3), with
preflight off and `timeoutSeconds: 60`. The first six nodes of the group carry a foreign
NoSchedule taint that the group does not declare, so their Jobs never schedule and their
readiness checks wait out their timeout (90 s with the grace); the last three are healthy.
The SDK's provider server runs four calls at once, so before gpu_nodes/providers/provider_server.py the
healthy nodes' checks queued behind four failing ones and opened after about 68 s. Runs after
test_operations.py (file order) and before test_scale.py, which grows the cluster further.
"""

from __future__ import annotations

import threading
import time

import pytest
import yaml

from tests.e2e.conftest import ROOT, LocalEnv

pytestmark = pytest.mark.cluster

STACK = "waits"
NODES = [f"gpu-node-{i}" for i in range(4, 13)]
FAILING, HEALTHY = NODES[:6], NODES[6:]
FOREIGN = "example.com/reserved=other-team:NoSchedule"
GATE_KEY = "gpu-nodes.dev/unverified"
TIMEOUT = 60


def stack_settings() -> dict:
    group = {
        "name": "waits",
        "gpusPerNode": 4,
        "nodes": [{"name": name} for name in NODES],
        "preflight": {"enabled": False},
        "verification": {"gpusPerPod": [1], "timeoutSeconds": TIMEOUT, "namespace": "gpu-verification-waits"},
        "devicePlugin": {"namespace": "nvidia-device-plugin-waits"},
        "priorityClass": {"name": "gpu-waits"},
    }
    # Objects of its own, beside the story's stack (whose namespaces and class it may not claim).
    return {
        "gpu-nodes:nodeGroups": [group],
        "gpu-nodes:runtimeClass": "nvidia-waits",
        "gpu-nodes:createRuntimeClass": "true",
        "kubernetes:kubeconfig": str(ROOT / ".state/cluster/kubeconfig"),
    }


def gates(local: LocalEnv) -> dict[str, bool]:
    items = local.kubectl_json("get", "nodes")["items"]
    return {
        n["metadata"]["name"]: any(t["key"] == GATE_KEY for t in n["spec"].get("taints") or [])
        for n in items
        if n["metadata"]["name"] in NODES
    }


def watch_gates(local: LocalEnv, started: float, stop: threading.Event, opened: dict[str, float]) -> None:
    """Seconds from the start of `pulumi up` until each node was first seen gated and then open."""
    seen_gated: set[str] = set()
    while not stop.is_set():
        for name, gated in gates(local).items():
            if gated:
                seen_gated.add(name)
            elif name in seen_gated and name not in opened:
                opened[name] = time.monotonic() - started
        time.sleep(0.5)


def test_healthy_nodes_open_while_more_failing_nodes_than_the_provider_runs_at_once_wait(local: LocalEnv):
    local.run("tools/cluster/up.sh", "--nodes", str(len(NODES) + 3), timeout=600)
    stack_file = ROOT / f"Pulumi.{STACK}.yaml"
    local.run("pulumi", "stack", "init", STACK, "--non-interactive", check=False)
    settings = yaml.safe_load(stack_file.read_text()) or {}
    settings["config"] = stack_settings()
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=True))
    for name in FAILING:
        local.kubectl("taint", "node", name, FOREIGN, "--overwrite")
    opened: dict[str, float] = {}
    stop = threading.Event()
    try:
        started = time.monotonic()
        watcher = threading.Thread(target=watch_gates, args=(local, started, stop, opened), daemon=True)
        watcher.start()
        result = local.run(
            "pulumi", "up", "--stack", STACK, "--yes", "--skip-preview", "--continue-on-error", "--non-interactive",
            # The engine's own bound (four steps per CPU by default, 8 here) would hold the third
            # healthy node behind the six waits: a large fleet raises it the same way.
            "--parallel", "32",
            check=False, timeout=900,
        )  # fmt: skip
        took = time.monotonic() - started
        stop.set()
        watcher.join()
        output = result.stdout + result.stderr
        figures = ", ".join(f"{name} {opened.get(name, float('nan')):.0f}s" for name in HEALTHY)
        print(f"\n[waits] healthy nodes opened after: {figures}; the run took {took:.0f}s")
        assert result.returncode != 0, local.explain("pulumi up passed with six unschedulable nodes", result)
        for name in FAILING:
            assert f"node {name} stays gated" in output, local.explain(f"{name} not named as failing", result)
        assert set(opened) >= set(HEALTHY), f"healthy nodes that never opened: {set(HEALTHY) - set(opened)}; {figures}"
        # Opened while the failing nodes were still waiting: before their timeout, not after it.
        late = {name: t for name, t in opened.items() if name in HEALTHY and t >= TIMEOUT}
        assert not late, f"healthy nodes opened only after the failing nodes' {TIMEOUT}s timeout: {figures}"
        assert not set(opened) & set(FAILING), f"failing nodes opened: {opened}"
    finally:
        stop.set()
        for name in FAILING:
            local.kubectl("taint", "node", name, f"{FOREIGN.split('=')[0]}-", check=False)
        local.run("pulumi", "destroy", "--stack", STACK, "--yes", "--skip-preview", "--non-interactive", check=False, timeout=900)
        local.run("pulumi", "stack", "rm", STACK, "--yes", "--non-interactive", check=False)
        stack_file.unlink(missing_ok=True)
