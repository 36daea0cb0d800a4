#!/usr/bin/env bash
# Starts fake GPU machines for the e2e environment, one sshd per node on
# 127.0.10.<i>:2222, and prints (and writes to .state/fakehosts/hosts.json) how to
# reach each: name, sshHost, sshPort, sshUser, hostKey.
# Usage: tools/fakehost/up.sh [--dra] [--toolkit packages|operator] [--nvlink CLIQUE] [--nri] [--other-gpus] NODE...
#   (needs root; see fakehost.py)
#   --dra: each machine as NVIDIA's DRA driver wants it (fakehost.dra_ready)
#   --toolkit operator: the toolkit as the GPU Operator's toolkit container installs it (/usr/local/nvidia/toolkit)
#   --nvlink CLIQUE: the machines are one NVLink domain (fakehost.nvlink_machine): their fabric in CLIQUE, NVIDIA's
#     IMEX daemon running and listing them all, channel 0 made; with --dra, the daemon disabled and no channel
#     (the DRA driver's ComputeDomains run their own)
#   --nri: the toolkit injects through its NRI plugin, as the GPU Operator's NRI mode leaves it (fakehost.nri_machine)
#   --other-gpus: H100 PCIe GPUs in place of the A100s (fakehost.other_model); annotate the node
#     gpu-nodes.dev/simulated-gpu-model="NVIDIA H100 PCIe" for the registrar
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" up "$@"
