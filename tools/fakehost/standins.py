#!/usr/bin/env python3
"""Stand-ins for the programs NVIDIA's images run in a pod on a GPU node, answering for a fake machine.

The local cluster has no containers: tools/cluster/gpu-registrar.py plays kubelet and the container
runtime for the pods that prove a node, and runs a container's command against these programs
(tools/fakehost/programs/, each a link to this file, named as the real program; the name it is run
by decides what it does):

  dcgmi diag -r N -j             DCGM 4.x diagnostics as JSON (NVIDIA/DCGM v4.6.0 dcgmi/Diag.cpp)
  mpirun -np P PROGRAM ARGS...   Open MPI's launcher, as far as a one-node run needs it
  all_reduce_perf[_mpi] ARGS...  nccl-tests v2.19.6 all_reduce_perf (NVIDIA/nccl-tests src/common.cu, util.cu)
  ls /dev/nvidia-caps-imex-channels/channelN...  the IMEX channels the container was given (GNU ls's answer)

and serves dcgm-exporter's metrics page through `exporter_page` (the registrar serves it on the
exporter pod's IP; `standins.py metrics NODE` prints it). Each answers from recorded real output
(tools/fakehost/fixtures/README.md names every source), shaped to the machine:

- The machine is the node's fake machine (tools/fakehost) when its sshd runs: its GPUs are what its
  nvidia-smi stub prints for `--query-gpu` (so UUIDs, model and driver are those preflight reads),
  and its mode file (tools/fakehost/break.sh) can break it: `persistence-mode-off` fails DCGM's
  software test on every GPU, `p2p-disabled` gives all_reduce_perf the bus bandwidth of a recorded
  run without peer-to-peer, `metrics-stopped` leaves the exporter's page without GPU lines.
- A node without a running fake machine (the benchmarks' kwok nodes) is a healthy machine of the
  node's `gpu-nodes.dev/simulated-gpus` GPUs, as its fake machine would be (fakehost.MachineSpec
  with hostname = node name; `gpu-nodes.dev/simulated-gpu-model` picks the other model).
- A container sees only the GPUs it was given: NVIDIA_VISIBLE_DEVICES, UUIDs as the device plugin
  hands them to the nvidia runtime (its default `envvar` strategy and `uuid` device ids), `all` for
  every GPU; inside, NVML and CUDA number them from 0.

What the runner puts in the environment (the registrar does; a test may too): GPU_NODES_NODE (the
node), GPU_NODES_FAKEHOSTS (where tools/fakehost keeps its machines), GPU_NODES_SIMULATED_GPUS and
GPU_NODES_GPU_MODEL (the node's annotations, for a node without a machine), GPU_NODES_IMAGE (the
container's image: the DCGM version dcgmi reports comes from its tag), NVIDIA_VISIBLE_DEVICES, HOSTNAME.

Stdlib only (the fake machine's own module is loaded by path, as tests/sshd.py does).
"""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
PROGRAMS = HERE / "programs"

ENV_NODE = "GPU_NODES_NODE"
ENV_FAKEHOSTS = "GPU_NODES_FAKEHOSTS"
ENV_GPUS = "GPU_NODES_SIMULATED_GPUS"
ENV_MODEL = "GPU_NODES_GPU_MODEL"
ENV_IMAGE = "GPU_NODES_IMAGE"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"

# The fake machine's modes these programs answer to (fakehost.MODES); the others leave them healthy.
PERSISTENCE_MODE_OFF = "persistence-mode-off"
P2P_DISABLED = "p2p-disabled"
METRICS_STOPPED = "metrics-stopped"


def _load_fakehost() -> ModuleType:
    # By path: tools/ is not a package (tests/sshd.py loads it the same way).
    if "fakehost" in sys.modules:
        return sys.modules["fakehost"]
    spec = importlib.util.spec_from_file_location("fakehost", HERE / "fakehost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fakehost"] = module
    spec.loader.exec_module(module)
    return module


fakehost = _load_fakehost()


class StandinError(Exception):
    """The machine cannot answer (its driver does not, a device it was given is not there): what a real
    program would fail on earlier, in the container runtime; not simulated further."""


# ------------------------------------------------------------------------------ the machine


@dataclass(frozen=True)
class Gpu:
    """One GPU as nvidia-smi lists it on the machine."""

    index: int  # on the machine (nvidia-smi, the exporter); inside a container GPUs count from 0
    name: str
    uuid: str
    driver: str
    memory_mib: int

    @property
    def pci_bus_id(self) -> str:
        return str(fakehost.pci_bus_id(self.index))


@dataclass(frozen=True)
class Machine:
    node: str
    gpus: tuple[Gpu, ...]
    mode: str = "healthy"


def parse_query_lines(text: str) -> tuple[Gpu, ...]:
    """nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv,noheader."""
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 5:
            name = ", ".join(fields[1:-3])
            gpus.append(Gpu(int(fields[0]), name, fields[-3], fields[-2], int(fields[-1].split()[0])))
    return tuple(gpus)


