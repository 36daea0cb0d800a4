"""What a healthy node of a group looks like (`NodeTarget`), and how that target travels as the
inputs of the resources that gate and prove the node (taints, readiness: gpu_nodes/proof/inputs.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_nodes.proof.inputs import Change, DeclaredInputs, as_dict, as_is, as_text, declared, keys, whole_number
from gpu_nodes.vocabulary import GPU_RESOURCE, TIME_SLICING, GpuSharing, SharingStrategy


def _sorted(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(sorted(value.items()))


def _taint_list(value: Any) -> list[dict[str, Any]]:
    return [dict(t) for t in value or []]


def _counts(value: Any) -> dict[str, int] | None:
    return {k: int(v) for k, v in value.items()} if value else None


def _dra_gpus(value: Any) -> dict[str, Any] | None:
    if not value:
        return None
    return {
        **value,
        "count": int(value["count"]),
        **({"migProfiles": list(value["migProfiles"])} if value.get("migProfiles") else {}),
    }


@dataclass(frozen=True)
class NodeTarget(DeclaredInputs):
    """What a healthy node of the group looks like; each field declares its input too, and a
    change of any of them proves the node again (`TARGET_KEYS`)."""

    node: str = field(metadata=declared("node", Change.RERUN, required=True))
    labels: Mapping[str, str] = field(metadata=declared("labels", Change.RERUN, as_dict, as_dict))
    taints: Sequence[Mapping[str, str]] = field(metadata=declared("taints", Change.RERUN, _taint_list, _taint_list))
    # Empty in a taints state from before the gate, which holds the node and its taints only.
    plugin_namespace: str = field(metadata=declared("pluginNamespace", Change.RERUN, as_is, as_text))
    plugin_selector: Mapping[str, str] = field(metadata=declared("pluginSelector", Change.RERUN, as_dict, as_dict))
    # None under mixed MIG, and under single MIG without a declared layout.
    expected_gpus: int | None = field(metadata=declared("expectedGpus", Change.RERUN, as_is, whole_number))
    # Under mixed MIG with a declared layout: each nvidia.com/mig-<profile> and its count.
    # With neither figure, any GPU resource will do.
    expected_mig_devices: Mapping[str, int] | None = field(
        default=None, metadata=declared("expectedMigDevices", Change.RERUN, _sorted, _counts, only_when_set=True)
    )
    # The declared MIG layout of each GPU (devicePlugin.migDevices), profile -> devices: a new one
    # proves the node again, even where it offers as many devices as the old one did.
    mig_devices: Mapping[str, int] | None = field(
        default=None, metadata=declared("migDevices", Change.RERUN, _sorted, _counts, only_when_set=True)
    )

    # Under allocator dra: what each node's ResourceSlices must list, `{"count": N}` and, with the
    # group's gpuModel, `"model"`. None for a device-plugin group (no such input: tests/golden/*.json).
    dra_gpus: Mapping[str, Any] | None = field(
        default=None, metadata=declared("draGpus", Change.RERUN, _sorted, _dra_gpus, only_when_set=True)
    )
    # The resource expected_gpus counts where it is not nvidia.com/gpu: a shared GPU's replicas renamed
    # (devicePlugin.sharing.renameByDefault, nvidia.com/gpu.shared). None elsewhere (no such input).
    gpu_resource: str | None = field(default=None, metadata=declared("gpuResource", Change.RERUN, only_when_set=True))

    @property
    def uses_dra(self) -> bool:
        return self.dra_gpus is not None

    @property
    def counted_resource(self) -> str:
        """The resource `expected_gpus` counts."""
        return self.gpu_resource or GPU_RESOURCE


# The inputs that describe the node's target: a change of any proves the node again.
TARGET_KEYS = keys(NodeTarget)


@dataclass(frozen=True)
class DeclaredGpus(DeclaredInputs):
    """What the group's config declares of each node's GPUs, for the message of a node short of them: how many
    (`gpusPerNode`), how many ways each is shared, and by which setting, so that the message names the settings
    the group uses. Stored only: the target (`expectedGpus`) is what is compared."""

    gpus_per_node: int = field(metadata=declared("gpusPerNode", Change.STATE_ONLY, read=whole_number, required=True))
    replicas: int = field(metadata=declared("replicas", Change.STATE_ONLY, read=whole_number, required=True))
    # The strategy where the group shares its GPUs through `devicePlugin.sharing` (`mps`, `timeSlicing`); None where
    # it shares none, or by the older `timeSlicingReplicas` (no such input: tests/golden/*.json).
    strategy: SharingStrategy | None = field(default=None, metadata=declared("sharing", Change.STATE_ONLY, only_when_set=True))

    @classmethod
    def of(cls, gpus_per_node: int, sharing: GpuSharing) -> DeclaredGpus:
        spelled = sharing.setting == "sharing" and sharing.shares
        return cls(gpus_per_node, sharing.replicas, sharing.strategy if spelled else None)

    @property
    def sharing(self) -> GpuSharing:
        """How the group shares each GPU, as its config says it."""
        if self.strategy is not None:
            return GpuSharing(self.strategy, self.replicas)
        # Without a strategy: shared by the older spelling, or not shared at all.
        older = GpuSharing(TIME_SLICING, self.replicas, setting="timeSlicingReplicas")
        return older if older.shares else GpuSharing(TIME_SLICING, self.replicas)
