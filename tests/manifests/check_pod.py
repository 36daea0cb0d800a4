"""Runs a verification container's check the way its pod runs it: real sh, the group's ConfigMap
copy of the script, the container's own env, and a stand-in nvidia-smi (or none at all)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.manifests.verification import (
    CHECK_DIR,
    CHECK_KEY,
    Role,
    VerificationJob,
    check_config_map_manifest,
    verification_jobs,
)
from tests.specs import group_spec


def pod(job: Any) -> dict[str, Any]:
    return job.manifest["spec"]["template"]["spec"]


def workload_jobs(group: NodeGroupSpec) -> list[VerificationJob]:
    """The group's Jobs whose pods are given GPUs and run nvidia-smi and the CUDA sample."""
    return [job for job in verification_jobs(group) if job.role is Role.WORKLOAD]


def jobs_of(group: NodeGroupSpec, role: Role) -> list[VerificationJob]:
    """The group's Jobs of one proof role (the access check, DCGM's, NCCL's), one per node."""
    return [job for job in verification_jobs(group) if job.role is role]


def whole_gpus(count: int) -> str:
    return "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n" for i in range(count))


def run_container(
    tmp_path: Path,
    container: dict[str, Any],
    listing: str | None,
    group: NodeGroupSpec | None = None,
    allocated: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs container's command with nvidia-smi -L printing listing; listing None: no nvidia-smi on
    PATH, as in a container the nvidia runtime put no GPU into. group: whose ConfigMap's script
    (default: a plain group's); allocated: the env the device plugin's Allocate adds (under MPS,
    CUDA_MPS_PIPE_DIRECTORY)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if listing is not None:
        (tmp_path / "listing").write_text(listing)
        stub = bin_dir / "nvidia-smi"
        stub.write_text(f'#!/bin/sh\nif [ "${{1:-}}" = "-L" ]; then cat "{tmp_path}/listing"; fi\nexit 0\n')
        stub.chmod(0o755)
    environment = {**{e["name"]: e["value"] for e in container["env"]}, **(allocated or {})}
    # The system's tools, but never the system's own nvidia-smi: only the stand-in, or none.
    environment["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    script = tmp_path / CHECK_KEY
    script.write_text(check_config_map_manifest(group or group_spec())["data"][CHECK_KEY])
    command = [script.as_posix() if part == f"{CHECK_DIR}/{CHECK_KEY}" else part for part in container["command"]]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=30)


def run_in_own_dev(tmp_path: Path, script: str, devices: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """Runs `script` under real sh in a mount namespace of its own whose /dev holds only `devices` (empty
    files stand in for the device nodes: the check asks only whether they are there). Needs root and unshare,
    as the fake machines do (tools/fakehost)."""
    (tmp_path / "check.sh").write_text(script)
    made = " && ".join(f"touch /dev/{name}" for name in devices) or "true"
    inner = f"mount -t tmpfs none /dev && {made} && sh {tmp_path / 'check.sh'}"
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner]
    return subprocess.run(command, capture_output=True, text=True, timeout=30)
