"""The group's `verification` section: the Jobs that prove a tenant's pod gets its GPUs (images,
GPU counts, MIG resources, timeout), and how its values are read; how many GPUs a Job may ask for is
the group's to weigh (gpu_nodes/config/node_group.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from gpu_nodes.config.checks import CUDA_IN_TAG, PullPolicy, image_setting, image_tag, namespace_setting, pull_policy_setting
from gpu_nodes.config.fields import Check, between, section, setting
from gpu_nodes.config.problems import Problem, Problems

# The images NVIDIA still publishes, amd64 and arm64 (GH200, GB200), chosen as docs/tenants.md, "CUDA" says.
# nvidia-smi comes from the host and its pod sets NVIDIA_DISABLE_REQUIRE (the toolkit checks no
# NVIDIA_REQUIRE_CUDA then: nvidia-container-toolkit internal/config/image/cuda_image.go), so the
# image's CUDA version gates no driver; what matters is how long its tag lives. NVIDIA's CUDA image
# support policy (container-images/cuda doc/support-policy.md, doc/supported-tags.md) keeps only
# the latest point release of each CUDA version, ends a version's images with the driver branch it
# shipped with, and deletes a tag six months after either: 13.0.2 is superseded by 13.0.3
# (dist/13.0.3/ubuntu2404/base/Dockerfile, CUDA_VERSION=13.0.3, amd64 and arm64 stages). CUDA 13.0
# shipped with R580, long-term support to June 2028 (DRIVER_BRANCHES in gpu_nodes/advisories.py);
# the newer 13.1 (R590), 13.2 (R595, production to March 2027) and 13.3 (R610, ended August 2026)
# shipped with branches that end sooner, and 13.4's images could not be read.
DEFAULT_VERIFICATION_IMAGE = "nvcr.io/nvidia/cuda:13.0.3-base-ubuntu24.04"
# NVIDIA's CUDA sample vectorAdd: a real kernel on the GPUs, the sample the GPU Operator's validator
# builds too. The tag NVIDIA's own docs still run: the device plugin's README and the Confidential
# Containers guide ("Run a Sample Workload", its v1.1.0 docs); k8s-samples builds on newer CUDA
# bases (deployments/container/Dockerfile), but no NVIDIA doc names a newer vectoradd tag. Built for
# linux/amd64 and linux/arm64 (NVIDIA/k8s-samples deployments/container/multi-arch.mk). CUDA 12.5:
# under the toolkit's legacy mode the image starts on R535, R550 and every driver of CUDA 12.5 or
# later (its NVIDIA_REQUIRE_CUDA, the CUDA table in 35-check-cuda.sh).
DEFAULT_CUDA_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
DEFAULT_VERIFICATION_NAMESPACE = "gpu-verification"
DEFAULT_VERIFICATION_TIMEOUT = 600
# NVIDIA's DCGM image, whose `dcgmi diag` the diagnostics Job runs: the release the GPU Operator v26.7.0
# deploys (deployments/gpu-operator/values.yaml `dcgm.version`, tag v26.7.0), past bulletin 5857's fix (4.5.3,
# gpu_nodes/advisories.py DCGM_ADVISORIES). From 4.6.0 NVIDIA builds it on Ubuntu 24.04; no 4.5.3 Ubuntu 22.04
# tag was published.
DEFAULT_DIAGNOSTICS_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
# NVIDIA's NGC PyTorch image, which ships nccl-tests' MPI builds (/usr/local/bin/all_reduce_perf_mpi) and Open MPI
# (/usr/local/mpi/bin/mpirun): the image NVIDIA's AI Cluster Runtime runs its all-reduce test in (NVIDIA/aicr
# validators/performance/testdata/h100/gke/runtime.yaml, v0.11.1) and NVIDIA's CloudAI names for its NCCL workloads.
DEFAULT_PERFORMANCE_IMAGE = "nvcr.io/nvidia/pytorch:25.06-py3"
# A plain image, no NVIDIA variable in it, for the pods that must see no GPU: the image of the AI Conformance
# secure-access probe (kubernetes-sigs/wg-ai-conformance test/util_test.go, `ubuntu:22.04`).
DEFAULT_PLAIN_IMAGE = "docker.io/library/ubuntu:22.04"

# `dcgmi diag -r <level>`: 1 quick deployment checks (seconds; in DCGM 4.x the `software` test only), 2 adds `pcie`
# and `memory` (about two minutes), 3 the long hardware and stress tests (about 15 minutes): NVIDIA/DCGM
# nvvs/src/NvidiaValidationSuite.cpp FillTestVectors (v4.6.0) and the dcgmi diag reference. NVIDIA's guidance is
# "Level 1 tests to use as a readiness metric · Level 2 tests to use as an epilogue on failure · Level 3 and
# Level 4 tests to be run by an administrator as post-mortem" (DCGM User Guide, "DCGM Diagnostics"): level 1 is
# the default of a group whose GPUs a pod can hold whole (`NodeGroupSpec.diagnostics_possible`).
DIAGNOSTICS_OFF = 0
DIAGNOSTICS_LEVELS = (1, 2, 3)
# How `verification.diagnostics` is written: a level, or off (YAML 1.1's bare `off` reads as false, taken too).
DiagnosticsSetting = Literal["off", 1, 2, 3]
DEFAULT_DIAGNOSTICS_LEVEL = 1
# How long each level runs at most, as DCGM's reference gives it with room to spare: the Jobs' deadline
# (verification.timeoutSeconds) must leave it that long.
DIAGNOSTICS_SECONDS = {1: 60, 2: 300, 3: 1800}
# What intra-node all-reduce needs: two GPUs or more in the pod.
MIN_PERFORMANCE_GPUS = 2


_MIG_RESOURCE = re.compile(r"nvidia\.com/mig-[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def read_gpus_per_pod(problems: Problems, key: str, counts: list[object] | None) -> tuple[int, ...]:
    """GPU counts, each a whole number once; how many a node offers is the group's to weigh."""
    gpus_per_pod: list[int] = []
    for index, count in enumerate(counts or []):
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            problems.add(f"{key}[{index}]", count, "expected a whole number of at least 1")
        elif count in gpus_per_pod:
            problems.add(f"{key}[{index}]", count, "each GPU count may be listed once")
        else:
            gpus_per_pod.append(count)
    return tuple(gpus_per_pod)


