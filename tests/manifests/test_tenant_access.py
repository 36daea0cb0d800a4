"""What a tenant copies to get a DRA group's GPUs."""

from __future__ import annotations

from gpu_nodes.manifests.tenant_access import dra_tenant_access, tenant_claim_template
from gpu_nodes.vocabulary import GROUP_LABEL
from tests.specs import group_spec


def dra_group(**overrides):
    return group_spec("h100", allocator="dra", **overrides)


def test_the_template_asks_for_one_gpu_of_the_gpu_class():
    template = tenant_claim_template(dra_group())
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}, template
    assert "namespace" not in template["metadata"], template["metadata"]


def test_the_entry_keeps_every_groups_keys():
    entry = dra_tenant_access(dra_group())
    assert {"gpuAccess", "runtimeClassName", "isolation"} <= entry.keys(), entry
    assert entry["allocator"] == "dra" and entry["deviceClassName"] == "gpu.nvidia.com", entry


def test_a_tenant_lands_on_the_group_by_its_label_and_taints():
    entry = dra_tenant_access(dra_group(taints=["nvidia.com/gpu=present:NoSchedule", "dedicated:NoExecute"]))
    assert entry["nodeSelector"] == {GROUP_LABEL: "h100"}, entry
    assert entry["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ], entry
