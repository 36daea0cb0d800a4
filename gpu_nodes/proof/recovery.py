"""When the readiness check may restart a node's device plugin pod to bring a GPU back, and what
it says when it may not (the rule is in gpu_nodes/providers/readiness.py's docstring)."""

from __future__ import annotations

from gpu_nodes.proof.target import NodeTarget


def restart_refused(target: NodeTarget, plugin_pod: str, preflight_run: str | None, preflight: str | None) -> str:
    """Why the plugin pod of a node short of GPUs is not restarted, and what to do. `preflight_run`: the
    machine's last preflight run (None where the group runs none); `preflight`: its resource's name."""
    node = target.node
    pod = f"{target.plugin_namespace}/{plugin_pod}"
    if not preflight_run:
        return (
            f"node {node}: preflight is off for this group, so nothing checks its GPUs, and a new plugin pod would "
            f"advertise a faulty GPU as healthy (k8s-device-plugin issue 111). Check the machine (nvidia-smi -q: GPU "
            f"Recovery Action, Remapped Rows, Fabric > Health), then delete the plugin pod {pod} yourself"
        )
    return (
        f"node {node}: its plugin pod {pod} keeps a GPU it marked unhealthy out, and a new pod would advertise it "
        f"as healthy without checking (k8s-device-plugin issue 111), so the node stays gated until its machine "
        f"passes a preflight run since its last proof: run a fresh preflight of the machine: `pulumi up "
        f"--target-replace` its {preflight or 'preflight'} (its URN from `pulumi stack "
        f"--show-urns`), or a new preflight.recheck for the group. Once it finds every GPU healthy, the next "
        f"`pulumi up` restarts the plugin pod and proves the node"
    )
