"""The e2e tier: the real Pulumi engine and providers against a real API server (kwok nodes).

One session builds the environment once: a fresh local cluster with three simulated GPU
nodes (with the DRA gates of a Kubernetes 1.36 cluster on, `FEATURE_GATES`), a fake machine behind
sshd for each, and the stack `e2e` (its own file backend).
Tests then run `pulumi` and `kubectl` as an operator would. The engine and the control plane
must be built first (`tools/engine/build.sh`, `tools/cluster/build.sh`; `make test` does it).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.tiers import needs_the_engine
from tools.local.environment import local_environment

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".state"
STACK = "e2e"
NODES = ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
GROUP = "local-gpu"
# The group's resource name under the program's fleet: its children are `<PREFIX>-<node>-...`.
PREFIX = f"gpu-nodes-{GROUP}"
FOREIGN_TAINT = {"key": "example.com/maintenance", "value": "true", "effect": "PreferNoSchedule"}
FOREIGN_LABEL = ("example.com/owner", "platform-team")
OUR_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GATE = {"key": "gpu-nodes.dev/unverified", "value": "true", "effect": "NoSchedule"}
# The session's cluster runs with the DRA gates a Kubernetes 1.36 cluster has on by default (beta there:
# staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go), off in the 1.35 it is built from: the
# API server keeps device taints, which the DRA driver's health check writes, and a DeviceClass's
# extendedResourceName (tests/e2e/test_dra.py). Only a DeviceClass that maps nvidia.com/gpu changes what a
# plain pod gets, and only test_dra.py makes one (tools/cluster/README.md, "DRA"). DRAPartitionableDevices too
# (alpha and off in 1.35, on by default from 1.36: kubernetes-sigs/dra-driver-nvidia-gpu
# site/content/docs/guides/gpu-allocation/mig.md): the API server keeps a device's consumesCounters and the scheduler
# counts them, as the DRA driver's dynamic MIG needs (tests/e2e/test_nvlink.py).
FEATURE_GATES = "DRADeviceTaints=true,DRAExtendedResource=true,DRAPartitionableDevices=true"


def taints_of(node: dict) -> list[dict]:
    return [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in node["spec"].get("taints", [])]


NODE_TAINTS = "NODE:.metadata.name,TAINTS:.spec.taints[*].key"
POD_READINESS = (
    'POD:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase,READY:.status.conditions[?(@.type=="Ready")].status,'
    'SINCE:.status.conditions[?(@.type=="Ready")].lastTransitionTime'
)


# A resource's heading in Pulumi's Diagnostics: `  command:remote:Command (gpu-nodes-...-preflight):`.
_DIAGNOSTIC_HEADING = re.compile(r"^  \S+ \((?P<name>[^)]+)\):$")


def failed_resources(output: str) -> set[str]:
    """The resources an `up` reported an error for in its Diagnostics; a warning (a check that
    passed with one, say) is no failure."""
    failed: set[str] = set()
    name = None
    for line in output.partition("Diagnostics:")[2].partition("\nOutputs:")[0].splitlines():
        if heading := _DIAGNOSTIC_HEADING.match(line):
            name = heading["name"]
        elif name and line.strip().startswith("error:"):
            failed.add(name)
    return failed


@dataclass
class LocalEnv:
    env: dict[str, str]

    def run(
        self, *args: str, check: bool = True, timeout: int = 900, stdin: str | None = None, cwd: Path = ROOT
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout, input=stdin)
        if check and result.returncode != 0:
            raise AssertionError(self.explain(f"{' '.join(args)} exited {result.returncode}", result))
        return result

    def pulumi(self, *args: str, check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess:
        return self.run("pulumi", *args, "--stack", STACK, "--non-interactive", check=check, timeout=timeout)

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run("kubectl", *args, check=check, timeout=120)

    def kubectl_json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def node(self, name: str) -> dict[str, Any]:
        return self.kubectl_json("get", "node", name)

    def outputs(self) -> dict[str, Any]:
        return json.loads(self.pulumi("stack", "output", "--json").stdout)

    def wait_until(self, what: str, check: Callable[[], object], timeout: float = 90) -> None:
        """Until `check()` holds, polling each second; fails with the cluster's view after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, self.explain(f"waited {timeout:.0f}s for {what}")
            time.sleep(1)

    def explain(self, what: str, result: subprocess.CompletedProcess | None = None) -> str:
        """A failure message that explains itself: command output and the cluster's view."""
        parts = [what]
        if result is not None:
            # Pulumi prints its Diagnostics before the (long) outputs: show them whole, then the tail.
            diagnostics = result.stdout.partition("Diagnostics:")[2].partition("\nOutputs:")[0]
            if diagnostics:
                parts.append(f"--- Diagnostics ---\n{diagnostics[:8000]}")
            parts += [f"--- stdout ---\n{result.stdout[-6000:]}", f"--- stderr ---\n{result.stderr[-4000:]}"]
        for args in (
            ["get", "nodes", "-o", "wide", "--show-labels"],
            ["get", "pods", "-A", "-o", "wide"],
            ["describe", "pods", "-n", "gpu-verification"],
            ["get", "nodes", "-o", f"custom-columns={NODE_TAINTS}"],
            # A pod's Ready condition: `get -o wide` shows its ready containers, not the Ready that a DaemonSet
            # counts and the node lifecycle controller sets to False.
            ["get", "pods", "-n", "nvidia-device-plugin", "-o", f"custom-columns={POD_READINESS}"],
            ["get", "events", "-A", "--sort-by=.lastTimestamp"],
        ):
            described = subprocess.run(["kubectl", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
            parts.append(f"--- kubectl {' '.join(args)} ---\n{(described.stdout + described.stderr)[-4000:]}")
        return "\n".join(parts)


def _toolchain_missing(env: dict[str, str]) -> str | None:
    for tool in ("pulumi", "pulumi-language-python", "kube-apiserver", "kwokctl", "kubectl"):
        if not shutil.which(tool, path=env["PATH"]):
            return tool
    command_plugin = Path(env["PULUMI_HOME"]) / "plugins/resource-command-v1.2.1/pulumi-resource-command"
    return None if command_plugin.exists() else str(command_plugin)


@pytest.fixture(scope="session")
def local() -> LocalEnv:
    needs_the_engine("the local cluster")
    env = {**local_environment(STATE / "e2e-pulumi"), "GPU_NODES_FEATURE_GATES": FEATURE_GATES}
    missing = _toolchain_missing(env)
    if missing:
        pytest.fail(f"{missing} is not built: run tools/toolchain.sh (make test does)")
    local = LocalEnv(env)
    # A fresh cluster and stack each session: leftovers of an earlier run prove nothing.
    local.run("tools/fakehost/down.sh", check=False)
    local.run("tools/cluster/down.sh", check=False)
    shutil.rmtree(STATE / "e2e-pulumi", ignore_errors=True)
    (STATE / "e2e-pulumi").mkdir(parents=True)
    (ROOT / f"Pulumi.{STACK}.yaml").unlink(missing_ok=True)
    local.run("tools/cluster/up.sh", "--nodes", str(len(NODES)))
    local.run("tools/fakehost/up.sh", *NODES)
    local.pulumi("stack", "init")
    local.run(str(ROOT / ".venv/bin/python"), "tools/local/stack_config.py", "--stack", STACK, "--group", GROUP)
    key = (STATE / "fakehosts/id_ed25519").read_text()
    local.run("pulumi", "config", "set", "--secret", "--stack", STACK, "gpu-nodes:sshPrivateKey", stdin=key)
    yield local
    local.run("tools/fakehost/down.sh", check=False)
    local.run("tools/cluster/down.sh", check=False)


@pytest.fixture(scope="session")
def deployed(local: LocalEnv) -> LocalEnv:
    """The stack after one successful `pulumi up`."""
    local.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    return local
