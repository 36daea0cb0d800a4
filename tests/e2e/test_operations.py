"""Day two with the real engine: drift, concurrent writers, upgrades, host keys, destroy, failures.

The tests run in file order, as one operator's story on the stack `e2e` after
`test_deploy.py`'s `pulumi up`; each leaves the stack deployed and healthy for the next,
except where it says otherwise.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
import yaml

from gpu_nodes.kube.client import api_client
from gpu_nodes.kube.node_taints import KubernetesNodeTaintApi, apply_taints
from gpu_nodes.vocabulary import ROUND_ANNOTATION
from tests.e2e.conftest import (
    FOREIGN_LABEL,
    FOREIGN_TAINT,
    GATE,
    GROUP,
    NODES,
    OUR_TAINT,
    PREFIX,
    LocalEnv,
    failed_resources,
    taints_of,
)
from tests.e2e.gates import assert_only_gated, gated
from tests.e2e.stack_file import STACK_FILE, edit_group, set_stack_config
from tests.sshd import fakehost

pytestmark = pytest.mark.cluster

UNHEALTHY_GPUS = "gpu-nodes.dev/simulated-unhealthy-gpus"
NOT_READY_STAGE = "node-not-ready.stage.kwok.x-k8s.io"
OTHER_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBY0rNVq6tHWyifzOC2aagqArtyuKGZ2Sz6Bee6zhybO"


def foreign_state_intact(local, name: str = "gpu-node-1") -> None:
    node = local.node(name)
    assert FOREIGN_TAINT in taints_of(node), local.explain(f"{name} lost the foreign taint: {taints_of(node)}")
    key, value = FOREIGN_LABEL
    assert node["metadata"]["labels"].get(key) == value, local.explain(f"{name} lost the foreign label {key}")


def test_concurrent_taint_writers_lose_nothing(deployed):
    """Another writer changes the taints between our read and our write: we retry, both survive."""
    api = KubernetesNodeTaintApi(api_client(deployed.env["KUBECONFIG"], None))
    ours = {"key": "gpu-nodes.test/concurrent", "value": "ours", "effect": "NoSchedule"}
    interleaved = []

    class RacingApi:
        def read(self, node):
            state = api.read(node)
            if not interleaved:  # once: kubectl taint lands after our read, before our write
                deployed.kubectl("taint", "node", node, "example.com/other=writer:NoSchedule")
                interleaved.append(state.resource_version)
            return state

        def write(self, node, resource_version, taints):
            api.write(node, resource_version, taints)

    try:
        apply_taints(RacingApi(), "gpu-node-2", [ours], previous=[])
        found = taints_of(deployed.node("gpu-node-2"))
        assert ours in found, deployed.explain(f"our taint is missing: {found}")
        assert {"key": "example.com/other", "value": "writer", "effect": "NoSchedule"} in found, f"theirs was lost: {found}"
        assert OUR_TAINT in found, f"the stack's taint was lost: {found}"
    finally:
        apply_taints(api, "gpu-node-2", [], previous=[ours])
        deployed.kubectl("taint", "node", "gpu-node-2", "example.com/other-", check=False)


def test_drift_is_detected_and_repaired(deployed):
    deployed.kubectl("label", "node", "gpu-node-2", "accelerator-")
    deployed.kubectl("taint", "node", "gpu-node-2", "nvidia.com/gpu=present:NoSchedule-")

    drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
    assert drift.returncode != 0, deployed.explain("refresh --expect-no-changes did not notice the drift", drift)
    for resource in (f"{PREFIX}-gpu-node-2-labels", f"{PREFIX}-gpu-node-2-taints"):
        assert resource in drift.stdout, deployed.explain(f"the drift report does not name {resource}", drift)

    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    node = deployed.node("gpu-node-2")
    assert node["metadata"]["labels"].get("accelerator") == "nvidia", deployed.explain("label not restored")
    assert OUR_TAINT in taints_of(node), deployed.explain("taint not restored")
    foreign_state_intact(deployed)
    clean = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert clean.returncode == 0, deployed.explain("drift remains after pulumi up --refresh", clean)


def test_a_code_change_shows_in_preview(deployed):
    old = edit_group(lambda group: group.setdefault("labels", {"accelerator": "nvidia"}).update({"team": "ml"}))
    try:
        preview = deployed.pulumi("preview", "--expect-no-changes", "--diff", check=False)
        assert preview.returncode != 0, deployed.explain("a new label did not show as a change", preview)
        assert "team" in preview.stdout, deployed.explain("the preview does not show the new label", preview)
    finally:
        STACK_FILE.write_text(old)
    assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0


def wait_for_allocatable(local, node: str, gpus: str, timeout: float = 60) -> None:
    """Until tools/cluster/gpu-registrar.py (about once a second) reports `gpus` on the node."""
    deadline = time.monotonic() + timeout
    while True:
        allocatable = local.node(node)["status"].get("allocatable", {}).get("nvidia.com/gpu")
        if allocatable == gpus:
            return
        assert time.monotonic() < deadline, local.explain(f"{node} allocatable nvidia.com/gpu {allocatable}, waited for {gpus}")
        time.sleep(1)


def jobs_of(local, node: str) -> dict[str, dict]:
    items = local.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]
    return {j["metadata"]["name"]: j for j in items if f"-{node}-" in j["metadata"]["name"]}


def test_a_lost_gpu_is_drift_gates_the_node_again_and_it_opens_once_repaired(deployed):
    """Issue 12: gpu-node-2 loses one of its 4 GPUs after `up` (the plugin marks it unhealthy, as
    after an XID error; the registrar plays that from an annotation). Refresh shows it, naming
    the node; `pulumi up --refresh` gates it again, runs its Jobs again and fails naming the node,
    what it offers and what the group declares; the healthy nodes stay open."""
    before = jobs_of(deployed, "gpu-node-2")
    deployed.kubectl("annotate", "node", "gpu-node-2", f"{UNHEALTHY_GPUS}=1", "--overwrite")
    try:
        wait_for_allocatable(deployed, "gpu-node-2", "3")
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert drift.returncode != 0, deployed.explain("refresh did not notice the lost GPU", drift)
        assert f"{PREFIX}-gpu-node-2-taints" in drift.stdout, deployed.explain("the refresh does not name gpu-node-2", drift)
        assert "is 3, expected 4" in drift.stdout, deployed.explain("the refresh does not say what changed", drift)
        assert "gpu-node-1-taints" not in drift.stdout, deployed.explain("the refresh names a healthy node", drift)

        result = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed with a GPU missing on gpu-node-2", result)
        expected = r'node gpu-node-2: status\.allocatable\["nvidia\.com/gpu"\] is 3, expected 4'
        assert re.search(expected, output), deployed.explain("the failure does not name gpu-node-2, 3 and 4", result)
        assert "node gpu-node-2 stays gated" in output, deployed.explain("no word that gpu-node-2 stays gated", result)
        assert not re.search(r"node gpu-node-[13] stays gated", output), deployed.explain("healthy nodes failed", result)
        assert_only_gated(deployed, "gpu-node-2")
        # The old Jobs go once the run succeeds (Pulumi deletes a replaced object last).
        rerun = {name: job for name, job in jobs_of(deployed, "gpu-node-2").items() if name not in before}
        rounds = [job["spec"]["template"]["metadata"]["annotations"].get(ROUND_ANNOTATION) for job in rerun.values()]
        # Its workload's two and the access check ran again; DCGM's and NCCL's, which hold all 4 GPUs, could not be
        # scheduled on 3 and were deleted unfinished by the readiness check, to run again once the node is whole.
        kinds = sorted(name.rsplit("-", 2)[-2] for name in rerun)
        assert kinds == ["1gpu", "2gpu", "access"], f"gpu-node-2's Jobs in round 2: {sorted(before)}, new {sorted(rerun)}"
        assert rounds == ["2"] * 3, f"gpu-node-2's Jobs did not run again in round 2: {sorted(before)}, new {rerun}"
    finally:
        deployed.kubectl("annotate", "node", "gpu-node-2", f"{UNHEALTHY_GPUS}-", check=False)

    wait_for_allocatable(deployed, "gpu-node-2", "4")
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)
    clean = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert clean.returncode == 0, deployed.explain("drift remains after the GPU came back", clean)


XID_GPUS = "gpu-nodes.dev/simulated-xid-gpus"
# The group's device plugin pods, not its dcgm-exporter's, which share their namespace.
PLUGIN_LABEL = "app.kubernetes.io/name=nvidia-device-plugin"


def plugin_pod_on(local, node: str) -> str:
    pods = local.kubectl_json(
        "get", "pods", "-n", "nvidia-device-plugin", "-l", PLUGIN_LABEL, "--field-selector", f"spec.nodeName={node}"
    )["items"]
    return " ".join(sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")))


def test_a_gpu_that_needs_a_reset_keeps_its_node_gated_until_a_fresh_preflight_finds_it_healthy(deployed):
    """Issues 20 and 25: an XID marks one of gpu-node-2's GPUs unhealthy, and the plugin keeps it
    out until its pod restarts (the registrar plays that). A new pod would advertise it healthy
    unchecked (k8s-device-plugin issue 111), so `pulumi up --refresh` gates the node and restarts
    nothing, naming the preflight to run. The re-check finds the GPU needing a reset (the fake
    machine's reset-required mode) and the node stays gated. Once the GPU is reset, the next
    re-check passes, the readiness check restarts the plugin pod, and the node opens."""
    before = plugin_pod_on(deployed, "gpu-node-2")
    old = STACK_FILE.read_text()
    deployed.kubectl("annotate", "node", "gpu-node-2", f"{XID_GPUS}=1", "--overwrite")
    deployed.run("tools/fakehost/break.sh", "gpu-node-2", "reset-required")
    try:
        wait_for_allocatable(deployed, "gpu-node-2", "3")
        refused = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        output = refused.stdout + refused.stderr
        assert refused.returncode != 0, deployed.explain("gpu-node-2 opened with a GPU missing", refused)
        assert "node gpu-node-2 stays gated" in output, deployed.explain("no word that gpu-node-2 stays gated", refused)
        assert "run a fresh preflight of the machine" in output, deployed.explain("no word on the fresh preflight", refused)
        assert plugin_pod_on(deployed, "gpu-node-2") == before, deployed.explain("the plugin pod was restarted unchecked")
        assert_only_gated(deployed, "gpu-node-2")

        edit_group(lambda group: group["preflight"].update(recheck="e2e-gpu-reset-1"))
        faulty = deployed.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=900)
        output = faulty.stdout + faulty.stderr
        assert faulty.returncode != 0, deployed.explain("the re-check passed a GPU that needs a reset", faulty)
        assert f"{PREFIX}-gpu-node-2-preflight" in output, deployed.explain("the failure does not name gpu-node-2", faulty)
        assert "GPU 00000000:08:00.0: GPU Reset Status > Reset Required: Yes" in output, deployed.explain(
            "the failure does not name the GPU and the field", faulty
        )
        assert "nvidia-smi -r -i 00000000:08:00.0" in output, deployed.explain("no word on how to reset it", faulty)
        assert plugin_pod_on(deployed, "gpu-node-2") == before, deployed.explain("the plugin pod was restarted")
        assert_only_gated(deployed, "gpu-node-2")

        deployed.run("tools/fakehost/break.sh", "gpu-node-2", "healthy")  # the operator reset the GPU
        edit_group(lambda group: group["preflight"].update(recheck="e2e-gpu-reset-2"))
        # --refresh: the failed run deleted gpu-node-2's Jobs so that they run again.
        healed = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        assert healed.returncode == 0, deployed.explain("the node did not open after a healthy re-check", healed)
        after = plugin_pod_on(deployed, "gpu-node-2")
        assert after and after != before, deployed.explain(f"the plugin pod was not restarted: {before} -> {after}")
        assert deployed.node("gpu-node-2")["status"]["allocatable"]["nvidia.com/gpu"] == "4"
        report = deployed.outputs()["nodeGroups"][GROUP]
        recovery = report["gpu-node-2"]["recovery"] or ""
        assert recovery.startswith(f"restarted device plugin pod {before} after preflight "), report["gpu-node-2"]
        assert recovery.endswith("found every GPU healthy: its GPUs came back"), report["gpu-node-2"]
        assert report["gpu-node-1"]["recovery"] is None, report["gpu-node-1"]
        assert_only_gated(deployed)
    finally:
        deployed.run("tools/fakehost/break.sh", "gpu-node-2", "healthy")
        deployed.kubectl("annotate", "node", "gpu-node-2", f"{XID_GPUS}-", check=False)
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)
    clean = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert clean.returncode == 0, deployed.explain("drift remains after the GPU came back", clean)


def test_a_node_gone_not_ready_is_drift_and_is_gated_until_it_is_back(deployed):
    """Issue 12: gpu-node-3 goes NotReady after `up` (kwok's node-not-ready stage)."""
    deployed.kubectl("label", "node", "gpu-node-3", f"{NOT_READY_STAGE}=true", "--overwrite")
    try:
        wait_for_condition(deployed, "gpu-node-3", "Ready", "False")
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert drift.returncode != 0, deployed.explain("refresh did not notice gpu-node-3 NotReady", drift)
        assert f"{PREFIX}-gpu-node-3-taints" in drift.stdout and "NotReady" in drift.stdout, deployed.explain(
            "the refresh does not name gpu-node-3 and NotReady", drift
        )
        result = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed with gpu-node-3 NotReady", result)
        assert "node gpu-node-3 stays gated" in output and "NotReady" in output, deployed.explain("no NotReady failure", result)
        assert_only_gated(deployed, "gpu-node-3")
    finally:
        deployed.kubectl("label", "node", "gpu-node-3", f"{NOT_READY_STAGE}-", check=False)

    wait_for_condition(deployed, "gpu-node-3", "Ready", "True")
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)
    clean = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert clean.returncode == 0, deployed.explain("drift remains after gpu-node-3 came back", clean)


def pod_ready(local, name: str) -> str | None:
    pod = local.kubectl_json("get", "pod", "-n", "nvidia-device-plugin", name)
    return next((c["status"] for c in pod["status"].get("conditions", []) if c["type"] == "Ready"), None)


def test_a_plugin_pod_marked_not_ready_in_a_node_blip_is_ready_again_as_a_kubelet_makes_it(deployed):
    """The cluster plays the kubelet's status sync (tools/cluster/stages/pod-ready-again.yaml): a plugin pod whose
    Ready the node lifecycle controller set to False, as it does to the pods of a node that blips NotReady, is Ready
    again within the sync, so the DaemonSet counts it and a refresh finds the plugin healthy. Without it, one blip
    on a loaded machine kept a pod not Ready for good and the next `up` waited out the DaemonSet's 10 minutes."""
    pod = plugin_pod_on(deployed, "gpu-node-2")
    # What MarkPodsNotReady writes (kubernetes pkg/controller/util/node/controller_utils.go): Ready False, nothing else.
    not_ready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    deployed.kubectl("patch", "pod", "-n", "nvidia-device-plugin", pod, "--subresource=status", "-p", json.dumps(not_ready))
    assert pod_ready(deployed, pod) == "False", deployed.explain(f"{pod} was not marked not Ready")
    deployed.wait_until(
        f"{pod} on gpu-node-2 to be Ready after the kubelet's sync", lambda: pod_ready(deployed, pod) == "True", 60
    )
    clean = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
    assert clean.returncode == 0, deployed.explain("the refresh finds the plugin's DaemonSet unhealthy", clean)


# What NVIDIA's MIG manager writes on a node while it repartitions its GPUs, and after (mig-parted
# pkg/mig/reconfigure/reconfigure.go: shutdownKubernetesGPUClients, then restartKubernetesGPUClients and setState).
MIG_PAUSED = {
    "nvidia.com/mig.config": "all-1g.10gb",
    "nvidia.com/mig.config.state": "pending",
    "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
}
MIG_DONE = {**MIG_PAUSED, "nvidia.com/mig.config.state": "success", "nvidia.com/gpu.deploy.device-plugin": "true"}


def wait_for_plugin(local, node: str, present: bool, timeout: float = 90) -> None:
    """Until the group's plugin pod is on the node (or gone from it), as the DaemonSet controller decides."""
    deadline = time.monotonic() + timeout
    while bool(plugin_pod_on(local, node)) != present:
        assert time.monotonic() < deadline, local.explain(f"the plugin pod is {'not ' if present else 'still '}on {node}")
        time.sleep(1)


def test_the_plugin_steps_off_a_node_the_mig_manager_pauses_and_the_node_is_proven_again(deployed):
    """Issue 48: with devicePlugin.pauseForMigManager, gpu-node-3 labelled as NVIDIA's MIG manager labels a node it
    repartitions loses the group's plugin pod, and a refresh names the MIG manager; the label back to true brings the
    pod back, and `pulumi up --refresh` gates the node again and proves it anew (its Jobs run in a new round) before
    the gate lifts. The other nodes keep their plugin and stay open."""
    old = edit_group(lambda group: group.setdefault("devicePlugin", {}).update(pauseForMigManager=True))
    labels = [f"{key}={value}" for key, value in MIG_PAUSED.items()]
    try:
        deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
        before = jobs_of(deployed, "gpu-node-3")
        deployed.kubectl("label", "node", "gpu-node-3", *labels, "--overwrite")
        wait_for_plugin(deployed, "gpu-node-3", present=False)
        assert plugin_pod_on(deployed, "gpu-node-1"), deployed.explain("the plugin left a node the MIG manager did not pause")
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert drift.returncode != 0, deployed.explain("refresh did not notice the MIG manager at work", drift)
        assert f"{PREFIX}-gpu-node-3-taints" in drift.stdout, deployed.explain("the refresh does not name gpu-node-3", drift)
        assert "NVIDIA's MIG manager is reconfiguring its GPUs" in drift.stdout, deployed.explain("no named reason", drift)
        assert "gpu-node-1-taints" not in drift.stdout, deployed.explain("the refresh names a node left alone", drift)

        deployed.kubectl("label", "node", "gpu-node-3", *(f"{k}={v}" for k, v in MIG_DONE.items()), "--overwrite")
        wait_for_plugin(deployed, "gpu-node-3", present=True)
        wait_for_allocatable(deployed, "gpu-node-3", "4")
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert "NVIDIA's MIG manager changed its GPUs since it was gated" in drift.stdout, deployed.explain(
            "a node reconfigured since it was gated is not drift once healthy again", drift
        )
        deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
        rerun = {name: job for name, job in jobs_of(deployed, "gpu-node-3").items() if name not in before}
        rounds = {job["spec"]["template"]["metadata"]["annotations"].get(ROUND_ANNOTATION) for job in rerun.values()}
        assert rerun and len(rounds) == 1 and None not in rounds, f"gpu-node-3 was not proven again: {sorted(before)} -> {rerun}"
        assert all(job["status"].get("succeeded") == 1 for job in rerun.values()), deployed.explain("gpu-node-3's new Jobs")
        assert_only_gated(deployed)
        clean = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", check=False)
        assert clean.returncode == 0, deployed.explain("drift remains after the node was proven again", clean)
    finally:
        deployed.kubectl("label", "node", "gpu-node-3", *(f"{key}-" for key in MIG_PAUSED), check=False)
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)


