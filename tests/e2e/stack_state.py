"""Reading a stack's state as `pulumi stack export` gives it, and killing a run as a dying runner would."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import time
from typing import Any

from bench.harness import descendants
from tests.e2e.conftest import ROOT, STACK, LocalEnv

DYNAMIC_TYPE_PREFIX = "pulumi-python:dynamic/gpu-nodes:"
UNTYPED = "pulumi-python:dynamic:Resource"
DYNAMIC_PROVIDER_TYPE = "pulumi:providers:pulumi-python"


def exported(local: LocalEnv) -> dict[str, Any]:
    return json.loads(local.pulumi("stack", "export").stdout)


def resources(export: dict[str, Any]) -> list[dict[str, Any]]:
    return list(export["deployment"].get("resources") or [])


def ours(export: dict[str, Any]) -> list[dict[str, Any]]:
    """Our dynamic resources, by their type (and by the old one, which none may keep)."""
    return [r for r in resources(export) if r["type"].startswith(DYNAMIC_TYPE_PREFIX) or r["type"] == UNTYPED]


def provider_class(resource: dict[str, Any]) -> str:
    """The import path `__provider` pickles, or why it cannot be read (a secret, say)."""
    value = (resource.get("outputs") or {}).get("__provider")
    if not isinstance(value, str):
        return f"not plain text: {str(value)[:80]}"
    pickled = base64.b64decode(value)
    # dill pickles an importable class by reference: its module and name as two short strings.
    names = re.findall(rb"[A-Za-z_][\w.]+", pickled)
    module = next((n.decode() for n in names if n.startswith((b"gpu_nodes.", b"components."))), "?")
    return f"{module}.{names[names.index(module.encode()) + 1].decode()}" if module != "?" else repr(pickled[:80])


def kill_when(local: LocalEnv, pattern: str, timeout: float = 900) -> str:
    """Start `pulumi up` and SIGKILL it, with every process it started, once its output matches
    `pattern`; returns the output seen. As a CI runner that dies mid-run: no signal to clean up."""
    process = subprocess.Popen(
        ["pulumi", "up", "--yes", "--skip-preview", "--stack", STACK, "--non-interactive"],
        cwd=ROOT,
        env=local.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if re.search(pattern, line) or time.monotonic() > deadline:
                break
    finally:
        # The CLI and every process below it: the engine starts each plugin in a process group of its own, so
        # killing the CLI's group alone left the plugins running, orphaned.
        for pid in descendants(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=60)
    output = "".join(seen)
    assert re.search(pattern, output), f"pulumi up never reached {pattern!r}:\n{output[-4000:]}"
    return output


def leftovers(local: LocalEnv, nodes: list[str], group: str, our_taint: dict, gate: dict) -> list[str]:
    """What of ours is still in the cluster: labels, taints, the gate, namespaces, PriorityClass, DaemonSet, Jobs."""
    from tests.e2e.conftest import taints_of

    left: list[str] = []
    for name in nodes:
        node = local.node(name)
        labels = node["metadata"].get("labels") or {}
        left += [f"{name}: label {key}" for key in ("gpu-nodes.dev/node-group", "accelerator") if key in labels]
        left += [f"{name}: taint {t['key']}" for t in taints_of(node) if t in (our_taint, gate)]
    namespaces = local.kubectl("get", "namespaces", "-o", "name").stdout.split()
    left += [n for n in namespaces if n in ("namespace/nvidia-device-plugin", "namespace/gpu-verification")]
    classes = local.kubectl("get", "priorityclasses", "-o", "name").stdout.split()
    left += [c for c in classes if c == f"priorityclass.scheduling.k8s.io/gpu-{group}"]
    for kind in ("daemonsets", "jobs"):
        found = local.kubectl("get", kind, "-A", "-o", "name").stdout.split()
        left += [f for f in found if "nvidia-device-plugin" in f or "gpu-verify" in f]
    return left
