"""Verification Jobs: pods that request GPUs on the group's nodes, run `nvidia-smi`, then a CUDA kernel.

A Job succeeds only when its pod was scheduled with the requested `nvidia.com/gpu` (or, with
migStrategy mixed, `nvidia.com/mig-<profile>`), `nvidia-smi -L` lists exactly that many
distinct devices (more is a pod that sees GPUs it was not given), and NVIDIA's CUDA sample
`vectorAdd` ran on them. Under strict isolation one more pod requests no GPU and must see none.
pulumi-kubernetes does not
wait for the Job (`pulumi.com/skipAwait`): the node's readiness check does
(gpu_nodes/providers/readiness.py), and says why it did not succeed, so `pulumi up` fails when the GPUs
cannot be used. The pods never preempt (their own PriorityClass) and run as a tenant's pod runs
(with the RuntimeClass only where tenants must name it).

A group whose GPUs NVIDIA's DRA driver allocates (`allocator: dra`) asks for them as its tenants
do: the pod names a ResourceClaimTemplate (`spec.resourceClaims`), one per GPU count, of the
DeviceClass `gpu.nvidia.com` with exactly that many devices, and each container takes the claim
(`resources.claims`), with no `nvidia.com/gpu` limit. The scheduler allocates the claim from the
node's ResourceSlices; the check is the same, against EXPECTED_GPUS, the count the claim asked for.
Where the group's DeviceClass serves plain `nvidia.com/gpu` requests (`dra.extendedResourceName`), a
tenant's plain pod is the path to prove: the Jobs ask for `nvidia.com/gpu` as a device plugin group's
do, and the scheduler makes and allocates their claims itself (Kubernetes' DRAExtendedResource).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests import compute_domains, dra_driver
from gpu_nodes.manifests.device_plugin import (
    image_pull_policy,
    image_pull_secrets,
    plugin_revision,
    runtime_class_field,
    tolerations,
)
from gpu_nodes.manifests.naming import content_hash, dns_label, standard_labels
from gpu_nodes.manifests.priority_class import verification_priority_class_name
from gpu_nodes.vocabulary import (
    CHECK_HASH_ANNOTATION,
    DCGM_CONTAINER,
    DRA_GPU_DRIVER,
    GATE,
    GPU_RESOURCE,
    GROUP_LABEL,
    IMEX_CONTAINER,
    ISOLATION_CONTAINER,
    NCCL_CONTAINER,
    PLUGIN_REVISION_ANNOTATION,
    ROUND_ANNOTATION,
)

APP_NAME = "gpu-verification"
# An unprivileged user: the namespace enforces Pod Security `restricted`.
RUN_AS_USER = 65534

# Counts the devices `nvidia-smi -L` lists, by distinct UUID, and fails unless they are exactly
# the EXPECTED_GPUS this pod was given. A GPU in MIG mode is listed as its MIG devices, indented
# under its own line:
#   GPU 0: NVIDIA A100 80GB PCIe (UUID: GPU-932bfb2c-...)
#     MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-...)
# so a GPU line counts only when no MIG line follows it. Distinct UUIDs, because time-slicing
# can hand one physical GPU out twice: a pod given N time-sliced replicas holds at most N
# physical GPUs, so N distinct UUIDs is also the most it may see. More than it was given is a
# pod that sees other tenants' GPUs: CUDA images carry NVIDIA_VISIBLE_DEVICES=all, which the
# nvidia runtime honours beside (or instead of) the device plugin's list
# (k8s-device-plugin docs/cdi.md; nvidia-container-toolkit
# cmd/nvidia-container-runtime-hook/container_config.go, getDevices).
# With EXPECTED_GPUS=0 (the pod that requests no GPU) a missing nvidia-smi is the answer: the
# nvidia runtime injects nvidia-smi only with GPUs, and the image does not carry one.
# POSIX sh and parameter expansion only: the image's /bin/sh may be dash or busybox, and
# nothing beyond nvidia-smi is assumed to be installed.
_CHECK_SCRIPT = """\
set -eu
if [ "$EXPECTED_GPUS" -eq 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "ok: no GPU visible, none requested"
    exit 0
  fi
  # "No devices were found" (exit 6) is what a container without GPUs should hear.
  listing=$(nvidia-smi -L 2>&1) || true
else
  nvidia-smi
  listing=$(nvidia-smi -L)
fi
uuids=" "
listed=0
gpu=""
uuid_of() { u=${1##*UUID: }; u=${u%%)*}; }
count() {
  listed=$((listed + 1))
  case "$uuids" in *" $1 "*) ;; *) uuids="$uuids$1 " ;; esac
}
while IFS= read -r line; do
  case "$line" in
    "GPU "*) [ -z "$gpu" ] || count "$gpu"; uuid_of "$line"; gpu=$u ;;
    *"MIG "*"Device"*) gpu=""; uuid_of "$line"; count "$u" ;;
  esac
