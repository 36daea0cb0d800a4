"""Test doubles shared by the tests of the resources that read and wait on the cluster."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from gpu_nodes.proof.reader import Scraped
from gpu_nodes.proof.target import NodeTarget

T = TypeVar("T")

GROUP = "a100"
PLUGIN_NAMESPACE = "nvidia-device-plugin"
PLUGIN_SELECTOR = {"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": GROUP}
VERIFICATION_NAMESPACE = "gpu-verification"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GATE_TAINT = {"key": "gpu-nodes.dev/unverified", "value": "true", "effect": "NoSchedule"}


def node(name: str = "n1", gpus: int | None = 4, ready: bool = True, taints: list[dict] | None = None, **labels: str) -> dict:
    """A Node as the API returns it, labelled and tainted as group a100 wants unless told otherwise. Its
    `gpus` are registered and healthy: the kubelet counts a GPU the plugin marks unhealthy in capacity
    and not in allocatable (kubernetes pkg/kubelet/cm/devicemanager/manager.go, GetCapacity), so a test
    plays an XID by lowering allocatable alone."""
    allocatable = {"cpu": "8"} | ({"nvidia.com/gpu": str(gpus)} if gpus is not None else {})
    return {
        "metadata": {"name": name, "labels": {"gpu-nodes.dev/node-group": GROUP, **labels}},
        "spec": {"taints": [dict(GPU_TAINT)] if taints is None else taints},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}],
        },
    }


# The plugin's container, as the DaemonSet names it (gpu_nodes/manifests/device_plugin.py).
PLUGIN_CONTAINER = "nvidia-device-plugin-ctr"


def plugin_pod(node_name: str = "n1", phase: str = "Running", ready_since: str | None = None, suffix: str = "") -> dict:
    """The group's plugin pod on a node; `ready_since` (an RFC 3339 time) adds its Ready condition.
    Running, its container is ready and running, as kubelet (and kwok's pod-ready stage,
    kustomize/stage/pod/fast/pod-ready.yaml) reports it."""
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_since}] if ready_since else []
    running = {"running": {"startedAt": ready_since or "2026-12-01T10:00:00Z"}}
    containers = [{"name": PLUGIN_CONTAINER, "ready": True, "restartCount": 0, "started": True, "state": running}]
    return {
        "metadata": {
            "name": f"nvidia-device-plugin-{GROUP}-{node_name}{suffix}",
            "namespace": PLUGIN_NAMESPACE,
            "labels": PLUGIN_SELECTOR,
        },
        "spec": {"nodeName": node_name},
        "status": {"phase": phase, "conditions": conditions, **({"containerStatuses": containers} if phase == "Running" else {})},
    }


def crash_looping_plugin_pod(node_name: str = "n1", restarts: int = 5) -> dict:
    """The plugin pod whose container keeps exiting, as kubelet reports it: the pod stays in phase
    Running (restartPolicy Always), its container waits in CrashLoopBackOff with kubelet's message
    (kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go, doBackOff; the reason is
    ErrCrashLoopBackOff of pkg/kubelet/container/sync_result.go), the last run terminated, and
    the Ready condition is False for ContainersNotReady (pkg/kubelet/status/generate.go)."""
    pod = plugin_pod(node_name)
    name = pod["metadata"]["name"]
    unready = {
        "status": "False",
        "reason": "ContainersNotReady",
        "message": f"containers with unready status: [{PLUGIN_CONTAINER}]",
    }
    pod["status"]["conditions"] = [
        {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"},
        {"type": "Ready", "lastTransitionTime": "2026-12-01T10:00:05Z", **unready},
        {"type": "ContainersReady", "lastTransitionTime": "2026-12-01T10:00:05Z", **unready},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"},
    ]
    pod["status"]["containerStatuses"] = [
        {
            "name": PLUGIN_CONTAINER,
            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
            "ready": False,
            "started": False,
            "restartCount": restarts,
            "state": {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": (
                        f"back-off 2m40s restarting failed container={PLUGIN_CONTAINER} pod={name}_{PLUGIN_NAMESPACE}(0b6e)"
                    ),
                }
            },
            "lastState": {
                "terminated": {
                    "exitCode": 1,
                    "reason": "Error",
                    "startedAt": "2026-12-01T10:04:51Z",
                    "finishedAt": "2026-12-01T10:04:52Z",
                }
            },
        }
    ]
    return pod


def tenant_pod(node_name: str = "n1", gpus: int = 4, resource: str = "nvidia.com/gpu") -> dict:
    """Someone else's running pod holding GPUs of a node (the request defaulted from the limit, as the API server does)."""
    amounts = {resource: str(gpus)}
    return {
        "metadata": {"name": "tenant-training", "namespace": "default", "labels": {"app": "training"}},
        "spec": {"nodeName": node_name, "containers": [{"name": "train", "resources": {"limits": amounts, "requests": amounts}}]},
        "status": {"phase": "Running"},
    }


