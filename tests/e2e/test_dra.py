"""A group whose GPUs NVIDIA's DRA driver allocates (`allocator: dra`), on the local cluster.

The simulated machines publish ResourceSlices as the driver's kubelet plugin does while its pod
runs on them (tools/cluster/gpu-registrar.py, docs/dra.md); the real kube-controller-manager makes
the verification pods' ResourceClaims from their templates and the real kube-scheduler allocates
them. One stack of this repository's program, on nodes of its own (gpu-node-13..18) beside the
story's stack: a DRA group of four nodes, one of whose slices lists 3 of its 4 GPUs, a
device-plugin group of one node, and a group of one node that shares its GPUs through MPS.

- `up` proves the three whole DRA nodes and the device-plugin node, and keeps the short one
  gated, naming it and the GPU its slice does not list.
- Once its slice lists every GPU, `up` proves it; preview is then clean, and `tenantAccess` gives
  the DeviceClass and a ResourceClaimTemplate.
- A GPU gone from a proven node's slice, and one the DRA driver's health check tainted (the cluster
  keeps device taints, so the kubelet plugins run the check), are drift: refresh names the nodes,
  the GPUs and the taint, `up --refresh` gates both nodes, and proves them again once the GPUs are back.
- With `dra.extendedResourceName`, the DeviceClass serves plain `nvidia.com/gpu` requests: the
  verification Jobs ask as a tenant's plain pod does, and the scheduler's own claims give them the
  group's GPUs.
- The device-plugin group changed to dra sheds a tenant's pod from its node and is proven again.
- The MPS group's node is proven with the plugin's MPS control daemon on it alone: preflight's mps
  check passed over SSH, the plugin registered 4 x 4 replicas as `nvidia.com/gpu.shared` only once
  the daemon ran (the registrar plays upstream's waitForDaemon), and a verification pod given one
  replica succeeded. Without its daemon the node loses its replicas: refresh finds the drift and
  `up --refresh` puts the daemon back and proves the node again.
- destroy leaves nothing of ours: no kubelet plugin, MPS daemon, slice, DeviceClass, claim or gate.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import yaml

from tests.e2e.conftest import GATE, ROOT, STATE, LocalEnv, failed_resources, taints_of
from tests.e2e.stack_file import start_stack

pytestmark = pytest.mark.cluster

STACK = "dra"
DRA_NODES = ["gpu-node-13", "gpu-node-14", "gpu-node-15", "gpu-node-16"]
PLUGIN_NODE = "gpu-node-17"
# Its slice lists 3 of its 4 GPUs at first.
SHORT_NODE = "gpu-node-16"
# A proven node that loses a GPU from its slice after `up`.
DRIFTING_NODE = "gpu-node-14"
# A proven node one of whose GPUs the DRA driver's health check taints after `up`.
XID_NODE = "gpu-node-15"
HIDDEN = "gpu-nodes.dev/simulated-dra-hidden-gpus"
XID = "gpu-nodes.dev/simulated-dra-xid-gpus"
# The taint the driver writes for a fatal XID (tools/cluster/gpu-registrar.py, XID_TAINT).
XID_TAINT = "gpu.nvidia.com/xid=79:NoSchedule"
NAMESPACES = {"plugins": "dra-plugins", "verification": "dra-verification"}
DEVICE_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com")
# The MPS group: each of its node's 4 GPUs shared 4 ways, the replicas renamed.
MPS_NODE = "gpu-node-18"
MPS_DAEMONSET = "nvidia-device-plugin-mps-control-daemon-mps"
SHARED = "nvidia.com/gpu.shared"
STACK_FILE = ROOT / f"Pulumi.{STACK}.yaml"


def last_gpu(node: str) -> str:
    """The UUID the simulated machine's nvidia-smi gives its last GPU (tools/fakehost/fakehost.py)."""
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}.gpu3')}"