def wait_for_condition(local, node: str, kind: str, status: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        conditions = {c["type"]: c["status"] for c in local.node(node)["status"].get("conditions", [])}
        if conditions.get(kind) == status:
            return
        assert time.monotonic() < deadline, local.explain(f"{node} {kind} is {conditions.get(kind)}, waited for {status}")
        time.sleep(1)


def steps_of(preview: subprocess.CompletedProcess) -> dict[str, str]:
    """Resource name -> planned operation, from `pulumi preview --json`."""
    steps = json.loads(preview.stdout).get("steps", [])
    return {step["urn"].split("::")[-1]: step["op"] for step in steps}


def test_upgrade_in_place_rerolls_the_plugin_and_reruns_only_the_jobs(deployed):
    old_jobs = {
        j["metadata"]["name"]: j["metadata"]["uid"]
        for j in deployed.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]
    }
    edit_group(lambda group: group.setdefault("devicePlugin", {}).update(image="nvcr.io/nvidia/k8s-device-plugin:v0.19.0"))
    plan = steps_of(deployed.pulumi("preview", "--json"))
    changed = {name: op for name, op in plan.items() if op != "same"}
    expected = {f"{PREFIX}-device-plugin": "update"}
    # Each Job is replaced (its template changed); each node's readiness check waits again for
    # the new Jobs (and checks the GPU count the new plugin registers).
    expected |= {name: "replace" for name in plan if name.startswith(f"{PREFIX}-verify-")}
    expected |= {f"{PREFIX}-{node}-readiness": "update" for node in NODES}
    assert changed == expected, f"planned {changed}, expected only {expected}"

    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    daemonset = deployed.kubectl_json("get", "daemonset", "-n", "nvidia-device-plugin", f"nvidia-device-plugin-{GROUP}")
    image = daemonset["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith(":v0.19.0"), deployed.explain(f"DaemonSet still runs {image}")
    # The replaced Jobs are deleted last, in the foreground (their pods first), and not waited for (skipAwait).
    deployed.wait_until(
        "the replaced Jobs to be gone",
        lambda: not {j["metadata"]["name"] for j in deployed.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]}
        & set(old_jobs),
        120,
    )
    new_jobs = {j["metadata"]["name"]: j for j in deployed.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]}
    assert len(new_jobs) == len(old_jobs) and not set(new_jobs) & set(old_jobs), f"old {sorted(old_jobs)}, now {sorted(new_jobs)}"
    for name, job in new_jobs.items():
        assert job["status"].get("succeeded") == 1, deployed.explain(f"{name}: {job['status']}")