# NVSentinel's marks on a node it quarantined (NVIDIA/NVSentinel): annotation keys of
# fault-quarantine/pkg/common/common.go, the state label of commons/pkg/statemanager/statemanager.go,
# the cordon labels under the chart's default labelPrefix `k8saas.nvidia.com/`
# (distros/kubernetes/nvsentinel/charts/fault-quarantine/values.yaml; reconciler.go SetLabelKeys).
NVSENTINEL_STATE_LABEL = "dgxc.nvidia.com/nvsentinel-state"
# The example taint of the chart's rule sets (values.yaml, commented out: taints are opt-in).
NVSENTINEL_TAINT = {"key": "nvidia.com/gpu-error", "value": "fatal", "effect": "NoSchedule"}
XID_EVENT = (
    '[{"version":1,"agent":"syslog-health-monitor","componentClass":"GPU","checkName":"SysLogsXIDError",'
    '"isFatal":true,"isHealthy":false,"message":"XID 79: GPU has fallen off the bus","errorCode":["79"],'
    '"entitiesImpacted":[{"entityType":"GPU","entityValue":"0"}],"nodeName":"n1"}]'
)


def nvsentinel_quarantined(
    node_object: dict, taints: list[dict] | None = None, state: str = "quarantined", cordoned: bool = True
) -> dict:
    """`node_object` as NVSentinel's fault-quarantine leaves it on a fatal XID: cordoned (its rule
    sets' default `cordon.shouldCordon: true`; `handleCordon` in fault-quarantine/pkg/informer/k8s_client.go),
    the rule set's `taints` added beside the node's own (`applyTaints`) and listed in
    `quarantineHealthEventAppliedTaints` (`prepareAnnotations`, reconciler.go), the events in
    `quarantineHealthEvent`, its state label, cordon labels, and the condition its platform connector
    sets for the fatal event: type the check name, reason `<check>IsNotHealthy`, status True, message
    `ErrorCode:<code> <entity> <message> Recommended Action=<action>;`
    (platform-connectors/pkg/connectors/kubernetes/process_node_events.go)."""
    import json

    metadata = node_object["metadata"]
    annotations = metadata.setdefault("annotations", {})
    annotations["quarantineHealthEvent"] = XID_EVENT
    labels = metadata.setdefault("labels", {})
    labels[NVSENTINEL_STATE_LABEL] = state
    if cordoned:
        node_object["spec"]["unschedulable"] = True
        annotations["quarantineHealthEventIsCordoned"] = "True"
        labels["k8saas.nvidia.com/cordon-by"] = "NVSentinel"
        labels["k8saas.nvidia.com/cordon-reason"] = "GPU-fatal-error-ruleset"
        labels["k8saas.nvidia.com/cordon-timestamp"] = "2026-12-02T08-15-00Z"
        # Kubernetes' node lifecycle controller taints a cordoned node (pkg/controller/nodelifecycle, taintNodeByCondition).
        node_object["spec"]["taints"].append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if taints:
        node_object["spec"]["taints"].extend(dict(t) for t in taints)
        applied = [{**t, "preExisting": False} for t in taints]
        annotations["quarantineHealthEventAppliedTaints"] = json.dumps(applied)
    node_object["status"]["conditions"].append(
        {
            "type": "SysLogsXIDError",
            "status": "True",
            "reason": "SysLogsXIDErrorIsNotHealthy",
            "message": "ErrorCode:79 GPU:0 XID 79: GPU has fallen off the bus Recommended Action=RESTART_VM;",
        }
    )
    return node_object


def job(succeeded: int = 0, failed_reason: str | None = None, active: int = 1) -> dict:
    status: dict[str, Any] = {"succeeded": succeeded} if succeeded else {"active": active}
    if failed_reason:
        status = {
            "failed": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": failed_reason, "message": "it failed"}],
        }
    return {"metadata": {"namespace": VERIFICATION_NAMESPACE}, "status": status}