def stack_config() -> dict:
    hosts = {h["name"]: h for h in json.loads((STATE / "fakehosts/hosts.json").read_text())}

    def nodes(names: list[str]) -> list[dict]:
        return [{k: hosts[n][k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey")} for n in names]

    common = {
        "gpusPerNode": 4,
        "preflight": {"containerRuntime": "containerd"},
        "verification": {"gpusPerPod": [1, 2], "timeoutSeconds": 90, "namespace": NAMESPACES["verification"]},
        "devicePlugin": {"namespace": NAMESPACES["plugins"]},
    }
    groups = [
        {"name": "dra", "allocator": "dra", "nodes": nodes(DRA_NODES), **common},
        # On the CDI path, so that the same machine suits both allocators when the group changes to dra.
        {
            "name": "plugin",
            "gpuAccess": "cdi",
            "nodes": nodes([PLUGIN_NODE]),
            **common,
            # Where the fake machines keep the hook program (preflight's `cdi` check names it).
            "devicePlugin": {"namespace": NAMESPACES["plugins"], "cdiHookPath": "/usr/local/sbin/nvidia-ctk"},
        },
        # Shared through MPS: one-GPU Jobs only (the plugin refuses a pod that asks for two replicas).
        {
            "name": "mps",
            "gpuAccess": "cdi",
            "nodes": nodes([MPS_NODE]),
            **common,
            "verification": {**common["verification"], "gpusPerPod": [1]},
            "devicePlugin": {
                "namespace": NAMESPACES["plugins"],
                "cdiHookPath": "/usr/local/sbin/nvidia-ctk",
                "sharing": {"strategy": "mps", "replicas": 4, "renameByDefault": True},
            },
        },
    ]
    return {
        "kubernetes:kubeconfig": str(STATE / "cluster/kubeconfig"),
        "gpu-nodes:runtimeClass": "nvidia-dra-e2e",
        "gpu-nodes:createRuntimeClass": "true",
        "gpu-nodes:nodeGroups": groups,
    }


def pulumi(local: LocalEnv, *args: str, check: bool = True, timeout: int = 900):
    return local.run("pulumi", *args, "--stack", STACK, "--non-interactive", check=check, timeout=timeout)


def gated(local: LocalEnv, node: str) -> bool:
    return GATE in taints_of(local.node(node))


def slices_of(local: LocalEnv, node: str) -> list[dict]:
    found = local.kubectl_json("get", "resourceslices", "--field-selector", f"spec.nodeName={node}")
    return found["items"]


def settles(check: Callable[[], bool], seconds: float = 30) -> bool:
    """Whether `check` holds within `seconds`: the registrar writes slices within a second or two."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


@pytest.fixture(scope="module")
def dra(local: LocalEnv) -> Iterator[LocalEnv]:
    local.run("tools/cluster/up.sh", "--nodes", "18", timeout=600)
    local.run("tools/fakehost/up.sh", "--dra", *DRA_NODES, PLUGIN_NODE, MPS_NODE)
    local.kubectl("annotate", "node", SHORT_NODE, f"{HIDDEN}=1", "--overwrite")
    shutil.rmtree(STATE / "e2e-dra", ignore_errors=True)
    start_stack(local, STACK, stack_config())
    yield local
    for node in DRA_NODES:
        local.kubectl("annotate", "node", node, f"{HIDDEN}-", f"{XID}-", check=False)
    pulumi(local, "destroy", "--yes", "--skip-preview", check=False, timeout=1200)
    pulumi(local, "stack", "rm", "--yes", check=False)
    STACK_FILE.unlink(missing_ok=True)


def test_up_proves_the_whole_dra_nodes_and_keeps_the_short_one_gated_naming_its_gpu(dra: LocalEnv):
    # --continue-on-error: the short node's failure would otherwise end the run before the others are proven.
    result = pulumi(dra, "up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=1200)

    assert result.returncode != 0, dra.explain("up passed with a node whose slice lists 3 of its 4 GPUs", result)
    failed = {name for name in failed_resources(result.stdout) if name.endswith("-readiness")}
    assert failed == {f"gpu-nodes-dra-{SHORT_NODE}-readiness"}, dra.explain("failed", result)
    assert SHORT_NODE in result.stdout and last_gpu(SHORT_NODE) in result.stdout, dra.explain("the missing GPU", result)
    assert gated(dra, SHORT_NODE), dra.explain(f"{SHORT_NODE} is not gated")
    for node in [n for n in DRA_NODES if n != SHORT_NODE] + [PLUGIN_NODE, MPS_NODE]:
        assert not gated(dra, node), dra.explain(f"{node} is still gated", result)


def test_the_dra_nodes_run_the_drivers_kubelet_plugin_and_no_device_plugin(dra: LocalEnv):
    pods = dra.kubectl_json("get", "pods", "-n", NAMESPACES["plugins"])["items"]
    by_node: dict[str, set[str]] = {}
    for pod in pods:
        name = pod["metadata"]["labels"].get("app.kubernetes.io/name", "")
        by_node.setdefault(pod["spec"].get("nodeName", ""), set()).add(name)
    for node in DRA_NODES:
        assert by_node.get(node) == {"dra-driver-nvidia-gpu"}, f"{node}: plugin pods {by_node.get(node)}"
    assert by_node.get(PLUGIN_NODE) == {"nvidia-device-plugin"}, f"{PLUGIN_NODE}: plugin pods {by_node.get(PLUGIN_NODE)}"
    assert "nvidia.com/gpu" not in (dra.node(DRA_NODES[0])["status"].get("allocatable") or {}), DRA_NODES[0]
    # The cluster keeps device taints (the session's gates): the plugin runs the driver's health check.
    ds = dra.kubectl_json("get", "daemonset", "-n", NAMESPACES["plugins"], "dra-driver-nvidia-gpu-kubelet-plugin-dra")
    env = {e["name"]: e.get("value") for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["FEATURE_GATES"] == "NVMLDeviceHealthCheck=true,", env


def test_the_verification_pods_took_their_gpus_through_claims_the_scheduler_allocated(dra: LocalEnv):
    claims = dra.kubectl_json("get", "resourceclaims", "-n", NAMESPACES["verification"])["items"]
    allocated = {
        c["metadata"]["name"]: [r["device"] for r in c["status"]["allocation"]["devices"]["results"]]
        for c in claims
        if (c.get("status") or {}).get("allocation")
    }
    jobs = dra.kubectl_json("get", "jobs", "-n", NAMESPACES["verification"])["items"]
    dra_jobs = [j for j in jobs if j["metadata"]["labels"].get("app.kubernetes.io/instance") == "dra"]
    assert dra_jobs and all(j["status"].get("succeeded") for j in dra_jobs if SHORT_NODE not in j["metadata"]["name"]), [
        (j["metadata"]["name"], j["status"]) for j in dra_jobs
    ]
    for job in dra_jobs:
        template = job["spec"]["template"]["spec"]
        limits = template["containers"][0].get("resources", {}).get("limits", {})
        assert "nvidia.com/gpu" not in limits, f"Job {job['metadata']['name']} asks for nvidia.com/gpu"
        # The access check's pod asks for no GPU at all; every other pod takes its GPUs through a claim.
        given_gpus = job["metadata"]["labels"]["app.kubernetes.io/component"] != "access"
        claims = template.get("resourceClaims")
        assert bool(claims) == given_gpus, f"Job {job['metadata']['name']}: {claims}"
    # The workload's 1 and 2 GPUs, and DCGM's diagnostics holding all 4 of a node.
    assert all(len(devices) in (1, 2, 4) for devices in allocated.values()), allocated


def test_once_its_slice_lists_every_gpu_up_proves_the_short_node_and_preview_is_clean(dra: LocalEnv):
    dra.kubectl("annotate", "node", SHORT_NODE, f"{HIDDEN}-")

    # --refresh: the failed run deleted the short node's Jobs that could not finish (DCGM's, holding all 4 GPUs).
    pulumi(dra, "up", "--refresh", "--yes", "--skip-preview", timeout=1200)

    assert not gated(dra, SHORT_NODE), dra.explain(f"{SHORT_NODE} is still gated")
    preview = pulumi(dra, "preview", "--expect-no-changes", "--diff", check=False)
    assert preview.returncode == 0, "preview after up:\n" + "\n".join(
        line for line in preview.stdout.splitlines() if "warning" not in line and "CVE" not in line
    )
    access = json.loads(pulumi(dra, "stack", "output", "tenantAccess", "--json").stdout)["dra"]
    assert access["deviceClassName"] == "gpu.nvidia.com", access
    request = access["resourceClaimTemplate"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["deviceClassName"] == "gpu.nvidia.com" and request["count"] == 1, access


# --------------------------------------------------------------------------- the MPS group


def mps_daemon_pods(local: LocalEnv) -> list[dict]:
    found = local.kubectl_json(
        "get", "pods", "-n", NAMESPACES["plugins"], "-l", "app.kubernetes.io/name=nvidia-device-plugin-mps-control-daemon"
    )
    return [p for p in found["items"] if not p["metadata"].get("deletionTimestamp")]


def shared_replicas(local: LocalEnv) -> str | None:
    return (local.node(MPS_NODE)["status"].get("allocatable") or {}).get(SHARED)


def test_an_mps_group_is_proven_with_its_daemon_on_its_node_and_a_pod_given_one_replica(dra: LocalEnv):
    daemons = mps_daemon_pods(dra)
    assert [(p["spec"]["nodeName"], p["status"].get("phase")) for p in daemons] == [(MPS_NODE, "Running")], dra.explain(
        "MPS control daemon pods"
    )
    spec = daemons[0]["spec"]
    assert spec["hostPID"] is True and spec["containers"][0]["command"] == ["mps-control-daemon"], spec
    assert spec["initContainers"][0]["command"] == ["mps-control-daemon", "mount-shm"], spec["initContainers"]

    plugins = dra.kubectl_json("get", "pods", "-n", NAMESPACES["plugins"], "--field-selector", f"spec.nodeName={MPS_NODE}")
    (plugin,) = [p for p in plugins["items"] if p["metadata"]["labels"].get("app.kubernetes.io/name") == "nvidia-device-plugin"]
    container = plugin["spec"]["containers"][0]
    assert {"name": "MPS_ROOT", "value": "/run/nvidia/mps"} in container["env"], container["env"]
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/mps", "/dev/shm"}, container["volumeMounts"]

    allocatable = dra.node(MPS_NODE)["status"]["allocatable"]
    assert allocatable.get(SHARED) == "16" and "nvidia.com/gpu" not in allocatable, dra.explain(f"{MPS_NODE}: {allocatable}")
    jobs = dra.kubectl_json("get", "jobs", "-n", NAMESPACES["verification"], "-l", "app.kubernetes.io/instance=mps")["items"]
    assert jobs and all(j["status"].get("succeeded") == 1 for j in jobs), dra.explain(f"MPS Jobs: {[j['status'] for j in jobs]}")
    # The workload's Jobs take a replica; the access check's asks for none (and DCGM's does not run under MPS).
    for job in [j for j in jobs if j["metadata"]["labels"]["app.kubernetes.io/component"] == "verification"]:
        limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert limits.get(SHARED) == "1" and "nvidia.com/gpu" not in limits, f"{job['metadata']['name']}: {limits}"

    report = json.loads(pulumi(dra, "stack", "output", "nodeGroups", "--json").stdout)["mps"][MPS_NODE]
    assert (report["expectedGpus"], report["gpuResource"]) == (16, SHARED), report
    assert set(report["checklist"].values()) == {"pass"}, report["checklist"]
    assert "mps" in report["preflight"]["passedChecks"], report["preflight"]
    labels = dra.node(MPS_NODE)["metadata"]["labels"]
    assert (labels["nvidia.com/gpu.sharing-strategy"], labels["nvidia.com/gpu.replicas"]) == ("mps", "4"), labels
    assert labels["nvidia.com/mps.capable"] == "true" and not labels["nvidia.com/gpu.product"].endswith("-SHARED"), labels


def test_without_its_mps_daemon_the_node_loses_its_replicas_and_up_refresh_proves_it_again(dra: LocalEnv):
    elsewhere = json.dumps({"spec": {"template": {"spec": {"nodeSelector": {"gpu-nodes.dev/node-group": "nowhere"}}}}})
    dra.kubectl("-n", NAMESPACES["plugins"], "patch", "daemonset", MPS_DAEMONSET, "--type", "merge", "-p", elsewhere)
    assert settles(lambda: shared_replicas(dra) is None, 60), dra.explain(f"{MPS_NODE} kept {shared_replicas(dra)} replicas")

    refresh = pulumi(dra, "refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
    assert refresh.returncode != 0 and MPS_NODE in refresh.stdout, dra.explain("refresh found no drift", refresh)

    pulumi(dra, "up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert shared_replicas(dra) == "16" and not gated(dra, MPS_NODE), dra.explain(f"{MPS_NODE} not proven again")
    assert [p["spec"]["nodeName"] for p in mps_daemon_pods(dra)] == [MPS_NODE], dra.explain("MPS daemon pods")


def test_a_gpu_gone_from_a_slice_or_tainted_by_the_driver_is_drift_that_up_refresh_gates(dra: LocalEnv):
    dra.kubectl("annotate", "node", DRIFTING_NODE, f"{HIDDEN}=1", "--overwrite")
    dra.kubectl("annotate", "node", XID_NODE, f"{XID}=1", "--overwrite")
    gone, tainted = last_gpu(DRIFTING_NODE), last_gpu(XID_NODE)
    assert settles(lambda: len(slices_of(dra, DRIFTING_NODE)[0]["spec"]["devices"]) == 3), slices_of(dra, DRIFTING_NODE)
    assert settles(lambda: "taints" in slices_of(dra, XID_NODE)[0]["spec"]["devices"][3]), slices_of(dra, XID_NODE)

    refresh = pulumi(dra, "refresh", "--preview-only", "--expect-no-changes", "--diff", check=False)
    assert refresh.returncode != 0, dra.explain("refresh found no drift", refresh)
    assert DRIFTING_NODE in refresh.stdout and gone in refresh.stdout, dra.explain("the drift names", refresh)
    named = all(part in refresh.stdout for part in (XID_NODE, tainted, XID_TAINT))
    assert named, dra.explain("the drift names the tainted GPU and its taint", refresh)

    result = pulumi(dra, "up", "--refresh", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=1200)
    assert result.returncode != 0, dra.explain("up --refresh passed with a GPU gone and one tainted", result)
    assert gated(dra, DRIFTING_NODE) and gated(dra, XID_NODE), dra.explain("both nodes gated", result)
    failed = {name for name in failed_resources(result.stdout) if name.endswith("-readiness")}
    expected = {f"gpu-nodes-dra-{node}-readiness" for node in (DRIFTING_NODE, XID_NODE)}
    assert failed == expected, dra.explain("failed", result)
    assert f"{tainted} (gpu-3) {XID_TAINT}" in result.stdout, dra.explain("the failure names the device and the taint", result)

    # The driver keeps its taint until its kubelet plugin restarts; here the registrar drops it with the annotation.
    dra.kubectl("annotate", "node", DRIFTING_NODE, f"{HIDDEN}-")
    dra.kubectl("annotate", "node", XID_NODE, f"{XID}-")
    assert settles(lambda: "taints" not in slices_of(dra, XID_NODE)[0]["spec"]["devices"][3]), slices_of(dra, XID_NODE)
    pulumi(dra, "up", "--refresh", "--yes", "--skip-preview", timeout=1200)
    assert not gated(dra, DRIFTING_NODE) and not gated(dra, XID_NODE), dra.explain("still gated")


def test_plain_nvidia_gpu_pods_are_proven_where_the_device_class_serves_them(dra: LocalEnv):
    """dra.extendedResourceName: the DeviceClass maps nvidia.com/gpu, and the Jobs ask as a tenant's plain pod."""
    settings = yaml.safe_load(STACK_FILE.read_text())
    settings["config"]["gpu-nodes:nodeGroups"][0]["dra"] = {"extendedResourceName": True}
    STACK_FILE.write_text(yaml.safe_dump(settings, sort_keys=True))

    pulumi(dra, "up", "--yes", "--skip-preview", timeout=1200)

    gpu_class = dra.kubectl_json("get", "deviceclass", "gpu.nvidia.com")
    assert gpu_class["spec"].get("extendedResourceName") == "nvidia.com/gpu", gpu_class["spec"]
    for node in DRA_NODES:
        assert not gated(dra, node), dra.explain(f"{node} is gated")
    pods = dra.kubectl_json("get", "pods", "-n", NAMESPACES["verification"], "-l", "app.kubernetes.io/instance=dra")["items"]
    # The access check's pods ask for no GPU at all: each other pod without a claim asks as a tenant's plain pod.
    asking = [p for p in pods if p["metadata"]["labels"]["app.kubernetes.io/component"] != "access"]
    plain = [p for p in asking if not p["spec"].get("resourceClaims")]
    assert plain, [p["metadata"]["name"] for p in pods]
    for pod in plain:
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        status = pod["status"].get("extendedResourceClaimStatus") or {}
        assert limits.get("nvidia.com/gpu") and status.get("resourceClaimName"), (pod["metadata"]["name"], limits, status)
        assert pod["spec"]["nodeName"] in DRA_NODES and pod["status"]["phase"] == "Succeeded", pod["metadata"]["name"]
    preview = pulumi(dra, "preview", "--expect-no-changes", "--diff", check=False)
    assert preview.returncode == 0, "preview after up:\n" + preview.stdout[-4000:]
    access = json.loads(pulumi(dra, "stack", "output", "tenantAccess", "--json").stdout)["dra"]
    assert access["extendedResourceName"] == "nvidia.com/gpu", access


def test_a_group_that_changes_to_dra_sheds_the_pods_holding_its_gpus_and_is_proven_again(dra: LocalEnv):
    tenant = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "tenant-trainer", "namespace": "default"},
        "spec": {
            "nodeName": PLUGIN_NODE,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "train", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }
    dra.run("kubectl", "apply", "-f", "-", stdin=json.dumps(tenant))
    assert settles(lambda: dra.kubectl_json("get", "pod", "tenant-trainer")["status"].get("phase") == "Running")
    settings = yaml.safe_load(STACK_FILE.read_text())
    # As the other DRA group of the stack: one DeviceClass serves plain requests for both.
    settings["config"]["gpu-nodes:nodeGroups"][1].update(allocator="dra", dra={"extendedResourceName": True})
    STACK_FILE.write_text(yaml.safe_dump(settings, sort_keys=True))

    pulumi(dra, "up", "--yes", "--skip-preview", timeout=1200)

    assert dra.kubectl("get", "pod", "tenant-trainer", check=False).returncode != 0, "the tenant's pod was not evicted"
    assert not gated(dra, PLUGIN_NODE), dra.explain(f"{PLUGIN_NODE} is still gated")
    pods = dra.kubectl_json("get", "pods", "-n", NAMESPACES["plugins"], "--field-selector", f"spec.nodeName={PLUGIN_NODE}")
    names = {p["metadata"]["labels"].get("app.kubernetes.io/name") for p in pods["items"]}
    assert names == {"dra-driver-nvidia-gpu"}, f"{PLUGIN_NODE}: plugin pods {names}"
    assert len(slices_of(dra, PLUGIN_NODE)) == 1, slices_of(dra, PLUGIN_NODE)


def test_destroy_leaves_no_plugin_slice_class_claim_or_gate(dra: LocalEnv):
    pulumi(dra, "destroy", "--yes", "--skip-preview", timeout=1200)

    for node in DRA_NODES:
        assert not gated(dra, node), f"{node} keeps the gate"
        assert settles(lambda node=node: not slices_of(dra, node)), f"{node} keeps ResourceSlices {slices_of(dra, node)}"
    for name in DEVICE_CLASSES:
        assert dra.kubectl("get", "deviceclass", name, check=False).returncode != 0, f"DeviceClass {name} is left"
    assert not gated(dra, MPS_NODE), f"{MPS_NODE} keeps the gate"
    assert SHARED not in (dra.node(MPS_NODE)["status"].get("allocatable") or {}), f"{MPS_NODE} keeps its replicas"
    for namespace in NAMESPACES.values():
        assert dra.kubectl("get", "namespace", namespace, check=False).returncode != 0, f"namespace {namespace} is left"
