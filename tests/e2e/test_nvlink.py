"""Rack-scale machines and the GPU Operator's NRI mode on the local cluster (issue 57).

One stack of this repository's program ("nvlink"), on nodes of its own (gpu-node-21..28), each group on fake
machines made for it (tools/fakehost/up.sh):

- `gb200`: a device-plugin group of one NVLink domain (four machines of one clique, each running NVIDIA's IMEX
  daemon listing all four, channel 0 made) that hands IMEX channel 0 to its containers (`devicePlugin.imex`). Two
  machines are broken before the first `up`: gpu-node-23's IMEX daemon is down, gpu-node-24's lacks a peer.
- `gb300`: a DRA group of one NVLink domain (two machines of another clique, their host IMEX daemon disabled) with
  ComputeDomains on: the stack runs the driver's ComputeDomain controller, the group gets a ComputeDomain, and a pod
  on each of its two machines claims the domain's channel (the registrar publishes each node's channel device and
  plays the controller that makes the claim template, tools/cluster/README.md).
- `nri`: a device-plugin group on a machine set up as the GPU Operator's NRI mode leaves it (no nvidia runtime, the
  toolkit's NRI plugin): its pods name no RuntimeClass and ask the NRI plugin for their devices.
- `mig`: a DRA group that proves a MIG profile under the driver's dynamic MIG on an H100 machine; the session's
  cluster keeps partitionable devices (DRAPartitionableDevices, on by default from 1.36: conftest's FEATURE_GATES).

The first `up --continue-on-error` proves gpu-node-21, 22, 25..28 and fails the two broken machines' preflight,
naming each and its check; their nodes are not brought in. Repaired (`break.sh healthy`), the next `up` proves them.
destroy leaves none of the ComputeDomains' objects.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import GATE, ROOT, STATE, LocalEnv, failed_resources, taints_of
from tests.e2e.stack_file import start_stack

pytestmark = pytest.mark.cluster

STACK = "nvlink"
STACK_FILE = ROOT / f"Pulumi.{STACK}.yaml"
# Two NVLink domains, as `<ClusterUUID>.<CliqueId>` (k8s-device-plugin internal/lm/imex.go).
CLIQUE_DP = "5a1c2e7b-0d4f-4c3e-9b2a-7f6e5d4c3b2a.1"
CLIQUE_DRA = "5a1c2e7b-0d4f-4c3e-9b2a-7f6e5d4c3b2a.2"
DP_NODES = ["gpu-node-21", "gpu-node-22", "gpu-node-23", "gpu-node-24"]
IMEX_DOWN, PEER_MISSING = "gpu-node-23", "gpu-node-24"
DRA_NODES = ["gpu-node-25", "gpu-node-26"]
NRI_NODE = "gpu-node-27"
MIG_NODE = "gpu-node-28"
NAMESPACES = {"plugins": "nvl-plugins", "verification": "nvl-verification"}
GROUP_LABEL = "gpu-nodes.dev/node-group"
CHANNEL = "/dev/nvidia-caps-imex-channels/channel0"
H100 = "NVIDIA H100 PCIe"


def pulumi(local: LocalEnv, *args: str, check: bool = True, timeout: int = 900):
    return local.run("pulumi", *args, "--stack", STACK, "--non-interactive", check=check, timeout=timeout)


def hosts() -> dict[str, dict]:
    return {h["name"]: h for h in json.loads((STATE / "fakehosts/hosts.json").read_text())}


def stack_config() -> dict:
    known = hosts()

    def nodes(names: list[str]) -> list[dict]:
        return [{k: known[n][k] for k in ("name", "sshHost", "sshPort", "sshUser", "hostKey")} for n in names]

    common = {
        "gpusPerNode": 4,
        "preflight": {"containerRuntime": "containerd"},
        "verification": {"gpusPerPod": [1], "timeoutSeconds": 120, "namespace": NAMESPACES["verification"]},
        "devicePlugin": {"namespace": NAMESPACES["plugins"]},
    }
    peers = [known[n]["sshHost"] for n in DP_NODES]
    groups = [
        {
            "name": "gb200",
            "nodes": nodes(DP_NODES),
            **common,
            "devicePlugin": {**common["devicePlugin"], "imex": {"channelIds": [0], "required": True}},
            "nvlinkDomain": {"clique": CLIQUE_DP, "imexPeers": peers},
        },
        {
            "name": "gb300",
            "allocator": "dra",
            "nodes": nodes(DRA_NODES),
            **common,
            "nvlinkDomain": {"clique": CLIQUE_DRA},
            "dra": {"computeDomains": True},
        },
        {
            "name": "nri",
            "gpuAccess": "cdi",
            "containerToolkit": "nri",
            "nodes": nodes([NRI_NODE]),
            **common,
            # Where the GPU Operator's toolkit container puts the hook (fakehost.OPERATOR_TOOLKIT_ROOT).
            "devicePlugin": {**common["devicePlugin"], "cdiHookPath": "/usr/local/nvidia/toolkit/nvidia-ctk"},
        },
        {"name": "mig", "allocator": "dra", "nodes": nodes([MIG_NODE]), **common, "dra": {"migProfiles": ["1g.10gb"]}},
    ]
    return {
        "kubernetes:kubeconfig": str(STATE / "cluster/kubeconfig"),
        "gpu-nodes:runtimeClass": "nvidia-nvlink-e2e",
        "gpu-nodes:createRuntimeClass": "true",
        "gpu-nodes:nodeGroups": groups,
    }


@pytest.fixture(scope="module")
def nvlink(local: LocalEnv) -> Iterator[LocalEnv]:
    local.run("tools/cluster/up.sh", "--nodes", "28", timeout=600)
    local.run("tools/fakehost/up.sh", "--nvlink", CLIQUE_DP, *DP_NODES)
    local.run("tools/fakehost/up.sh", "--dra", "--nvlink", CLIQUE_DRA, *DRA_NODES)
    local.run("tools/fakehost/up.sh", "--nri", NRI_NODE)
    local.run("tools/fakehost/up.sh", "--dra", "--other-gpus", MIG_NODE)
    # What the registrar knows the machines by: the NRI node's toolkit, the MIG node's GPU model.
    local.kubectl("annotate", "node", NRI_NODE, "gpu-nodes.dev/simulated-toolkit=nri", "--overwrite")
    local.kubectl("annotate", "node", MIG_NODE, f"gpu-nodes.dev/simulated-gpu-model={H100}", "--overwrite")
    local.run("tools/fakehost/break.sh", IMEX_DOWN, "imex-down")
    local.run("tools/fakehost/break.sh", PEER_MISSING, "imex-peer-missing")
    shutil.rmtree(STATE / "e2e-nvlink", ignore_errors=True)
    start_stack(local, STACK, stack_config())
    yield local
    for node in (IMEX_DOWN, PEER_MISSING):
        local.run("tools/fakehost/break.sh", node, "healthy", check=False)
    pulumi(local, "destroy", "--yes", "--skip-preview", check=False, timeout=1200)
    pulumi(local, "stack", "rm", "--yes", check=False)
    STACK_FILE.unlink(missing_ok=True)
    local.kubectl("annotate", "node", NRI_NODE, "gpu-nodes.dev/simulated-toolkit-", check=False)
    local.kubectl("annotate", "node", MIG_NODE, "gpu-nodes.dev/simulated-gpu-model-", check=False)
    local.run("tools/fakehost/down.sh", *DP_NODES, *DRA_NODES, NRI_NODE, MIG_NODE, check=False)


def proven(local: LocalEnv, node: str) -> bool:
    found = local.node(node)
    return GATE not in taints_of(found) and bool((found["metadata"].get("labels") or {}).get(GROUP_LABEL))


def report(local: LocalEnv) -> dict[str, dict]:
    """Each node's checklist, from the stack's output."""
    groups = json.loads(pulumi(local, "stack", "output", "nodeGroups", "--json").stdout)
    return {node: entry for group in groups.values() for node, entry in group.items() if isinstance(entry, dict)}


def pods_of(local: LocalEnv, component: str, node: str) -> list[dict]:
    return local.kubectl_json(
        "get", "pods", "-n", NAMESPACES["verification"], "-l", f"app.kubernetes.io/component={component}",
        "--field-selector", f"spec.nodeName={node}",
    )["items"]  # fmt: skip


def test_up_proves_each_group_and_names_the_machines_whose_imex_daemon_is_down_or_lacks_a_peer(nvlink: LocalEnv):
    result = pulumi(nvlink, "up", "--yes", "--skip-preview", "--continue-on-error", check=False, timeout=1500)
    output = result.stdout + result.stderr

    assert result.returncode != 0, nvlink.explain("up passed with two broken IMEX daemons", result)
    failed = failed_resources(result.stdout) - {f"gpu-nodes-{STACK}"}  # the stack's own "update failed"
    assert failed == {f"gpu-nodes-gb200-{IMEX_DOWN}-preflight", f"gpu-nodes-gb200-{PEER_MISSING}-preflight"}, nvlink.explain(
        f"failed: {failed}", result
    )
    assert "imex-daemon" in output and "service is failed" in output, nvlink.explain("the daemon down is not named", result)
    missing_peer = hosts()[DP_NODES[-1]]["sshHost"]  # break.sh leaves the last peer out
    assert "imex-peers" in output and f"lacks {missing_peer}" in output, nvlink.explain("the missing peer is not named", result)
    for node in (IMEX_DOWN, PEER_MISSING):
        labels = nvlink.node(node)["metadata"].get("labels") or {}
        assert GROUP_LABEL not in labels, nvlink.explain(f"{node} was brought in with a broken IMEX daemon")
    for node in ["gpu-node-21", "gpu-node-22", *DRA_NODES, NRI_NODE, MIG_NODE]:
        assert proven(nvlink, node), nvlink.explain(f"{node} is not proven", result)


def test_the_device_plugin_gave_each_imex_pod_the_channel_its_machine_has(nvlink: LocalEnv):
    for node in ("gpu-node-21", "gpu-node-22"):
        pods = pods_of(nvlink, "imex", node)
        assert pods, f"{node}: no IMEX pod"
        logs = nvlink.kubectl("logs", "-n", NAMESPACES["verification"], pods[-1]["metadata"]["name"], "-c", "imex").stdout
        assert logs.strip() == CHANNEL, (node, logs)
    plugin = nvlink.kubectl_json("get", "daemonset", "-n", NAMESPACES["plugins"], "nvidia-device-plugin-gb200")
    env = {e["name"]: e.get("value") for e in plugin["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["IMEX_CHANNEL_IDS"], env["IMEX_REQUIRED"]) == ("0", "true"), env


def test_a_compute_domain_gave_a_pod_on_each_of_its_two_machines_its_channel(nvlink: LocalEnv):
    """A claim made from a template goes with its pod once the pod is done (the resource claim controller), so the
    evidence is the pod: it claimed the domain's template, ran on its node, and found the channel the registrar gives
    only for a claim allocated a channel of compute-domain.nvidia.com."""
    (domain,) = nvlink.kubectl_json("get", "computedomains", "-n", NAMESPACES["verification"])["items"]
    assert domain["metadata"]["name"] == "gpu-verify-gb300-imex", domain
    name = "gpu-verify-gb300-imex-channel"
    template = nvlink.kubectl_json("get", "resourceclaimtemplates", "-n", NAMESPACES["verification"], name)
    assert template["metadata"]["labels"]["resource.nvidia.com/computeDomain"] == domain["metadata"]["uid"], template
    for node in DRA_NODES:
        pods = [p for p in pods_of(nvlink, "imex", node) if p["status"].get("phase") == "Succeeded"]
        assert pods, f"{node}: no IMEX pod succeeded"
        claims = pods[-1]["spec"]["resourceClaims"]
        assert claims == [{"name": "imex-channel", "resourceClaimTemplateName": "gpu-verify-gb300-imex-channel"}], claims
        logs = nvlink.kubectl("logs", "-n", NAMESPACES["verification"], pods[-1]["metadata"]["name"], "-c", "imex").stdout
        assert logs.strip() == CHANNEL, (node, logs)
        slices = nvlink.kubectl_json("get", "resourceslices", "--field-selector", f"spec.nodeName={node}")["items"]
        assert {s["spec"]["driver"] for s in slices} == {"gpu.nvidia.com", "compute-domain.nvidia.com"}, (node, slices)


def test_the_nri_nodes_pods_name_no_runtime_class_and_ask_the_nri_plugin(nvlink: LocalEnv):
    pods = nvlink.kubectl_json("get", "pods", "-n", NAMESPACES["plugins"], "--field-selector", f"spec.nodeName={NRI_NODE}")
    (plugin,) = [p for p in pods["items"] if p["metadata"]["labels"].get("app.kubernetes.io/name") == "nvidia-device-plugin"]
    assert "runtimeClassName" not in plugin["spec"], plugin["spec"]
    annotations = plugin["metadata"].get("annotations") or {}
    assert any(k.startswith("nvidia.cdi.k8s.io/container.") for k in annotations), annotations
    assert nvlink.node(NRI_NODE)["status"]["allocatable"]["nvidia.com/gpu"] == "4"


def test_the_mig_group_proved_its_profile_through_a_claim_of_a_mig_device(nvlink: LocalEnv):
    """Its Job's pod could only be scheduled with a MIG device of the profile allocated (its template selects the
    profile), from the partitions the node's slices offer."""
    slices = nvlink.kubectl_json("get", "resourceslices", "--field-selector", f"spec.nodeName={MIG_NODE}")["items"]
    devices = [d for s in slices for d in s["spec"].get("devices") or []]
    profiles = {d["attributes"]["profile"]["string"] for d in devices if "profile" in d["attributes"]}
    assert "1g.10gb" in profiles, profiles
    assert any(s["spec"].get("sharedCounters") for s in slices), "no counters' slice"
    jobs = nvlink.kubectl_json("get", "jobs", "-n", NAMESPACES["verification"])["items"]
    (mig,) = [j for j in jobs if "-gpu-node-28-1x-mig-1g-10gb-" in j["metadata"]["name"]]
    assert mig["status"].get("succeeded") == 1, mig["status"]
    claims = mig["spec"]["template"]["spec"]["resourceClaims"]
    assert claims == [{"name": "gpus", "resourceClaimTemplateName": "gpu-verify-mig-mig-1g-10gb"}], claims


