#!/usr/bin/env bash
# Breaks a fake machine, or makes it healthy again; its sshd keeps running.
#   driver                 nvidia-smi cannot talk to the driver
#   other-model            nvidia-smi reports other GPUs (H100 PCIe cards in place of its own)
#   runtime-not-restarted  crictl info: the running containerd has not loaded the nvidia drop-in
#   reset-required         nvidia-smi -q: a GPU with Reset Required Yes, recovery action Reset
#   cdi-generation         nvidia-ctk cdi generate finds no device edits and fails, as upstream does
#   persistence-mode-off   dcgmi diag: the software test fails on every GPU (persistence mode disabled), exit 226
#   p2p-disabled           all_reduce_perf: the bus bandwidth of a recorded run without peer-to-peer (~5 GB/s)
#   metrics-stopped        dcgm-exporter's page has no GPU lines
#   healthy                all of it as it should be
# The last three are answered by the stand-ins of pods on the node (tools/fakehost/standins.py).
# Usage: tools/fakehost/break.sh NODE MODE
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" break "$@"
