#!/usr/bin/env bash
# Stops every fake machine started by up.sh (their state and keys are kept).
# Usage: tools/fakehost/down.sh
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" down "$@"
