"""Verification Jobs: pods that request GPUs on the group's nodes and run `nvidia-smi`.

A Job succeeds only when its pod was scheduled with the requested `nvidia.com/gpu` and
`nvidia-smi` lists at least that many GPUs; pulumi-kubernetes waits for it, so `pulumi up`
fails when the GPUs cannot be used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.config import GROUP_LABEL, NodeGroupSpec
from components.device_plugin import plugin_revision, tolerations
from components.naming import content_hash, dns_label, standard_labels

APP_NAME = "gpu-verification"
# Pod template annotation: a new plugin image or config gives a new template, and a Job's
# template is immutable, so the Job is replaced and runs again.
PLUGIN_REVISION_ANNOTATION = "gpu-nodes.dev/device-plugin-revision"
# An unprivileged user: the namespace enforces Pod Security `restricted`.
RUN_AS_USER = 65534

_CHECK_SCRIPT = """\
set -eu
nvidia-smi
found=$(nvidia-smi -L | grep -c '^GPU ' || true)
if [ "$found" -lt "$EXPECTED_GPUS" ]; then
  echo "nvidia-smi lists $found GPU(s); this pod was given $EXPECTED_GPUS" >&2
  exit 1
fi
echo "ok: $found GPU(s) visible, $EXPECTED_GPUS requested"
"""


@dataclass(frozen=True)
class VerificationJob:
    node: str | None  # None: any node of the group
    gpus: int
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return self.manifest["metadata"]["name"]


def verification_jobs(group: NodeGroupSpec) -> list[VerificationJob]:
    """One Job per GPU count, per node when `perNode`, in config order."""
    targets: list[str | None] = [node.name for node in group.nodes] if group.verification.per_node else [None]
    return [
        VerificationJob(node=node, gpus=gpus, manifest=job_manifest(group, node, gpus))
        for node in targets
        for gpus in group.verification.gpus_per_pod
    ]


def job_name(group: NodeGroupSpec, node: str | None, gpus: int, spec: dict[str, Any]) -> str:
    """Ends in a hash of the Job's spec: a changed Job gets a new name, so Pulumi can create
    the new one before deleting the old, with no race on a name still being deleted."""
    return dns_label("gpu-verify", group.name, *([node] if node else []), f"{gpus}gpu", content_hash(spec)[:8])


def job_manifest(group: NodeGroupSpec, node: str | None, gpus: int) -> dict[str, Any]:
    spec = group.verification
    labels = standard_labels(APP_NAME, group.name, "verification")
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "priorityClassName": group.priority_class.name,
        "nodeSelector": {GROUP_LABEL: group.name},
        "tolerations": tolerations(group.taints),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "runAsGroup": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "nvidia-smi",
                "image": spec.image,
                "command": ["/bin/sh", "-c", _CHECK_SCRIPT],
                "env": [
                    {"name": "EXPECTED_GPUS", "value": str(gpus)},
                    # Only nvidia-smi runs here, no CUDA code: the image's CUDA version
                    # requirement must not refuse a node whose driver is older than the image.
                    {"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"},
                ],
                "resources": {
                    "requests": {"cpu": "10m", "memory": "32Mi"},
                    "limits": {"nvidia.com/gpu": str(gpus), "memory": "128Mi"},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": True,
                },
            }
        ],
    }
    if node is not None:
        # The same pinning DaemonSets use: by node name, which the hostname label need not match.
        pod_spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
                }
            }
        }
    job_spec = {
        # Small: a GPU that fails twice will not pass on a third try.
        "backoffLimit": 1,
        "activeDeadlineSeconds": spec.timeout_seconds,
        # No ttlSecondsAfterFinished: the cluster would delete the Job and every
        # refresh would report it as drift.
        "template": {
            "metadata": {"labels": labels, "annotations": {PLUGIN_REVISION_ANNOTATION: plugin_revision(group)}},
            "spec": pod_spec,
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(group, node, gpus, job_spec),
            "namespace": spec.namespace,
            "labels": labels,
            # VerificationResult waits instead, and says why a Job did not succeed.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": job_spec,
    }