def test_repaired_the_two_machines_are_proven_by_the_next_up(nvlink: LocalEnv):
    for node in (IMEX_DOWN, PEER_MISSING):
        nvlink.run("tools/fakehost/break.sh", node, "healthy")

    pulumi(nvlink, "up", "--yes", "--skip-preview", timeout=1500)

    for node in DP_NODES:
        assert proven(nvlink, node), nvlink.explain(f"{node} is not proven")


def test_after_it_every_node_passed_its_checklist_and_the_domains_nodes_carry_their_clique(nvlink: LocalEnv):
    checks = report(nvlink)
    for node, clique in [("gpu-node-21", CLIQUE_DP), ("gpu-node-22", CLIQUE_DP), *((n, CLIQUE_DRA) for n in DRA_NODES)]:
        assert nvlink.node(node)["metadata"]["labels"].get("nvidia.com/gpu.clique") == clique, node
        assert checks[node]["checklist"]["imexChannel"] == "pass", (node, checks[node])
    assert "imexChannel" not in checks[NRI_NODE]["checklist"], checks[NRI_NODE]
    assert set(checks[MIG_NODE]["checklist"].values()) == {"pass"}, checks[MIG_NODE]
    assert set(checks[NRI_NODE]["checklist"].values()) == {"pass"}, checks[NRI_NODE]


def test_destroy_leaves_no_compute_domain_controller_or_crd(nvlink: LocalEnv):
    pulumi(nvlink, "destroy", "--yes", "--skip-preview", timeout=1200)

    for kind, name in [
        ("crd", "computedomains.resource.nvidia.com"),
        ("deviceclass", "compute-domain-default-channel.nvidia.com"),
        ("clusterrole", "compute-domain-daemon-role"),
    ]:
        assert nvlink.kubectl("get", kind, name, check=False).returncode != 0, f"{kind} {name} is left"
    for node in [*DP_NODES, *DRA_NODES, NRI_NODE, MIG_NODE]:
        found = nvlink.node(node)
        assert GATE not in taints_of(found) and GROUP_LABEL not in (found["metadata"].get("labels") or {}), node
