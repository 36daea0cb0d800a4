#!/usr/bin/env bash
# Builds the local control plane for end-to-end tests from Go modules (nothing is downloaded
# but modules through the ordinary `go` client):
#   kubernetes-<v>/bin: kube-apiserver kube-controller-manager kube-scheduler kubectl
#   etcd-<v>/bin:       etcd
#   kwok-<v>/bin:       kwok kwokctl
# into ${GPU_NODES_CACHE:-$HOME/.cache/gpu-nodes}. A tool whose binaries are all there is skipped.
#
# Usage: tools/cluster/build.sh [--force] [--regen] [kubernetes|etcd|kwok ...]
#   --force  rebuild even when cached
#   --regen  rewrite the wrapper modules' go.mod/go.sum from the pinned versions below
#            (needs the module proxy; the committed go.mod/go.sum are what a normal build uses)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
source "$HERE/versions.sh"

FORCE=0
REGEN=0
TOOLS=()
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --regen) REGEN=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    kubernetes|etcd|kwok) TOOLS+=("$arg") ;;
    *) echo "build.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done
[ ${#TOOLS[@]} -gt 0 ] || TOOLS=(kubernetes etcd kwok)

export GOFLAGS="${GOFLAGS:--buildvcs=false}"
export CGO_ENABLED="${CGO_ENABLED:-0}"
# A go.mod asking for a newer toolchain must fail here, never trigger a toolchain download.
export GOTOOLCHAIN=local

declare -A SECONDS_FOR=()
REPORT=()

log() { printf '[build] %s\n' "$*" >&2; }

# all_present DIR BIN... : true when every binary exists and is executable
all_present() {
  local dir=$1; shift
  local b
  for b in "$@"; do [ -x "$dir/$b" ] || return 1; done
}

# go_build MODULE_DIR OUT_DIR LDFLAGS PKG BIN : one `go build` per binary, timed
go_build() {
  local mod=$1 out=$2 ldflags=$3 pkg=$4 bin=$5
  local t0 t1
  t0=$(date +%s)
  log "go build $pkg -> $out/$bin"
  (cd "$mod" && go build -trimpath -ldflags "-s -w $ldflags" -o "$out/.$bin.tmp" "$pkg")
  mv -f "$out/.$bin.tmp" "$out/$bin"
  t1=$(date +%s)
  SECONDS_FOR[$bin]=$((t1 - t0))
  # kept beside the binaries: what this build cost, for the README's numbers
  printf '%s %ss %s %s\n' "$bin" "$((t1 - t0))" "$(date -u +%FT%TZ)" "$(go env GOVERSION)" >> "$out/../build-times.txt"
}

# ---------------------------------------------------------------- kubernetes
regen_kubernetes() {
  local mod="$HERE/go/kubernetes" v=$CLUSTER_K8S_VERSION staging=v0.${CLUSTER_K8S_VERSION#v1.}
  local dir
  mkdir -p "$mod"
  (cd "$mod" && rm -f go.mod go.sum && go mod download k8s.io/kubernetes@"$v")
  dir=$(cd "$mod" && go mod download -json k8s.io/kubernetes@"$v" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  {
    echo "// Wrapper module: builds kube-apiserver, kube-controller-manager, kube-scheduler and kubectl"
    echo "// from k8s.io/kubernetes. Written by tools/cluster/build.sh --regen; do not edit by hand."
    echo "module gpu-nodes.local/tools/cluster/kubernetes"
    echo
    # Same language version and godebug defaults as upstream's own build.
    grep -E '^(go|godebug) ' "$dir/go.mod" | sed 's/$/\n/'
    echo "require k8s.io/kubernetes $v"
    echo
    echo "// k8s.io/kubernetes requires its staging modules at v0.0.0 with ./staging replaces."
    echo "replace ("
    awk -v s="$staging" '/^replace \(/{f=1;next} f&&/^\)/{f=0} f&&/=> \.\/staging/{print "\t"$1" => "$1" "s}' "$dir/go.mod"
    echo ")"
  } > "$mod/go.mod"
  (cd "$mod" && go get -tool \
      "k8s.io/kubernetes/cmd/kube-apiserver@$v" "k8s.io/kubernetes/cmd/kube-controller-manager@$v" \
      "k8s.io/kubernetes/cmd/kube-scheduler@$v" "k8s.io/kubernetes/cmd/kubectl@$v" && go mod tidy)
}

build_kubernetes() {
  local v=$CLUSTER_K8S_VERSION out="$CLUSTER_CACHE/kubernetes-$CLUSTER_K8S_VERSION/bin"
  local bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  [ "$REGEN" = 1 ] && regen_kubernetes
  if [ "$FORCE" = 0 ] && all_present "$out" "${bins[@]}"; then
    log "kubernetes $v: cached in $out"; REPORT+=("kubernetes $v: cached"); return
  fi
  mkdir -p "$out"
  local minor=${v#v1.}; minor=${minor%%.*}
  local pkgv=k8s.io/component-base/version
  local ld="-X $pkgv.gitVersion=$v -X $pkgv.gitMajor=1 -X $pkgv.gitMinor=$minor"
  ld+=" -X $pkgv.gitTreeState=clean -X $pkgv.buildDate=$CLUSTER_K8S_BUILD_DATE"
  # client-go carries its own copy for the User-Agent and discovery.
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/client-go/pkg/version.gitMajor=1"
  ld+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  local b
  for b in "${bins[@]}"; do
    go_build "$HERE/go/kubernetes" "$out" "$ld" "k8s.io/kubernetes/cmd/$b" "$b"
  done
  "$out/kube-apiserver" --version
  "$out/kubectl" version --client
  REPORT+=("kubernetes $v: built")
}

# ---------------------------------------------------------------- etcd
regen_etcd() {
  local mod="$HERE/go/etcd"
  (cd "$mod" && go get "go.etcd.io/etcd/server/v3@$CLUSTER_ETCD_VERSION" && go mod tidy)
}

build_etcd() {
  local v=$CLUSTER_ETCD_VERSION out="$CLUSTER_CACHE/etcd-$CLUSTER_ETCD_VERSION/bin"
  [ "$REGEN" = 1 ] && regen_etcd
  if [ "$FORCE" = 0 ] && all_present "$out" etcd; then
    log "etcd $v: cached in $out"; REPORT+=("etcd $v: cached"); return
  fi
  mkdir -p "$out"
  # etcd prints version.Version, a constant in api/v3/version: nothing to inject.
  go_build "$HERE/go/etcd" "$out" "" . etcd
  "$out/etcd" --version
  REPORT+=("etcd $v: built")
}

# ---------------------------------------------------------------- kwok
regen_kwok() {
  local mod="$HERE/go/kwok"
  (cd "$mod" && go get -tool "sigs.k8s.io/kwok/cmd/kwok@$CLUSTER_KWOK_VERSION" \
     "sigs.k8s.io/kwok/cmd/kwokctl@$CLUSTER_KWOK_VERSION" && go mod tidy)
}

build_kwok() {
  local v=$CLUSTER_KWOK_VERSION out="$CLUSTER_CACHE/kwok-$CLUSTER_KWOK_VERSION/bin"
  [ "$REGEN" = 1 ] && regen_kwok
  if [ "$FORCE" = 0 ] && all_present "$out" kwok kwokctl; then
    log "kwok $v: cached in $out"; REPORT+=("kwok $v: cached"); return
  fi
  mkdir -p "$out"
  local c=sigs.k8s.io/kwok/pkg/consts
  # Same variables as upstream's Makefile sets; KubeVersion is kwokctl's default cluster version.
  local ld="-X $c.Version=${v#v} -X $c.KubeVersion=${CLUSTER_K8S_VERSION#v} -X $c.PreRelease=GA"
  go_build "$HERE/go/kwok" "$out" "$ld" sigs.k8s.io/kwok/cmd/kwok kwok
  go_build "$HERE/go/kwok" "$out" "$ld" sigs.k8s.io/kwok/cmd/kwokctl kwokctl
  "$out/kwokctl" --version
  REPORT+=("kwok $v: built")
}

mkdir -p "$CLUSTER_CACHE"
for t in "${TOOLS[@]}"; do "build_$t"; done

echo "== build summary (cache: $CLUSTER_CACHE)"
for r in "${REPORT[@]}"; do echo "  $r"; done
if [ ${#SECONDS_FOR[@]} -gt 0 ]; then
  echo "== seconds per binary, this run"
  for b in "${!SECONDS_FOR[@]}"; do printf '  %-24s %5ss\n' "$b" "${SECONDS_FOR[$b]}"; done | sort
fi
echo "== seconds per binary, as recorded in the cache (<tool>-<version>/build-times.txt)"
for t in "${TOOLS[@]}"; do
  case "$t" in
    kubernetes) f="$CLUSTER_CACHE/kubernetes-$CLUSTER_K8S_VERSION/build-times.txt" ;;
    etcd) f="$CLUSTER_CACHE/etcd-$CLUSTER_ETCD_VERSION/build-times.txt" ;;
    kwok) f="$CLUSTER_CACHE/kwok-$CLUSTER_KWOK_VERSION/build-times.txt" ;;
  esac
  [ -f "$f" ] && awk '{printf "  %-24s %6s  %s\n", $1, $2, $3}' "$f"
done
