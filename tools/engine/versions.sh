# shellcheck shell=bash disable=SC2034
# Versions of the Pulumi engine pieces that build.sh builds and env.sh puts on
# PATH. Sourced by both; one place to bump.

GPU_NODES_CACHE="${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}"

# Pulumi CLI: github.com/pulumi/pulumi/pkg/v3 (v3.272.0 and v3.270.0 are refused
# by the module proxy here; v3.274.1 is served).
ENGINE_PULUMI_VERSION="3.274.1"

# Python language host: module github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
# is never tagged; it would be the pseudo-version of the commit of the pkg/v3.274.1
# tag (commit time 2026-11-05T12:45:06Z). Neither that commit's hash nor any
# pseudo-version of the module could be found from here (the proxy refuses the
# module's version list). Set GPU_NODES_LANGUAGE_PYTHON_VERSION to an exact
# pseudo-version the proxy serves to build it.
ENGINE_PULUMI_LANGUAGE_PYTHON_MODULE_VERSION="${GPU_NODES_LANGUAGE_PYTHON_VERSION:-}"

# pulumi-kubernetes provider 4.25.0: only this pseudo-version is served.
ENGINE_KUBERNETES_PROVIDER_VERSION="4.25.0"
ENGINE_KUBERNETES_PROVIDER_MODULE_VERSION="v4.0.0-20260115033456-f47bc2d6f199"

# pulumi-command provider 1.2.1: tag v1.2.1 is commit 7f3eb6f3b77c
# (2026-03-03T23:59:22Z); the provider/ module is untagged, so its
# pseudo-version is the one below. Override with GPU_NODES_COMMAND_MODULE_VERSION.
ENGINE_COMMAND_PROVIDER_VERSION="1.2.1"
ENGINE_COMMAND_PROVIDER_MODULE_VERSION="${GPU_NODES_COMMAND_MODULE_VERSION:-v0.0.0-20260303235922-7f3eb6f3b77c}"

ENGINE_PULUMI_BIN_DIR="$GPU_NODES_CACHE/pulumi-$ENGINE_PULUMI_VERSION/bin"
ENGINE_KUBERNETES_PROVIDER_BIN_DIR="$GPU_NODES_CACHE/pulumi-resource-kubernetes-$ENGINE_KUBERNETES_PROVIDER_VERSION/bin"
ENGINE_COMMAND_PROVIDER_BIN_DIR="$GPU_NODES_CACHE/pulumi-resource-command-$ENGINE_COMMAND_PROVIDER_VERSION/bin"
