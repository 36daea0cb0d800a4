#!/usr/bin/env bash
# Makes a fake machine fail the preflight driver check (nvidia-smi reports that it
# cannot talk to the driver), or healthy again; its sshd keeps running.
# Usage: tools/fakehost/break.sh NODE driver|healthy
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" break "$@"
