#!/usr/bin/env bash
# Starts fake GPU machines for the e2e environment, one sshd per node on
# 127.0.10.<i>:2222, and prints (and writes to .state/fakehosts/hosts.json) how to
# reach each: name, sshHost, sshPort, sshUser, hostKey.
# Usage: tools/fakehost/up.sh [--dra] [--toolkit packages|operator] NODE...   (needs root; see fakehost.py)
#   --dra: each machine as NVIDIA's DRA driver wants it (fakehost.dra_ready)
#   --toolkit operator: the toolkit as the GPU Operator's toolkit container installs it (/usr/local/nvidia/toolkit)
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" up "$@"
