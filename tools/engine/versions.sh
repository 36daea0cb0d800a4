# shellcheck shell=bash disable=SC2034
# Versions of the Pulumi engine pieces that build.sh builds and env.sh puts on
# PATH. Sourced by both; one place to bump.

GPU_NODES_CACHE="${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}"
_engine_versions_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Upstream source snapshots for the engine parts whose Go modules the module proxy
# refuses (shared/upstream/README.md beside the repository says what each holds).
GPU_NODES_UPSTREAM="${GPU_NODES_UPSTREAM:-$(cd "$_engine_versions_dir/../../.." && pwd)/shared/upstream}"

# engine_archive_key FILE: the first 12 hex digits of FILE's sha256, or nothing
# when FILE is missing. Builds from an archive are cached under this key, so a
# new archive is a new build.
engine_archive_key() {
  [[ -f "$1" ]] || return 0
  sha256sum "$1" | cut -c1-12
}

# Pulumi CLI: github.com/pulumi/pulumi/pkg/v3 (v3.272.0 and v3.270.0 are refused
# by the module proxy here; v3.274.1 is served).
ENGINE_PULUMI_VERSION="3.274.1"

# Pulumi's own Python language host, pulumi/pulumi sdk/python/cmd/pulumi-language-python
# at commit 1b5949891b3c (sdk/.version 3.260.0), built against the CLI's pkg/sdk.
ENGINE_PYTHON_HOST_COMMIT="1b5949891b3c"
ENGINE_PYTHON_HOST_VERSION="3.260.0-dev+$ENGINE_PYTHON_HOST_COMMIT"
ENGINE_PYTHON_HOST_ARCHIVE="$GPU_NODES_UPSTREAM/pulumi-language-python-$ENGINE_PYTHON_HOST_COMMIT.tar.gz"
ENGINE_PYTHON_HOST_KEY="$(engine_archive_key "$ENGINE_PYTHON_HOST_ARCHIVE")"

# pulumi-kubernetes provider 4.25.0: only this pseudo-version is served.
ENGINE_KUBERNETES_PROVIDER_VERSION="4.25.0"
ENGINE_KUBERNETES_PROVIDER_MODULE_VERSION="v4.0.0-20260115033456-f47bc2d6f199"

# pulumi-command provider 1.2.1 (tag v1.2.1, commit 7f3eb6f3b77c), the version
# the pulumi-command==1.2.1 Python SDK asks for.
ENGINE_COMMAND_PROVIDER_VERSION="1.2.1"
ENGINE_COMMAND_PROVIDER_ARCHIVE="$GPU_NODES_UPSTREAM/pulumi-command-v$ENGINE_COMMAND_PROVIDER_VERSION.tar.gz"
ENGINE_COMMAND_PROVIDER_KEY="$(engine_archive_key "$ENGINE_COMMAND_PROVIDER_ARCHIVE")"

ENGINE_PULUMI_BIN_DIR="$GPU_NODES_CACHE/pulumi-$ENGINE_PULUMI_VERSION/bin"
ENGINE_PYTHON_HOST_BIN_DIR="$GPU_NODES_CACHE/pulumi-language-python-$ENGINE_PYTHON_HOST_COMMIT-${ENGINE_PYTHON_HOST_KEY:-missing}/bin"
ENGINE_KUBERNETES_PROVIDER_BIN_DIR="$GPU_NODES_CACHE/pulumi-resource-kubernetes-$ENGINE_KUBERNETES_PROVIDER_VERSION/bin"
ENGINE_COMMAND_PROVIDER_BIN_DIR="$GPU_NODES_CACHE/pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_VERSION-${ENGINE_COMMAND_PROVIDER_KEY:-missing}/bin"
unset _engine_versions_dir
