"""What NVIDIA's dcgm-exporter exports of a node's GPUs, read from one scrape of its `/metrics`.

The exporter writes Prometheus' text exposition format, one line per field and GPU, from the
template in NVIDIA/dcgm-exporter `internal/pkg/rendermetrics/render_metrics.go` (tag 4.5.3-4.8.2):

    DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-c4529c8d-...",pci_bus_id="00000000:53:00.0",device="nvidia0",
                         modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="580.105.08"} 30

- `gpu` is the GPU's index, `UUID` its UUID (`uuid` with the exporter's old-namespace option,
  `internal/pkg/collector/gpu_collector.go`), `modelName` NVML's name of the part, the one nvidia-smi
  prints (with spaces turned into dashes when the exporter's `ReplaceBlanksInModelName` is on).
- A MIG instance adds `GPU_I_PROFILE` and `GPU_I_ID`; `gpu` and `UUID` stay its parent GPU's.
- `Hostname` is `hostname` from 4.6.0-4.8.3 (commit d5e5f51, "Rename Hostname label to hostname").
  Label-type fields follow (`DCGM_FI_DRIVER_VERSION`, `DCGM_FI_SYSTEM_DRIVER_VERSION` from exporter
  4.9.0), then the pod's (`container`, `namespace`, `pod`) on a GPU a pod holds.
- NVLink, NVSwitch and CPU lines have templates of their own (`nvlink`, `nvswitch`, `cpu`, `cpucore`
  labels; a link's GPU is `gpu_uuid`): they are not GPU lines.

A field DCGM has no value for is its blank sentinel: DCGM_INT32_BLANK (0x7ffffff0), DCGM_INT64_BLANK
(0x7ffffffffffffff0), DCGM_FP64_BLANK (140737488355328.0), each plus 1 NOT_FOUND, plus 2
NOT_SUPPORTED, plus 3 NOT_PERMISSIONED (NVIDIA/DCGM `dcgmlib/dcgm_structs.h`, v4.6.0). Exporters
from 4.5.2-4.8.1 drop such values (`internal/pkg/collector/utils.go`, `isBlankValue`); older ones
print them (README: `DCGM_FI_DEV_MEMORY_TEMP{...} 9223372036854775794`). A blank, like a value that
is no number (`NaN`), counts as the field missing.

What the proof requires of every GPU are the four fields of accelerator metrics that NVIDIA's AI
Cluster Runtime checks (NVIDIA/aicr `validators/conformance/accelerator_metrics_check.go`, v0.11.1):
utilization, memory used, temperature and power. DCGM 4.6.0
already names three of them anew and keeps the old names as deprecated aliases (`dcgmlib/dcgm_fields.h`:
`DCGM_FI_DEV_GPU_UTIL` -> `DCGM_FI_DEV_GPU_UTIL_RATIO`, `DCGM_FI_DEV_GPU_TEMP` ->
`DCGM_FI_DEV_GPU_TEMP_CELSIUS`, `DCGM_FI_DEV_POWER_USAGE` -> `DCGM_FI_DEV_BOARD_POWER_WATTS`), and the
exporter exports the new names from 4.9.0 (its release notes: "Rename the 23 default and
profiling-preset fields that DCGM 4.7 deprecates"), so either name counts. `DCGM_FI_DEV_FB_USED`
(field 252) is not renamed in DCGM 4.6.0; the name exporter 4.9.0 gives it (whose memory fields move
"from MiB to bytes") was not found, so only the old name counts for it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
REQUIRED_FIELDS = (GPU_UTIL, FB_USED, GPU_TEMP, POWER_USAGE)
# The names DCGM 4.6.0 gives the same fields (dcgm_fields.h; the old names are its deprecated aliases).
RENAMED = {
    GPU_UTIL: ("DCGM_FI_DEV_GPU_UTIL_RATIO",),
    GPU_TEMP: ("DCGM_FI_DEV_GPU_TEMP_CELSIUS",),
    POWER_USAGE: ("DCGM_FI_DEV_BOARD_POWER_WATTS",),
}

# The labels of a GPU line (render_metrics.go) and of the lines that are not a GPU's.
UUID_LABELS = ("UUID", "uuid")
HOSTNAME_LABELS = ("Hostname", "hostname")
DRIVER_LABELS = ("DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION")
NOT_A_GPU = ("nvlink", "nvswitch", "cpu", "cpucore")

# DCGM's blank values (dcgm_structs.h): BLANK, NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED.
_INT32_BLANK = 0x7FFFFFF0
_INT64_BLANK = 0x7FFFFFFFFFFFFFF0
_FP64_BLANK = 140737488355328.0
BLANK_INTEGERS = frozenset(base + offset for base in (_INT32_BLANK, _INT64_BLANK) for offset in range(4))
BLANK_FLOATS = frozenset(_FP64_BLANK + offset for offset in range(4))


@dataclass(frozen=True)
class ExportedGpu:
    """One GPU (or one MIG instance of it) as the exporter's lines name it, and the fields it has a value for."""

    index: str  # the `gpu` label
    uuid: str
    model: str
    mig_profile: str | None
    mig_instance: str | None
    hostname: str | None
    driver: str | None
    fields: frozenset[str]

    def has(self, field: str) -> bool:
        """Whether a value is exported for `field` under its name or one DCGM renamed it to."""
        return any(name in self.fields for name in (field, *RENAMED.get(field, ())))


