# shellcheck shell=bash
# Source this (after tools/engine/build.sh) to use the locally built Pulumi
# engine:   source tools/engine/env.sh
#
# - puts the cached CLI first on PATH (build.sh links the Python language host
#   and its scripts, and the YAML language host, beside it, where the CLI finds
#   bundled plugins);
# - isolates the plugin cache in $GPU_NODES_CACHE/pulumi-home and installs the
#   provider binaries there once, under their exact versions, so the CLI
#   resolves kubernetes 4.25.0 / command 1.2.1 without downloading anything.
#   For command 1.2.1 that is the user's real plugin when one is installed
#   ($ENGINE_USER_PULUMI_HOME/plugins), else our stand-in; nothing is ever
#   written into the user's own plugin home;
# - exports GPU_NODES_ENGINE_PARTS, one line naming each part and whether it is
#   the real one or a stand-in, and prints it on stderr;
# - never sets PULUMI_BACKEND_URL or PULUMI_CONFIG_PASSPHRASE: callers do.
#
# The provider bin dirs are deliberately NOT put on PATH: an executable
# pulumi-resource-<name> on PATH is an "ambient" plugin that the CLI prefers to
# the plugin cache, whatever version the program asks for, and it warns
# "using pulumi-resource-kubernetes from $PATH at ..." on every run.

_gpu_nodes_engine_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
source "$_gpu_nodes_engine_dir/versions.sh"

case ":$PATH:" in
  *":$ENGINE_PULUMI_BIN_DIR:"*) ;;
  *) export PATH="$ENGINE_PULUMI_BIN_DIR:$PATH" ;;
esac

export PULUMI_HOME="$GPU_NODES_CACHE/pulumi-home"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
mkdir -p "$PULUMI_HOME"

# _gpu_nodes_install_plugin NAME VERSION BINARY: `pulumi plugin install` it into
# $PULUMI_HOME/plugins unless that exact binary is already there.
_gpu_nodes_install_plugin() {
  local name="$1" version="$2" bin="$3"
  local dest="$PULUMI_HOME/plugins/resource-$name-v$version/pulumi-resource-$name"
  if [[ ! -x "$bin" ]]; then
    echo "[engine] $bin is missing: run tools/engine/build.sh first" >&2
    return 0
  fi
  if [[ -x "$dest" ]] && cmp -s "$bin" "$dest"; then
    return 0
  fi
  if ! command -v pulumi >/dev/null 2>&1; then
    echo "[engine] no pulumi CLI on PATH: run tools/engine/build.sh first" >&2
    return 0
  fi
  pulumi plugin install resource "$name" "$version" --file "$bin" --reinstall >&2 ||
    echo "[engine] pulumi plugin install resource $name $version failed" >&2
}

_gpu_nodes_install_plugin kubernetes "$ENGINE_KUBERNETES_PROVIDER_VERSION" \
  "$ENGINE_KUBERNETES_PROVIDER_BIN_DIR/pulumi-resource-kubernetes"
if [[ -x "$ENGINE_REAL_COMMAND_PROVIDER" ]]; then
  _gpu_nodes_install_plugin command "$ENGINE_COMMAND_PROVIDER_VERSION" "$ENGINE_REAL_COMMAND_PROVIDER"
  _gpu_nodes_command_part="pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION: real ($ENGINE_REAL_COMMAND_PROVIDER)"
else
  _gpu_nodes_install_plugin command "$ENGINE_COMMAND_PROVIDER_VERSION" \
    "$ENGINE_COMMAND_PROVIDER_BIN_DIR/pulumi-resource-command"
  _gpu_nodes_command_part="pulumi-resource-command $ENGINE_COMMAND_PROVIDER_VERSION: STAND-IN (tools/engine/command-provider)"
fi

# The Python host in use is the one beside the CLI in use.
_gpu_nodes_cli="$(command -v pulumi || true)"
_gpu_nodes_host="$(dirname "${_gpu_nodes_cli:-/nonexistent}")/pulumi-language-python"
if [[ -x "$_gpu_nodes_host" ]]; then _gpu_nodes_host="$(readlink -f "$_gpu_nodes_host")"; else _gpu_nodes_host=''; fi
case "$_gpu_nodes_host" in
  "$GPU_NODES_CACHE"/standin-pulumi-language-python-*) _gpu_nodes_host_part="pulumi-language-python: STAND-IN (tools/engine/python-host)" ;;
  "") _gpu_nodes_host_part="pulumi-language-python: missing" ;;
  *) _gpu_nodes_host_part="pulumi-language-python: real ($_gpu_nodes_host)" ;;
esac
# So is the YAML host: ours (built from pulumi-yaml's module; build.sh copies it beside our CLI)
# or a user's beside theirs.
_gpu_nodes_yaml="$(dirname "${_gpu_nodes_cli:-/nonexistent}")/pulumi-language-yaml"
if [[ ! -x "$_gpu_nodes_yaml" ]]; then
  _gpu_nodes_yaml_part="pulumi-language-yaml: missing"
elif cmp -s "$_gpu_nodes_yaml" "$ENGINE_YAML_HOST_BIN_DIR/pulumi-language-yaml"; then
  _gpu_nodes_yaml_part="pulumi-language-yaml $ENGINE_YAML_HOST_VERSION: real, built from Go modules"
else
  _gpu_nodes_yaml_part="pulumi-language-yaml: real ($(readlink -f "$_gpu_nodes_yaml"))"
fi
case "$_gpu_nodes_cli" in
  "$GPU_NODES_CACHE"/*) _gpu_nodes_cli_part="pulumi $ENGINE_PULUMI_VERSION: real, built from Go modules" ;;
  "") _gpu_nodes_cli_part="pulumi: missing" ;;
  *) _gpu_nodes_cli_part="pulumi: real, installed ($_gpu_nodes_cli)" ;;
esac
export GPU_NODES_ENGINE_PARTS="$_gpu_nodes_cli_part; $_gpu_nodes_host_part; $_gpu_nodes_yaml_part; pulumi-resource-kubernetes $ENGINE_KUBERNETES_PROVIDER_VERSION: real, built from Go modules; $_gpu_nodes_command_part"
echo "[engine] parts: $GPU_NODES_ENGINE_PARTS" >&2

unset -f _gpu_nodes_install_plugin
unset _gpu_nodes_engine_dir _gpu_nodes_cli _gpu_nodes_host _gpu_nodes_cli_part _gpu_nodes_host_part _gpu_nodes_command_part \
  _gpu_nodes_yaml _gpu_nodes_yaml_part
