#!/usr/bin/env bash
# Build steps run indirectly through timed(), which shellcheck cannot see:
# shellcheck disable=SC2317
# Build the Pulumi engine pieces from Go modules, once per machine, into
#   ${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}/<tool>-<version>/bin/
# A tool whose cached binary exists is skipped, so running this again is cheap.
#
#   tools/engine/build.sh                # everything
#   tools/engine/build.sh pulumi kubernetes
#
# Tools: pulumi (CLI + Python exec scripts), python (pulumi-language-python),
#        kubernetes (pulumi-resource-kubernetes), command (pulumi-resource-command).
# Exit status is non-zero when a requested tool could not be built; the others
# are still built. See README.md beside this file.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
source "$here/versions.sh"

export GOFLAGS="${GOFLAGS:--buildvcs=false}"
scratch_root="$GPU_NODES_CACHE/.build"
mkdir -p "$scratch_root"

declare -a report=()
failed=0

log() { printf '[engine] %s\n' "$*" >&2; }

# copy_wrapper SRC NAME -> prints a fresh scratch copy of wrapper module SRC.
copy_wrapper() {
  local dst="$scratch_root/$2"
  rm -rf "$dst"
  mkdir -p "$dst"
  cp -R "$1/." "$dst/"
  printf '%s\n' "$dst"
}

# go_build DIR OUT PKG LDFLAGS: build PKG inside module DIR to OUT, atomically.
go_build() {
  local dir="$1" out="$2" pkg="$3" ldflags="$4"
  mkdir -p "$(dirname "$out")"
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv -f "$out.tmp" "$out"
}

# module_served MODULE@VERSION: true when the module proxy hands out that version.
module_served() {
  local out
  if out="$(go mod download -json "$1" 2>&1)" && ! grep -q '"Error"' <<<"$out"; then
    return 0
  fi
  log "not served: $1"
  grep -o '"Error": *"[^"]*"' <<<"$out" | head -1 | sed 's/^/[engine]   /' >&2 || true
  return 1
}

timed() { # timed NAME CMD...: run CMD, record seconds or failure
  local name="$1" start rc=0
  shift
  start=$(date +%s)
  # A function run as `f || ...` ignores set -e; a subshell under set +e keeps it.
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  if [[ $rc -eq 0 ]]; then
    report+=("$name: built in $(($(date +%s) - start)) s")
  elif [[ $rc -eq 3 ]]; then
    report+=("$name: NOT BUILT: the module proxy does not serve it")
    failed=1
  else
    report+=("$name: FAILED after $(($(date +%s) - start)) s (exit $rc)")
    failed=1
  fi
}

# ---------------------------------------------------------------- pulumi CLI
build_pulumi_cli() {
  local dir
  dir="$(copy_wrapper "$here/pulumi" "pulumi-$ENGINE_PULUMI_VERSION")"
  go_build "$dir" "$ENGINE_PULUMI_BIN_DIR/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$ENGINE_PULUMI_VERSION"
}

# module_dir DIR MODULE: the module's source folder, as required by the module in DIR.
# `go list -m` prints an empty .Dir until the module is in the module cache (a fresh
# machine), so download it first.
module_dir() {
  local dir
  dir="$(cd "$1" && go mod download "$2" && go list -m -f '{{.Dir}}' "$2")"
  [[ -n "$dir" && -d "$dir" ]] || { log "cannot find the source of $2"; return 1; }
  printf '%s\n' "$dir"
}

# The Python host refuses to run without pulumi-language-python-exec beside it;
# the dynamic-provider and policy scripts ship in the same sdk/v3 module.
install_python_scripts() {
  local sdk
  sdk="$(module_dir "$here/pulumi" github.com/pulumi/pulumi/sdk/v3)"
  mkdir -p "$ENGINE_PULUMI_BIN_DIR"
  local f copied=0
  for f in "$sdk/python/cmd/pulumi-language-python-exec" \
           "$sdk/python/dist/pulumi-resource-pulumi-python" \
           "$sdk/python/dist/pulumi-analyzer-policy-python"; do
    if [[ -f "$f" ]]; then
      install -m 0755 "$f" "$ENGINE_PULUMI_BIN_DIR/$(basename "$f")"
      copied=$((copied + 1))
    else
      log "sdk/v3@v$ENGINE_PULUMI_VERSION has no $(basename "$f"); skipped"
    fi
  done
  [[ $copied -gt 0 ]]
}