UNSCHEDULABLE = (
    "0/4 nodes are available: 1 node(s) had untolerated taint {example.com/dedicated: other-team}, "
    "3 node(s) didn't match Pod's node affinity/selector."
)
# The verification Jobs of n1, one per GPU count.
JOBS = ["gpu-verify-a100-n1-1gpu-aaaa", "gpu-verify-a100-n1-2gpu-bbbb"]
# n1's proof Jobs: the pod that asks for no GPU, DCGM's diagnostics and NCCL's all-reduce.
ACCESS_JOB = "gpu-verify-a100-n1-access-cccc"
DCGM_JOB = "gpu-verify-a100-n1-dcgm-dddd"
NCCL_JOB = "gpu-verify-a100-n1-nccl-eeee"
PROOF_JOBS = [ACCESS_JOB, DCGM_JOB, NCCL_JOB]


def ended_pod(job_name: str, container: str, exit_code: int = 0, node_name: str = "n1") -> dict:
    """The pod of a Job whose container ended with `exit_code`, as kubelet reports it."""
    terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}
    return {
        "metadata": {
            "name": f"{job_name}-x",
            "namespace": VERIFICATION_NAMESPACE,
            "labels": {"batch.kubernetes.io/job-name": job_name},
            "creationTimestamp": "2026-12-01T11:00:00Z",
        },
        "spec": {"nodeName": node_name},
        "status": {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "containerStatuses": [{"name": container, "ready": False, "state": {"terminated": terminated}}],
        },
    }


def pending_pod(job_name: str = JOBS[0]) -> dict:
    """A pod of the Job that the scheduler cannot place: the node is another team's."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": UNSCHEDULABLE}
    labels = {"batch.kubernetes.io/job-name": job_name}
    return {
        "metadata": {"name": f"{job_name}-x", "namespace": VERIFICATION_NAMESPACE, "labels": labels},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


class FakeCluster:
    """The shared watches' view of a cluster, whose events are played in order by `wait_for`.

    Each event is a function that changes the cluster; `wait_for` checks before the first and
    after each one, and stops early once done: a timeout is running out of events.
    """

    def __init__(self, nodes: list[dict] | None = None, pods: list[dict] | None = None) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in nodes or []}
        self.pod_list = list(pods or [])
        self.jobs: dict[tuple[str, str], dict] = {}
        # NVIDIA's DRA driver's ResourceSlices (tests/dra_slices.py makes them).
        self.slices: list[dict] = []
        self.events: list[Callable[[FakeCluster], None]] = []
        self.checks = 0
        self.deleted_jobs: list[str] = []
        self.deleted_pods: list[str] = []
        # What the pods' containers wrote, and the pages their ports serve (`proof.reader.PodOutputs`).
        self.logs: dict[tuple[str, str, str], str] = {}
        self.pages: dict[tuple[str, str, int], str] = {}

    def log(self, namespace: str, pod: str, container: str) -> str | None:
        return self.logs.get((namespace, pod, container))

    def scrape(self, namespace: str, pod: str, port: int, path: str) -> Scraped:
        page = self.pages.get((namespace, pod, port))
        return Scraped(page) if page is not None else Scraped(None, "HTTP 503 Service Unavailable")

    def node(self, name: str) -> dict[str, Any] | None:
        return self.nodes.get(name)

    def nodes_labelled(self, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        wanted = labels.items()
        found = [n for n in self.nodes.values() if wanted <= (n["metadata"].get("labels") or {}).items()]
        return sorted(found, key=lambda n: n["metadata"]["name"])

    def pods(self, namespace: str, labels: Mapping[str, str], node: str | None = None) -> list[dict[str, Any]]:
        return [
            p
            for p in self.pod_list
            if p["metadata"].get("namespace") == namespace
            and all(p["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())
            and (node is None or p.get("spec", {}).get("nodeName") == node)
        ]

    def job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.jobs.get((namespace, name))

    def resource_slices(self, node: str) -> list[dict[str, Any]]:
        return [s for s in self.slices if s["spec"].get("nodeName") == node]

    def on_node(self, node: str) -> list[dict[str, Any]]:
        """`proof.reader.NodePods`: every pod bound to the node, of any namespace, not Succeeded or Failed."""
        return [
            p
            for p in self.pod_list
            if p.get("spec", {}).get("nodeName") == node and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def wait_for(self, check: Callable[[], T], done: Callable[[T], bool], timeout: float) -> T:
        result = check()
        self.checks += 1
        while not done(result) and self.events:
            self.events.pop(0)(self)
            result = check()
            self.checks += 1
        return result

    def delete_job(self, namespace: str, name: str) -> None:
        self.deleted_jobs.append(name)
        self.jobs.pop((namespace, name), None)

    def delete_pod(self, namespace: str, name: str) -> None:
        self.deleted_pods.append(name)
        self.pod_list = [p for p in self.pod_list if p["metadata"]["name"] != name]


class FakeTaintApi:
    """`node_taints.NodeTaintApi` over the fake cluster's nodes."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def read(self, node_name: str) -> Any:
        from gpu_nodes.errors import NodeNotFoundError
        from gpu_nodes.kube.node_taints import NodeTaintState
        from gpu_nodes.proof.quarantine import quarantine_of

        found = self.cluster.node(node_name)
        if found is None:
            raise NodeNotFoundError(f"node {node_name} not found")
        taints = [dict(t) for t in found["spec"].get("taints") or []]
        return NodeTaintState(resource_version="1", taints=taints, quarantine=quarantine_of(found))

    def write(self, node_name: str, resource_version: str, taints: list[dict]) -> None:
        self.cluster.nodes[node_name]["spec"]["taints"] = taints


