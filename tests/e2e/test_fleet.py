"""`gpu-nodes fleet` on the local cluster: three stacks of this repository's program, one fleet file.

On nodes of their own (gpu-node-8..10, a fake machine behind sshd for each), with namespaces and
a RuntimeClass of their own, beside the story's stack: `fleet up` brings every node in and
reports them in one table; `fleet drift` passes; a label removed by hand fails it, naming the
stack and the node; so does a taint removed by hand, and `fleet up --refresh` puts both back;
`fleet destroy` leaves no object of ours; a machine that fails preflight
fails its stack only, and the exit code says so. The operator export passes the API server's
dry run against the operator's CRDs.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import ROOT, STATE, LocalEnv

pytestmark = pytest.mark.cluster

NODES = {"fleet-a": "gpu-node-8", "fleet-b": "gpu-node-9", "fleet-c": "gpu-node-10"}
NAMESPACES = ["fleet-device-plugin", "fleet-verification"]
RUNTIME_CLASS = "nvidia-fleet"
WORK = STATE / "e2e-fleet"
# The groups' default taint (gpu-nodes:nodeGroups[].taints), which tenants' pods tolerate.
GPU_TAINT = "nvidia.com/gpu"
# The operator's Stack CRD, test data of the repository (tests/e2e/fixtures/README.md names its source).
CRDS = Path(os.environ.get("GPU_NODES_OPERATOR_CRDS", Path(__file__).resolve().parent / "fixtures"))


def fleet_file() -> dict:
    hosts = {h["name"]: h for h in json.loads((STATE / "fakehosts/hosts.json").read_text())}
    groups = [
        {
            "name": stack,
            "gpusPerNode": 4,
            "nodes": [{k: hosts[node][k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey")}],
            "preflight": {"containerRuntime": "containerd"},
            "verification": {"gpusPerPod": [1, 2], "timeoutSeconds": 120, "namespace": NAMESPACES[1]},
            "devicePlugin": {"namespace": NAMESPACES[0]},
        }
        for stack, node in NODES.items()
    ]
    return {
        "program": str(ROOT),
        "config": {
            "kubernetes:kubeconfig": str(STATE / "cluster/kubeconfig"),
            "gpu-nodes:runtimeClass": RUNTIME_CLASS,
            "gpu-nodes:createRuntimeClass": "true",
        },
        "secrets": {"gpu-nodes:sshPrivateKey": {"file": str(STATE / "fakehosts/id_ed25519")}},
        "nodeGroups": groups,
    }


@pytest.fixture(scope="module")
def fleet(local: LocalEnv) -> Iterator[Path]:
    local.run("tools/cluster/up.sh", "--nodes", "10", timeout=600)
    local.run("tools/fakehost/up.sh", *NODES.values())
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    path = WORK / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet_file()))
    yield path
    local.run("tools/fakehost/break.sh", NODES["fleet-c"], "healthy", check=False)
    gpu_nodes(local, path, "destroy", "--parallel", "2", check=False)
    for stack in NODES:
        local.run("pulumi", "stack", "rm", "--yes", "--stack", stack, check=False)
        (ROOT / f"Pulumi.{stack}.yaml").unlink(missing_ok=True)


def gpu_nodes(local: LocalEnv, path: Path, command: str, *args: str, check: bool = True):
    python = str(ROOT / ".venv/bin/python")
    return local.run(python, "-m", "gpu_nodes.cli", "fleet", command, "-f", str(path), *args, check=check, timeout=1800)


def test_fleet_up_brings_every_node_in_and_reports_them_in_one_table(fleet: Path, local: LocalEnv):
    result = gpu_nodes(local, fleet, "up", "--parallel", "2", "--json", str(WORK / "up.json"))
    header, *rows = result.stdout.splitlines()[: 1 + len(NODES)]
    # The gate, then someone else's quarantine of the node (none here).
    assert header.split()[:3] == ["STACK", "GROUP", "NODE"] and header.split()[-2:] == ["GATE", "QUARANTINE"], result.stdout
    assert sorted((r.split()[0], r.split()[2], *r.split()[-2:]) for r in rows) == sorted(
        (stack, node, "lifted", "-") for stack, node in NODES.items()
    ), result.stdout
    report = json.loads((WORK / "up.json").read_text())
    assert report["passed"] and [s["result"] for s in report["stacks"]] == ["passed"] * 3, report["stacks"]
    assert "fleet [" in result.stderr, result.stderr
    for stack in NODES:
        assert (WORK / f"fleet-logs/{stack}.up.log").read_text().strip(), f"{stack}: empty log"
        assert (ROOT / f"Pulumi.{stack}.yaml").read_text().startswith("# Managed by `gpu-nodes fleet`"), stack
    referencing = yaml.safe_load((ROOT / "Pulumi.fleet-b.yaml").read_text())["config"]
    assert referencing["gpu-nodes:existingNamespaces"] == NAMESPACES, referencing
    assert referencing["gpu-nodes:createRuntimeClass"] == "false", referencing
    for namespace in NAMESPACES:
        labels = local.kubectl_json("get", "namespace", namespace)["metadata"]["labels"]
        assert labels.get("gpu-nodes.dev/stack") == "gpu-nodes.fleet-a", f"namespace {namespace}: {labels}"
    again = gpu_nodes(local, fleet, "report", check=False)
    assert again.returncode == 0 and again.stdout.count("lifted") == len(NODES), again.stdout


def test_fleet_drift_passes_on_the_deployed_fleet(fleet: Path, local: LocalEnv):
    result = gpu_nodes(local, fleet, "drift", "--parallel", "3", check=False)
    assert result.returncode == 0 and "no drift" in result.stdout, local.explain("fleet drift failed", result)
    # Each stack's last update is the fleet up above, of the same program and settings: the refresh alone.
    assert "preview skipped on 3 of 3 stacks" in result.stdout, result.stdout


def test_a_setting_changed_since_the_up_brings_the_preview_back_and_it_finds_the_drift(fleet: Path, local: LocalEnv):
    written = yaml.safe_load(fleet.read_text())
    changed = json.loads(json.dumps(written))
    changed["nodeGroups"][0]["labels"] = {"accelerator": "nvidia", "nvidia.com/gpu.present": "true", "example.com/rack": "a"}
    fleet.write_text(yaml.safe_dump(changed))
    try:
        result = gpu_nodes(local, fleet, "drift", "--parallel", "3", check=False)
    finally:
        fleet.write_text(yaml.safe_dump(written))
    assert result.returncode == 1, local.explain("fleet drift passed with a label added to the fleet file", result)
    assert f"DRIFT fleet-a: node {NODES['fleet-a']}:" in result.stdout and "(found by preview)" in result.stdout, result.stdout
    assert "preview skipped on 2 of 3 stacks (fleet-b, fleet-c)" in result.stdout, result.stdout


def test_a_label_and_a_taint_removed_by_hand_fail_drift_naming_the_stack_the_node_and_the_repair(fleet: Path, local: LocalEnv):
    local.kubectl("label", "node", NODES["fleet-b"], "accelerator-")
    local.kubectl("taint", "node", NODES["fleet-b"], f"{GPU_TAINT}-")
    result = gpu_nodes(local, fleet, "drift", "--parallel", "3", "--json", str(WORK / "drift.json"), check=False)
    assert result.returncode == 1, local.explain("fleet drift passed with a label and a taint removed", result)
    lines = [line for line in result.stdout.splitlines() if line.startswith("DRIFT")]
    assert lines and all(line.startswith(f"DRIFT fleet-b: node {NODES['fleet-b']}:") for line in lines), result.stdout
    assert any(line.endswith("-labels (found by refresh)") for line in lines), lines
    assert any(line.endswith("-taints (found by refresh)") for line in lines), lines
    assert "drift in 1 of 3 stacks: fleet-b" in result.stdout, result.stdout
    assert f"to repair it: gpu-nodes fleet up -f {fleet} --refresh" in result.stdout, result.stdout
    drift = {s["name"]: s["drift"] for s in json.loads((WORK / "drift.json").read_text())["stacks"]}
    assert not drift["fleet-a"] and not drift["fleet-c"] and drift["fleet-b"][0]["node"] == NODES["fleet-b"], drift


def test_fleet_up_refresh_repairs_what_drift_found(fleet: Path, local: LocalEnv):
    result = gpu_nodes(local, fleet, "up", "--parallel", "3", "--refresh", check=False)
    assert result.returncode == 0, local.explain("fleet up --refresh failed", result)
    node = local.kubectl_json("get", "node", NODES["fleet-b"])
    taints = [t["key"] for t in node["spec"].get("taints") or []]
    assert "accelerator" in node["metadata"]["labels"] and GPU_TAINT in taints, (
        f"{NODES['fleet-b']}: {node['metadata']}, {taints}"
    )
    again = gpu_nodes(local, fleet, "drift", "--parallel", "3", check=False)
    assert again.returncode == 0 and "no drift" in again.stdout, local.explain("fleet drift after the repair", again)


def test_fleet_destroy_leaves_no_object_of_ours(fleet: Path, local: LocalEnv):
    result = gpu_nodes(local, fleet, "destroy", "--parallel", "2", check=False)
    assert result.returncode == 0, local.explain("fleet destroy failed", result)
    assert_nothing_of_ours(local)


def assert_nothing_of_ours(local: LocalEnv) -> None:
    for namespace in NAMESPACES:
        assert local.kubectl("get", "namespace", namespace, check=False).returncode != 0, f"namespace {namespace} is left"
    assert local.kubectl("get", "runtimeclass", RUNTIME_CLASS, check=False).returncode != 0, f"{RUNTIME_CLASS} is left"
    classes = [p["metadata"]["name"] for p in local.kubectl_json("get", "priorityclasses")["items"]]
    assert not [c for c in classes if c.startswith("gpu-fleet-")], classes
    for node in NODES.values():
        body = local.node(node)
        ours = {k: v for k, v in body["metadata"].get("labels", {}).items() if k.startswith("gpu-nodes.dev/")}
        taints = [
            t["key"] for t in body["spec"].get("taints") or [] if t["key"] in ("nvidia.com/gpu", "gpu-nodes.dev/unverified")
        ]
        assert not ours and not taints, f"{node}: labels {ours}, taints {taints}"


def test_a_machine_that_fails_preflight_fails_its_stack_only(fleet: Path, local: LocalEnv):
    local.run("tools/fakehost/break.sh", NODES["fleet-c"], "driver")
    result = gpu_nodes(
        local, fleet, "up", "--parallel", "2", "--continue-on-error", "--json", str(WORK / "broken.json"), check=False
    )
    assert result.returncode == 1, local.explain("fleet up passed with a broken machine", result)
    stacks = {s["name"]: s for s in json.loads((WORK / "broken.json").read_text())["stacks"]}
    assert stacks["fleet-a"]["result"] == stacks["fleet-b"]["result"] == "passed", stacks
    assert stacks["fleet-c"]["result"] == "failed" and NODES["fleet-c"] in stacks["fleet-c"]["failedNodes"], stacks["fleet-c"]
    nodes = {n["node"]: n for n in json.loads((WORK / "broken.json").read_text())["nodes"]}
    assert nodes[NODES["fleet-a"]]["gate"] == nodes[NODES["fleet-b"]]["gate"] == "lifted", nodes


def established(local: LocalEnv, crd: str) -> None:
    """Waits until the API server serves the CRD (`kubectl wait` and a jsonpath filter fail before it has any condition)."""
    for _ in range(60):
        conditions = local.kubectl_json("get", "crd", crd).get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        time.sleep(1)
    raise AssertionError(local.explain(f"CRD {crd} is not established after 60 s"))


def test_the_operator_export_passes_the_api_servers_dry_run(fleet: Path, local: LocalEnv):
    assert (CRDS / "pulumi.com_stacks.yaml").is_file(), f"the operator's CRDs are not at {CRDS}"
    settings = WORK / "operator.yaml"
    settings.write_text(
        yaml.safe_dump({"repository": "https://git.example.com/platform/gpu-nodes.git", "backend": "s3://gpu-state"})
    )
    out = WORK / "operator-stacks.yaml"
    gpu_nodes(local, fleet, "export", "--operator", "--operator-settings", str(settings), "--out", str(out))
    local.kubectl("apply", "--server-side", "-f", str(CRDS / "pulumi.com_stacks.yaml"))
    try:
        established(local, "stacks.pulumi.com")
        local.kubectl("create", "namespace", "gpu-nodes-fleet")
        result = local.kubectl("apply", "--dry-run=server", "-f", str(out))
        assert result.stdout.count("stack.pulumi.com/") == len(NODES), result.stdout
        bad = out.read_text().replace("resyncFrequencySeconds: 600", "resyncFrequencySeconds: often")
        (WORK / "bad.yaml").write_text(bad)
        refused = local.kubectl("apply", "--dry-run=server", "-f", str(WORK / "bad.yaml"), check=False)
        assert refused.returncode != 0 and "resyncFrequencySeconds" in refused.stderr, refused.stderr
    finally:
        local.kubectl("delete", "namespace", "gpu-nodes-fleet", "--ignore-not-found", check=False)
        local.kubectl("delete", "-f", str(CRDS / "pulumi.com_stacks.yaml"), "--ignore-not-found", check=False)
