"""NVIDIA's MIG manager on a node, which repartitions its GPUs: what it marks, and what that means for the proof.

The MIG manager (NVIDIA/mig-parted, deployed by the GPU Operator) applies the MIG config a user names in
the node's label `nvidia.com/mig.config`. When the config is not applied already, it sets
`nvidia.com/mig.config.state=pending`, pauses the GPU clients it knows by their deploy labels
(`nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change`, a `false` left as it is), waits up to five
minutes for their pods on the node to go (the Operator's, by `app=` label, in its own namespace), changes
the MIG mode and layout, sets the deploy labels back to `true` and the state to `success`, or `failed`
(`rebooting` while a mode change needs a reboot): pkg/mig/reconfigure/reconfigure.go and clients.go.

While it works the node's GPUs change under whoever holds them, and the device plugin of a group with
`devicePlugin.pauseForMigManager` leaves the node (its DaemonSet's node affinity,
gpu_nodes/manifests/device_plugin.py): the node then offers no GPUs, for a reason the readiness check
names. After it, the node's GPUs are not those it was proven with: its taints resource keeps the MIG
manager's marks of the node as they were when the node was gated, and a refresh that finds them changed
reports the node as drift, so `pulumi up --refresh` gates it again until it is proven anew
(gpu_nodes/providers/taints.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_nodes.vocabulary import DEVICE_PLUGIN_DEPLOY_LABEL, MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, PAUSED_FOR_MIG_CHANGE

# The MIG manager's states of a change still under way (reconfigure.go: pending, then rebooting where a MIG mode
# change needs the node rebooted).
IN_PROGRESS = ("pending", "rebooting")
# Its marks, as the taints resource keeps them (their key in its state) and compares them.
MARKS = {"config": MIG_CONFIG_LABEL, "state": MIG_CONFIG_STATE_LABEL}


def _labels(node: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((node or {}).get("metadata") or {}).get("labels") or {}


def mig_marks(node: Mapping[str, Any] | None) -> dict[str, str]:
    """The MIG manager's marks on the node: the config it is asked to apply and the state of that change, those
    present ({} on a node it never touched)."""
    labels = _labels(node)
    return {key: labels[label] for key, label in MARKS.items() if label in labels}


def mig_pause(node: Mapping[str, Any] | None) -> str | None:
    """That the MIG manager is reconfiguring the node's GPUs, with its marks: it paused the device plugin, or a
    change is under way; None otherwise."""
    labels = _labels(node)
    paused = labels.get(DEVICE_PLUGIN_DEPLOY_LABEL) == PAUSED_FOR_MIG_CHANGE
    if not paused and labels.get(MIG_CONFIG_STATE_LABEL) not in IN_PROGRESS:
        return None
    shown = [f"{label}={labels[label]}" for label in (DEVICE_PLUGIN_DEPLOY_LABEL, *MARKS.values()) if label in labels]
    return f"NVIDIA's MIG manager is reconfiguring its GPUs ({', '.join(shown)})"


def paused_plugin(node: Mapping[str, Any] | None, what: str) -> str | None:
    """Why no `what` (the device plugin) pod is on a node the MIG manager is reconfiguring; None when it is not."""
    pause = mig_pause(node)
    if pause is None:
        return None
    return (
        f"no {what} pod on it: {pause}; a plugin with devicePlugin.pauseForMigManager steps off the node until the "
        f"MIG manager sets {DEVICE_PLUGIN_DEPLOY_LABEL} back to true"
    )


def mig_problem(recorded: Mapping[str, str] | None, node: Mapping[str, Any] | None) -> str | None:
    """What the MIG manager did to the node's GPUs since it was gated: a change under way, or one done since
    (`recorded`, its marks then); None when neither."""
    return mig_pause(node) or mig_change(recorded, node)


def mig_change(recorded: Mapping[str, str] | None, node: Mapping[str, Any] | None) -> str | None:
    """Why the node's GPUs are not those it was gated with: the MIG manager's marks differ from those `recorded`
    then; None when they agree, or when nothing was recorded (a state from before the marks were kept)."""
    if recorded is None:
        return None
    now = mig_marks(node)
    if dict(recorded) == now:
        return None
    changed = [
        f"{label} {_shown(recorded.get(key))} then, {_shown(now.get(key))} now"
        for key, label in MARKS.items()
        if recorded.get(key) != now.get(key)
    ]
    return f"NVIDIA's MIG manager changed its GPUs since it was gated ({'; '.join(changed)}): prove it again"


def _shown(value: str | None) -> str:
    return value if value is not None else "unset"
