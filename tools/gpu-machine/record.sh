#!/usr/bin/env bash
# On a real GPU machine: runs the proof's three tools as the node proof runs them, with the images the program
# deploys by default, records what each prints, and judges the records as the readiness check would.
#
#   tools/gpu-machine/record.sh [--level 1|2|3] [--floor GBPS] [--out DIR]
#
# Needs the NVIDIA driver, a container engine with NVIDIA's toolkit (docker or podman, `--gpus all`) and the
# repository's .venv (tools/setup.sh). What it records can become a fixture of tests/proof/fixtures/: name the
# machine, the driver and the date beside it in that folder's README.
set -euo pipefail
cd "$(dirname "$0")/../.."

level=1
floor=""
out=".state/gpu-machine/$(date -u +%Y%m%dT%H%M%SZ)"
while [ $# -gt 0 ]; do
  case "$1" in
    --level) level="$2"; shift 2 ;;
    --floor) floor="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "record.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

engine=""
for candidate in docker podman; do
  if command -v "$candidate" >/dev/null 2>&1; then engine="$candidate"; break; fi
done
if [ -z "$engine" ] || ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "record.sh: needs nvidia-smi and docker or podman with NVIDIA's toolkit; this machine has neither pair" >&2
  exit 2
fi

python=.venv/bin/python
image() { "$python" -c "from gpu_nodes.config.$1 import $2; print($2)"; }
dcgm_image=$(image verification DEFAULT_DIAGNOSTICS_IMAGE)
nccl_image=$(image verification DEFAULT_PERFORMANCE_IMAGE)
exporter_image=$(image metrics DEFAULT_EXPORTER_IMAGE)
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
mkdir -p "$out"
nvidia-smi -q >"$out/nvidia-smi-q.txt"
echo "record.sh: $gpus x $model, records in $out"

# DCGM's diagnostics, as the diagnostics Job runs them: dcgmi with its embedded host engine, every GPU.
"$engine" run --rm --gpus all "$dcgm_image" dcgmi diag -r "$level" -j >"$out/dcgmi-diag.json" || true

# NCCL's all-reduce across every GPU in one process, as the performance Job runs it.
if [ "$gpus" -ge 2 ]; then
  "$engine" run --rm --gpus all --ipc=host "$nccl_image" \
    /usr/local/mpi/bin/mpirun --allow-run-as-root -np 1 /usr/local/bin/all_reduce_perf_mpi \
    -b 4G -e 4G -f 2 -g "$gpus" >"$out/all_reduce_perf.txt" 2>&1 || true
fi

# The exporter, as the group's DaemonSet runs it: privileged, every GPU, one page once DCGM has filled it.
container=$("$engine" run -d --rm --gpus all --privileged -p 127.0.0.1::9400 "$exporter_image")
trap '"$engine" stop "$container" >/dev/null 2>&1 || true' EXIT
port=$("$engine" port "$container" 9400 | head -n 1 | sed 's/.*://')
for _ in $(seq 1 60); do
  if curl -fsS "http://127.0.0.1:$port/metrics" >"$out/metrics.prom" 2>/dev/null && grep -q '^DCGM_FI_DEV_GPU_TEMP' "$out/metrics.prom"; then
    break
  fi
  sleep 2
done

"$python" tools/gpu-machine/judge.py "$out" --gpus "$gpus" --model "$model" --level "$level" ${floor:+--floor "$floor"}
