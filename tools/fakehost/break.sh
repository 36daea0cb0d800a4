#!/usr/bin/env bash
# Makes a fake machine fail the preflight driver check (nvidia-smi reports that it
# cannot talk to the driver), report other GPUs (H100 PCIe cards in place of its own),
# report a GPU that must be reset (nvidia-smi -q: Reset Required Yes, recovery action
# Reset), fail `nvidia-ctk cdi generate` as upstream does when it finds no device edits, or
# healthy again; its sshd keeps running.
# Usage: tools/fakehost/break.sh NODE driver|other-model|runtime-not-restarted|reset-required|cdi-generation|healthy
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" break "$@"