# What NVIDIA's vectorAdd prints when cudaMalloc fails with error 802, as on an NVSwitch machine
# whose fabric manager is down while nvidia-smi still answers.
CUDA_802 = "Failed to allocate device vector A (error code system not yet initialized)!"


def cuda_failure_stage(node: str) -> str:
    """A kwok Stage: the `cuda` container of verification pods on `node` exits 1 with CUDA's words.

    It outweighs kwok's pod-complete for those pods only; the init container keeps the success
    pod-ready gave it, as nvidia-smi would on such a machine."""
    return f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: cuda-fails-on-{node}
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
      values: ['verification']
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
            message: {json.dumps(CUDA_802)}
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Failed
"""


def test_a_cuda_failure_is_named_in_pulumi_ups_message(deployed):
    """Issue 19: on gpu-node-2 CUDA cannot start while nvidia-smi answers. A new CUDA image re-runs
    every node's verification; gpu-node-2's vectorAdd fails, and `pulumi up` fails naming the node,
    the container and CUDA's own words, and gates it again. The other nodes stay open."""
    stage = cuda_failure_stage("gpu-node-2")
    deployed.run("kubectl", "apply", "-f", "-", stdin=stage)
    # The same CUDA 12.5 (so preflight's minimum stays), another base image: new Jobs everywhere.
    old = edit_group(
        lambda group: group.setdefault("verification", {}).update(
            cudaImage="nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubi8"
        )
    )
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", check=False, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed while CUDA fails on gpu-node-2", result)
        # It was open: it takes no new GPU work until it passes again.
        assert "node gpu-node-2 is gated again" in output, deployed.explain("the failure does not name gpu-node-2", result)
        assert re.search(r"container cuda exited 1 \(Error\) " + re.escape(CUDA_802), output), deployed.explain(
            "the failure does not give CUDA's own words", result
        )
        assert not re.search(r"node gpu-node-[13] (stays|is) gated", output), deployed.explain("healthy nodes failed", result)
        assert_only_gated(deployed, "gpu-node-2")
    finally:
        deployed.run("kubectl", "delete", "-f", "-", "--ignore-not-found", stdin=stage)
        STACK_FILE.write_text(old)

    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)