# ------------------------------------------------------ Python language host
build_python_host() {
  local mod=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
  if [[ -z "$ENGINE_PULUMI_LANGUAGE_PYTHON_MODULE_VERSION" ]]; then
    log "pulumi-language-python: no served pseudo-version known for $mod;"
    log "  set GPU_NODES_LANGUAGE_PYTHON_VERSION=v3.0.0-<time>-<hash> to build it"
    return 3
  fi
  module_served "$mod@$ENGINE_PULUMI_LANGUAGE_PYTHON_MODULE_VERSION" || return 3
  # Same wrapper as the CLI (pkg/sdk pinned to the release, clipboard replace),
  # plus the host module; its own go.mod's local replaces do not apply to us.
  local dir
  dir="$(copy_wrapper "$here/pulumi" "pulumi-language-python-$ENGINE_PULUMI_VERSION")"
  (
    cd "$dir"
    go mod edit -require="$mod@$ENGINE_PULUMI_LANGUAGE_PYTHON_MODULE_VERSION" -tool="$mod"
    go mod edit -require="github.com/pulumi/pulumi/pkg/v3@v$ENGINE_PULUMI_VERSION" \
                -require="github.com/pulumi/pulumi/sdk/v3@v$ENGINE_PULUMI_VERSION"
    go mod tidy
  )
  go_build "$dir" "$ENGINE_PULUMI_BIN_DIR/pulumi-language-python" "$mod" \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$ENGINE_PULUMI_VERSION"
  rm -f "$ENGINE_PULUMI_BIN_DIR/pulumi-language-python.fallback"
}

# Our stand-in host (pulumi/pythonhost, see its doc comment), for when the
# upstream module is not served. It runs the upstream exec script.
build_python_host_fallback() {
  local dir
  dir="$(copy_wrapper "$here/pulumi" "pulumi-language-python-fallback-$ENGINE_PULUMI_VERSION")"
  go_build "$dir" "$ENGINE_PULUMI_BIN_DIR/pulumi-language-python" ./pythonhost \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$ENGINE_PULUMI_VERSION"
  echo "built from tools/engine/pulumi/pythonhost: the upstream host module was not served" \
    >"$ENGINE_PULUMI_BIN_DIR/pulumi-language-python.fallback"
}

# --------------------------------------------------- pulumi-resource-kubernetes
build_kubernetes() {
  local dir src
  dir="$(copy_wrapper "$here/kubernetes" "pulumi-resource-kubernetes-$ENGINE_KUBERNETES_PROVIDER_VERSION")"
  src="$(module_dir "$dir" github.com/pulumi/pulumi-kubernetes/provider/v4)/cmd/pulumi-resource-kubernetes"
  (cd "$dir" && go run ./genschema -version "$ENGINE_KUBERNETES_PROVIDER_VERSION" -src "$src" -out .)
  go_build "$dir" "$ENGINE_KUBERNETES_PROVIDER_BIN_DIR/pulumi-resource-kubernetes" . \
    "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$ENGINE_KUBERNETES_PROVIDER_VERSION"
}

# ------------------------------------------------------ pulumi-resource-command
build_command() {
  local mod=github.com/pulumi/pulumi-command/provider
  module_served "$mod@$ENGINE_COMMAND_PROVIDER_MODULE_VERSION" || return 3
  local dir="$scratch_root/pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_VERSION"
  rm -rf "$dir"
  if [[ -f "$here/command/go.mod" ]]; then
    dir="$(copy_wrapper "$here/command" "pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_VERSION")"
  else
    # No committed wrapper yet (the module was not served when this was
    # written): make one, and commit its go.mod/go.sum once it builds.
    mkdir -p "$dir"
    (
      cd "$dir"
      go mod init gpu-nodes/tools/engine/command
      go mod edit -require="$mod@$ENGINE_COMMAND_PROVIDER_MODULE_VERSION" \
                  -tool="$mod/cmd/pulumi-resource-command"
      go mod tidy
    )
  fi
  go_build "$dir" "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command" \
    "$mod/cmd/pulumi-resource-command" \
    "-X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$ENGINE_COMMAND_PROVIDER_VERSION"
}