done <<LISTING
$listing
LISTING
[ -z "$gpu" ] || count "$gpu"
set -f -- $uuids
found=$#
if [ "$found" -gt "$EXPECTED_GPUS" ]; then
  echo "nvidia-smi lists $found distinct GPU(s); this pod was given $EXPECTED_GPUS: it sees GPUs it was not given" \\
    "(README: How tenants get their GPUs, isolation)" >&2
  echo "$listing" >&2
  exit 1
fi
if [ "$found" -lt "$EXPECTED_GPUS" ]; then
  if [ "$listed" -gt "$found" ]; then
    echo "nvidia-smi lists $listed GPU(s) but only $found distinct UUID(s) (one GPU handed out twice);" \\
      "this pod was given $EXPECTED_GPUS" >&2
  else
    echo "nvidia-smi lists $found GPU(s); this pod was given $EXPECTED_GPUS" >&2
  fi
  exit 1
fi
if [ "$found" -eq 0 ]; then
  echo "ok: no GPU visible, none requested"
else
  echo "ok: $found distinct GPU(s) visible, $EXPECTED_GPUS requested"
fi
"""


# What a container that asked for no GPU must see: no NVIDIA device node at all. The AI Conformance secure-access
# test looks exactly so (kubernetes-sigs/wg-ai-conformance test/util_test.go: `ls /dev/nvidia*` in `ubuntu:22.04`,
# ACCELERATOR_FOUND or ACCELERATOR_MISSING), for a pod with no claim and for the second container of a pod whose
# first holds the GPU. A pattern that matches nothing stays as written, so `-e` tells a device from none. POSIX sh.
_NO_DEVICE_SCRIPT = """\
set -u
seen=""
for device in /dev/nvidia*; do
  if [ -e "$device" ]; then seen="$seen $device"; fi
done
if [ -n "$seen" ]; then
  echo "this container asked for no GPU and sees$seen: a container must get GPUs only through the device plugin" \\
    "or DRA (README: How tenants get their GPUs, isolation)" >&2
  exit 1
