"""The intra-node all-reduce bus bandwidth a healthy machine reaches, per GPU model and GPU count, as data.

Each floor is a published health check's: Azure's HPC node health checks (Azure/azurehpc-health-checks,
`conf/<vm size>.conf`, commit 0e0a1ac26a64b32ac4dd7632a529638505d3314a, 2026-05-01) run nccl-tests'
`all_reduce_perf` on one VM across all its GPUs at a single message size
(`customTests/azure_nccl_allreduce.nhc`: `-b $MESSAGE_SIZE -e $MESSAGE_SIZE -f 2 -g 1`, one MPI rank
per GPU) and fail the node when the bus bandwidth it reads is below the value the conf line names:
`if (( $(echo "$avg_bus_bw < $EXP_NCCL_ALLREDUCE_BW" | bc -l) ))`, no tolerance. NVIDIA's AI Cluster
Runtime passes at 90 % of its (multi-node) floors instead (NVIDIA/aicr
`validators/performance/nccl_all_reduce_bw_constraint.go`: `bandwidth >= (threshold * 0.9)`).
These floors follow Azure's rule, as Azure set them: a node passes when the measured bus bandwidth
is at least the floor (`BandwidthFloor.met_by`), with no tolerance on top.

What is compared with a floor is the out-of-place bus bandwidth of the run's largest message size
(gpu_nodes/proof/nccl.py, `AllReduceRun.bus_bandwidth`). Azure reads the footer's average instead,
which at its single size is the mean of that size's out-of-place and in-place values. It measures at
16 GiB (8 GiB on some machines, `message_bytes`); smaller sizes carry less, so a run at a smaller size
clears the floor with less headroom (8 x H100 at 4 GiB: 473.60 GB/s, NVIDIA/nccl-tests issue 290,
against 460).

A floor is keyed by the GPU's name exactly as nvidia-smi prints it (`--query-gpu=name`, what preflight
reports) and by how many GPUs the run spans. Older drivers printed some names without the `NVIDIA `
prefix (`A100-SXM4-40GB` on driver 450.203.03, tests/scripts/fixtures/nvidia-smi-q-a100-sxm4-mig-disabled.txt;
`NVIDIA A100-SXM4-80GB` on 470.103.01, NVIDIA/CUDALibrarySamples issue 104); such a name finds no floor.
Volta parts are named with a `Tesla` prefix (as recorded for the V100 floor).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3
AZNHC = "Azure/azurehpc-health-checks conf/{conf} line {line} at commit 0e0a1ac2: {text}"


@dataclass(frozen=True)
class BandwidthFloor:
    """The bus bandwidth a healthy machine of this GPU model and count reaches, and whose word it is."""

    model: str  # as nvidia-smi names the GPU
    gpus: int
    gbps: float  # GB/s, nccl-tests' busbw
    message_bytes: int  # the single size the source measures at
    machine: str  # the machine the source's value is for
    source: str  # where the value is written, quoted
    model_source: str  # where that GPU's nvidia-smi name is recorded

    def met_by(self, measured_gbps: float) -> bool:
        """Azure's rule: the measured bus bandwidth is at least the floor, no tolerance."""
        return measured_gbps >= self.gbps


def _aznhc(conf: str, line: int, text: str) -> str:
    return AZNHC.format(conf=conf, line=line, text=f'"{text}"')