def read_mig_resources(problems: Problems, key: str, raw: dict[object, object] | None) -> tuple[tuple[str, int], ...]:
    """MIG resources the Jobs request, each a name and a count; whether the group may ask for them is
    its device plugin's MIG strategy's to say."""
    resources: list[tuple[str, int]] = []
    for resource, count in sorted((raw or {}).items(), key=lambda item: str(item[0])):
        if not isinstance(resource, str) or not _MIG_RESOURCE.fullmatch(resource) or len(resource) > 11 + 63:
            problems.add(
                f"{key}.{resource}", resource, "expected a MIG resource name nvidia.com/mig-<profile>, e.g. nvidia.com/mig-1g.5gb"
            )
        elif not isinstance(count, int) or isinstance(count, bool) or count < 1:
            problems.add(f"{key}.{resource}", count, "expected a whole number of at least 1")
        else:
            resources.append((resource, count))
    return tuple(resources)


def read_diagnostics(problems: Problems, key: str, value: object) -> int | None:
    """A DCGM diagnostics level, `off` as 0; None when not set (the group chooses). YAML 1.1 reads a bare `off`
    as false, so false is off too."""
    if value is None:
        return None
    if value in ("off", False):
        return DIAGNOSTICS_OFF
    assert isinstance(value, int), value  # its check let only a level through
    return value


def _is_level(value: object) -> bool:
    return value in ("off", False) or (isinstance(value, int) and not isinstance(value, bool) and value in DIAGNOSTICS_LEVELS)


def read_bandwidth(problems: Problems, key: str, value: float | None) -> float | None:
    """GB/s as a float, whether YAML wrote 450 or 450.0."""
    return None if value is None else float(value)


@section
class PerformanceSpec:
    """`verification.performance`: intra-node NCCL all-reduce on each node, held to a bus-bandwidth floor."""

    enabled: bool = setting(
        "enabled",
        "run nccl-tests' `all_reduce_perf` on each node of two GPUs or more, holding all its GPUs, and hold its bus "
        'bandwidth to the floor (see "The proof")',
        default=False,
    )
    min_bus_bandwidth: float | None = setting(
        "minBusBandwidth",
        "the floor of the all-reduce bus bandwidth (`busbw`, out of place, at the largest size), in GB/s; without it, "
        "the floor NVIDIA's and the clouds' figures give for the node's GPU model and count (gpu_nodes/bandwidth_floors.py)",
        default=None,
        default_text="from the GPU model",
        check=Check(
            lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 100_000,
            "expected a number of GB/s above 0",
            words="(GB/s)",
        ),
        parse=read_bandwidth,
    )
    image: str = image_setting(
        "pinned image with nccl-tests' `all_reduce_perf_mpi` and Open MPI's `mpirun` (NVIDIA's NGC PyTorch image)",
        DEFAULT_PERFORMANCE_IMAGE,
    )