def target(expected: int | None = 4) -> NodeTarget:
    """What node n1 of group a100 should look like, with `expected` GPUs."""
    return NodeTarget(
        node="n1",
        labels={"gpu-nodes.dev/node-group": "a100"},
        taints=[GPU_TAINT],
        plugin_namespace=PLUGIN_NAMESPACE,
        plugin_selector=PLUGIN_SELECTOR,
        expected_gpus=expected,
    )


# --- n1 in the states the proof meets: the readiness check's tests and the judgement's ------------

# A time long before any test runs: a plugin pod Ready since then has settled.
LONG_AGO = "2026-01-01T00:00:00Z"
# The scheduler's message for a pod no free GPU is left for.
BUSY = "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node affinity/selector."


def gated_cluster(**node_fields: Any) -> FakeCluster:
    """n1 as it is right after our taints and labels: gated, no plugin yet, Jobs just created."""
    cluster = FakeCluster([node(taints=[GPU_TAINT, GATE_TAINT], **node_fields)])
    for name in [*JOBS, ACCESS_JOB]:
        cluster.jobs[(VERIFICATION_NAMESPACE, name)] = job()
    return cluster


def plugin_lands(cluster: FakeCluster) -> None:
    cluster.pod_list.append(plugin_pod())


def jobs_succeed(cluster: FakeCluster) -> None:
    for name in [*JOBS, ACCESS_JOB]:
        cluster.jobs[(VERIFICATION_NAMESPACE, name)] = job(succeeded=1)


def busy_pod(job_name: str, gpus: int = 1) -> dict:
    """A verification Job's pod the scheduler found no free GPU for."""
    pod = pending_pod(job_name)
    pod["status"]["conditions"][0]["message"] = BUSY
    pod["spec"] = {"containers": [{"name": "cuda", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    return pod


def open_busy_node(cluster: FakeCluster, tenant_gpus: int = 4) -> None:
    """n1 proven before and open; a new plugin runs; a tenant's pod holds `tenant_gpus` of its 4 GPUs,
    and the two Jobs' pods (1 and 2 GPUs) wait for free ones."""
    cluster.nodes["n1"]["spec"]["taints"] = [GPU_TAINT]
    cluster.pod_list += [plugin_pod(), busy_pod(JOBS[0], gpus=1), busy_pod(JOBS[1], gpus=2)]
    cluster.pod_list += [tenant_pod(gpus=tenant_gpus)] if tenant_gpus else []


def registers(cluster: FakeCluster, gpus: int | None) -> None:
    """n1's plugin registers `gpus`, all healthy (in capacity and allocatable); None: it registers
    no resource at all (a plugin still starting, or under MPS waiting for its daemon)."""
    status = cluster.nodes["n1"]["status"]
    for field in ("capacity", "allocatable"):
        if gpus is None:
            status[field].pop("nvidia.com/gpu", None)
        else:
            status[field]["nvidia.com/gpu"] = str(gpus)


def short_node_with_settled_plugin(cluster: FakeCluster) -> None:
    """n1 offers 3 of its 4 GPUs under a plugin pod Ready for long: an XID marked one unhealthy."""
    cluster.nodes["n1"]["status"]["allocatable"]["nvidia.com/gpu"] = "3"
    cluster.pod_list.append(plugin_pod(ready_since=LONG_AGO))
    jobs_succeed(cluster)
