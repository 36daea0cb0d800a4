"""tools/gpu-machine: what a real GPU machine's tools print, judged as the node proof judges it. The tools run only
on a GPU machine; here their records are the recorded outputs the proof's readers are tested on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.proof.recorded import FIXTURES, h100_with_fb_used

ROOT = Path(__file__).resolve().parent.parent
H100 = ["--gpus", "8", "--model", "NVIDIA H100 80GB HBM3"]


def records(tmp_path: Path, dcgm: str, nccl: str) -> Path:
    shutil.copy(FIXTURES / dcgm, tmp_path / "dcgmi-diag.json")
    shutil.copy(FIXTURES / nccl, tmp_path / "all_reduce_perf.txt")
    (tmp_path / "metrics.prom").write_text(h100_with_fb_used())
    return tmp_path


def judge(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "tools/gpu-machine/judge.py", str(path), *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)


NVLS_8 = "all_reduce_perf-h100-sxm-8gpu-single-node-nvls.txt"


def test_a_healthy_machines_records_pass_every_item(tmp_path):
    result = judge(records(tmp_path, "dcgmi-diag-r3-8gpu-pass.composed.json", NVLS_8), *H100)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "diagnosticsPassed: pass" in result.stdout and "bandwidthMet: pass" in result.stdout, result.stdout
    assert "metricsExported: pass" in result.stdout, result.stdout


def test_a_failed_dcgm_test_fails_the_run_in_dcgms_words(tmp_path):
    result = judge(records(tmp_path, "dcgmi-diag-r1-dcgm4.2.3-gb10-persistence-fail.json", NVLS_8), *H100)
    assert result.returncode == 1, result.stdout
    assert "diagnosticsPassed: FAIL" in result.stdout and "Persistence mode for GPU 0 is disabled" in result.stdout, result.stdout


def test_a_machine_without_gpus_is_told_what_record_needs():
    """Real bash on this machine, which has no NVIDIA driver: the script stops before it runs anything."""
    result = subprocess.run(["bash", "tools/gpu-machine/record.sh"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "needs nvidia-smi and docker or podman" in result.stderr, result.stderr

