"""Issue 54 on the local cluster: each node proven as NVIDIA proves one before its gate lifts, and a node that fails
an item gated and named in the tool's own words while the healthy nodes open.

The fake machines answer `dcgmi diag`, `all_reduce_perf` and the exporter's page from recorded runs, and
`tools/fakehost/break.sh` fails each (tools/fakehost/README.md); a pod of the access check that sees a GPU is a kwok
Stage of this module's, as a runtime that leaks devices would end it. A new Job deadline renames every Job, so one
`pulumi up` proves every node again.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from tests.e2e.conftest import GROUP, NODES, ROOT
from tests.e2e.gates import assert_only_gated
from tests.e2e.stack_file import STACK_FILE, edit_group

pytestmark = pytest.mark.cluster

CTRF_SCHEMA = ROOT / "tests/cli/fixtures/ctrf.schema.json"
# What the no-device check prints in a container given no GPU that sees one (gpu_nodes/manifests/verification.py).
SEES_A_GPU = "this container asked for no GPU and sees /dev/nvidia0 /dev/nvidiactl"


def new_jobs(timeout: int) -> str:
    """Another Job deadline (`verification.timeoutSeconds`, each Job's activeDeadlineSeconds): every Job of every
    node gets a new name, and every node is proven again. Returns the old file."""
    return edit_group(lambda group: group.setdefault("verification", {}).update(timeoutSeconds=timeout))


def access_failure_stage(node: str) -> str:
    """A kwok Stage: the `plain` container of the access check's pod on `node` exits 1 with the check's own words, as
    on a machine whose runtime hands a pod that asked for no GPU the device nodes. It outweighs kwok's pod-complete for
    those pods only."""
    return f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: access-fails-on-{node}
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.spec.nodeName'
      operator: 'In'
      values: ['{node}']
    - key: '.metadata.labels["app.kubernetes.io/component"]'
      operator: 'In'
      values: ['access']
  weight: 10000
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 1
            reason: Error
            message: {json.dumps(SEES_A_GPU)}
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Failed
"""


def test_every_node_is_proven_by_each_item_and_its_figures_are_in_the_report(deployed):
    report = deployed.outputs()["nodeGroups"][GROUP]
    for name in NODES:
        node = report[name]
        items = ("secureAccess", "diagnosticsPassed", "bandwidthMet", "metricsExported")
        assert all(node["checklist"][item] == "pass" for item in items), f"{name}: {node['checklist']}"
        measured = node["measured"]
        assert measured["diagnostics"]["level"] == 1 and measured["diagnostics"]["tests"] == {"software": "Pass"}, (
            f"{name}: {measured['diagnostics']}"
        )
        bandwidth = measured["busBandwidth"]
        assert bandwidth["gbps"] >= bandwidth["floorGbps"] == 200, f"{name}: {bandwidth}"
        assert measured["metrics"]["gpus"] == 4 and measured["metrics"]["missing"] == [], f"{name}: {measured['metrics']}"


def test_the_report_as_ctrf_validates_against_ctrfs_schema(deployed, tmp_path: Path):
    """`gpu-nodes report` on the stack's output, as docs/fleet.md shows for one stack."""
    output = deployed.pulumi("stack", "output", "nodeGroups", "--json").stdout
    gpu_nodes = str(ROOT / ".venv/bin/gpu-nodes")
    result = subprocess.run(
        [gpu_nodes, "report", "--format", "ctrf", "--stack", "e2e"], input=output, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads(CTRF_SCHEMA.read_text()))
    names = {test["name"] for test in document["results"]["tests"]}
    assert f"e2e/{GROUP}/gpu-node-1: bandwidthMet" in names, sorted(names)
    assert document["results"]["summary"]["failed"] == 0, document["results"]["summary"]


def test_a_failed_dcgm_test_and_a_bandwidth_under_the_floor_gate_their_nodes_by_name(deployed):
    """gpu-node-1's GPUs run without persistence mode (DCGM's level 1 fails them); gpu-node-2's NVLink is gone (the
    recorded P2P-disabled run, 5.2 GB/s); gpu-node-3 is healthy and opens."""
    deployed.run("tools/fakehost/break.sh", "gpu-node-1", "persistence-mode-off")
    deployed.run("tools/fakehost/break.sh", "gpu-node-2", "p2p-disabled")
    old = new_jobs(61)
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed with two broken machines", result)
        assert "- diagnosticsPassed: DCGM diagnostics level 1 failed: software, GPU 0: Persistence Mode:" in output, (
            deployed.explain("gpu-node-1's failure is not in DCGM's words", result)
        )
        assert "(DCGM error 29)" in output, deployed.explain("DCGM's error number is not named", result)
        assert "- bandwidthMet: all_reduce_perf bus bandwidth 5.2 GB/s at 4 GiB, below the floor 200 GB/s" in output, (
            deployed.explain("gpu-node-2's bandwidth is not named against its floor", result)
        )
        assert_only_gated(deployed, "gpu-node-1", "gpu-node-2")
    finally:
        for node in ("gpu-node-1", "gpu-node-2"):
            deployed.run("tools/fakehost/break.sh", node, "healthy")
        STACK_FILE.write_text(old)
    # --refresh: the failed reports' Jobs were deleted, so that they run again.
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)


def test_stopped_metrics_and_a_pod_that_sees_a_gpu_it_did_not_ask_for_gate_their_nodes_by_name(deployed):
    """gpu-node-3's exporter stops exporting its GPUs; gpu-node-1's runtime hands the access check's pod a GPU it
    did not ask for; gpu-node-2 is healthy and opens."""
    stage = access_failure_stage("gpu-node-1")
    deployed.run("kubectl", "apply", "-f", "-", stdin=stage)
    deployed.run("tools/fakehost/break.sh", "gpu-node-3", "metrics-stopped")
    old = new_jobs(62)
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed with two broken machines", result)
        assert "- metricsExported: dcgm-exporter pod " in output, deployed.explain("gpu-node-3's metrics are not named", result)
        assert "the exporter lists 0 GPUs, the node offers 4" in output, deployed.explain(
            "gpu-node-3's missing GPUs are not said", result
        )
        assert f"- secureAccess: verification Job gpu-verification/gpu-verify-{GROUP}-gpu-node-1-access-" in output, (
            deployed.explain("gpu-node-1's access check is not named", result)
        )
        assert SEES_A_GPU in output, deployed.explain("the access check's own words are not given", result)
        assert_only_gated(deployed, "gpu-node-1", "gpu-node-3")
    finally:
        deployed.run("kubectl", "delete", "-f", "-", "--ignore-not-found", stdin=stage)
        deployed.run("tools/fakehost/break.sh", "gpu-node-3", "healthy")
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)
