#!/usr/bin/env bash
# Lints every shell script of the project with ShellCheck: the preflight script as the machines run it
# (its parts joined in name order, as gpu_nodes/preflight/command.py joins them), and the tooling.
# ShellCheck itself comes from the Debian package (tools/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v shellcheck >/dev/null || { echo "shellcheck.sh: shellcheck is not installed: run tools/setup.sh" >&2; exit 1; }
status=0
# LC_ALL=C: the same byte order as the component's sorted() of the part names.
LC_ALL=C cat gpu_nodes/scripts/preflight/*.sh | shellcheck --shell=bash - || status=1
for script in .ci/run tools/*.sh tools/*/*.sh; do
  # From the script's own directory, so that `source "$HERE/..."` is followed (-x).
  (cd "$(dirname "$script")" && shellcheck -x "$(basename "$script")") || status=1
done
exit "$status"