TENANT_POD = """
apiVersion: v1
kind: Pod
metadata: {name: tenant-training, namespace: default}
spec:
  nodeSelector: {kubernetes.io/hostname: gpu-node-3}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  restartPolicy: Never
  containers:
  - name: train
    image: nvcr.io/nvidia/cuda:13.0.3-base-ubuntu24.04
    resources: {limits: {nvidia.com/gpu: "4"}}
"""


def test_a_plugin_upgrade_on_a_busy_node_completes_and_defers_its_workload_check(deployed):
    """Issue 20: a tenant's pod holds all four GPUs of gpu-node-3 when the plugin image changes.
    The new Jobs cannot schedule there (and must not preempt): `pulumi up` completes, gpu-node-3
    stays open with its plugin and GPU count proven and its workload check reported deferred;
    `pulumi up --refresh` once the GPUs are free proves it in full."""
    deployed.run("kubectl", "apply", "-f", "-", stdin=TENANT_POD)
    old = STACK_FILE.read_text()
    try:
        wait_for_phase(deployed, "default", "tenant-training", "Running")
        edit_group(lambda group: group.setdefault("devicePlugin", {}).update(image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2"))
        result = deployed.pulumi("up", "--yes", "--skip-preview", check=False, timeout=1200)
        assert result.returncode == 0, deployed.explain("the upgrade failed on a busy node", result)
        report = deployed.outputs()["nodeGroups"][GROUP]
        assert report["gpu-node-3"]["checklist"]["workloadSucceeded"] == "deferred", report["gpu-node-3"]
        assert report["gpu-node-3"]["checklist"]["gpusRegistered"] == "pass", report["gpu-node-3"]
        for name in ("gpu-node-1", "gpu-node-2"):
            assert report[name]["checklist"]["workloadSucceeded"] == "pass", report[name]
        assert_only_gated(deployed)
        phase = deployed.kubectl_json("get", "pod", "-n", "default", "tenant-training")["status"]["phase"]
        assert phase == "Running", f"the tenant's pod was disturbed: {phase}"
    finally:
        deployed.kubectl("delete", "pod", "-n", "default", "tenant-training", "--wait=true", check=False)
        STACK_FILE.write_text(old)
    # The plugin rolls back on every node: each node's GPUs leave allocatable while its plugin
    # restarts, and Jobs found unschedulable then are waited for, not deferred (no one holds the GPUs).
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    report = deployed.outputs()["nodeGroups"][GROUP]
    for name in NODES:
        assert report[name]["checklist"]["workloadSucceeded"] == "pass", f"{name}: {report[name]}"
    assert_only_gated(deployed)


def wait_for_phase(local, namespace: str, name: str, phase: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        found = local.kubectl_json("get", "pod", "-n", namespace, name).get("status", {}).get("phase")
        if found == phase:
            return
        assert time.monotonic() < deadline, local.explain(f"pod {namespace}/{name} is {found}, waited for {phase}")
        time.sleep(1)


def set_host_key(key: str):
    def change(group):
        group["nodes"][1]["hostKey"] = key

    return change


def test_a_host_key_mismatch_is_refused(deployed):
    old = edit_group(set_host_key(OTHER_HOST_KEY))
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", check=False, timeout=600)
        assert result.returncode != 0, deployed.explain("a wrong host key was accepted", result)
        output = result.stdout + result.stderr
        assert f"{PREFIX}-gpu-node-2-preflight" in output, deployed.explain("the failure does not name the node", result)
        assert "host key" in output.lower(), deployed.explain("the failure does not say the host key is wrong", result)
    finally:
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)


def test_the_machines_other_host_key_types(deployed):
    """The fake machines serve ed25519, ecdsa and rsa keys. A pinned ecdsa key is the one used;
    an rsa key is refused before anything runs, since pulumi-command would verify it with the
    SHA-1 ssh-rsa algorithm, which the machine's OpenSSH no longer offers."""
    nodes = yaml.safe_load(STACK_FILE.read_text())["config"]["gpu-nodes:nodeGroups"][0]["nodes"]
    machine = next(n for n in nodes if n["name"] == "gpu-node-2")
    old = edit_group(set_host_key(fakehost.scan_host_key(machine["sshHost"], machine["sshPort"], "ecdsa")))
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", check=False, timeout=600)
        assert result.returncode == 0, deployed.explain("pinning gpu-node-2's ecdsa key failed", result)
        edit_group(set_host_key(fakehost.scan_host_key(machine["sshHost"], machine["sshPort"], "rsa")))
        refused = deployed.pulumi("preview", check=False)
        output = refused.stdout + refused.stderr
        assert refused.returncode != 0, deployed.explain("an rsa host key was accepted", refused)
        assert "nodes[1].hostKey: got 'ssh-rsa'" in output and "Traceback" not in output, deployed.explain(
            "the rsa key is not refused with a clear config error", refused
        )
    finally:
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)


def preflight_urn(local, node: str) -> str:
    resources = json.loads(local.pulumi("stack", "export").stdout)["deployment"]["resources"]
    return next(r["urn"] for r in resources if r["urn"].endswith(f"::{PREFIX}-{node}-preflight"))


def test_preflight_runs_again_on_demand(deployed):
    """gpu-node-3's machine loses its driver after `up`: an ordinary run does not look again,
    an operator's re-check of that node or of the whole group finds it."""
    deployed.run("tools/fakehost/break.sh", "gpu-node-3", "driver")
    old = STACK_FILE.read_text()
    try:
        quiet = deployed.pulumi("preview", "--expect-no-changes", check=False)
        assert quiet.returncode == 0, deployed.explain("an ordinary preview wants to re-run preflight", quiet)

        one = deployed.pulumi(
            "up", "--yes", "--skip-preview", "--target-replace", preflight_urn(deployed, "gpu-node-3"), check=False
        )
        assert one.returncode != 0, deployed.explain("re-checking gpu-node-3 missed its lost driver", one)
        assert f"{PREFIX}-gpu-node-3-preflight" in one.stdout + one.stderr, deployed.explain(
            "the failure does not name gpu-node-3", one
        )

        edit_group(lambda group: group["preflight"].update(recheck="e2e-round-1"))
        plan = steps_of(deployed.pulumi("preview", "--json"))
        changed = {name: op for name, op in plan.items() if op != "same"}
        wanted = {f"{PREFIX}-{node}-{part}": "replace" for node in NODES for part in ("preflight", "preflight-script")}
        # Until the machines answer, their GPU facts may change: the labels and the readiness
        # checks that carry them show as updates (an unchanged answer leaves them as they are).
        wanted |= {f"{PREFIX}-{node}-{part}": "update" for node in NODES for part in ("labels", "readiness")}
        assert changed == wanted, f"planned {changed}"
        every = deployed.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=600)
        output = every.stdout + every.stderr
        assert every.returncode != 0, deployed.explain("re-checking the group missed gpu-node-3", every)
        assert f"{PREFIX}-gpu-node-3-preflight" in output and "driver" in output, deployed.explain("gpu-node-3 not named", every)
        for healthy in ("gpu-node-1", "gpu-node-2"):
            assert f"{PREFIX}-{healthy}-preflight" not in failed_resources(output), deployed.explain(f"{healthy} failed", every)
    finally:
        deployed.run("tools/fakehost/break.sh", "gpu-node-3", "healthy")
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0


