#!/usr/bin/env bash
# Build steps run indirectly through timed(), which shellcheck cannot see:
# shellcheck disable=SC2317
# Build the Pulumi engine pieces from Go modules, once per machine, into
#   ${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}/<tool>-<version>/bin/          (upstream modules)
#   ${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}/standin-<tool>-<source key>/bin/ (our stand-ins)
# Pulumi YAML's language host is built from its module (github.com/pulumi/pulumi-yaml) beside
# the CLI. The module proxy refuses Pulumi's Python language host and pulumi-command's provider, so those
# two are stand-ins of our own (python-host/, command-provider/), built only where the real part
# is not installed. A tool whose cached binary exists is skipped, so running this again is cheap.
#
#   tools/engine/build.sh                # everything
#   tools/engine/build.sh pulumi kubernetes
#
# Tools: pulumi (the CLI), python (the Python language host and its scripts),
#        yaml (pulumi-language-yaml), kubernetes (pulumi-resource-kubernetes),
#        command (pulumi-resource-command),
#        sdkgen (gpu-nodes-sdkgen, our own TypeScript and Go SDK generator, sdkgen/).
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

# ------------------------------------------------------ Python language host
# Our stand-in (python-host/main.go), on the CLI's sdk/v3. The host runs programs through the
# exec shim, which it looks for beside itself; dynamic providers run in
# pulumi-resource-pulumi-python, found on PATH. Both are scripts of that sdk/v3 module.
build_python_host() {
  local dir sdk
  dir="$(copy_wrapper "$here/python-host" "standin-pulumi-language-python-$ENGINE_PYTHON_HOST_KEY")"
  go_build "$dir" "$ENGINE_PYTHON_HOST_BIN_DIR/pulumi-language-python" . \
    "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$ENGINE_PULUMI_VERSION"
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

# -------------------------------------------------------- YAML language host
# Upstream's own host, github.com/pulumi/pulumi-yaml cmd/pulumi-language-yaml, through our wrapper
# yaml/ (the module has no replace directives; the wrapper pins the CLI's pkg/sdk v3, so the
# CLI's compiled packages are reused). Its version is pkg/version.Version, as its release sets it.
build_yaml_host() {
  local dir
  dir="$(copy_wrapper "$here/yaml" "pulumi-language-yaml-$ENGINE_YAML_HOST_VERSION")"
  go_build "$dir" "$ENGINE_YAML_HOST_BIN_DIR/pulumi-language-yaml" github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml \
    "-X github.com/pulumi/pulumi-yaml/pkg/version.Version=v$ENGINE_YAML_HOST_VERSION"
}

# Beside the CLI, where it finds bundled language hosts, as a copy and not a link: the YAML host
# itself runs the plugins a program's packages name (to read their schemas), and finds the
# Python host for a Python plugin beside its own executable, symlinks resolved. From a folder of
# its own it would take the one on PATH, warning "using pulumi-language-python from $PATH".
install_yaml_host() {
  local built="$ENGINE_YAML_HOST_BIN_DIR/pulumi-language-yaml" dest="$ENGINE_PULUMI_BIN_DIR/pulumi-language-yaml"
  mkdir -p "$ENGINE_PULUMI_BIN_DIR"
  if [[ -L "$dest" ]] || ! cmp -s "$built" "$dest"; then
    rm -f "$dest"
    install -m 0755 "$built" "$dest"
  fi
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
# Our stand-in (command-provider/): command:remote:Command and CopyToRemote over real SSH.
build_command() {
  local dir
  dir="$(copy_wrapper "$here/command-provider" "standin-pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_KEY")"
  go_build "$dir" "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command" . ""
}

# ------------------------------------------------------------ gpu-nodes-sdkgen
# Our own tool (sdkgen/) over pkg/v3's codegen/nodejs and codegen/go: `pulumi package gen-sdk`
# asks the Node.js and Go language hosts to generate, and the module proxy refuses both. It
# requires the CLI's pkg/v3, so it reuses the CLI's compiled packages.
build_sdkgen() {
  local dir
  dir="$(copy_wrapper "$here/sdkgen" "gpu-nodes-sdkgen-$ENGINE_SDKGEN_KEY")"
  go_build "$dir" "$ENGINE_SDKGEN_BIN_DIR/gpu-nodes-sdkgen" . ""
}

# Builds of the two parts under their upstream names (pulumi-language-python-*,
# pulumi-resource-command-*) in this cache come from source brought in outside the registries:
# they are removed, never used. Ours are named standin-*.
remove_retired_builds() {
  local old
  for old in "$GPU_NODES_CACHE"/pulumi-language-python-* "$GPU_NODES_CACHE"/pulumi-resource-command-* \
             "$scratch_root"/pulumi-language-python-* "$scratch_root"/pulumi-resource-command-*; do
    [[ -e "$old" ]] || continue
    log "removing a retired build: $old"
    rm -rf "$old"
  done
  # The plugin cache's copy, unless it is the installed real plugin or today's stand-in.
  local cached="$GPU_NODES_CACHE/pulumi-home/plugins/resource-command-v$ENGINE_COMMAND_PROVIDER_VERSION"
  if [[ -e "$cached/pulumi-resource-command" ]] &&
     ! cmp -s "$cached/pulumi-resource-command" "$ENGINE_REAL_COMMAND_PROVIDER" &&
     ! cmp -s "$cached/pulumi-resource-command" "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command"; then
    log "removing a retired plugin: $cached"
    rm -rf "$cached" "$cached.lock"
  fi
}

# ---------------------------------------------------------------------- main
remove_retired_builds
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(pulumi python yaml kubernetes command sdkgen)

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
      if [[ ! -x "$ENGINE_PULUMI_BIN_DIR/pulumi" ]]; then
        # An installed Pulumi (see pulumi above) brings its own host beside it.
        report+=("pulumi-language-python: not built (no CLI of ours to put it beside; an installed Pulumi brings its own)")
      elif [[ -x "$ENGINE_PYTHON_HOST_BIN_DIR/pulumi-language-python" ]]; then
        report+=("pulumi-language-python (stand-in $ENGINE_PYTHON_HOST_KEY): cached")
      else
        log "building the stand-in pulumi-language-python"
        timed "pulumi-language-python (stand-in $ENGINE_PYTHON_HOST_KEY)" build_python_host
      fi
      [[ ! -x "$ENGINE_PYTHON_HOST_BIN_DIR/pulumi-language-python" ]] || link_python_host
      ;;
    yaml)
      if [[ ! -x "$ENGINE_PULUMI_BIN_DIR/pulumi" ]]; then
        # As for python: an installed Pulumi brings its own YAML host beside it.
        report+=("pulumi-language-yaml: not built (no CLI of ours to put it beside; an installed Pulumi brings its own)")
      elif [[ -x "$ENGINE_YAML_HOST_BIN_DIR/pulumi-language-yaml" ]]; then
        report+=("pulumi-language-yaml $ENGINE_YAML_HOST_VERSION: cached")
      else
        log "building pulumi-language-yaml $ENGINE_YAML_HOST_VERSION"
        timed "pulumi-language-yaml $ENGINE_YAML_HOST_VERSION" build_yaml_host
      fi
      [[ ! -x "$ENGINE_YAML_HOST_BIN_DIR/pulumi-language-yaml" ]] || install_yaml_host
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
      if [[ -x "$ENGINE_REAL_COMMAND_PROVIDER" ]]; then
        report+=("pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION: the installed plugin ($ENGINE_REAL_COMMAND_PROVIDER); no stand-in built")
      elif [[ -x "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command" ]]; then
        report+=("pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION (stand-in $ENGINE_COMMAND_PROVIDER_KEY): cached")
      else
        log "building the stand-in pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION"
        timed "pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION (stand-in $ENGINE_COMMAND_PROVIDER_KEY)" build_command
      fi
      ;;
    sdkgen)
      if [[ -x "$ENGINE_SDKGEN_BIN_DIR/gpu-nodes-sdkgen" ]]; then
        report+=("gpu-nodes-sdkgen ($ENGINE_SDKGEN_KEY, ours): cached")
      else
        log "building gpu-nodes-sdkgen, our SDK generator"
        timed "gpu-nodes-sdkgen ($ENGINE_SDKGEN_KEY, ours)" build_sdkgen
      fi
      ;;
    *)
      log "unknown tool '$tool' (pulumi, python, yaml, kubernetes, command, sdkgen)"
      failed=1
      ;;
  esac
done

printf '\n[engine] summary (cache: %s)\n' "$GPU_NODES_CACHE"
for line in "${report[@]}"; do printf '  %s\n' "$line"; done
exit "$failed"
