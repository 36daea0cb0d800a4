"""gpu-nodes policy pack: `pulumi preview --policy-pack policy` (see docs/policy.md, "Policy pack")."""

from gpu_nodes_policy import plugin_tolerates_group_taints
from pulumi_policy import PolicyPack

PolicyPack(name="gpu-nodes-policy", policies=[plugin_tolerates_group_taints])