fi
echo "ok: no /dev/nvidia* in a container that asked for no GPU"
"""


# The check scripts live once per group in a ConfigMap, not in every Job: each Job object is
# kept in the state (input and live output), so a script inside it would be stored three
# times per Job.
CHECK_KEY = "check.sh"
NO_DEVICE_KEY = "no-device.sh"
CHECK_DIR = "/gpu-nodes"
# The pod's name for its claim, and the request's name inside the claim: containers name the first.
CLAIM_NAME = "gpus"
RESOURCE_API_VERSION = dra_driver.RESOURCE_API_VERSION


# Under MPS (devicePlugin.sharing.strategy mps), first: a pod given GPUs must be an MPS client. The
# plugin gives each container it allocates CUDA_MPS_PIPE_DIRECTORY and mounts there the pipe directory
# its MPS control daemon made for the resource (k8s-device-plugin internal/plugin/mps.go, updateReponse;
# cmd/mps-control-daemon/mps/daemon.go, Start); the CUDA driver talks to the daemon through the named
# pipes and sockets in that directory (NVIDIA's MPS documentation, CUDA_MPS_PIPE_DIRECTORY). Without the
# variable CUDA runs without MPS, and an empty directory is a daemon that is not there.
_MPS_CHECK = """\
if [ "$EXPECTED_GPUS" -gt 0 ]; then
  pipe=${CUDA_MPS_PIPE_DIRECTORY:-}
  if [ -z "$pipe" ]; then
    echo "the device plugin set no CUDA_MPS_PIPE_DIRECTORY: this pod is no MPS client" \\
      "(devicePlugin.sharing.strategy mps; see the plugin's log on this node)" >&2
    exit 1
  fi
  set -- "$pipe"/*
  if [ ! -e "$1" ]; then
    echo "CUDA_MPS_PIPE_DIRECTORY $pipe holds no pipe of an MPS control daemon: see that daemon's pod on this node" >&2
    exit 1
  fi
  echo "ok: an MPS client of the control daemon at $pipe"
fi
"""


def check_script(group: NodeGroupSpec | None = None) -> str:
    """The group's check script: under MPS the MPS client check first, then the GPU count."""
    if group is None or not group.shares_through_mps:
        return _CHECK_SCRIPT
    head, rest = _CHECK_SCRIPT.split("\n", 1)
    return f"{head}\n{_MPS_CHECK}{rest}"


def check_config_map_name(group: NodeGroupSpec) -> str:
    return dns_label("gpu-verify", group.name, "check")


def check_config_map_manifest(group: NodeGroupSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": check_config_map_name(group),
            "namespace": group.verification.namespace,
            "labels": standard_labels(APP_NAME, group.name, "verification"),
        },
        "data": check_scripts(group),
    }


def check_scripts(group: NodeGroupSpec) -> dict[str, str]:
    """The ConfigMap's scripts: the GPU count (and MPS client) check, and the no-device check."""
    return {CHECK_KEY: check_script(group), NO_DEVICE_KEY: _NO_DEVICE_SCRIPT}


class Role(Enum):
    """What a verification Job proves of its node, each an item of the checklist; the value is its pods'
    `app.kubernetes.io/component`."""

    # Pods given GPUs see exactly them and run a CUDA kernel (workloadSucceeded).
    WORKLOAD = "verification"
    # A pod given no GPU sees none (secureAccess).
    ACCESS = "access"
    # NVIDIA's DCGM diagnostics on every GPU of the node (diagnosticsPassed).
    DIAGNOSTICS = "diagnostics"
    # NCCL's all-reduce across the node's GPUs, held to a bus-bandwidth floor (bandwidthMet).
    PERFORMANCE = "performance"
    # On NVLink-domain machines: a pod given an IMEX channel finds it (imexChannel).
    IMEX = "imex"


# The name each per-node proof Job's slug gives it (`gpu-verify-<group>-<node>-<slug>-<hash>`).
_ROLE_SLUGS = {Role.ACCESS: "access", Role.DIAGNOSTICS: "dcgm", Role.PERFORMANCE: "nccl", Role.IMEX: "imex"}


@dataclass(frozen=True)
class VerificationJob:
    node: str | None  # None: any node of the group
    gpus: int  # how many devices of `resource` the pod requests (and must see)
    manifest: dict[str, Any]
    resource: str = GPU_RESOURCE
    role: Role = Role.WORKLOAD

    @property
    def name(self) -> str:
        name: str = self.manifest["metadata"]["name"]
        return name

    @property
    def slug(self) -> str:
        return request_slug(self.resource, self.gpus) if self.role is Role.WORKLOAD else _ROLE_SLUGS[self.role]


def requests(group: NodeGroupSpec) -> list[tuple[str, int]]:
    """What the workload Jobs ask for: each GPU count in config order, then each MIG resource (mixed).
    A DRA group asks for devices of the DeviceClass `gpu.nvidia.com` instead (unless the class serves
    plain `nvidia.com/gpu` requests), and for no MIG resource: those are the device plugin's names."""
    spec = group.verification
    # Under the DRA driver's dynamic MIG, one device of each profile the group proves, through a claim of its own.
    mig = [(dra_mig_request(profile), 1) for profile in group.dra.mig_profiles] if group.uses_dra else []
    if group.uses_dra and not group.claims_gpus:
        return [(GPU_RESOURCE, gpus) for gpus in spec.gpus_per_pod] + mig
    if group.uses_dra:
        return [(dra_driver.GPU_DEVICE_CLASS, gpus) for gpus in spec.gpus_per_pod] + mig
    # Whole GPUs as the plugin offers them: their shared replicas renamed where renameByDefault says so.
    gpu = group.device_plugin.sharing.resource
    return [(gpu, gpus) for gpus in spec.gpus_per_pod] + list(spec.mig_resources)


def whole_node_request(group: NodeGroupSpec) -> tuple[str, int]:
    """What a pod asks for to hold every GPU of its node whole (DCGM's diagnostics, NCCL's all-reduce): every
    device the node offers, so every replica of a time-sliced GPU (a pod given all of them holds each GPU
    alone); under DRA, a claim of all its GPUs. Only where `NodeGroupSpec.whole_gpus_problem` is None."""
    if group.claims_gpus:
        return dra_driver.GPU_DEVICE_CLASS, group.gpus_per_node
    if group.uses_dra:
        return GPU_RESOURCE, group.gpus_per_node
    sharing = group.device_plugin.sharing
    return sharing.resource, group.gpus_per_node * sharing.replicas


def dra_mig_request(profile: str) -> str:
    """What a workload Job asks of the DRA driver's MIG DeviceClass for one profile: `mig.nvidia.com/1g.10gb`."""
    return f"{dra_driver.MIG_DEVICE_CLASS}/{profile}"


def is_dra_mig(resource: str) -> bool:
    return resource.startswith(f"{dra_driver.MIG_DEVICE_CLASS}/")


def request_slug(resource: str, count: int) -> str:
    """`2gpu`, or `1x-mig-1g-5gb` for nvidia.com/mig-1g.5gb (and for the DRA driver's mig.nvidia.com/1g.5gb): part of
    a DNS label."""
    if resource in (GPU_RESOURCE, dra_driver.GPU_DEVICE_CLASS):
        return f"{count}gpu"
    if is_dra_mig(resource):
        resource = f"mig-{resource.rpartition('/')[2]}"
    return f"{count}x-{resource.rpartition('/')[2].replace('.', '-').replace('_', '-').lower()}"


def proof_roles(group: NodeGroupSpec) -> list[Role]:
    """The per-node Jobs beside the workload: the access check always, DCGM's diagnostics at the group's level,
    NCCL's all-reduce where the group asks for it."""
    roles = [Role.ACCESS]
    roles += [Role.DIAGNOSTICS] if group.runs_diagnostics else []
    roles += [Role.PERFORMANCE] if group.verification.performance.enabled else []
    roles += [Role.IMEX] if imex_channels(group) else []
    return roles


def imex_channels(group: NodeGroupSpec) -> tuple[int, ...]:
    """The IMEX channels a container of the group is given: the device plugin's (devicePlugin.imex.channelIds), or,
    under the DRA driver's ComputeDomains, the one channel a workload claims (allocationMode Single), channel 0 in its
    default `domain` isolation (its DeviceClass compute-domain-default-channel.nvidia.com selects id 0)."""
    if group.uses_dra:
        return (0,) if group.dra.compute_domains else ()
    return group.device_plugin.imex.channel_ids


def proof_jobs_planned(group: NodeGroupSpec) -> list[str]:
    """The slugs of each node's proof Jobs (`proof_roles`), as their resources are named."""
    return [_ROLE_SLUGS[role] for role in proof_roles(group)]


def verification_jobs(group: NodeGroupSpec) -> list[VerificationJob]:
    """The workload Jobs, one per request and per node when `perNode`, in config order; then, per node, the
    proof Jobs of `proof_roles` (first round)."""
    targets: list[str | None] = [node.name for node in group.nodes] if group.verification.per_node else [None]
    workload = [
        VerificationJob(node=node, gpus=count, resource=resource, manifest=job_manifest(group, node, count, resource))
        for node in targets
        for resource, count in requests(group)
    ]
    return workload + [proof_job(group, node.name, role) for node in group.nodes for role in proof_roles(group)]


def proof_job(group: NodeGroupSpec, node: str, role: Role, verification_round: int = 1) -> VerificationJob:
    """One of a node's proof Jobs (`proof_roles`) as planned and built."""
    if role in (Role.DIAGNOSTICS, Role.PERFORMANCE):
        resource, gpus = whole_node_request(group)
    elif role is Role.IMEX and not group.uses_dra:
        # The plugin adds its channels to the containers it gives GPUs: one GPU of the group's.
        resource, gpus = group.device_plugin.sharing.resource, 1
    else:
        resource, gpus = GPU_RESOURCE, 0
    manifest = proof_job_manifest(group, node, role, verification_round)
    return VerificationJob(node=node, gpus=gpus, manifest=manifest, resource=resource, role=role)


def manifest_of(group: NodeGroupSpec, job: VerificationJob, verification_round: int) -> dict[str, Any]:
    """The Job as it runs in `verification_round` (the round its nodes' taints carry)."""
    if job.role is Role.WORKLOAD:
        return job_manifest(group, job.node, job.gpus, job.resource, verification_round)
    assert job.node is not None, "a proof Job belongs to one node"
    return proof_job_manifest(group, job.node, job.role, verification_round)


def claim_template_name(group: NodeGroupSpec, gpus: int) -> str:
    """One template per GPU count: its spec is immutable, and the name says all it holds."""
    return dns_label("gpu-verify", group.name, f"{gpus}gpu")


def claim_template_manifest(group: NodeGroupSpec, gpus: int) -> dict[str, Any]:
    """A ResourceClaimTemplate for exactly `gpus` devices of the DeviceClass `gpu.nvidia.com`, in the
    Jobs' namespace (a pod may name only templates of its own namespace). Kubernetes'
    `staging/src/k8s.io/api/resource/v1/types.go`: `ResourceClaimTemplateSpec.spec` is the claim's
    spec, `DeviceRequest.exactly` an `ExactDeviceRequest` (`deviceClassName`, `allocationMode`
    `ExactCount` with its `count`)."""
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": claim_template_name(group, gpus),
            "namespace": group.verification.namespace,
            "labels": standard_labels(APP_NAME, group.name, "verification"),
        },
        "spec": {"spec": {"devices": {"requests": [dra_driver.exact_gpu_request(CLAIM_NAME, gpus)]}}},
    }


def mig_claim_template_name(group: NodeGroupSpec, profile: str) -> str:
    return dns_label("gpu-verify", group.name, "mig", profile.replace(".", "-").replace("+", "-"))


def mig_claim_template_manifest(group: NodeGroupSpec, profile: str) -> dict[str, Any]:
    """A ResourceClaimTemplate for one MIG device of `profile` of the DeviceClass `mig.nvidia.com`, selected by the
    `profile` attribute the driver publishes, as its guide selects one (kubernetes-sigs/dra-driver-nvidia-gpu
    site/content/docs/guides/gpu-allocation/mig.md, "Select a MIG profile"); under dynamic MIG the driver makes the
    partition when it prepares the claim."""
    selector = f"device.attributes['{DRA_GPU_DRIVER}'].profile == '{profile}'"
    request = {
        "name": CLAIM_NAME,
        "exactly": {
            "deviceClassName": dra_driver.MIG_DEVICE_CLASS,
            "allocationMode": "ExactCount",
            "count": 1,
            "selectors": [{"cel": {"expression": selector}}],
        },
    }
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": mig_claim_template_name(group, profile),
            "namespace": group.verification.namespace,
            "labels": standard_labels(APP_NAME, group.name, "verification"),
        },
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def mig_claim_templates(group: NodeGroupSpec) -> list[tuple[str, dict[str, Any]]]:
    """(profile, template) for each MIG profile a DRA group proves (dra.migProfiles)."""
    if not group.uses_dra:
        return []
    return [(profile, mig_claim_template_manifest(group, profile)) for profile in group.dra.mig_profiles]


def claim_template_counts(group: NodeGroupSpec) -> list[int]:
    """The GPU counts a DRA group's Jobs claim through templates, each once, in config order, then all the node's
    GPUs where its diagnostics or all-reduce hold them; none for a device plugin group, nor for a DRA group whose
    Jobs ask for plain `nvidia.com/gpu`."""
    if not group.claims_gpus:
        return []
    whole = [whole_node_request(group)[1]] if set(proof_roles(group)) & {Role.DIAGNOSTICS, Role.PERFORMANCE} else []
    return list(dict.fromkeys([*(g for g in group.verification.gpus_per_pod if g > 0), *whole]))


def claim_templates(group: NodeGroupSpec) -> list[dict[str, Any]]:
    """The templates a DRA group's Jobs name, one per count of `claim_template_counts`."""
    return [claim_template_manifest(group, gpus) for gpus in claim_template_counts(group)]


def combined_round(rounds: list[int]) -> int:
    """The round of a Job that covers several nodes (group-wide): it runs again when any of theirs goes up."""
    return 1 + sum(r - 1 for r in rounds)


def job_name(group: NodeGroupSpec, node: str | None, slug: str, spec: dict[str, Any]) -> str:
    """Ends in a hash of the Job's spec: a changed Job gets a new name, so Pulumi can create
    the new one before deleting the old, with no race on a name still being deleted."""
    return dns_label("gpu-verify", group.name, *([node] if node else []), slug, content_hash(spec)[:8])


def job_manifest(
    group: NodeGroupSpec, node: str | None, gpus: int, resource: str = GPU_RESOURCE, verification_round: int = 1
) -> dict[str, Any]:
    """A workload Job: its pod given `gpus` of `resource` sees exactly them and runs a CUDA kernel, and its
    second container, given none, sees none."""
    pod_spec = _pod_spec(group, node, _gpu_containers(group, resource, gpus), with_checks=True)
    if is_dra_mig(resource):
        template = mig_claim_template_name(group, resource.rpartition("/")[2])
        pod_spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": template}]
    elif group.claims_gpus:
        pod_spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(group, gpus)}]
    return _job(group, node, request_slug(resource, gpus), Role.WORKLOAD, pod_spec, verification_round)


def proof_job_manifest(group: NodeGroupSpec, node: str, role: Role, verification_round: int = 1) -> dict[str, Any]:
    """One of a node's proof Jobs: the access check's pod asks for no GPU; DCGM's diagnostics and NCCL's
    all-reduce hold every GPU of the node (`whole_node_request`)."""
    if role is Role.ACCESS:
        pod_spec = _pod_spec(group, node, _access_containers(group), with_checks=True)
    elif role is Role.IMEX:
        pod_spec = _pod_spec(group, node, {"containers": [_imex_container(group)]}, with_checks=False)
        if group.uses_dra:
            template = compute_domains.channel_template_name(group)
            pod_spec["resourceClaims"] = [{"name": IMEX_CLAIM_NAME, "resourceClaimTemplateName": template}]
    else:
        resource, gpus = whole_node_request(group)
        tool = _dcgm_container if role is Role.DIAGNOSTICS else _nccl_container
        pod_spec = _pod_spec(group, node, {"containers": [tool(group, resource, gpus)]}, with_checks=False)
        # Both write where they run (DCGM's embedded host engine and its logs, Open MPI's session directory).
        pod_spec["volumes"] = [*pod_spec.get("volumes", []), {"name": "scratch", "emptyDir": {}}]
        if group.claims_gpus:
            pod_spec["resourceClaims"] = [{"name": CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(group, gpus)}]
    return _job(group, node, _ROLE_SLUGS[role], role, pod_spec, verification_round)


def _pod_spec(group: NodeGroupSpec, node: str | None, containers: dict[str, Any], with_checks: bool) -> dict[str, Any]:
    """What every verification pod shares: it never preempts, runs on its group's node past the gate, as a
    tenant's pod runs, unprivileged; with the check scripts mounted where its containers run them."""
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        # Never evict running work (see gpu_nodes/manifests/priority_class.py): the class says so too,
        # as the API server requires the two to agree.
        "priorityClassName": verification_priority_class_name(group),
        "preemptionPolicy": "Never",
        "nodeSelector": {GROUP_LABEL: group.name},
        # The readiness gate too: these pods are what lifts it.
        "tolerations": tolerations((*group.taints, GATE)),
        # As a tenant's pod runs (the nvidia runtime, or CDI, puts nvidia-smi and the GPUs in):
        # with a RuntimeClass only where tenants must name one.
        **runtime_class_field(group.tenant_runtime_class),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "runAsGroup": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        **({"volumes": [{"name": "check", "configMap": {"name": check_config_map_name(group)}}]} if with_checks else {}),
        **image_pull_secrets(group),
        **containers,
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
    return pod_spec


def _job(
    group: NodeGroupSpec, node: str | None, slug: str, role: Role, pod_spec: dict[str, Any], verification_round: int
) -> dict[str, Any]:
    spec = group.verification
    labels = standard_labels(APP_NAME, group.name, role.value)
    job_spec = {
        # Small: a GPU that fails twice will not pass on a third try. DCGM's and NCCL's verdicts are the
        # machine's: a second run tells nothing new.
        "backoffLimit": 1 if role in (Role.WORKLOAD, Role.ACCESS) else 0,
        "activeDeadlineSeconds": spec.timeout_seconds,
        # No ttlSecondsAfterFinished: the cluster would delete the Job and every
        # refresh would report it as drift.
        "template": {
            "metadata": {"labels": labels, "annotations": _template_annotations(group, verification_round)},
            "spec": pod_spec,
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(group, node, slug, job_spec),
            "namespace": spec.namespace,
            "labels": labels,
            # The node's readiness check waits instead, and says why a Job did not succeed.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": job_spec,
    }


def _gpu_containers(group: NodeGroupSpec, resource: str, gpus: int) -> dict[str, Any]:
    """nvidia-smi first: it says how many GPUs the pod sees. Then NVIDIA's CUDA sample runs a kernel
    on them: NVML (nvidia-smi) works where CUDA does not, e.g. error 802 on an NVSwitch machine
    whose fabric is not trained. A failing container leaves the tail of its log as its
    termination message, which the readiness check quotes."""
    spec = group.verification
    return {
        "initContainers": [
            _check_container(
                "nvidia-smi",
                group,
                [
                    {"name": "EXPECTED_GPUS", "value": str(gpus)},
                    # Only nvidia-smi runs here, no CUDA code: the image's CUDA version
                    # requirement must not refuse a node whose driver is older than the image.
                    {"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"},
                ],
                _gpu_basics(group, resource, gpus, "128Mi"),
            )
        ],
        "containers": [
            # The image's own command (vectorAdd), under its own CUDA requirement: preflight has
            # checked the driver against it (--min-cuda).
            # Loading the CUDA driver and runtime takes a few hundred MiB of host memory.
            {"name": "cuda", "image": spec.cuda_image, **_gpu_basics(group, resource, gpus, "512Mi")},
            # AI Conformance's multi-container isolation: the pod's second container, given no GPU, sees none.
            _no_device_container(ISOLATION_CONTAINER, group),
        ],
    }


# The pod's name for its ComputeDomain channel claim.
IMEX_CLAIM_NAME = "imex-channel"


def _imex_container(group: NodeGroupSpec) -> dict[str, Any]:
    """A container of the plain image that lists the IMEX channels it was given, and fails when one is not there:
    `ls` exits 2 naming a path it cannot access (GNU coreutils' ls: "serious trouble (e.g., cannot access
    command-line argument)"), which the pod's termination message then quotes. As NVIDIA's DRA driver's own
    channel-injection example checks it (kubernetes-sigs/dra-driver-nvidia-gpu demo/specs/imex/channel-injection.yaml:
    `ls -la /dev/nvidia-caps-imex-channels`). Under the device plugin the container asks for one GPU, with which the
    plugin adds its channels (k8s-device-plugin internal/plugin/server.go: NVIDIA_IMEX_CHANNELS, the channel's
    device spec or its CDI device); under DRA it takes its ComputeDomain's channel claim."""
    spec = group.verification
    paths = [f"{compute_domains.CHANNEL_DIR}/channel{channel}" for channel in imex_channels(group)]
    if group.uses_dra:
        basics = _container_basics(None, 0, "32Mi", spec.image_pull_policy)
        basics["resources"]["claims"] = [{"name": IMEX_CLAIM_NAME}]
    else:
        basics = _container_basics(group.device_plugin.sharing.resource, 1, "32Mi", spec.image_pull_policy)
    return {"name": IMEX_CONTAINER, "image": spec.plain_image, "command": ["ls", *paths], **basics}


def _no_device_container(name: str, group: NodeGroupSpec) -> dict[str, Any]:
    """A container of the plain image, given no GPU, that fails if it sees any NVIDIA device node."""
    spec = group.verification
    return {
        "name": name,
        "image": spec.plain_image,
        "command": ["/bin/sh", f"{CHECK_DIR}/{NO_DEVICE_KEY}"],
        "volumeMounts": [{"name": "check", "mountPath": CHECK_DIR, "readOnly": True}],
        **_container_basics(None, 0, "32Mi", spec.image_pull_policy),
    }


def _access_containers(group: NodeGroupSpec) -> dict[str, Any]:
    """The pod that asks for no GPU: in the plain image it must see no NVIDIA device, as AI Conformance's
    negative test has it; under strict isolation also in the CUDA image asking for every GPU by its variable."""
    containers = [_no_device_container("plain", group)]
    if group.isolation == "strict":
        containers += _no_gpu_containers(group)["containers"]
    return {"containers": containers}


def _dcgm_container(group: NodeGroupSpec, resource: str, gpus: int) -> dict[str, Any]:
    """`dcgmi diag -r <level> -j` on every GPU of the node. Without `--host`, dcgmi starts DCGM's host engine
    embedded in its own process (NVIDIA/DCGM dcgmi/Diag.cpp, "start an embedded host engine instead"), so the pod
    needs no nv-hostengine of its own and tests exactly the GPUs it was given. Its exit code is DCGM's: 0, or 226
    when a test reported an error (dcgmlib/dcgm_structs.h DCGM_ST_NVVS_ERROR). The JSON document on its stdout is
    what the proof reads (gpu_nodes/proof/dcgm.py)."""
    spec = group.verification
    return {
        "name": DCGM_CONTAINER,
        "image": spec.diagnostics_image,
        "command": ["dcgmi", "diag", "-r", str(group.diagnostics_level), "-j"],
        "env": [{"name": "HOME", "value": SCRATCH_DIR}],
        "volumeMounts": [{"name": "scratch", "mountPath": SCRATCH_DIR}],
        **_tool_basics(group, resource, gpus, "2Gi"),
    }


# nccl-tests' sizes: one size, large enough for NVLink to reach its bus bandwidth (an NVIDIA maintainer: "256M is
# too small to reach peak bandwidth", NVIDIA/nccl-tests issue 212; 8 x H100 reach about 476 GB/s at 4 GiB, issue 290),
# and small enough for every GPU of 16 GB or more (nccl-tests holds the send and receive buffers of each size).
ALL_REDUCE_BYTES = "4G"
# Where the NGC PyTorch image keeps Open MPI and nccl-tests' MPI builds (NVIDIA/aicr validators/performance/testdata/
# h100/gke/runtime.yaml, v0.11.1: `/usr/local/bin/${TEST_TYPE}_mpi`, `/usr/local/mpi/bin/mpirun`).
MPIRUN = "/usr/local/mpi/bin/mpirun"
ALL_REDUCE_PERF = "/usr/local/bin/all_reduce_perf_mpi"


def _nccl_container(group: NodeGroupSpec, resource: str, gpus: int) -> dict[str, Any]:
    """nccl-tests' all-reduce across every GPU of the node in one process (`-g`, the README's single-node form),
    started by mpirun as one rank. Its exit code is nonzero where values came back wrong (src/common.cu, main:
    testNumResults); the bus bandwidth the proof holds to its floor is read from its log (gpu_nodes/proof/nccl.py)."""
    spec = group.verification
    count = group.gpus_per_node
    size = ALL_REDUCE_BYTES
    return {
        "name": NCCL_CONTAINER,
        "image": spec.performance.image,
        "command": [MPIRUN, "-np", "1", ALL_REDUCE_PERF, "-b", size, "-e", size, "-f", "2", "-g", str(count)],
        "env": [{"name": "HOME", "value": SCRATCH_DIR}, {"name": "TMPDIR", "value": SCRATCH_DIR}],
        "volumeMounts": [{"name": "scratch", "mountPath": SCRATCH_DIR}],
        **_tool_basics(group, resource, gpus, "4Gi"),
    }


# The writable directory of the DCGM and NCCL containers (an emptyDir).
SCRATCH_DIR = "/tmp"


def _tool_basics(group: NodeGroupSpec, resource: str, gpus: int, memory: str) -> dict[str, Any]:
    """DCGM's and NCCL's containers: all the node's GPUs, unprivileged, with a writable root (both write beside
    their binaries' defaults), the log's tail as the message of a failure."""
    basics = _gpu_basics(group, resource, gpus, memory)
    basics["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return basics


def _gpu_basics(group: NodeGroupSpec, resource: str, gpus: int, memory: str) -> dict[str, Any]:
    """A GPU container's basics: the GPUs as a limit of `resource`, or under DRA the pod's claim
    (both containers take the one claim, so the CUDA sample runs on the GPUs nvidia-smi counted)."""
    pull_policy = group.verification.image_pull_policy
    if not (group.claims_gpus or is_dra_mig(resource)):
        return _container_basics(resource, gpus, memory, pull_policy)
    basics = _container_basics(None, 0, memory, pull_policy)
    basics["resources"]["claims"] = [{"name": CLAIM_NAME}]
    return basics


def _no_gpu_containers(group: NodeGroupSpec) -> dict[str, Any]:
    """Under strict isolation: a container that requests no GPU, in the CUDA image, asking for every GPU
    by the env var CUDA images carry (`NVIDIA_VISIBLE_DEVICES=all`), as any tenant's pod may. The
    hardened toolkit ignores it in an unprivileged container (nvidia-container-toolkit
    cmd/nvidia-container-runtime-hook/container_config.go and internal/modifier/cdi.go: devices
    from the env var only when privileged or accept-nvidia-visible-devices-envvar-when-unprivileged),
    so the pod must see no GPU."""
    spec = group.verification
    return {
        "containers": [
            _check_container(
                "no-gpu",
                group,
                [
                    {"name": "EXPECTED_GPUS", "value": "0"},
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                    # nvidia-smi comes with the utility capability: where GPUs are injected, it is too.
                    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
                    {"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"},
                ],
                _container_basics(None, 0, "128Mi", spec.image_pull_policy),
            )
        ]
    }


def _check_container(name: str, group: NodeGroupSpec, env: list[dict[str, str]], basics: dict[str, Any]) -> dict[str, Any]:
    """A container that runs the group's check script (nvidia-smi against EXPECTED_GPUS)."""
    return {
        "name": name,
        "image": group.verification.image,
        "command": ["/bin/sh", f"{CHECK_DIR}/{CHECK_KEY}"],
        "volumeMounts": [{"name": "check", "mountPath": CHECK_DIR, "readOnly": True}],
        "env": env,
        **basics,
    }


def _container_basics(resource: str | None, gpus: int, memory: str, pull_policy: str | None) -> dict[str, Any]:
    """What both containers share: the GPUs (kubelet hands the init container's to the next), small
    limits, Pod Security `restricted`, the log's tail as the message of a failure, the pull policy."""
    return {
        **image_pull_policy(pull_policy),
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {**({resource: str(gpus)} if resource else {}), "memory": memory},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def _template_annotations(group: NodeGroupSpec, verification_round: int) -> dict[str, str]:
    # Round 1 adds nothing: a Job's name ends in its spec's hash (job_name), and an annotation on
    # every first round would rename, and so replace, the Jobs of every stack (pinned by tests/golden/*.json).
    revision = dra_driver.plugin_revision(group) if group.uses_dra else plugin_revision(group)
    annotations = {PLUGIN_REVISION_ANNOTATION: revision, CHECK_HASH_ANNOTATION: content_hash(check_scripts(group))}
    return annotations | ({ROUND_ANNOTATION: str(verification_round)} if verification_round > 1 else {})
