# shellcheck shell=bash disable=SC2034
# Pinned versions of the local control plane (sourced by build.sh and env.sh).
# Kubernetes: a v1.35 release the module proxy serves; kwok v0.8.0 defaults to 1.36 and
# supports older minors through its version-dependent flags.
CLUSTER_K8S_VERSION=v1.35.4
# Release time of the module version (its proxy .info), for a reproducible `buildDate`.
CLUSTER_K8S_BUILD_DATE=2026-04-15T18:01:22Z
CLUSTER_ETCD_VERSION=v3.6.16
CLUSTER_KWOK_VERSION=v0.8.0
CLUSTER_CACHE="${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}"