# ---------------------------------------------------------------------- main
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(pulumi python kubernetes command)

for tool in "${want[@]}"; do
  case "$tool" in
    pulumi)
      existing="$(command -v pulumi || true)"
      if [[ -x "$ENGINE_PULUMI_BIN_DIR/pulumi" ]]; then
        report+=("pulumi $ENGINE_PULUMI_VERSION: cached ($ENGINE_PULUMI_BIN_DIR/pulumi)")
      elif [[ -n "$existing" && "$existing" != "$GPU_NODES_CACHE"/* && -z "${GPU_NODES_BUILD_PULUMI:-}" ]]; then
        report+=("pulumi: using the installed $existing ($("$existing" version 2>/dev/null || echo '?')); not built (GPU_NODES_BUILD_PULUMI=1 builds it anyway)")
      else
        log "building pulumi $ENGINE_PULUMI_VERSION"
        timed "pulumi $ENGINE_PULUMI_VERSION" build_pulumi_cli
      fi
      if [[ -x "$ENGINE_PULUMI_BIN_DIR/pulumi" ]]; then
        timed "python exec scripts (sdk/v3 v$ENGINE_PULUMI_VERSION)" install_python_scripts
      fi
      ;;
    python)
      if [[ -x "$ENGINE_PULUMI_BIN_DIR/pulumi-language-python" ]]; then
        if [[ -f "$ENGINE_PULUMI_BIN_DIR/pulumi-language-python.fallback" ]]; then
          report+=("pulumi-language-python: cached (FALLBACK host from tools/engine/pulumi/pythonhost)")
        else
          report+=("pulumi-language-python: cached")
        fi
      elif [[ -n "$(command -v pulumi-language-python || true)" && -z "${GPU_NODES_BUILD_PULUMI:-}" ]]; then
        report+=("pulumi-language-python: using the installed $(command -v pulumi-language-python)")
      else
        log "building pulumi-language-python"
        prev_failed=$failed
        timed "pulumi-language-python (upstream module)" build_python_host
        if [[ ! -x "$ENGINE_PULUMI_BIN_DIR/pulumi-language-python" && "${GPU_NODES_PYTHON_HOST_FALLBACK:-1}" != 0 ]]; then
          log "building the FALLBACK Python host (tools/engine/pulumi/pythonhost) instead"
          failed=$prev_failed
          timed "pulumi-language-python (FALLBACK: tools/engine/pulumi/pythonhost)" build_python_host_fallback
        fi
      fi
      ;;
    kubernetes)
      if [[ -x "$ENGINE_KUBERNETES_PROVIDER_BIN_DIR/pulumi-resource-kubernetes" ]]; then
        report+=("pulumi-resource-kubernetes $ENGINE_KUBERNETES_PROVIDER_VERSION: cached")
      else
        log "building pulumi-resource-kubernetes $ENGINE_KUBERNETES_PROVIDER_VERSION"
        timed "pulumi-resource-kubernetes $ENGINE_KUBERNETES_PROVIDER_VERSION" build_kubernetes
      fi
      ;;
    command)
      if [[ -x "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command" ]]; then
        report+=("pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION: cached")
      else
        log "building pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION"
        timed "pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION" build_command
      fi
      ;;
    *)
      log "unknown tool '$tool' (pulumi, python, kubernetes, command)"
      failed=1
      ;;
  esac
done

printf '\n[engine] summary (cache: %s)\n' "$GPU_NODES_CACHE"
for line in "${report[@]}"; do printf '  %s\n' "$line"; done
exit "$failed"