def test_a_machine_with_other_gpus_is_named_and_gated_again(deployed):
    """Issue 19: gpu-node-3's machine now holds H100 PCIe cards, the others A100s. Preflight alone
    passes it (no gpuModel declared); its readiness check compares it with the group and fails
    naming both kinds; the other nodes stay open. With its GPUs back, a re-check opens it."""
    deployed.run("tools/fakehost/break.sh", "gpu-node-3", "other-model")
    old = STACK_FILE.read_text()
    try:
        edit_group(lambda group: group["preflight"].update(recheck="e2e-other-gpus"))
        result = deployed.pulumi("up", "--yes", "--skip-preview", check=False, timeout=900)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed with other GPUs on gpu-node-3", result)
        expected = (
            "gpuFactsAgree: node gpu-node-3 has 4 x NVIDIA H100 PCIe (81559 MiB), unlike 2 of the group's 3 checked nodes "
            "(gpu-node-1, gpu-node-2), which have 4 x NVIDIA A100-SXM4-80GB (81920 MiB)"
        )
        assert expected in output, deployed.explain("the failure does not name gpu-node-3 and both kinds", result)
        labels = deployed.node("gpu-node-3")["metadata"]["labels"]
        assert labels.get("nvidia.com/gpu.product") == "NVIDIA-H100-PCIe", deployed.explain(f"gpu-node-3: {labels}")
        assert_only_gated(deployed, "gpu-node-3")
        assert "fix the cause, then run `pulumi up --refresh`" in output, deployed.explain("no word on how to reopen it", result)
    finally:
        deployed.run("tools/fakehost/break.sh", "gpu-node-3", "healthy")
        STACK_FILE.write_text(old)
    # As the failure says: the refresh reads the gate it put back.
    deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)
    assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0


