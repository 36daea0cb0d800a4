#!/usr/bin/env bash
# Stops the fake machines started by up.sh, those named or all (their state and keys are kept).
# Usage: tools/fakehost/down.sh [NODE...]
set -euo pipefail
exec python3 "$(dirname "$0")/fakehost.py" down "$@"