BANDWIDTH_FLOORS: tuple[BandwidthFloor, ...] = (
    BandwidthFloor(
        model="NVIDIA H100 80GB HBM3",
        gpus=8,
        gbps=460.0,
        message_bytes=16 * GIB,
        machine="Azure ND H100 v5 (Standard_ND96isr_H100_v5, Standard_ND96is_H100_v5): 8 x H100 SXM5, NVSwitch",
        source=_aznhc("nd96isr_h100_v5.conf", 52, "* || check_nccl_allreduce 460.0 1 16G $AZ_NHC_ROOT/topofiles/ndv5-topo.xml")
        + " (the same in nd96is_h100_v5.conf line 32)",
        model_source="nvidia-smi -q `Product Name : NVIDIA H100 80GB HBM3` (tests/scripts/fixtures/"
        "nvidia-smi-q-h100-sxm5-fabric-completed.txt, thamada/nvidia-smi nvsim/H100SXMx8_smi.py at 03fbe6e6); "
        "all_reduce_perf's device lines in NVIDIA/nccl-tests issue 290",
    ),
    BandwidthFloor(
        model="NVIDIA H200",
        gpus=8,
        gbps=431.0,
        message_bytes=16 * GIB,
        machine="Azure ND H200 v5 (Standard_ND96isr_H200_v5): 8 x H200 SXM, NVSwitch",
        source=_aznhc("nd96isr_h200_v5.conf", 53, "* || check_nccl_allreduce 431.0 1 16G $AZ_NHC_ROOT/topofiles/ndv5-topo.xml")
        + " (nd96is_h200_v5.conf line 35 and nd96isrf_h200_v5.conf line 52 say 432.0; the lower value is kept, "
        "so that no machine Azure passes fails here)",
        model_source="nvidia-smi -q `Product Name : NVIDIA H200` on device 0x2335 "
        "(NVIDIA/mig-parted issue 120, https://github.com/NVIDIA/mig-parted/issues/120)",
    ),
    BandwidthFloor(
        model="NVIDIA A100-SXM4-80GB",
        gpus=8,
        gbps=228.0,
        message_bytes=16 * GIB,
        machine="Azure ND A100 v4 80 GB (Standard_ND96amsr_A100_v4): 8 x A100 SXM4 80 GB, NVSwitch",
        source=_aznhc("nd96amsr_a100_v4.conf", 57, "* || check_nccl_allreduce 228.0 1 16G $AZ_NHC_ROOT/topofiles/ndv4-topo.xml"),
        model_source="nvidia-smi -L `GPU 0: NVIDIA A100-SXM4-80GB (UUID: ...)` "
        "(tests/scripts/fixtures/nvidia-smi-L-a100-mig-beside-whole-gpus.txt, influxdata/telegraf issue 5812)",
    ),
    BandwidthFloor(
        model="NVIDIA A100-SXM4-40GB",
        gpus=8,
        gbps=228.0,
        message_bytes=8 * GIB,
        machine="Azure ND A100 v4 (Standard_ND96asr_v4): 8 x A100 SXM4 40 GB, NVSwitch",
        source=_aznhc("nd96asr_v4.conf", 57, "* || check_nccl_allreduce 228.0 1 8G $AZ_NHC_ROOT/topofiles/ndv4-topo.xml"),
        model_source="nvidia-smi on driver 570.124.06 (tests/scripts/fixtures/nvidia-smi-a100-sxm4-570.txt, "
        "Slusheeking/nextgen docs/SYSTEM_HARDWARE.md at 5ec1ce91)",
    ),
    BandwidthFloor(
        model="Tesla V100-SXM2-32GB",
        gpus=8,
        gbps=110.0,
        message_bytes=8 * GIB,
        machine="Azure NDv2 (Standard_ND40rs_v2): 8 x V100 SXM2 32 GB, NVLink",
        source=_aznhc("nd40rs_v2.conf", 42, "* || check_nccl_allreduce 110.0 1 8G $AZ_NHC_ROOT/topofiles/ndv2-topo.xml"),
        model_source="dcgm-exporter's `modelName=\"Tesla V100-SXM2-32GB\"` (NVML's device name, which nvidia-smi "
        "prints) in a recorded scrape of 4 such GPUs (NVIDIA/dcgm-exporter issue 250, "
        "https://github.com/NVIDIA/dcgm-exporter/issues/250)",
    ),
    BandwidthFloor(
        model="NVIDIA H100 NVL",
        gpus=2,
        gbps=208.0,
        message_bytes=16 * GIB,
        machine="Azure NC H100 v5 (Standard_NC80adis_H100_v5): 2 x H100 NVL, NVLink (its conf checks the links)",
        source=_aznhc("nc80adis_h100_v5.conf", 40, "* || check_nccl_allreduce 208.0 1 16G"),
        model_source="nvidia-smi -q `Product Name : NVIDIA H100 NVL` (tests/scripts/fixtures/nvidia-smi-q-h100-nvl-pcie.txt, "
        "thamada/nvidia-smi nvsim/H100NVLx2_smi.py at 198aebb6); all_reduce_perf's device lines in "
        "NVIDIA/nccl issue 2441",
    ),
    BandwidthFloor(
        model="NVIDIA A100 80GB PCIe",
        gpus=2,
        gbps=193.0,
        message_bytes=16 * GIB,
        machine="Azure NC A100 v4 (Standard_NC48ads_A100_v4): 2 x A100 PCIe 80 GB, NVLink (its conf checks the links)",
        source=_aznhc("nc48ads_a100_v4.conf", 42, "* || check_nccl_allreduce 193.0 1 16G"),
        model_source="nvidia-smi -L `GPU 0: NVIDIA A100 80GB PCIe (UUID: ...)` on Standard_NC24ads_A100_v4 "
        "(sozercan/k8s-distributed-inference provision-host.md at 1ae01f64)",
    ),
    BandwidthFloor(
        model="NVIDIA A100 80GB PCIe",
        gpus=4,
        gbps=25.0,
        message_bytes=8 * GIB,
        machine="Azure NC A100 v4 (Standard_NC96ads_A100_v4): 4 x A100 PCIe 80 GB, NVLink within pairs only",
        source=_aznhc("nc96ads_a100_v4.conf", 42, "* || check_nccl_allreduce 25 1 8G $AZ_NHC_ROOT/topofiles/ncv4-topo.xml")
        + " (with the topology file and NCCL_GRAPH_FILE=ncv4-graph.xml, customTests/azure_common.nhc)",
        model_source="as the 2-GPU floor: sozercan/k8s-distributed-inference provision-host.md at 1ae01f64",
    ),
)


def floor_for(model: str, gpus: int) -> BandwidthFloor | None:
    """The floor for `gpus` GPUs named `model` (exactly as nvidia-smi names them), or None when no source gives one."""
    return next((floor for floor in BANDWIDTH_FLOORS if floor.model == model and floor.gpus == gpus), None)