def test_a_preflight_replaced_twice_still_finds_its_script(deployed):
    """--target-replace runs the new command before the old one goes: both find the copy (nothing deletes it)."""
    for round_ in (1, 2):
        result = deployed.pulumi(
            "up", "--yes", "--skip-preview", "--target-replace", preflight_urn(deployed, "gpu-node-1"), check=False
        )
        assert result.returncode == 0, deployed.explain(f"replacing gpu-node-1's preflight failed in round {round_}", result)
    # The targeted runs left gpu-node-1's readiness check behind its machine's new preflight run
    # (`preflightRun`): the next plain run proves the node again, and then nothing is left to do.
    preview = deployed.pulumi("preview", "--json")
    steps = json.loads(preview.stdout).get("steps", [])
    changed = sorted(s["urn"].rsplit("::", 1)[1] for s in steps if s["op"] not in ("same", "read"))
    assert changed == [f"{PREFIX}-gpu-node-1-readiness"], deployed.explain(f"after the targeted runs: {changed}", preview)
    deployed.pulumi("up", "--yes", "--skip-preview")
    assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0


SSH_TYPES = ("command:remote:Command", "command:remote:CopyToRemote")
# The steps that connect: a delete or a same step does not.
CONNECTING_OPS = ("create", "create-replacement", "update")


def ssh_steps(event_log) -> list[tuple[str, str, str]]:
    """(start/end, node, resource) for each step of the run that connects to a machine, in the
    order the engine reported them (`pulumi up --event-log`)."""
    found = []
    for line in event_log.read_text().splitlines():
        event = json.loads(line)
        for kind, edge in (("resourcePreEvent", "start"), ("resOutputsEvent", "end"), ("resOpFailedEvent", "end")):
            metadata = (event.get(kind) or {}).get("metadata")
            if metadata and metadata["type"] in SSH_TYPES and metadata["op"] in CONNECTING_OPS:
                name = metadata["urn"].rsplit("::", 1)[1]
                node = next(n for n in NODES if name.startswith(f"{PREFIX}-{n}-"))
                found.append((edge, node, name))
    return found


def test_preflight_checks_at_most_max_sessions_machines_at_once(deployed, tmp_path):
    """maxSessions 1 makes one lane: a re-check of the group connects to one machine at a time,
    in the group's order, and stops the lane at gpu-node-2, whose driver is gone."""
    deployed.run("tools/fakehost/break.sh", "gpu-node-2", "driver")
    old = edit_group(lambda group: group["preflight"].update(recheck="e2e-one-lane", maxSessions=1))
    event_log = tmp_path / "events.jsonl"
    try:
        # The CLI offers --event-log only with PULUMI_DEBUG_COMMANDS.
        debug = LocalEnv({**deployed.env, "PULUMI_DEBUG_COMMANDS": "true"})
        run = debug.pulumi(
            "up", "--yes", "--skip-preview", "--continue-on-error", "--event-log", str(event_log), check=False, timeout=600
        )
        assert run.returncode != 0 and event_log.exists(), deployed.explain("the re-check missed gpu-node-2", run)
        steps = ssh_steps(event_log)
        open_now, most = 0, 0
        for edge, _node, _name in steps:
            open_now += 1 if edge == "start" else -1
            most = max(most, open_now)
        assert most == 1, f"{most} machines connected at once: {steps}"
        order = [node for edge, node, _ in steps if edge == "start"]
        assert order == ["gpu-node-1", "gpu-node-1", "gpu-node-2", "gpu-node-2"], f"connected in this order: {steps}"
        output = run.stdout + run.stderr
        assert f"{PREFIX}-gpu-node-2-preflight" in output and "driver" in output, deployed.explain("gpu-node-2 not named", run)
    finally:
        deployed.run("tools/fakehost/break.sh", "gpu-node-2", "healthy")
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0


