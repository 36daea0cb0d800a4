#!/usr/bin/env bash
# actionlint, the linter for GitHub Actions workflows, built once per machine from its Go
# module into ${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}/actionlint-<version>/bin, then run
# with the given arguments. Its shellcheck integration is off, so that the verdict does not
# depend on whether this machine has shellcheck.
#   tools/actionlint.sh examples/ci/drift-check.yml
set -euo pipefail

version=v1.7.12
bin="${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}/actionlint-$version/bin"
if [[ ! -x "$bin/actionlint" ]]; then
  echo "actionlint.sh: building actionlint $version" >&2
  GOBIN="$bin" GOFLAGS=-buildvcs=false GOTOOLCHAIN=local go install "github.com/rhysd/actionlint/cmd/actionlint@$version" >&2
fi
exec "$bin/actionlint" -shellcheck= "$@"
