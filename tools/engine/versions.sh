# shellcheck shell=bash disable=SC2034
# Versions of the Pulumi engine pieces that build.sh builds and env.sh puts on
# PATH, and where each is cached. Sourced by both; one place to bump.

GPU_NODES_CACHE="${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}"
_engine_versions_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# engine_source_key DIR: the first 12 hex digits of the sha256 of the stand-in's sources in DIR
# (go.mod, go.sum, *.go, by name). A stand-in is cached under this key: an edit is a new build,
# and a binary cached under any other name (one built from something else) is never picked up.
engine_source_key() {
  (cd "$1" && export LC_ALL=C && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
}

# Pulumi CLI: github.com/pulumi/pulumi/pkg/v3 (v3.272.0 and v3.270.0 are refused
# by the module proxy here; v3.274.1 is served).
ENGINE_PULUMI_VERSION="3.274.1"

# Pulumi YAML's language host: github.com/pulumi/pulumi-yaml (cmd/pulumi-language-yaml), built
# through our wrapper yaml/ on the CLI's pkg/sdk. v1.25.0 is the newest the module proxy serves.
ENGINE_YAML_HOST_VERSION="1.25.0"

# pulumi-kubernetes provider 4.25.0: only this pseudo-version is served.
ENGINE_KUBERNETES_PROVIDER_VERSION="4.25.0"
ENGINE_KUBERNETES_PROVIDER_MODULE_VERSION="v4.0.0-20260115033456-f47bc2d6f199"

# pulumi-command 1.2.1 is what the pulumi-command==1.2.1 Python SDK asks for. The module proxy
# refuses its provider and Pulumi's Python language host: both are stand-ins of our own
# (command-provider/, python-host/), used only where the real ones are not installed.
ENGINE_COMMAND_PROVIDER_VERSION="1.2.1"
ENGINE_PYTHON_HOST_KEY="$(engine_source_key "$_engine_versions_dir/python-host")"
ENGINE_COMMAND_PROVIDER_KEY="$(engine_source_key "$_engine_versions_dir/command-provider")"
# Our own SDK generator over pkg/v3's code generators (sdkgen/): the CLI's `package gen-sdk` asks
# the Node.js and Go language hosts, which the module proxy refuses.
ENGINE_SDKGEN_KEY="$(engine_source_key "$_engine_versions_dir/sdkgen")"

# Where a user's own Pulumi install keeps its plugins (env.sh points PULUMI_HOME elsewhere).
if [[ -n "${PULUMI_HOME:-}" && "$PULUMI_HOME" != "$GPU_NODES_CACHE/pulumi-home" ]]; then
  ENGINE_USER_PULUMI_HOME="$PULUMI_HOME"
else
  ENGINE_USER_PULUMI_HOME="$HOME/.pulumi"
fi
# A real pulumi-command plugin of that version, if the user has one.
ENGINE_REAL_COMMAND_PROVIDER="$ENGINE_USER_PULUMI_HOME/plugins/resource-command-v$ENGINE_COMMAND_PROVIDER_VERSION/pulumi-resource-command"

ENGINE_PULUMI_BIN_DIR="$GPU_NODES_CACHE/pulumi-$ENGINE_PULUMI_VERSION/bin"
ENGINE_YAML_HOST_BIN_DIR="$GPU_NODES_CACHE/pulumi-language-yaml-$ENGINE_YAML_HOST_VERSION/bin"
ENGINE_KUBERNETES_PROVIDER_BIN_DIR="$GPU_NODES_CACHE/pulumi-resource-kubernetes-$ENGINE_KUBERNETES_PROVIDER_VERSION/bin"
ENGINE_PYTHON_HOST_BIN_DIR="$GPU_NODES_CACHE/standin-pulumi-language-python-$ENGINE_PYTHON_HOST_KEY/bin"
ENGINE_COMMAND_PROVIDER_BIN_DIR="$GPU_NODES_CACHE/standin-pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_VERSION-$ENGINE_COMMAND_PROVIDER_KEY/bin"
ENGINE_SDKGEN_BIN_DIR="$GPU_NODES_CACHE/gpu-nodes-sdkgen-$ENGINE_SDKGEN_KEY/bin"
unset _engine_versions_dir