@dataclass(frozen=True)
class ExporterScrape:
    """Every GPU line of one scrape: a record per GPU, or per MIG instance, in the order first seen."""

    records: tuple[ExportedGpu, ...]

    @property
    def gpus(self) -> tuple[ExportedGpu, ...]:
        """One record per physical GPU (by UUID), its MIG instances' fields joined."""
        joined: dict[str, ExportedGpu] = {}
        for record in self.records:
            seen = joined.get(record.uuid)
            if seen is None:
                joined[record.uuid] = replace(record, mig_profile=None, mig_instance=None)
            else:
                joined[record.uuid] = replace(seen, fields=seen.fields | record.fields)
        return tuple(joined.values())

    @property
    def fields(self) -> frozenset[str]:
        """Every field exported with a value, for any GPU."""
        return frozenset().union(*(record.fields for record in self.records))


def read_exporter_metrics(text: str) -> ExporterScrape:
    """The GPU lines of a `/metrics` body; any other line (comments, other exporters', malformed) is passed over."""
    records: dict[tuple[str, str, str | None], ExportedGpu] = {}
    for name, labels, value in _samples(text):
        uuid = next((labels[key] for key in UUID_LABELS if key in labels), None)
        if "gpu" not in labels or uuid is None or any(key in labels for key in NOT_A_GPU):
            continue
        key = (labels["gpu"], uuid, labels.get("GPU_I_ID"))
        record = records.get(key) or ExportedGpu(
            index=labels["gpu"],
            uuid=uuid,
            model=labels.get("modelName", ""),
            mig_profile=labels.get("GPU_I_PROFILE"),
            mig_instance=labels.get("GPU_I_ID"),
            hostname=next((labels[k] for k in HOSTNAME_LABELS if k in labels), None),
            driver=next((labels[k] for k in DRIVER_LABELS if k in labels), None),
            fields=frozenset(),
        )
        if _has_value(value):
            record = replace(record, fields=record.fields | {name})
        records[key] = record
    return ExporterScrape(tuple(records.values()))


def missing_fields(scrape: ExporterScrape, expected_gpus: int, expected_uuids: Sequence[str] | None = None) -> list[str]:
    """One line per problem: a GPU count that differs, a GPU preflight found that is not exported (or
    one exported that it did not find), and each required field a GPU has no value for."""
    gpus = scrape.gpus
    problems: list[str] = []
    if len(gpus) != expected_gpus:
        problems.append(f"the exporter lists {_gpus(len(gpus))}, the node offers {expected_gpus}")
    if expected_uuids is not None:
        exported = {gpu.uuid for gpu in gpus}
        problems += [f"{uuid} that preflight found is not exported" for uuid in expected_uuids if uuid not in exported]
        problems += [f"{gpu.uuid} is exported, preflight did not find it" for gpu in gpus if gpu.uuid not in expected_uuids]
    for gpu in sorted(gpus, key=_index_order):
        problems += [f"GPU {gpu.index} ({gpu.uuid}): no {field}" for field in REQUIRED_FIELDS if not gpu.has(field)]
    return problems


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


def _index_order(gpu: ExportedGpu) -> tuple[int, int, str]:
    """By index as a number; an index that is no number (the exporter writes none) last."""
    return (0, int(gpu.index), "") if gpu.index.isdigit() else (1, 0, gpu.index)


def _has_value(value: str) -> bool:
    """A number that is neither NaN, infinite nor one of DCGM's blanks."""
    try:
        if re.fullmatch(r"[+-]?\d+", value):
            return int(value) not in BLANK_INTEGERS
        number = float(value)
    except ValueError:
        return False
    return math.isfinite(number) and number not in BLANK_FLOATS


# Prometheus' text format: a metric name, optional {labels}, a value, an optional timestamp.
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


def _samples(text: str) -> Iterator[tuple[str, Mapping[str, str], str]]:
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parsed = _sample(line)
        if parsed is not None:
            yield parsed


def _sample(line: str) -> tuple[str, Mapping[str, str], str] | None:
    name = _NAME.match(line)
    if name is None:
        return None
    rest = line[name.end() :].lstrip()
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        parsed = _labels(rest)
        if parsed is None:
            return None
        labels, rest = parsed
    parts = rest.split()
    if not parts or len(parts) > 2:
        return None
    return name.group(0), labels, parts[0]


def _labels(text: str) -> tuple[dict[str, str], str] | None:
    """The label set opening `text` (`{a="1", b="x\\"y"}`), and what follows it."""
    labels: dict[str, str] = {}
    position = 1
    while True:
        while position < len(text) and text[position] in " ,":
            position += 1
        if text.startswith("}", position):
            return labels, text[position + 1 :]
        name = _LABEL_NAME.match(text, position)
        if name is None or not text.startswith('="', name.end()):
            return None
        value, position = _quoted(text, name.end() + 2)
        if position < 0:
            return None
        labels[name.group(0)] = value


def _quoted(text: str, position: int) -> tuple[str, int]:
    """The label value from `position` to its closing quote, unescaped, and the position after it (-1: none)."""
    value: list[str] = []
    while position < len(text):
        char = text[position]
        if char == '"':
            return "".join(value), position + 1
        if char == "\\" and position + 1 < len(text):
            value.append(_ESCAPES.get(text[position + 1], "\\" + text[position + 1]))
            position += 2
            continue
        value.append(char)
        position += 1
    return "", -1
