#!/usr/bin/env bash
# Build steps run indirectly through timed(), which shellcheck cannot see:
# shellcheck disable=SC2317
# Build the Pulumi engine pieces, once per machine, into
#   ${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}/<tool>-<version>[-<archive sha256>]/bin/
# from Go modules, and from the upstream snapshots in shared/upstream/ for the two
# parts the module proxy refuses (the cache key then includes the archive's sha256).
# A tool whose cached binary exists is skipped, so running this again is cheap.
#
#   tools/engine/build.sh                # everything
#   tools/engine/build.sh pulumi kubernetes
#
# Tools: pulumi (the CLI), python (pulumi-language-python and its scripts),
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

# extract_archive ARCHIVE DIR: a fresh copy of an upstream snapshot in DIR (never in the repo).
extract_archive() {
  rm -rf "$2"
  mkdir -p "$2"
  tar -xzf "$1" -C "$2" --strip-components=1
}

# ------------------------------------------------------ Python language host
# Pulumi's own host, from its upstream snapshot, in our wrapper module `python-host/`:
# the snapshot's go.mod replaces pkg/sdk with monorepo paths, which a dependency's
# go.mod cannot do, so the wrapper requires the CLI's released pkg/sdk instead and
# points the host module at the extracted snapshot (`replace => ./upstream/...`).
build_python_host() {
  local dir
  dir="$(copy_wrapper "$here/python-host" "pulumi-language-python-$ENGINE_PYTHON_HOST_COMMIT-$ENGINE_PYTHON_HOST_KEY")"
  extract_archive "$ENGINE_PYTHON_HOST_ARCHIVE" "$dir/upstream"
  go_build "$dir" "$ENGINE_PYTHON_HOST_BIN_DIR/pulumi-language-python" \
    github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3 \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$ENGINE_PYTHON_HOST_VERSION"
  # The host runs programs through the exec shim, which it looks for beside itself;
  # dynamic providers run in pulumi-resource-pulumi-python, found on PATH. Both are
  # scripts of the sdk/v3 module the host is built with.
  local sdk
  sdk="$(module_dir "$dir" github.com/pulumi/pulumi/sdk/v3)"
  install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" \
    "$sdk/python/dist/pulumi-resource-pulumi-python" "$ENGINE_PYTHON_HOST_BIN_DIR/"
}

# The CLI takes a language host (and pulumi-resource-pulumi-python) found beside itself as
# bundled, as in a user's install; one found on PATH it uses with a warning on every run.
link_python_host() {
  local f
  mkdir -p "$ENGINE_PULUMI_BIN_DIR"
  for f in pulumi-language-python pulumi-language-python-exec pulumi-resource-pulumi-python; do
    ln -sfn "$ENGINE_PYTHON_HOST_BIN_DIR/$f" "$ENGINE_PULUMI_BIN_DIR/$f"
  done
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
# Built from its upstream snapshot as its own main module: `provider/go.mod` has no
# replace lines, and its dependencies come from the module proxy.
build_command() {
  local dir="$scratch_root/pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_VERSION-$ENGINE_COMMAND_PROVIDER_KEY"
  extract_archive "$ENGINE_COMMAND_PROVIDER_ARCHIVE" "$dir"
  go_build "$dir/provider" "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command" ./cmd/pulumi-resource-command \
    "-X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$ENGINE_COMMAND_PROVIDER_VERSION"
}

# archive_present NAME ARCHIVE: true when the snapshot is there; otherwise says which file is missing.
archive_present() {
  [[ -f "$2" ]] && return 0
  log "$1: missing upstream archive $2"
  log "  (GPU_NODES_UPSTREAM names the folder; shared/upstream/README.md lists what it must hold)"
  report+=("$1: NOT BUILT: missing upstream archive $2")
  failed=1
  return 1
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
      ;;
    python)
      if [[ -x "$ENGINE_PYTHON_HOST_BIN_DIR/pulumi-language-python" ]]; then
        report+=("pulumi-language-python $ENGINE_PYTHON_HOST_COMMIT: cached ($ENGINE_PYTHON_HOST_BIN_DIR)")
      elif archive_present pulumi-language-python "$ENGINE_PYTHON_HOST_ARCHIVE"; then
        log "building pulumi-language-python $ENGINE_PYTHON_HOST_COMMIT"
        timed "pulumi-language-python $ENGINE_PYTHON_HOST_COMMIT" build_python_host
      fi
      [[ ! -x "$ENGINE_PYTHON_HOST_BIN_DIR/pulumi-language-python" ]] || link_python_host
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
        report+=("pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION: cached ($ENGINE_COMMAND_PROVIDER_BIN_DIR)")
      elif archive_present pulumi-resource-command "$ENGINE_COMMAND_PROVIDER_ARCHIVE"; then
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
