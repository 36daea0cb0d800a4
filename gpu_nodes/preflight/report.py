"""The preflight script's report, read from its command's stdout, and the checks it lists.

The script prints one JSON object (10-report.sh, `emit`). A real run's stdout always holds it:
when the script fails, the command fails and nothing reads its stdout. Under Pulumi's mocks,
whose outputs are the resource's inputs (Pulumi's testing guide), stdout is None in an update (an
output the mocks leave out resolves to None, pulumi/runtime/rpc.py `resolve_properties`) and unknown
in a preview, where the program's readers are not run at all (pulumi/output.py `apply`); a team's
own mocks may answer anything. Such an answer is read as a machine not yet checked, never parsed
blindly: no GPU facts, no devices, and a report that says so (`NOT_CHECKED`).
"""

from __future__ import annotations

import json
from typing import Any

# Every check the script runs, in the order its report lists them (90-main.sh `main`); the
# script's tests hold the two together (tests/scripts/test_90_main.py).
CHECKS = (
    "driver",
    "gpu-count",
    "gpu-model",
    "driver-version",
    "driver-advisories",
    "cuda",
    "mig",
    "fabric",
    "gpu-health",
    "mps",
    "container-toolkit",
    "runtime",
    "runtime-entry",
    "cdi",
    "cdi-generation",
    "isolation",
    "dev-char-links",
    "device-plugin-socket",
    "kubelet-feature-gates",
    "dra-kubelet",
    "dra-driver-version",
    "dra-toolkit",
    "dra-cdi",
    "dra-feature-gates",
    "dra-compute-domains",
    "dra-mig",
    "nvlink-domain",
    "imex-daemon",
    "imex-peers",
    "nri",
)

# A node's `preflight` entry in the report when its machine has not been checked (yet): beside
# `{"skipped": true}` (the group runs no preflight) and the summary of a report.
NOT_CHECKED: dict[str, Any] = {"checked": False}


def passing_report() -> dict[str, Any]:
    """What a machine that passes prints (10-report.sh's object, trimmed to what parse_report and
    facts_from_report read): one H100, containerd with nvidia as its default runtime. This
    repository's mocked runs (the tests', the benchmark's) answer every preflight with it, and the
    golden state holds what it gives; gpu_nodes/testing.py builds a team's answers from it."""
    return {
        "ok": True,
        "hostname": "gpu-host",
        "driverVersion": "550.54.15",
        "cudaVersion": "12.4",
        "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "memoryMiB": 81559}],
        "runtime": {"name": "containerd", "nvidiaDefault": True, "runtimeClassNeeded": False},
        "checks": [{"name": "driver", "ok": True, "detail": "550.54.15"}],
    }


def read_report(stdout: object) -> dict[str, Any] | None:
    """The script's report in a preflight command's stdout; None when stdout holds none: no value
    (Pulumi's mocks), not text, not JSON, or JSON that is not the report's shape."""
    if not isinstance(stdout, str):
        return None
    try:
        report = json.loads(stdout)
    except ValueError:
        return None
    return report if is_report(report) else None


def is_report(value: object) -> bool:
    """What every version of the script has printed, since its first: `ok`, `gpus` (each with its
    index, name, uuid and memoryMiB) and `checks` (each with its name and ok); the fields that came
    later are optional, so a report an older script left in the state still reads. Each field, where
    present, has the type its readers take it for (parse_report, facts.py, proof/dra.py)."""
    if not isinstance(value, dict) or not isinstance(value.get("ok"), bool):
        return False
    gpus, checks = value.get("gpus"), value.get("checks")
    if not isinstance(gpus, list) or not all(_typed(gpu, _GPU) for gpu in gpus):
        return False
    if not isinstance(checks, list) or not all(_is_check(check) for check in checks):
        return False
    features = value.get("gpuFeatures")
    return _typed(value, _REPORT) and (features is None or _typed(features, _FEATURES))


# Each field of an object and the type it has where present and not null; every version of the
# script has printed these so (10-report.sh `emit`, and its history).
_GPU: dict[str, type] = {"index": int, "name": str, "uuid": str, "memoryMiB": int}
_REPORT: dict[str, type] = {
    "hostname": str,
    "driverVersion": str,
    "cudaVersion": str,
    "driverAdvisories": dict,
    "runtime": dict,
    "kubelet": dict,
    "toolkit": dict,
    "mig": dict,
    "gpuFeatures": dict,
}
_FEATURES: dict[str, type] = {"machine": str, "migCapable": bool, "clique": str, "computeCapability": str}


def _typed(value: object, fields: dict[str, type]) -> bool:
    """An object whose fields are each absent, null, or of their type (a bool is no number here)."""
    if not isinstance(value, dict):
        return False
    for key, kind in fields.items():
        field = value.get(key)
        if field is not None and (not isinstance(field, kind) or (kind is int and isinstance(field, bool))):
            return False
    return True


def _is_check(check: object) -> bool:
    """Named and judged: the readers index both (parse_report)."""
    named = isinstance(check, dict) and isinstance(check.get("name"), str) and isinstance(check.get("ok"), bool)
    return named and _typed(check, {"detail": str})
