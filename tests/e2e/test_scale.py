"""The local cluster past 100 nodes: `tools/cluster/up.sh` can be run again on it.

Runs last (file order): it grows the story's cluster to 101 GPU nodes. Above 100 nodes
kube-controller-manager's TTL controller rewrites every node's `node.alpha.kubernetes.io/ttl`
annotation, so up.sh must not claim that field when it re-applies the nodes.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.cluster

TTL = "node.alpha.kubernetes.io/ttl"
NODES = 101


def ttls(local) -> set[str]:
    items = local.kubectl_json("get", "nodes")["items"]
    return {n["metadata"].get("annotations", {}).get(TTL, "") for n in items if n["metadata"]["name"].startswith("gpu-node-")}


def test_up_runs_again_on_a_cluster_of_more_than_100_nodes(local):
    local.run("tools/cluster/up.sh", "--nodes", str(NODES), timeout=600)
    # The controller rewrites a node's TTL when it next sees the node: one is enough to conflict.
    deadline = time.monotonic() + 120
    while "15" not in ttls(local) and time.monotonic() < deadline:
        time.sleep(2)
    assert "15" in ttls(local), local.explain(f"the TTL controller did not rewrite {TTL}: {ttls(local)}")

    again = local.run("tools/cluster/up.sh", "--nodes", str(NODES), check=False, timeout=600)
    assert again.returncode == 0, local.explain("up.sh failed when run again on 101 nodes", again)