def fake_machine(fakehosts: Path, node: str) -> Machine | None:
    """The node's fake machine, when its sshd runs: its GPUs as its nvidia-smi prints them, its mode."""
    host = fakehost.FakeHost(state=fakehosts / node, host="", port=0, spec=fakehost.MachineSpec(hostname=node))
    if host.running_pid() is None:
        return None
    smi = host.machine / "usr/local/sbin/nvidia-smi"
    query = [str(smi), "--query-gpu=index,name,uuid,driver_version,memory.total", "--format=csv,noheader"]
    done = subprocess.run(query, capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        raise StandinError(f"the machine's nvidia-smi fails (exit {done.returncode}): {done.stdout.strip()}")
    try:
        mode = host.mode_file.read_text().strip() or "healthy"
    except OSError:
        mode = "healthy"
    return Machine(node, parse_query_lines(done.stdout), mode)


def simulated_machine(node: str, gpus: int, model: str = "") -> Machine:
    """The healthy machine a node without a fake machine stands for: what its fake machine would print."""
    spec = fakehost.MachineSpec(hostname=node, gpus=gpus)
    if model and model != spec.gpu_name:
        other = fakehost.other_model(spec)
        if model != other.gpu_name:
            raise StandinError(f"no fake machine has GPU model {model!r} (known: {spec.gpu_name}, {other.gpu_name})")
        spec = other
    return Machine(node, parse_query_lines(fakehost.query_gpu_lines(spec)))


def machine_from_env(env: Mapping[str, str]) -> Machine:
    node = env.get(ENV_NODE, "")
    if not node:
        raise StandinError(f"{ENV_NODE} is not set: run by tools/cluster/gpu-registrar.py, which names the node")
    fakehosts = env.get(ENV_FAKEHOSTS)
    machine = fake_machine(Path(fakehosts), node) if fakehosts else None
    if machine is not None:
        return machine
    try:
        gpus = int(env.get(ENV_GPUS, "0"))
    except ValueError:
        raise StandinError(f"{ENV_GPUS} must be a number, not {env.get(ENV_GPUS)!r}") from None
    return simulated_machine(node, gpus, env.get(ENV_MODEL, ""))


def visible_gpus(machine: Machine, visible: str | None) -> tuple[Gpu, ...]:
    """The machine's GPUs a container sees: NVIDIA_VISIBLE_DEVICES lists UUIDs or indices (or all, none, void);
    unset, none (no runtime hook gives it any)."""
    value = (visible or "").strip()
    if value in ("", "none", "void"):
        return ()
    if value == "all":
        return machine.gpus
    by_id = {g.uuid: g for g in machine.gpus} | {str(g.index): g for g in machine.gpus}
    wanted = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [w for w in wanted if w not in by_id]
    if unknown:
        # nvidia-container-cli refuses such a device before the container starts.
        raise StandinError(f"unknown device: {', '.join(unknown)} (the machine has {', '.join(g.uuid for g in machine.gpus)})")
    return tuple(sorted({by_id[w] for w in wanted}, key=lambda g: g.index))


# ------------------------------------------------------------------------------ dcgmi diag
#
# What `dcgmi diag -r N -j` prints, read from NVIDIA/DCGM v4.6.0:
#   dcgmi/Diag.cpp HelperJsonBuildOutput / HelperJsonAddResult / HelperJsonAddTestSummary / HelperJsonAddEntities /
#     HelperJsonAddMetadata: the document's shape; a test's results one per entity, a summary with every error of
#     the test; `serial_num` only where the serial is not blank; Json::Value::toStyledString (jsoncpp's styled
#     writer: tab indents, " : ", keys sorted) -> `jsoncpp_styled` below
#   nvvs/src/NvidiaValidationSuite.cpp FillTestVectors: the tests of each level (suite short/medium/long/xlong)
#   nvvs/include/PluginStrings.h: each test's name and category
#   nvvs/plugin_src/nccl_tests/NcclTestsPlugin.cpp: skipped unless DCGM_NCCL_TESTS_BIN_PATH names its binary
#   nvvs/src/Software.cpp checkPersistenceMode, addError ("<subtest>: <message>"), SW_SUBTEST_PERSISTENCE;
#     dcgmlib/dcgm_errors.h DCGM_FR_PERSISTENCE_MODE (29) with its _MSG and _NEXT; dcgmlib/src/dcgm_errors.c: its
#     severity DCGM_ERROR_CONFIG (5) and category DCGM_FR_EC_SOFTWARE_OTHER (8)
#   dcgmi/main_dcgmi.cpp returns the dcgmReturn_t: DCGM_ST_NVVS_ERROR (-30) when a test reported an error, 226
#     as an exit status (dcgmlib/dcgm_structs.h; DCGM's own tests check for 226)
# The recorded failure in fixtures/ (DCGM 4.2.3, one GB10) has that very warning, ids and exit status.
# Not simulated: eud and cpu_eud (level 3, only when dcgmi runs as root), rist (only with DCGM_RIST_BIN_PATH),
# --iterations, the plain-text table (no -j), a host engine named with --host.

DCGM_VERSION = "4.6.0"  # when the image's tag names none (the spec's default image is dcgm:4.6.0-1-ubuntu24.04)
DCGM_ST_NVVS_ERROR_EXIT = 226  # DCGM_ST_NVVS_ERROR (-30) as an exit status
DCGM_ST_BADPARAM_EXIT = 255  # DCGM_ST_BADPARAM (-1)
LEVELS = {"1": 1, "quick": 1, "short": 1, "2": 2, "medium": 2, "3": 3, "long": 3, "4": 4, "xlong": 4}
# (name, category, the first level that runs it), in the order the suite runs them: software, then the
# hardware, integration and performance classes of FillTestVectors.
DIAG_TESTS = (
    ("software", "Deployment", 1),
    ("memory", "Hardware", 2),
    ("diagnostic", "Hardware", 3),
    ("nvbandwidth", "Hardware", 3),
    ("nccl_tests", "Hardware", 3),
    ("memtest", "Stress", 4),
    ("pulse_test", "Hardware", 4),
    ("pcie", "Integration", 2),
    ("memory_bandwidth", "Stress", 3),
    ("targeted_stress", "Stress", 3),
    ("targeted_power", "Stress", 3),
)
SKIPPED_TESTS = {"nccl_tests"}  # DCGM_NCCL_TESTS_BIN_PATH is not set in the pod
PERSISTENCE_MODE_ERROR = 29  # DCGM_FR_PERSISTENCE_MODE
PERSISTENCE_MODE_CATEGORY = 8  # DCGM_FR_EC_SOFTWARE_OTHER
PERSISTENCE_MODE_SEVERITY = 5  # DCGM_ERROR_CONFIG
# PCI device ids as DCGM reports them (`device_id`, lower-case hex): the PCI ID database's entries for the
# models the fake machines have (10de:20b2 "GA100 [A100 SXM4 80GB]", 10de:2331 "GH100 [H100 PCIe]").
DEVICE_IDS = {"NVIDIA A100-SXM4-80GB": "20b2", "NVIDIA H100 PCIe": "2331"}


def persistence_mode_warning(gpu: int) -> str:
    """The software test's error for a GPU whose persistence mode is off, as addError words it."""
    message = f"Persistence mode for GPU {gpu} is disabled."  # DCGM_FR_PERSISTENCE_MODE_MSG
    next_steps = 'Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'  # ..._NEXT
    return f"Persistence Mode: {message} {next_steps}"


def dcgm_version(image: str) -> str:
    """The DCGM release of an image tag such as nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04."""
    tag = image.rsplit("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    found = re.match(r"(\d+\.\d+\.\d+)(-|$)", tag)
    return found.group(1) if found else DCGM_VERSION


def diag_document(gpus: Sequence[Gpu], level: int, mode: str, version: str) -> tuple[dict, int]:
    """The JSON document of `dcgmi diag -r <level> -j` for the GPUs a container sees, and dcgmi's exit status."""
    failed = mode == PERSISTENCE_MODE_OFF
    categories: dict[str, list[dict]] = {}
    for name, category, first in DIAG_TESTS:
        if level < first:
            continue
        status = "Skip" if name in SKIPPED_TESTS else "Pass"
        results, errors = [], []
        for local, _ in enumerate(gpus):
            result: dict = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": local, "status": status}
            if failed and name == "software":
                warning = {
                    "error_category": PERSISTENCE_MODE_CATEGORY,
                    "error_id": PERSISTENCE_MODE_ERROR,
                    "error_severity": PERSISTENCE_MODE_SEVERITY,
                    "warning": persistence_mode_warning(local),
                }
                result |= {"status": "Fail", "warnings": [warning]}
                errors.append(warning)
            results.append(result)
        summary: dict = {"status": "Fail" if errors else status}
        if errors:
            summary["warnings"] = errors
        test = {"name": name, "test_summary": summary}
        if results:
            test["results"] = results
        categories.setdefault(category, []).append(test)
    driver = gpus[0].driver if gpus else ""
    metadata = {"version": version} | ({"Driver Version Detected": driver} if driver else {})
    document: dict = {
        "DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t} for c, t in categories.items()]},
        "metadata": metadata,
    }
    if gpus:
        entities = [{"device_id": DEVICE_IDS.get(g.name, "0000"), "entity_id": i} for i, g in enumerate(gpus)]
        document["entity_groups"] = [{"entities": entities, "entity_group": "GPU", "entity_group_id": 1}]
    failed_any = any(t["test_summary"]["status"] == "Fail" for tests in categories.values() for t in tests)
    return document, DCGM_ST_NVVS_ERROR_EXIT if failed_any else 0


def _json_string(text: str) -> str:
    """jsoncpp's valueToQuotedString (emitUTF8 off): \\" \\\\ \\b \\f \\n \\r \\t, other control and non-ASCII as \\uXXXX."""
    escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for ch in text:
        if ch in escapes:
            out.append(escapes[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in _utf16(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def jsoncpp_styled(value: object) -> str:
    """`Json::Value::toStyledString()` of jsoncpp 1.9 (BuiltStyledStreamWriter, indentation "\\t", colon " : ",
    right margin 74): object keys sorted, an array on one line `[ a, b ]` when it holds no non-empty
    container and fits the margin, else one element per line; a container that is an object member's value
    starts on its own line. Ends with a newline."""
    out: list[str] = []
    _styled_value(value, 0, out, indented=True)
    return "".join(out) + "\n"


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return _json_string(str(value))


def _styled_value(value: object, depth: int, out: list[str], indented: bool) -> None:
    def with_indent(text: str, at: int, already: bool) -> None:
        out.append(text if already else "\n" + "\t" * at + text)

    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        with_indent("{", depth, indented)
        keys = sorted(value)
        for n, key in enumerate(keys):
            with_indent(_json_string(key), depth + 1, False)
            out.append(" : ")
            _styled_value(value[key], depth + 1, out, indented=False)
            if n < len(keys) - 1:
                out.append(",")
        with_indent("}", depth, False)
    elif isinstance(value, list):
        if not value:
            out.append("[]")
            return
        containers = any(isinstance(v, (dict, list)) and v for v in value)
        if not containers:
            rendered = [_scalar(v) if not isinstance(v, (dict, list)) else ("{}" if isinstance(v, dict) else "[]") for v in value]
            if len(value) * 3 < 74 and 4 + (len(value) - 1) * 2 + sum(map(len, rendered)) < 74:
                out.append("[ " + ", ".join(rendered) + " ]")
                return
            with_indent("[", depth, indented)
            for n, text in enumerate(rendered):
                with_indent(text, depth + 1, False)
                if n < len(rendered) - 1:
                    out.append(",")
            with_indent("]", depth, False)
            return
        with_indent("[", depth, indented)
        for n, item in enumerate(value):
            out.append("\n" + "\t" * (depth + 1))
            _styled_value(item, depth + 1, out, indented=True)
            if n < len(value) - 1:
                out.append(",")
        with_indent("]", depth, False)
    else:
        out.append(_scalar(value))


def dcgmi(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, int]:
    """`dcgmi diag -r N -j` (also --run, --json): output and exit status."""
    if not argv or argv[0] != "diag":
        return f"dcgmi stand-in: only `diag` is simulated, not {' '.join(argv)!r}\n", DCGM_ST_BADPARAM_EXIT
    level, as_json, rest = None, False, list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg in ("-r", "--run") and rest:
            level = LEVELS.get(rest.pop(0).lower())
        elif arg.startswith("--run="):
            level = LEVELS.get(arg.split("=", 1)[1].lower())
        elif arg in ("-j", "--json"):
            as_json = True
        elif arg in ("-v", "--verbose"):
            continue
        else:
            return f"dcgmi stand-in: option {arg!r} is not simulated\n", DCGM_ST_BADPARAM_EXIT
    if level is None or not as_json:
        return "dcgmi stand-in: simulated are -r 1|2|3|4 (or quick, short, medium, long, xlong) with -j\n", DCGM_ST_BADPARAM_EXIT
    machine = machine_from_env(env)
    gpus = visible_gpus(machine, env.get(VISIBLE_DEVICES))
    document, status = diag_document(gpus, level, machine.mode, dcgm_version(env.get(ENV_IMAGE, "")))
    return jsoncpp_styled(document), status


# ------------------------------------------------------------------------------ all_reduce_perf
#
# nccl-tests v2.19.6 (NVIDIA/nccl-tests, tag v2.19.6): options and defaults in src/common.cu (getopt string,
# minBytes/maxBytes 32M, stepBytes 1M, stepFactor 1, warmup_iters 1, iters 20, agg_iters 1, datacheck 1, parsesize
# with binary K/M/G), the sizes loop of TimeTest, the memory limit of run() ("Reducing maxBytes"), the result codes
# of src/common.h; the lines in src/util.cu (writeDeviceReport, writeResultHeader, writeBenchmarkLinePreamble,
# writeBenchmarkLineBody with getFloatStr, writeResultFooter, finalizeFooter, writeErrors); src/all_reduce.cu:
# count = bytes / 4 for float, algbw = bytes / time, busbw = algbw * 2(n-1)/n. Exit 0 when no value is wrong and
# NCCL_TESTS_MIN_BW is unset.
# The numbers: a DGX A100's four GPUs on NVSwitch, and the same with NCCL_P2P_DISABLE=1 (fixtures/README.md). Each
# size takes the bus bandwidth recorded at the nearest recorded size (1-8 GiB), in and out of place, for any GPU
# count (busbw is what the fabric moves: NVIDIA/nccl-tests doc/PERFORMANCE.md); algbw = busbw * n / 2(n-1) and the
# time follow. A real run is slower than that at small sizes, where latency rules.

NCCL_TESTS_VERSION = "2.19.6"
# NCCL's version code as a recorded nccl-tests 2.18.3 run prints it (fixtures/README.md).
NCCL_VERSION_CODE = 23005
TEST_NOT_IMPLEMENTED = 5
TEST_INVALID_USAGE = 6
GIB = 1 << 30
# The line of main()'s TESTCHECK(result) in src/common.cu at v2.19.6, which names it on failure.
MAIN_TESTCHECK_LINE = 1454
SHORT_OPTIONS = "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:"
LONG_OPTIONS = {
    "nthreads": "t", "ngpus": "g", "minbytes": "b", "maxbytes": "e", "stepbytes": "i", "stepfactor": "f",
    "iters": "n", "agg_iters": "m", "warmup_iters": "w", "run_cycles": "N", "parallel_init": "p",
    "per_iter_timing": "I", "per_iter_skip": "K", "check": "c", "op": "o", "datatype": "d", "root": "r",
    "blocking": "z", "stream_null": "y", "timeout": "T", "cudagraph": "G", "report_cputime": "C",
    "report_timestamps": "S", "output_file": "J", "average": "a", "local_register": "R", "cta_policy": "x",
    "device_implementation": "D", "device_cta_count": "V", "memory": "M", "unalign": "u",
}  # fmt: skip
SIMULATED_OPTIONS = set("tgbeifnwcod")


@dataclass(frozen=True)
class RecordedRow:
    size: int
    out_of_place_busbw: float
    in_place_busbw: float


def recorded_rows(name: str) -> tuple[RecordedRow, ...]:
    """The result rows of a recorded all_reduce_perf table: size and the two bus bandwidths (GB/s)."""
    rows = []
    for line in (FIXTURES / name).read_text().splitlines():
        fields = line.split()
        if fields and not line.startswith("#"):
            rows.append(RecordedRow(int(fields[0]), float(fields[7]), float(fields[11])))
    return tuple(rows)


HEALTHY_RUN = "nccl-dgx-a100-4gpu-nvswitch.table.txt"
P2P_DISABLED_RUN = "nccl-dgx-a100-4gpu-p2p-disabled.table.txt"


def parse_size(text: str) -> float:
    """src/common.cu parsesize: a number with an optional K, M or G (binary); -1 for anything else."""
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]?)\S*", text)
    if not found:
        return -1.0
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(found.group(2).lower())
    return -1.0 if units is None else float(found.group(1)) * units


def float_str(value: float, width: int) -> str:
    """src/util.cu getFloatStr: two decimals, one, none, then an exponent, whichever fits the width."""
    for precision in (2, 1, 0):
        text = f"{value:{width}.{precision}f}"
        if len(text) <= width:
            return text
    return f"{value:{width}.{1 if width >= 7 else 0}e}"[:width]


def bus_factor(ranks: int) -> float:
    return 2 * (ranks - 1) / ranks


def measured(rows: Sequence[RecordedRow], size: int, ranks: int, in_place: bool) -> tuple[float, float, float]:
    """Time (us), algbw and busbw (GB/s) of `size` bytes on `ranks` GPUs: the bus bandwidth recorded at the nearest
    recorded size, what the fabric moves whatever the GPU count; algbw and time follow from it (src/all_reduce.cu
    AllReduceGetBw). One GPU moves nothing over the fabric (busbw 0): it takes the time of two."""
    nearest = min(rows, key=lambda r: abs(math.log2(max(size, 1)) - math.log2(r.size)))
    busbw = nearest.in_place_busbw if in_place else nearest.out_of_place_busbw
    algbw = busbw / bus_factor(max(ranks, 2))
    time_us = size / 1e3 / algbw if algbw > 0 else 0.0
    return time_us, algbw, busbw if ranks > 1 else 0.0


@dataclass
class NcclOptions:
    threads: int = 1
    gpus: int = 1
    min_bytes: int = 32 << 20
    max_bytes: int = 32 << 20
    step_bytes: int = 1 << 20
    step_factor: int = 1
    iters: int = 20
    warmup: int = 1
    check: int = 1


def nccl_options(argv: Sequence[str]) -> NcclOptions | str:
    """The options, or the message nccl-tests (or this stand-in) stops with."""
    opts, args = NcclOptions(), list(argv)
    while args:
        arg = args.pop(0)
        if arg.startswith("--"):
            name, _, value = arg[2:].partition("=")
            letter = LONG_OPTIONS.get(name)
            if letter is None:
                return f"unrecognized option '{arg}'"
            if not value:
                if not args:
                    return f"option '{arg}' requires an argument"
                value = args.pop(0)
        elif arg.startswith("-") and len(arg) > 1:
            letter, value = arg[1], arg[2:]
            if letter not in SHORT_OPTIONS.replace(":", "") or letter == "h":
                return f"invalid option -- '{letter}'"
            if not value:
                if not args:
                    return f"option requires an argument -- '{letter}'"
                value = args.pop(0)
        else:
            continue  # getopt leaves operands alone; nccl-tests reads none
        if letter not in SIMULATED_OPTIONS:
            return f"all_reduce_perf stand-in: option -{letter} is not simulated"
        if letter in "bei":
            size = parse_size(value)
            if size < 0:
                what = {"b": "minbytes", "e": "maxbytes", "i": "stepBytes"}[letter]
                return f"invalid size specified for '{what}'"
            setattr(opts, {"b": "min_bytes", "e": "max_bytes", "i": "step_bytes"}[letter], int(size))
        elif letter == "o" and value != "sum" or letter == "d" and value != "float":
            return f"all_reduce_perf stand-in: only -o sum -d float are simulated, not -{letter} {value}"
        elif letter in "tgfnwc":
            try:
                number = int(value, 0)
            except ValueError:
                number = 0
            field = {"t": "threads", "g": "gpus", "f": "step_factor", "n": "iters", "w": "warmup", "c": "check"}[letter]
            setattr(opts, field, number)
    return opts


def sizes(opts: NcclOptions) -> list[int]:
    """TimeTest's benchmark loop: from minBytes up to maxBytes, times the step factor or plus the step bytes."""
    out, size = [], opts.min_bytes
    while size <= opts.max_bytes and (out == [] or size != out[-1]):
        out.append(size)
        size = size * opts.step_factor if opts.step_factor > 1 else size + opts.step_bytes
        if size == 0:
            break
    return out


def all_reduce_perf(program: str, argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, str, int]:
    """all_reduce_perf's stdout, stderr and exit status on this machine, as rank 0 of OMPI_COMM_WORLD_SIZE."""
    parsed = nccl_options(argv)
    if isinstance(parsed, str):
        return "", f"{program}: {parsed}\n", TEST_INVALID_USAGE
    machine = machine_from_env(env)
    gpus = visible_gpus(machine, env.get(VISIBLE_DEVICES))
    procs = max(int(env.get("OMPI_COMM_WORLD_SIZE", "1") or 1), 1)
    hostname = (env.get("HOSTNAME") or os.uname().nodename).split(".")[0]
    return all_reduce_report(program, parsed, gpus, machine.mode, procs, hostname, os.getpid())


def all_reduce_report(
    program: str, opts: NcclOptions, gpus: Sequence[Gpu], mode: str, procs: int = 1, hostname: str = "localhost", pid: int = 1
) -> tuple[str, str, int]:
    """What rank 0 of `procs` processes on one host prints (stdout, stderr) and its exit status, with these GPUs."""
    out = [
        f"# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers={NCCL_VERSION_CODE} nccl-library={NCCL_VERSION_CODE}\n",
        f"# Collective test starting: {program}\n",
        f"# nThread {opts.threads} nGpus {opts.gpus} minBytes {opts.min_bytes} maxBytes {opts.max_bytes} "
        f"step: {opts.step_factor if opts.step_factor > 1 else opts.step_bytes}"
        f"({'factor' if opts.step_factor > 1 else 'bytes'}) warmup iters: {opts.warmup} iters: {opts.iters} "
        f"agg iters: 1 validation: {opts.check} graph: 0 unalign: 0\n",
        "#\n",
        "# Using devices\n",
    ]
    per_proc = opts.threads * opts.gpus
    if per_proc < 1:
        return "", f"{program}: invalid number of GPUs per process: -t {opts.threads} -g {opts.gpus}\n", TEST_INVALID_USAGE
    if procs * per_proc > len(gpus):
        failure = (
            f"Invalid number of GPUs: {procs * per_proc} requested but only {len(gpus)} were found.\n"
            "Please check the number of processes and GPUs per process.\n"
        )
        out.append(f" .. {hostname} pid {pid}: Test failure common.cu:{MAIN_TESTCHECK_LINE}\n")
        return "".join(out), failure, TEST_NOT_IMPLEMENTED
    for proc in range(procs):
        for i in range(per_proc):
            device = proc * per_proc + i  # one host: localRank = proc
            bus = int(gpus[device].pci_bus_id.split(":")[1], 16)
            out.append(
                f"#  Rank {proc * per_proc + i:2d} Group {0:2d} Pid {pid:6d} on {hostname:>10s} "
                f"device {device:2d} [{0:04x}:{bus:02x}:{0:02x}] {gpus[device].name}\n"
            )
    max_mem = min(g.memory_mib for g in gpus) << 20
    reserve = min(-(-max_mem // (16 * GIB)) * GIB, 4 * GIB)
    mem_max_bytes = (max_mem - reserve - GIB) // (3 if opts.check else 2)
    if opts.max_bytes > mem_max_bytes:
        opts = replace(opts, max_bytes=mem_max_bytes, min_bytes=min(opts.min_bytes, mem_max_bytes))
        out.append(f"#\n# Reducing maxBytes to {opts.max_bytes} due to memory limitation\n")
    out += [
        "#\n",
        f"# {'':>10s}  {'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}           out-of-place                       in-place          \n",
        f"# {'size':>10s}  {'count':>12s}  {'type':>8s}  {'redop':>6s}  {'root':>6s}  {'time':>7s}  {'algbw':>6s}  "
        f"{'busbw':>6s}  {'#wrong':>6s}  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s}  {'#wrong':>6s} \n",
        f"# {'(B)':>10s}  {'(elements)':>12s}  {'':>8s}  {'':>6s}  {'':>6s}  {'(us)':>7s}  {'(GB/s)':>6s}  "
        f"{'(GB/s)':>6s}  {'':>6s}  {'(us)':>7s}  {'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>6s} \n",
    ]
    rows = recorded_rows(P2P_DISABLED_RUN if mode == P2P_DISABLED else HEALTHY_RUN)
    ranks = procs * per_proc
    busbws = []
    for size in sizes(opts):
        count = size // 4
        nbytes = count * 4
        line = f"{nbytes:12d}  {count:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}"
        for in_place in (False, True):
            time_us, algbw, busbw = measured(rows, nbytes, ranks, in_place)
            busbws.append(busbw)
            wrong = f"{0:6g}" if opts.check else "   N/A"
            line += f"  {float_str(time_us, 7):>7s}  {float_str(algbw, 6):>6s}  {float_str(busbw, 6):>6s}  {wrong}"
        out.append(line + "\n")
    average = sum(busbws) / len(busbws) if busbws else 0.0
    out += [
        f"# {'Out of bounds values':<20s} : 0 OK\n",
        f"# {'Avg bus bandwidth':<20s} : {average:g} \n",
        "#\n",
        f"# Collective test concluded: {program}\n",
        "#\n",
        "\n",
    ]
    return "".join(out), "", 0


# ------------------------------------------------------------------------------ mpirun
#
# Open MPI's mpirun, as far as one node needs it: -np/-n/-c/--np, the flags that take no value that one-node
# runs pass, -x NAME[=VALUE], --mca KEY VALUE; the program (a path inside the image: found among the stand-ins by
# its file name) runs once as rank 0 of the world size with Open MPI's OMPI_COMM_WORLD_* variables, and its
# status is mpirun's. Rank 0 prints every rank's lines in nccl-tests (PRINT is rank 0's), so the other ranks are
# not run.

MPIRUN_VALUE_OPTIONS = {"-np", "-n", "-c", "--np", "--n", "-x", "--map-by", "--bind-to", "--rank-by", "-H", "--host", "-N"}
MPIRUN_FLAGS = {"--allow-run-as-root", "--oversubscribe", "--tag-output", "--timestamp-output", "-q", "--quiet"}


def mpirun(argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]] | str:
    """The program's argv and environment, or mpirun's complaint."""
    args, procs, extra = list(argv), 1, {}
    while args and args[0].startswith("-"):
        arg = args.pop(0)
        if arg == "--mca":
            if len(args) < 2:
                return "mpirun: --mca needs a key and a value"
            del args[:2]
        elif arg in MPIRUN_VALUE_OPTIONS:
            if not args:
                return f"mpirun: {arg} needs a value"
            value = args.pop(0)
            if arg in ("-np", "-n", "-c", "--np", "--n"):
                if not value.isdigit() or int(value) < 1:
                    return f"mpirun: {arg} needs a positive number, not {value!r}"
                procs = int(value)
            elif arg == "-x":
                name, eq, given = value.partition("=")
                extra[name] = given if eq else env.get(name, "")
        elif arg not in MPIRUN_FLAGS:
            return f"mpirun stand-in: option {arg!r} is not simulated"
    if not args:
        return "mpirun: no executable was specified"
    program = PROGRAMS / Path(args[0]).name
    if not program.exists():
        return f"mpirun was unable to launch the specified application as it could not access or execute an executable:\n\nExecutable: {args[0]}"  # noqa: E501
    child = dict(env) | extra
    child |= {"OMPI_COMM_WORLD_SIZE": str(procs), "OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}
    child["OMPI_COMM_WORLD_LOCAL_SIZE"] = str(procs)
    return [str(program), *args[1:]], child


# ------------------------------------------------------------------------------ dcgm-exporter's page
#
# What dcgm-exporter 4.6.0-4.8.3 serves on /metrics, read from NVIDIA/dcgm-exporter (commit d5e5f51, "Rename
# Hostname label to hostname", the 4.6.0-4.8.3 line):
#   internal/pkg/rendermetrics/render_metrics.go gpuMetricsFormat: per field `# HELP`, `# TYPE`, then one line per
#     GPU with labels gpu, UUID, pci_bus_id, device (nvidia<index>), modelName, hostname, the label-type fields
#     (DCGM_FI_DRIVER_VERSION) and attributes (the XID field's err_code and err_msg)
#   internal/pkg/collector/gpu_collector.go toMetric / toString: integers as %d, doubles as %f; a blank value
#     (a field the GPU does not report) is left out, and a field with no value on any GPU prints nothing at all
#   internal/pkg/collector/xid_errors.go: err_msg of XID 0, "No Error"
#   internal/pkg/hostname/hostname.go: hostname is NODE_NAME, else the container's host name (the pod's name)
#   etc/default-counters.csv: the fields the image collects (fixtures/dcgm-exporter-default-counters.csv)
# The values are an idle GPU's: GPU_TEMP, POWER_USAGE, GPU_UTIL and MEM_COPY_UTIL per GPU index from a recorded
# scrape of an 8 x H100 node; clocks, memory temperature and framebuffer from a recorded `nvidia-smi -q` of an idle
# H100 SXM; zero for the error counters and the other utilizations of an idle GPU. Left out, as blank: the fields
# no recording gives a value for (total energy, NVLink bandwidth, vGPU licence, the profiling fields). Families
# come in the CSV's order (the exporter's own order is a Go map's). In mode metrics-stopped every GPU field reads
# blank, and the page is empty.

METRICS_RECORDING = "dcgm-exporter-metrics-h100x8.prom"
DRIVER_VERSION_LABEL = "DCGM_FI_DRIVER_VERSION"
XID_FIELD = "DCGM_FI_DEV_XID_ERRORS"
# tests/scripts/fixtures/nvidia-smi-q-h100-sxm5-fabric-completed.txt: Clocks SM 345 MHz, Memory 2619 MHz; Memory
# Current Temp 36 C; FB Memory Usage Reserved 454 MiB, Used 1 MiB.
IDLE_VALUES = {
    "DCGM_FI_DEV_SM_CLOCK": 345,
    "DCGM_FI_DEV_MEM_CLOCK": 2619,
    "DCGM_FI_DEV_MEMORY_TEMP": 36,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
    "DCGM_FI_DEV_ENC_UTIL": 0,
    "DCGM_FI_DEV_DEC_UTIL": 0,
    XID_FIELD: 0,
    "DCGM_FI_DEV_FB_USED": 1,
    "DCGM_FI_DEV_FB_RESERVED": 454,
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0,
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 0,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0,
}


@dataclass(frozen=True)
class Counter:
    field: str
    prom_type: str
    help: str


def default_counters() -> tuple[Counter, ...]:
    """The collector CSV's fields (comment lines and blank ones skipped), as the exporter reads them."""
    counters = []
    for row in csv.reader((FIXTURES / "dcgm-exporter-default-counters.csv").read_text().splitlines()):
        if row and not row[0].lstrip().startswith("#") and len(row) >= 3:
            counters.append(Counter(row[0].strip(), row[1].strip(), ",".join(row[2:]).strip()))
    return tuple(counters)


def recorded_values() -> dict[str, list[str]]:
    """Field -> the recorded scrape's values, by GPU index."""
    values: dict[str, dict[int, str]] = {}
    for line in (FIXTURES / METRICS_RECORDING).read_text().splitlines():
        found = re.match(r'^(\w+)\{gpu="(\d+)".*\} (\S+)$', line)
        if found:
            values.setdefault(found.group(1), {})[int(found.group(2))] = found.group(3)
    return {field: [by_gpu[i] for i in sorted(by_gpu)] for field, by_gpu in values.items()}


def field_value(field: str, gpu: Gpu, recorded: Mapping[str, list[str]]) -> str | None:
    """The value the exporter prints for an idle GPU, or None where it reads blank."""
    if field in recorded:
        values = recorded[field]
        return values[gpu.index % len(values)]
    if field == "DCGM_FI_DEV_FB_FREE":
        return str(gpu.memory_mib - IDLE_VALUES["DCGM_FI_DEV_FB_RESERVED"] - IDLE_VALUES["DCGM_FI_DEV_FB_USED"])
    if field in IDLE_VALUES:
        return str(IDLE_VALUES[field])
    return None


def exporter_page(machine: Machine, hostname: str) -> str:
    """The /metrics page of the machine's dcgm-exporter (every GPU of the machine)."""
    if machine.mode == METRICS_STOPPED:
        return ""
    counters = default_counters()
    recorded = recorded_values()
    labels = {c.field for c in counters if c.prom_type == "label"}
    out = []
    for counter in counters:
        if counter.prom_type == "label":
            continue
        lines = []
        for gpu in machine.gpus:
            value = field_value(counter.field, gpu, recorded)
            if value is None:
                continue
            extra = {DRIVER_VERSION_LABEL: gpu.driver} if DRIVER_VERSION_LABEL in labels else {}
            if counter.field == XID_FIELD:
                extra |= {"err_code": value, "err_msg": "No Error" if value == "0" else "Unknown Error"}
            text = (
                f'{counter.field}{{gpu="{gpu.index}",UUID="{gpu.uuid}",pci_bus_id="{gpu.pci_bus_id}",'
                f'device="nvidia{gpu.index}",modelName="{gpu.name}",hostname="{hostname}"'
            )
            text += "".join(f',{k}="{v}"' for k, v in extra.items())
            lines.append(f"{text}}} {value}\n")
        if lines:
            out.append(f"# HELP {counter.field} {counter.help}\n# TYPE {counter.field} {counter.prom_type}\n")
            out.extend(lines)
    return "".join(out)


# ------------------------------------------------------------------------------ ls of IMEX channels
#
# The proof's IMEX Job lists the channels it was given with the plain image's `ls` (gpu_nodes/manifests/verification.py,
# `_imex_container`), as NVIDIA's DRA driver's channel-injection example checks them. GNU coreutils' ls prints each
# operand it finds and, for one it cannot access, `ls: cannot access '<path>': No such file or directory` on stderr,
# exiting 2 ("serious trouble", coreutils src/ls.c). Only /dev/nvidia-caps-imex-channels/channel<N> operands are
# answered. A channel is in the container when it was given and exists:
#   NVIDIA_IMEX_CHANNELS (the device plugin's, set by the registrar as the plugin sets it for a container given GPUs):
#     only where the machine has /dev/nvidia-caps-imex-channels/channel<N> (the plugin passes through the host's node,
#     k8s-device-plugin internal/imex/imex.go), the fake machine's own layer; a node without a fake machine has none
#   GPU_NODES_IMEX_CHANNELS (a ComputeDomain's channel its claim was allocated): the DRA driver's kubelet plugin makes
#     the device node itself (kubernetes-sigs/dra-driver-nvidia-gpu cmd/compute-domain-kubelet-plugin/nvlib.go)

IMEX_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
LS_TROUBLE = 2


def _channel_ids(value: str | None) -> set[int]:
    return {int(v) for v in (value or "").split(",") if v.strip().isdigit()}


def machine_channels(env: Mapping[str, str]) -> set[int]:
    """The IMEX channels the node's fake machine has (none without a running one)."""
    fakehosts, node = env.get(ENV_FAKEHOSTS), env.get(ENV_NODE, "")
    if not fakehosts or not node:
        return set()
    host = fakehost.FakeHost(state=Path(fakehosts) / node, host="", port=0, spec=fakehost.MachineSpec(hostname=node))
    if host.running_pid() is None:
        return set()
    found = host.machine / IMEX_CHANNEL_DIR.lstrip("/")
    return {int(p.name[7:]) for p in found.glob("channel*") if p.name[7:].isdigit()} if found.is_dir() else set()


def ls(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, str, int]:
    """`ls PATH...` of IMEX channels in the container: stdout, stderr and its exit status."""
    operands = [a for a in argv if not a.startswith("-")]
    others = [a for a in operands if not a.startswith(f"{IMEX_CHANNEL_DIR}/channel")]
    if others:
        raise StandinError(f"only {IMEX_CHANNEL_DIR}/channel<N> operands are simulated, not {', '.join(others)}")
    plugin = _channel_ids(env.get("NVIDIA_IMEX_CHANNELS")) & machine_channels(env) if env.get("NVIDIA_IMEX_CHANNELS") else set()
    present = plugin | _channel_ids(env.get("GPU_NODES_IMEX_CHANNELS"))
    out, err = [], []
    for path in operands:
        suffix = path.rsplit("channel", 1)[1]
        if suffix.isdigit() and int(suffix) in present:
            out.append(f"{path}\n")
        else:
            err.append(f"ls: cannot access '{path}': No such file or directory\n")
    return "".join(out), "".join(err), LS_TROUBLE if err else 0


# ------------------------------------------------------------------------------ entry points


def run(name: str, argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Runs the stand-in `name` (a program's file name) and returns its exit status."""
    try:
        if name == "dcgmi":
            text, status = dcgmi(argv, env)
            (sys.stdout if status != DCGM_ST_BADPARAM_EXIT else sys.stderr).write(text)
            return status
        if name in ("all_reduce_perf", "all_reduce_perf_mpi"):
            out, err, status = all_reduce_perf(name, argv, env)
            sys.stdout.write(out)
            sys.stderr.write(err)
            return status
        if name == "ls":
            out, err, status = ls(argv, env)
            sys.stdout.write(out)
            sys.stderr.write(err)
            return status
        if name == "mpirun":
            launch = mpirun(argv, env)
            if isinstance(launch, str):
                sys.stderr.write(launch + "\n")
                return 1
            sys.stdout.flush()
            return subprocess.run(launch[0], env=launch[1], check=False).returncode
    except StandinError as e:
        sys.stderr.write(f"{name} stand-in: {e}\n")
        return 1
    sys.stderr.write(f"standins.py: no stand-in named {name!r}\n")
    return 127


def main(argv: list[str]) -> int:
    name = Path(argv[0]).name
    if name == "standins.py":
        # By hand: `standins.py metrics NODE [GPUS]` prints the page a node's exporter would serve.
        if len(argv) >= 3 and argv[1] == "metrics":
            env = dict(os.environ) | {ENV_NODE: argv[2]}
            env.setdefault(ENV_FAKEHOSTS, str(HERE.parents[1] / ".state" / "fakehosts"))
            if len(argv) > 3:
                env[ENV_GPUS] = argv[3]
            sys.stdout.write(exporter_page(machine_from_env(env), argv[2]))
            return 0
        sys.stderr.write("usage: standins.py metrics NODE [GPUS]   (the programs are its links in programs/)\n")
        return 2
    return run(name, argv[1:], os.environ)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