CHART_DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nvdp-nvidia-device-plugin
  namespace: kube-system
  labels: {app.kubernetes.io/name: nvidia-device-plugin, app.kubernetes.io/instance: nvdp}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: nvidia-device-plugin, app.kubernetes.io/instance: nvdp}
  template:
    metadata:
      labels: {app.kubernetes.io/name: nvidia-device-plugin, app.kubernetes.io/instance: nvdp}
    spec:
      # Kept off every node here: only its presence matters.
      nodeSelector: {example.com/gpu-pool: chart}
      containers:
      - name: nvidia-device-plugin-ctr
        image: nvcr.io/nvidia/k8s-device-plugin:v0.17.1
"""


def test_another_plugins_daemonset_is_named_and_a_hand_over_lets_the_run_go_on(deployed):
    """Issue 20: the device plugin chart appears on the cluster after `up`. A refresh shows it as
    drift, `pulumi up --refresh` stops naming it and the setting; listed in handOver (and kept off
    our nodes) the run goes on."""
    deployed.run("kubectl", "apply", "-f", "-", stdin=CHART_DAEMONSET)
    old = STACK_FILE.read_text()
    named = "DaemonSet kube-system/nvdp-nvidia-device-plugin (image nvcr.io/nvidia/k8s-device-plugin:v0.17.1) is on the cluster"
    try:
        drift = deployed.pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
        assert drift.returncode != 0 and named in drift.stdout, deployed.explain("the refresh missed the chart", drift)
        stopped = deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", check=False, timeout=900)
        output = stopped.stdout + stopped.stderr
        assert stopped.returncode != 0 and named in output, deployed.explain("pulumi up went on beside the chart", stopped)
        assert "list 'kube-system/nvdp-nvidia-device-plugin' in gpu-nodes:handOver" in output, deployed.explain(
            "no way out", stopped
        )
        assert_only_gated(deployed)

        set_stack_config("gpu-nodes:handOver", ["kube-system/nvdp-nvidia-device-plugin"])
        deployed.pulumi("up", "--refresh", "--yes", "--skip-preview", timeout=900)
        assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0
    finally:
        deployed.run("kubectl", "delete", "-f", "-", "--ignore-not-found", stdin=CHART_DAEMONSET, check=False)
        STACK_FILE.write_text(old)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=900)
    assert deployed.pulumi("preview", "--expect-no-changes", check=False).returncode == 0


TEAM_NAMESPACE = "team-verification"


def test_a_namespace_someone_else_made_is_never_adopted_and_survives_destroy(deployed):
    """Issue 20: another team's namespace, with their ConfigMap in it, is named for the Jobs. The
    run stops naming it and leaves it untouched; listed in existingNamespaces it is used as it is;
    `pulumi destroy` takes our Jobs out of it and leaves the namespace and their ConfigMap."""
    deployed.kubectl("create", "namespace", TEAM_NAMESPACE)
    deployed.kubectl("create", "configmap", "team-notes", "-n", TEAM_NAMESPACE, "--from-literal=owner=ml-team")
    old = STACK_FILE.read_text()
    try:
        edit_group(lambda group: group.setdefault("verification", {}).update(namespace=TEAM_NAMESPACE))
        refused = deployed.pulumi("up", "--yes", "--skip-preview", check=False, timeout=900)
        output = refused.stdout + refused.stderr
        assert refused.returncode != 0, deployed.explain("pulumi up adopted someone else's namespace", refused)
        expected = f"Namespace {TEAM_NAMESPACE} exists already, created by someone else (it has no gpu-nodes labels)"
        assert expected in output and "gpu-nodes:existingNamespaces" in output, deployed.explain("the refusal", refused)
        # Issue 27: in the operator's words, not under the provider server's traceback.
        assert "Traceback" not in output, deployed.explain("the refusal came with a Python traceback", refused)
        labels = deployed.kubectl_json("get", "namespace", TEAM_NAMESPACE)["metadata"].get("labels", {})
        assert not any(key.startswith(("gpu-nodes.dev/", "pod-security.kubernetes.io/")) for key in labels), labels

        set_stack_config("gpu-nodes:existingNamespaces", [TEAM_NAMESPACE])
        deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
        jobs = deployed.kubectl_json("get", "jobs", "-n", TEAM_NAMESPACE)["items"]
        # Each node's: the workload's two, the access check, DCGM's and NCCL's (the local stack runs every proof item).
        assert len(jobs) == 5 * len(NODES) and all(j["status"].get("succeeded") == 1 for j in jobs), [
            (j["metadata"]["name"], j["status"]) for j in jobs
        ]
        assert_only_gated(deployed)

        deployed.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
        left = deployed.kubectl("get", "jobs,configmaps", "-n", TEAM_NAMESPACE, "-o", "name").stdout.split()
        assert "configmap/team-notes" in left, f"their ConfigMap is gone: {left}"
        assert not [name for name in left if name.startswith(("job", "configmap/gpu-verify-"))], f"ours left behind: {left}"
        labels = deployed.kubectl_json("get", "namespace", TEAM_NAMESPACE)["metadata"].get("labels", {})
        assert not any(key.startswith(("gpu-nodes.dev/", "pod-security.kubernetes.io/")) for key in labels), labels
    finally:
        STACK_FILE.write_text(old)
        deployed.kubectl("delete", "namespace", TEAM_NAMESPACE, "--wait=false", check=False)
    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)


def test_destroy_is_clean(deployed):
    deployed.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
    for name in NODES:
        node = deployed.node(name)
        assert "gpu-nodes.dev/node-group" not in node["metadata"]["labels"], deployed.explain(f"{name} keeps our label")
        assert "accelerator" not in node["metadata"]["labels"], deployed.explain(f"{name} keeps accelerator")
        assert OUR_TAINT not in taints_of(node), deployed.explain(f"{name} keeps our taint")
        assert GATE not in taints_of(node), deployed.explain(f"{name} keeps the readiness gate")
    foreign_state_intact(deployed)
    for kind, namespace in (("daemonsets", "nvidia-device-plugin"), ("jobs", "gpu-verification")):
        leftover = deployed.kubectl("get", kind, "-n", namespace, "-o", "name", check=False).stdout.strip()
        assert not leftover, f"{kind} left in {namespace}: {leftover}"
    namespaces = deployed.kubectl("get", "namespaces", "-o", "name").stdout
    assert "nvidia-device-plugin" not in namespaces and "gpu-verification" not in namespaces, namespaces
    classes = deployed.kubectl("get", "priorityclasses", "-o", "name").stdout
    assert f"gpu-{GROUP}" not in classes, classes
    runtime_classes = deployed.kubectl("get", "runtimeclasses", "-o", "name").stdout
    assert "runtimeclass.node.k8s.io/nvidia" not in runtime_classes.split(), runtime_classes


def test_unproven_nodes_stay_gated_and_named_the_healthy_open_and_destroy_lifts_every_gate(deployed):
    """Issue 12, from a destroyed stack: gpu-node-2 carries someone else's NoSchedule taint, so
    its plugin never lands (nor its Jobs); gpu-node-3 registers 3 of its 4 GPUs. Both stay gated
    and are named with why; gpu-node-1 opens. Destroy then leaves no gate, gated nodes included."""
    deployed.kubectl("taint", "node", "gpu-node-2", "example.com/dedicated=other-team:NoSchedule")
    deployed.kubectl("annotate", "node", "gpu-node-3", f"{UNHEALTHY_GPUS}=1", "--overwrite")
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=1200)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed although two nodes are unproven", result)
        for node in ("gpu-node-2", "gpu-node-3"):
            assert f"node {node} stays gated (gpu-nodes.dev/unverified=true:NoSchedule)" in output, deployed.explain(
                f"the failure does not name {node}", result
            )
        assert "pluginRunning: no device plugin pod on it" in output, deployed.explain("no word of gpu-node-2's plugin", result)
        for gpus in (1, 2):
            job = rf"verification Job gpu-verification/gpu-verify-{GROUP}-gpu-node-2-{gpus}gpu-[0-9a-f]{{8}} (failed|has not)"
            assert re.search(job, output), deployed.explain(f"no word of gpu-node-2's {gpus}-GPU Job", result)
        assert "is Pending (Unschedulable)" in output and "untolerated taint" in output, deployed.explain(
            "the failure does not say gpu-node-2's pods are Pending and why", result
        )
        short = r'node gpu-node-3: status\.allocatable\["nvidia\.com/gpu"\] is 3, expected 4'
        assert re.search(short, output), deployed.explain("the failure does not name gpu-node-3, 3 and 4", result)
        assert "node gpu-node-1 stays gated" not in output, deployed.explain("the healthy node failed", result)
        assert_only_gated(deployed, "gpu-node-2", "gpu-node-3")
        placed = sorted(
            p["spec"].get("nodeName")
            for p in deployed.kubectl_json("get", "pods", "-n", "nvidia-device-plugin", "-l", PLUGIN_LABEL)["items"]
            if p["status"].get("phase") == "Running"
        )
        assert placed == ["gpu-node-1", "gpu-node-3"], deployed.explain(f"plugin pods on {placed}")

        deployed.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
        for node in NODES:
            assert not gated(deployed, node), deployed.explain(f"destroy left the gate on {node}")
    finally:
        deployed.kubectl("taint", "node", "gpu-node-2", "example.com/dedicated-", check=False)
        deployed.kubectl("annotate", "node", "gpu-node-3", f"{UNHEALTHY_GPUS}-", check=False)

    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    assert_only_gated(deployed)


def test_broken_machine_is_contained(deployed):
    """gpu-node-3's machine loses its driver: it is kept out, the others stay in."""
    deployed.pulumi("destroy", "--yes", "--skip-preview", timeout=1200)
    deployed.run("tools/fakehost/break.sh", "gpu-node-3", "driver")
    try:
        result = deployed.pulumi("up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=1200)
        output = result.stdout + result.stderr
        assert result.returncode != 0, deployed.explain("pulumi up passed with a broken machine", result)
        assert f"{PREFIX}-gpu-node-3-preflight" in output, deployed.explain("the failure does not name gpu-node-3", result)
        assert "driver" in output, deployed.explain("the failure does not name the failed check", result)
        healthy = deployed.node("gpu-node-1")
        assert healthy["metadata"]["labels"].get("gpu-nodes.dev/node-group") == GROUP, deployed.explain("gpu-node-1 not labelled")
        broken = deployed.node("gpu-node-3")
        assert "gpu-nodes.dev/node-group" not in broken["metadata"]["labels"], deployed.explain("gpu-node-3 was labelled")
        assert OUR_TAINT not in taints_of(broken), deployed.explain("gpu-node-3 was tainted")
        jobs = [j["metadata"]["name"] for j in deployed.kubectl_json("get", "jobs", "-n", "gpu-verification")["items"]]
        assert not [n for n in jobs if "gpu-node-3" in n], f"gpu-node-3 got verification jobs: {jobs}"
    finally:
        deployed.run("tools/fakehost/break.sh", "gpu-node-3", "healthy")

    deployed.pulumi("up", "--yes", "--skip-preview", timeout=1200)
    node = deployed.node("gpu-node-3")
    assert node["metadata"]["labels"].get("gpu-nodes.dev/node-group") == GROUP, deployed.explain("gpu-node-3 not brought in")
