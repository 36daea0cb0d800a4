"""Each group's isolation, where operators and tenants read it: `tenantAccess` and the per-node report."""

from __future__ import annotations

from gpu_nodes.manifests.verification import verification_jobs
from tests.factories import SECRET_KEYS, group, stack_config
from tests.pulumi_mocks import run_component, run_program
from tests.specs import group_spec


def test_tenant_access_says_each_groups_isolation():
    config = stack_config(group("a100"), group("h100", isolation="strict"), group("b200", gpuAccess="cdi", isolation="strict"))
    access = run_program(config, SECRET_KEYS).globals["fleet"].tenant_access
    assert {name: entry["isolation"] for name, entry in access.items()} == {
        "a100": "default",
        "h100": "strict",
        "b200": "strict",
    }, access


def test_the_node_report_says_the_groups_isolation_and_lists_the_access_job():
    run = run_component(group("a100", isolation="strict"))
    node = run.resolve(run.globals["component"].nodes)["a100-node-1"]
    assert node["isolation"] == "strict", node
    names = [job.name for job in verification_jobs(group_spec("a100", isolation="strict")) if job.node == "a100-node-1"]
    assert [entry["job"] for entry in node["verification"]] == names, node
    (access,) = [entry for entry in node["verification"] if entry["role"] == "access"]
    assert access["gpus"] == 0, node


def test_the_node_report_of_a_default_group_says_default():
    run = run_component(group("a100"))
    node = run.resolve(run.globals["component"].nodes)["a100-node-1"]
    assert node["isolation"] == "default", node


def test_tenant_access_says_what_a_shared_groups_pod_asks_for():
    mps = {"sharing": {"strategy": "mps", "replicas": 4, "renameByDefault": True}}
    config = stack_config(group("a100"), group("t4", devicePlugin=mps), group("l4", devicePlugin={"timeSlicingReplicas": 2}))
    access = run_program(config, SECRET_KEYS).globals["fleet"].tenant_access
    assert (access["t4"]["resource"], access["t4"]["sharing"]) == ("nvidia.com/gpu.shared", {"strategy": "mps", "replicas": 4})
    # Groups that do not use devicePlugin.sharing keep the entry they had.
    assert "resource" not in access["a100"] and "resource" not in access["l4"], access
