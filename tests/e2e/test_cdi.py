"""A `gpuAccess: cdi` group on the local cluster: its plugin runs with the driver root mounted.

The simulated plugin (tools/cluster/gpu-registrar.py) follows the real one: a plugin pod with a
CDI strategy registers no GPU unless a hostPath is mounted at /driver-root, where the real
plugin reads the driver files for its CDI spec and exits without them ("unable to create cdi
spec file", k8s-device-plugin cmd/nvidia-device-plugin/plugin-manager.go). So the node is
proven only because the DaemonSet mounts the driver root, and loses its GPUs when the mount
goes.

A stack of its own (`cdi`) on gpu-node-4, beside the story's (gpu-node-1..3), with preflight off:
the fake machines' containerd is not set up for CDI, and the script tier checks that part
(tests/scripts/test_62_check_cdi.py). Its objects have names of their own, and it is destroyed
at the end, so gpu-node-4 is left as it was for test_provider_waits.py.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.e2e.conftest import ROOT, LocalEnv

pytestmark = pytest.mark.cluster

STACK = "cdi"
NODE = "gpu-node-4"
NAMESPACE = "nvidia-device-plugin-cdi"
DAEMONSET = f"nvidia-device-plugin-{STACK}"
GATE_KEY = "gpu-nodes.dev/unverified"


def stack_settings() -> dict:
    group = {
        "name": STACK,
        "gpusPerNode": 4,
        "gpuAccess": "cdi",
        "nodes": [{"name": NODE}],
        "preflight": {"enabled": False},
        "verification": {"gpusPerPod": [1], "timeoutSeconds": 60, "namespace": "gpu-verification-cdi"},
        "devicePlugin": {"namespace": NAMESPACE},
        "priorityClass": {"name": "gpu-cdi"},
    }
    return {
        "gpu-nodes:nodeGroups": [group],
        "gpu-nodes:runtimeClass": "nvidia-cdi",
        "gpu-nodes:createRuntimeClass": "true",
        "kubernetes:kubeconfig": str(ROOT / ".state/cluster/kubeconfig"),
    }


def plugin_pods(local: LocalEnv) -> list[dict]:
    items = local.kubectl_json("get", "pods", "-n", NAMESPACE)["items"]
    return [p for p in items if p["spec"].get("nodeName") == NODE and not p["metadata"].get("deletionTimestamp")]


def allocatable(local: LocalEnv) -> str | None:
    return local.node(NODE)["status"].get("allocatable", {}).get("nvidia.com/gpu")


def test_a_cdi_groups_plugin_runs_with_the_driver_root_and_the_node_is_proven(local: LocalEnv):
    local.run("tools/cluster/up.sh", "--nodes", "4", timeout=600)
    stack_file = ROOT / f"Pulumi.{STACK}.yaml"
    local.run("pulumi", "stack", "init", STACK, "--non-interactive", check=False)
    settings = yaml.safe_load(stack_file.read_text()) or {}
    settings["config"] = stack_settings()
    stack_file.write_text(yaml.safe_dump(settings, sort_keys=True))
    try:
        up = local.run("pulumi", "up", "--stack", STACK, "--yes", "--skip-preview", "--non-interactive", check=False, timeout=900)
        assert up.returncode == 0, local.explain("pulumi up of the cdi group failed", up)

        pods = plugin_pods(local)
        assert len(pods) == 1, local.explain(f"plugin pods on {NODE}: {[p['metadata']['name'] for p in pods]}")
        spec = pods[0]["spec"]
        container = spec["containers"][0]
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert env.get("DEVICE_LIST_STRATEGY") == "cdi-cri", env
        assert env.get("NVIDIA_DRIVER_ROOT") == "/" and env.get("NVIDIA_CDI_HOOK_PATH") == "/usr/bin/nvidia-ctk", env
        mounts = {m["name"]: m for m in container.get("volumeMounts", [])}
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        assert mounts["driver-root"]["mountPath"] == "/driver-root" and mounts["driver-root"].get("readOnly"), mounts
        assert volumes["driver-root"]["hostPath"] == {"path": "/", "type": "Directory"}, volumes
        assert container.get("securityContext", {}).get("privileged") is not True, container.get("securityContext")

        assert allocatable(local) == "4", local.explain(f"{NODE} allocatable nvidia.com/gpu {allocatable(local)}")
        taints = local.node(NODE)["spec"].get("taints") or []
        assert not any(t["key"] == GATE_KEY for t in taints), local.explain(f"{NODE} still gated: {taints}")
        report = json.loads(local.run("pulumi", "stack", "output", "--json", "--stack", STACK).stdout)
        checklist = report["nodeGroups"][STACK][NODE]["checklist"]
        assert set(checklist.values()) == {"pass"}, checklist
        access = {STACK: {"gpuAccess": "cdi", "isolation": "default", "runtimeClassName": None}}
        assert report["tenantAccess"] == access, report["tenantAccess"]

        # Without the mount the plugin cannot write its spec: the node loses its GPUs, as a real one would.
        index = next(i for i, m in enumerate(container["volumeMounts"]) if m["name"] == "driver-root")
        patch = [{"op": "remove", "path": f"/spec/template/spec/containers/0/volumeMounts/{index}"}]
        local.kubectl("-n", NAMESPACE, "patch", "daemonset", DAEMONSET, "--type", "json", "-p", json.dumps(patch))
        local.wait_until(f"{NODE} losing its GPUs to a plugin without /driver-root", lambda: allocatable(local) is None)
    finally:
        local.run("pulumi", "destroy", "--stack", STACK, "--yes", "--skip-preview", "--non-interactive", check=False, timeout=900)
        local.run("pulumi", "stack", "rm", STACK, "--yes", "--non-interactive", check=False)
        stack_file.unlink(missing_ok=True)