@section
class VerificationSpec:
    image: str = image_setting("pinned image with `nvidia-smi`", DEFAULT_VERIFICATION_IMAGE)
    cuda_image: str = image_setting(
        "pinned image whose own command runs a CUDA kernel (NVIDIA's CUDA sample `vectorAdd`), after `nvidia-smi`; "
        'the `cudaX.Y` in its tag is the CUDA version preflight weighs against the driver and the toolkit mode (see "CUDA")',
        DEFAULT_CUDA_IMAGE,
        key="cudaImage",
    )
    namespace: str = namespace_setting("shared by groups; Pod Security `restricted`", DEFAULT_VERIFICATION_NAMESPACE)
    gpus_per_pod: tuple[int, ...] = setting(
        "gpusPerPod",
        "one Job per count requesting `nvidia.com/gpu`; `[1, 2]` adds a multi-GPU check; each ≤ `gpusPerNode` "
        "(≤ 7 × `gpusPerNode` with `migStrategy: single`); may be `[]` when `migResources` or `dra.migProfiles` is set",
        default=[1],
        written=Sequence[int],
        parse=read_gpus_per_pod,
    )
    # With migStrategy mixed: (resource, count) pairs, e.g. ("nvidia.com/mig-1g.5gb", 1).
    mig_resources: tuple[tuple[str, int], ...] = setting(
        "migResources",
        "only with `migStrategy: mixed`, and then required: MIG resource → devices per Job, e.g. "
        '`{"nvidia.com/mig-1g.5gb": 1}`; one Job per resource, each count ≤ 7 × `gpusPerNode`',
        default=None,
        written=Mapping[str, int],
        parse=read_mig_resources,
    )
    per_node: bool = setting(
        "perNode",
        "one Job per node and count, pinned to that node; `false`: per count, any node of the group",
        default=True,
    )
    timeout_seconds: int = setting(
        "timeoutSeconds",
        "how long `pulumi up` waits for each Job (also its `activeDeadlineSeconds`) and for each node's GPU count to be exact",
        default=DEFAULT_VERIFICATION_TIMEOUT,
        check=between(30, 86_400, "expected 30 to 86400 seconds"),
    )
    image_pull_policy: PullPolicy | None = pull_policy_setting("the verification pods'")
    # As written: 0 for off, None where the group chooses (`NodeGroupSpec.diagnostics_level`).
    diagnostics: int | None = setting(
        "diagnostics",
        "the level of NVIDIA's DCGM diagnostics (`dcgmi diag -r <level>`) each node runs, in a pod holding all its "
        "GPUs, before its gate lifts: 1 the deployment checks (seconds), 2 also PCIe and memory (about two minutes), 3 "
        'the long hardware and stress tests (about 15 minutes); `off` on a MIG or MPS group (see "The proof")',
        default=None,
        default_text="`1` (`off` where no pod can hold the GPUs whole)",
        check=Check(_is_level, "expected off, 1, 2 or 3"),
        written=DiagnosticsSetting | None,
        parse=read_diagnostics,
    )
    diagnostics_image: str = image_setting(
        "pinned image of NVIDIA's DCGM with `dcgmi`: a release past NVIDIA's DCGM bulletins (4.5.3 or later)",
        DEFAULT_DIAGNOSTICS_IMAGE,
        key="diagnosticsImage",
    )
    performance: PerformanceSpec = setting("performance", "", row=False)
    plain_image: str = image_setting(
        "pinned image without NVIDIA's variables, with `/bin/sh` and `ls`: the containers that ask for no GPU and must see "
        'none (see "The proof")',
        DEFAULT_PLAIN_IMAGE,
        key="plainImage",
    )

    def cross_checks(self) -> Iterator[Problem]:
        # With mixed MIG, a group whose GPUs are all in MIG mode has no nvidia.com/gpu to ask for (nor, under the DRA
        # driver's dynamic MIG, an Ampere GPU in MIG mode a whole device: the node group's check, node_group.py).
        level = self.diagnostics or DIAGNOSTICS_OFF
        if level and self.timeout_seconds < DIAGNOSTICS_SECONDS[level]:
            yield Problem(
                "timeoutSeconds",
                self.timeout_seconds,
                f"expected at least {DIAGNOSTICS_SECONDS[level]} with diagnostics {level}: DCGM's level {level} runs up to "
                "that long (its dcgmi diag reference), and each Job's deadline is this timeout",
            )

    @property
    def cuda_version(self) -> str | None:
        """The CUDA version the CUDA image is built for, from its tag (`vectoradd-cuda11.7.1` -> 11.7)."""
        found = CUDA_IN_TAG.search(image_tag(self.cuda_image))
        return f"{int(found[1])}.{int(found[2])}" if found else None
