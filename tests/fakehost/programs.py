"""The fake machine's stand-in programs (tools/fakehost/standins.py), loaded for tests, and readers that take their
output apart the way a parser of the real programs' output would: the DCGM document with json.loads, the
all_reduce_perf table by whitespace (nccl-tests' columns move between versions), the exporter's page line by line."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from tests.sshd import fakehost

STANDINS_PY = Path(__file__).resolve().parents[2] / "tools" / "fakehost" / "standins.py"


def _load() -> ModuleType:
    # By path, as tests/sshd.py loads fakehost.py (which this module shares: it is imported first).
    if "standins" in sys.modules:
        return sys.modules["standins"]
    spec = importlib.util.spec_from_file_location("standins", STANDINS_PY)
    assert spec is not None and spec.loader is not None, STANDINS_PY
    module = importlib.util.module_from_spec(spec)
    sys.modules["standins"] = module
    spec.loader.exec_module(module)
    return module


standins = _load()
assert standins.fakehost is fakehost  # one fake-machine module for both


def run(program: str, args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs tools/fakehost/programs/<program> as the registrar would, with only `env` (and a PATH)."""
    full = {"PATH": f"{standins.PROGRAMS}:/usr/bin:/bin", **env}
    return subprocess.run([str(standins.PROGRAMS / program), *args], env=full, capture_output=True, text=True, timeout=60)


@dataclass(frozen=True)
class NcclRow:
    size: int
    count: int
    out_of_place_busbw: float
    in_place_busbw: float
    wrong: tuple[str, str]


def nccl_rows(output: str) -> list[NcclRow]:
    rows = []
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 13 and fields[0].isdigit():
            rows.append(NcclRow(int(fields[0]), int(fields[1]), float(fields[7]), float(fields[11]), (fields[8], fields[12])))
    return rows


def nccl_footer(output: str, name: str) -> str:
    found = re.search(rf"^# {re.escape(name)}\s*: (.*)$", output, re.M)
    assert found, f"no `# {name}` line in:\n{output}"
    return found.group(1).strip()


@dataclass(frozen=True)
class Sample:
    field: str
    labels: dict[str, str]
    value: str


def metrics_samples(page: str) -> list[Sample]:
    """The page's samples: `FIELD{k="v",...} VALUE` lines (no escapes in these label values)."""
    samples = []
    for line in page.splitlines():
        if line.startswith("#") or not line:
            continue
        found = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line)
        assert found, f"not a sample line: {line!r}"
        labels = dict(re.findall(r'(\w+)="([^"]*)"', found.group(2)))
        samples.append(Sample(found.group(1), labels, found.group(3)))
    return samples
