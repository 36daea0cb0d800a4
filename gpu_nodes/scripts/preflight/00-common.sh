#!/usr/bin/env bash
# preflight.sh: checks one GPU machine before Kubernetes GPU work is put on it.
#
# One script, kept as parts: the files of gpu_nodes/scripts/preflight/, joined in
# name order (this one first, 90-main.sh last) by gpu_nodes/preflight/command.py, which
# checks the joined text on the machine and runs it. Each check is one file (NN-check-*.sh); what they share is
# here and in 10-report.sh (the JSON report), 20-arguments.sh and 50-kubelet-settings.sh.
#
# Usage:
#   bash preflight.sh --runtime containerd|docker|cri-o|k3s|rke2|auto --expect-gpus N
#                     [--min-driver X.Y[.Z]] [--min-cuda X.Y] [--mig-strategy single|mixed]
#                     [--mig-devices PROFILE=COUNT[,PROFILE=COUNT...]]
#                     [--require-default-runtime] [--require-cdi [--cdi-hook-path PATH]]
#                     [--isolation default|strict] [--min-toolkit X.Y.Z] [--allocator devicePlugin|dra] [--dra-mig]
#                     [--nvlink-clique CLIQUE [--imex host|driver [--imex-peers IP,...] [--imex-channels N,... [--imex-required]]]]
#                     [--toolkit runtime|nri]
#                     [--toolkit-advisory CVE-ID=FIXED[,FIXED...]]...
#                     [--driver-advisory BULLETIN:CVE-ID[,CVE-ID...][,+N]=FIXED[,FIXED...]]...
#                     [--patched-driver-branches BRANCH,...] [--refuse-driver-advisories] [--root DIR]
#
# Run it by hand on a node, or over SSH the way the Pulumi component does:
#   cat gpu_nodes/scripts/preflight/*.sh |
#     ssh root@node bash -s -- --runtime containerd --expect-gpus 8
#
# Output contract (stable: the component parses it)
#   stdout  exactly one JSON object, whatever happens:
#     {"ok": bool, "hostname": str, "driverVersion": str|null, "cudaVersion": str|null,
#      "gpus": [{"index": int, "name": str, "uuid": str, "memoryMiB": int}],
#      "mig": {"<GPU index>": {"<MIG profile>": int}}|null,
#      "runtime": {"name": "containerd"|"docker"|"cri-o"|"k3s"|"rke2"|null,
#                  "nvidiaDefault": bool, "runtimeClassNeeded": bool,
#                  "source": "crictl-info"|"docker-info"|"config-dump"|"files"|"file-fallback"|null,
#                  "certain": bool},
#      "kubelet": {"cgroupDriver": str|null, "cpuManagerPolicy": str|null},
#      "gpuFeatures": {"machine": str|null, "migCapable": bool|null, "clique": str|null,
#                      "computeCapability": str|null},
#      "driverAdvisories": {"branch": str|null, "branchPatched": bool|null, "openBulletins": [str]},
#      "toolkit": {"path": str|null, "runtimeBinary": str|null, "config": str|null, "version": str|null,
#                  "openAdvisories": [str], "acceptedAdvisories": [str],
#                  "mode": "legacy"|"cdi"|"jit-cdi"|"csv"|"invalid"|null,
#                  "cdiGeneration": "ok"|"failed"|"not tried"},
#      "checks": [{"name": str, "ok": bool, "detail": str}]}
#   stderr  a human summary, one line per check.
#   exit    0 every check passed, 1 a check failed, 2 usage error (the JSON then
#           holds ok=false and one check named "usage"; --help counts as one,
#           since no machine was checked).
#
#   "checks" always holds these, in this order: driver, gpu-count, gpu-model,
#   driver-version, driver-advisories, cuda, mig, fabric, gpu-health, container-toolkit, runtime,
#   runtime-entry, cdi, cdi-generation, isolation, dev-char-links, device-plugin-socket,
#   kubelet-feature-gates, dra-kubelet, dra-driver-version, dra-toolkit, dra-cdi, dra-feature-gates,
#   dra-compute-domains, dra-mig, nvlink-domain, imex-daemon, imex-peers, nri.
#   The dra-* checks are "not requested" without --allocator dra (dra-compute-domains also without --imex driver,
#   dra-mig without --dra-mig); nvlink-domain without --nvlink-clique, the imex-* checks without --imex, nri without
#   --toolkit nri. With --allocator dra, device-plugin-socket
#   passes with "not judged: ..." (the DRA driver registers with kubelet elsewhere) and cdi, when
#   --require-cdi asks for it, leaves the device plugin's CDI hooks out. Without --min-driver,
#   driver-version is ok with detail "not requested", and so are cuda without
#   --min-cuda, mig without --mig-strategy and cdi without --require-cdi, so the
#   list never changes shape; runtime-entry passes with nothing to judge when there is no nvidia
#   runtime (the runtime check fails then). isolation always runs: it reads the container
#   toolkit's config.toml (hardened with --isolation strict, not hardened
#   otherwise) and, with --require-cdi, that nvidia is not the default runtime. dev-char-links
#   passes with "not judged: ..." where runc does not run the pods with systemd cgroups.
#   mig is null without --mig-strategy or --dra-mig; with one, the MIG devices nvidia-smi -L lists under each
#   GPU, by profile ({} for a GPU that has none), or null when nvidia-smi -L listed no GPU.
#   driver-advisories passes with "not requested" without --driver-advisory and
#   --patched-driver-branches; a driver open to a bulletin or on a branch NVIDIA no longer patches
#   passes with a warning, and fails with --refuse-driver-advisories. driverAdvisories.branch is
#   the driver's branch ("R580"), branchPatched null when no branches were given.
#   cudaVersion is the driver's
#   (nvidia-smi's "CUDA Version"), null when nvidia-smi does not say. A detail that starts with
#   "warning:" passed but wants a human to look.
#   runtime.name is null only when no runtime could be chosen (usage error, or
#   auto found none). runtimeClassNeeded is true when the nvidia runtime is
#   configured but is not the default: GPU pods then need runtimeClassName of a
#   RuntimeClass whose handler is "nvidia" (with --require-default-runtime the
#   runtime check fails instead). Both flags are false when the nvidia runtime is
#   missing (the runtime check has failed then).
#   runtime.source says where the verdict comes from: "crictl-info" / "docker-info" (the
#   running containerd or dockerd, which decides where it answers: 61-running-runtime.sh),
#   "config-dump" (containerd's own merge of its files), "files" (config files read as the runtime reads them:
#   daemon.json, CRI-O's, k3s's generated config) or "file-fallback" (containerd's
#   files merged by this script because config dump was unavailable).
#   runtime.certain is false when the verdict rests on this script's reading of
#   containerd's import and merge rules, or when no runtime was inspected. Readers
#   may ignore both fields.
#   toolkit is the container toolkit the runtime runs (40-check-toolkit.sh, find_toolkit): path its
#   nvidia-ctk, runtimeBinary the nvidia-container-runtime the runtime's nvidia entry names (or PATH's,
#   without an entry to follow), config the config.toml that one reads (/etc/nvidia-container-runtime's,
#   or the GPU Operator's beside its binaries), null where not found or not looked for (usage error).
#   toolkit.mode is the container toolkit's mode as it resolves here (config.toml's, auto by
#   the toolkit's version; "invalid" for a mode it does not know, null when unknown);
#   toolkit.cdiGeneration whether `nvidia-ctk cdi generate` built a CDI spec, into the script's
#   temporary directory: tried in jit-cdi and cdi modes and with --require-cdi, "not tried"
#   elsewhere or when it could not run (check cdi-generation).
#
# Privileges: run it as root. The files that decide the verdict are often
# root-only (containerd's config.toml 0600, /var/lib/kubelet 0750, /var/lib/rancher
# 0700), and a file that cannot be read must not pass for one that says "no". As
# another user every check still runs, and what it cannot read fails the check
# that needed it with "cannot read X as user U" (README: Privileges).
#
# Files are read under --root (default /), so tests can point it at a prepared
# tree; commands (nvidia-smi, containerd, kubelet, timeout) come from PATH, except the
# toolkit's nvidia-ctk, run from where the runtime's nvidia entry points (under --root too). It needs bash >= 4.4 and coreutils (mktemp; timeout if present), and
# deliberately neither jq nor python: GPU nodes often have neither.
#
# Knobs (environment)
#   PREFLIGHT_NVIDIA_SMI_TIMEOUT  seconds nvidia-smi, and nvidia-ctk cdi generate (NVML too),
#                                 may take (default 20): with a wedged driver they hang forever.
#   PREFLIGHT_CMD_TIMEOUT         seconds for the other commands (default 10).

# What nvidia-smi says, on stdout and with exit 0 on some versions, when it is unusable.
readonly SMI_ERROR_RE="NVIDIA-SMI has failed|No devices were found|Failed to initialize NVML|couldn't communicate with the NVIDIA driver|Unable to determine the device handle|GPU is lost"

print_usage() {
  cat <<'EOF'
usage: bash preflight.sh --runtime containerd|docker|cri-o|k3s|rke2|auto --expect-gpus N
                         [--min-driver X.Y[.Z]] [--min-cuda X.Y] [--mig-strategy single|mixed [--mig-devices PROFILE=COUNT,...]]
                         [--require-default-runtime] [--require-cdi [--cdi-hook-path PATH]]
                         [--isolation default|strict] [--min-toolkit X.Y.Z] [--allocator devicePlugin|dra]
                         [--mps-replicas N [--mps-driver-root DIR]] [--dra-mig]
                         [--nvlink-clique CLIQUE [--imex host|driver [--imex-peers IP,...] [--imex-channels N,... [--imex-required]]]]
                         [--toolkit runtime|nri]
                         [--toolkit-advisory CVE-ID=FIXED[,FIXED...]]... [--accepted-toolkit-advisory CVE-ID=FIXED[,FIXED...]]...
                         [--driver-advisory BULLETIN:CVE-ID[,CVE-ID...][,+N]=FIXED[,FIXED...]]...
                         [--patched-driver-branches BRANCH[,BRANCH...]] [--refuse-driver-advisories]
                         [--root DIR]
EOF
}

init_state() {
  ROOT='' RUNTIME_ARG='' EXPECT_GPUS='' MIN_DRIVER='' USAGE_ERROR='' REQUIRE_DEFAULT=false REQUIRE_CDI=false ISOLATION=default MIN_CUDA='' MIG_STRATEGY='' MIG_DEVICES='' MIG_DEVICES_GIVEN=false MIG_WANT_ORDER=() GPU_MODEL='' MIN_TOOLKIT='' ALLOCATOR=devicePlugin TK_ADVISORIES=() TK_ACCEPTED=() DRV_ADVISORIES=() DRV_PATCHED='' DRV_PATCHED_GIVEN=false DRV_REFUSE=false TK_OPEN=() TK_OPEN_IDS=() TK_OPEN_ACCEPTED=() KV_RC='' TK_ASKED='' TK_VERSION='' TK_FOUND='' TK_HOW='' TK_CTK='' TK_RUNTIME='' CDI_HOOK_PATH='' HOOK_PATH_GIVEN=false
  SMI_TIMEOUT=${PREFLIGHT_NVIDIA_SMI_TIMEOUT:-20}
  CMD_TIMEOUT=${PREFLIGHT_CMD_TIMEOUT:-10}
  HOST_NAME=unknown DRIVER_VERSION='' CUDA_VERSION='' SMI_OK=false Q_DONE=false GPU_COUNT=0 GPUS_JSON='' GPU_NAMES=''
  RT_NAME='' RT_DEFAULT=false RT_CLASS=false RT_SRC='' RT_CERTAIN=false
  FEAT_MACHINE='' FEAT_MIG_CAPABLE='' FEAT_CLIQUE='' FEAT_COMPUTE=''
  # devicePlugin.sharing under MPS: the replicas of each GPU and the driver root (69-check-mps.sh).
  MPS_REPLICAS='' MPS_DRIVER_ROOT='' MPS_CAPS=()
  # The NVLink domain and its IMEX daemons (71-check-nvlink-domain.sh, 72-check-imex.sh), the DRA driver's dynamic
  # MIG (68-check-dra.sh), and how the toolkit reaches containers (73-check-nri.sh).
  NVLINK_CLIQUE='' IMEX_MODE='' IMEX_PEERS='' IMEX_CHANNELS='' IMEX_REQUIRED=false DRA_MIG=false TOOLKIT_VIA=runtime
  L_DONE=false L_OK=false L_PROBLEM='' MIG_JSON=null
  # What the current check could not read for lack of permission (see can_read).
  CANNOT_READ=()
  CHECKS_JSON='' ALL_OK=true EMITTED=false TMPD='' LAST_CHECK='' FAILED_NAMES=''
  # The driver's branch, whether NVIDIA patches it ('' when not judged) and the bulletins it is open to.
  DRV_BRANCH='' DRV_BRANCH_PATCHED='' DRV_OPEN_IDS=()
  # The container toolkit's mode (35-check-cuda.sh toolkit_mode) and whether its CDI spec was built.
  TK_MODE='' TK_MODE_WHY='' CDI_GENERATION='not tried'
}

# ------------------------------------------------------------------- helpers

# trim S: sets REPLY to S without leading and trailing white space.
trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  REPLY=${s%"${s##*[![:space:]]}"}
}

# brief TEXT: sets REPLY to the line of TEXT that reads like an nvidia-smi error,
# else its first non-blank line; trimmed and cut to 300 characters.
brief() {
  local line first=''
  REPLY=''
  while IFS='' read -r line; do
    trim "$line"
    [[ -n $REPLY ]] || continue
    [[ $REPLY =~ $SMI_ERROR_RE ]] && { first=$REPLY && break; }
    [[ -n $first ]] || first=$REPLY
  done <<<"$1"
  REPLY=$first
  ((${#REPLY} > 300)) && REPLY="${REPLY:0:300}..."
}

# bounded SECS CMD...: runs CMD, ended after SECS seconds; status 124 on time-out,
# like timeout(1). A wedged GPU driver must not hang the whole deployment.
bounded() {
  local secs=$1 pid tenths=0 limit whole frac=0
  shift
  if command -v timeout >/dev/null 2>&1; then
    timeout -k 2 "$secs" "$@"
    return
  fi
  # No coreutils timeout here: poll instead, so the bound still holds.
  whole=${secs%%.*}
  [[ $secs == *.* ]] && frac=${secs#*.} && frac=${frac:0:1}
  limit=$((10#${whole:-0} * 10 + 10#${frac:-0}))
  # Its own process group (job control on), so its children die with it.
  set -m
  "$@" &
  pid=$!
  set +m
  while kill -0 "$pid" 2>/dev/null; do
    if ((tenths >= limit)); then
      kill -KILL -- "-$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      return 124
    fi
    sleep 0.1
    ((tenths++))
  done
  wait "$pid"
}

# run_capture SECS CMD...: runs CMD bounded; sets CAP_RC, CAP_OUT and CAP_ERR.
# Output goes through files, not pipes: a stray child that outlives the time-out
# would otherwise hold the pipe open and hang us after all.
run_capture() {
  local secs=$1
  shift
  if [[ -n $TMPD ]]; then
    bounded "$secs" "$@" >"$TMPD/out" 2>"$TMPD/err"
    CAP_RC=$?
    slurp "$TMPD/out" && CAP_OUT=$REPLY
    slurp "$TMPD/err" && CAP_ERR=$REPLY
  else
    CAP_OUT=$(bounded "$secs" "$@" 2>&1)
    CAP_RC=$?
    CAP_ERR=''
  fi
}

timed_out() { ((CAP_RC == 124 || CAP_RC == 137)); }

# slurp FILE: sets REPLY to FILE's whole text (no subshell: forks add up on a node).
# A file there that we may not read is noted in CANNOT_READ (see can_read).
slurp() {
  REPLY=''
  can_read "$1" || return 1
  IFS='' read -r -d '' REPLY <"$1"
  return 0
}

# --------------------------------------------------------------- permissions
#
# As a user other than root, some files cannot be read, and a directory that may
# not be searched hides whatever is inside it: [[ -e ]] then says "missing". Each
# read goes through can_read, so that "cannot read X as user U" is what the check
# reports, never a verdict drawn from a file it did not see.

# blocked_by PATH: true when PATH cannot be reached or read by this user; REPLY
# is then what stops us (PATH itself, or a directory above it we may not search).
blocked_by() {
  local path=$1 dir
  if [[ -e $path ]]; then
    if [[ -d $path ]]; then
      [[ -r $path && -x $path ]] && return 1
    elif [[ -r $path || -S $path ]]; then
      return 1
    fi
    REPLY=$path
    return 0
  fi
  # Missing, or hidden: look for the nearest directory above that exists.
  dir=${path%/*}
  while [[ -n $dir && $dir != "$ROOT" ]]; do
    if [[ -d $dir ]]; then
      [[ -x $dir ]] && return 1
      REPLY=$dir
      return 0
    fi
    dir=${dir%/*}
  done
  return 1
}

# can_read PATH: true when PATH exists and can be read. When it cannot be read for
# lack of permission, notes it in CANNOT_READ as the machine shows it.
can_read() {
  local what blocker
  [[ -r $1 && ! -d $1 ]] && return 0
  blocked_by "$1" || return 1
  blocker=$REPLY
  shown "$1" && what=$REPLY
  shown "$blocker"
  [[ $REPLY == "$what" ]] || what+=" ($REPLY is not searchable)"
  [[ " ${CANNOT_READ[*]} " == *" $what "* ]] || CANNOT_READ+=("$what")
  return 1
}

# cannot_read_text: sets REPLY to "cannot read X, Y as user U" for CANNOT_READ.
cannot_read_text() {
  local user=${USER:-} list
  if command -v id >/dev/null 2>&1; then user=$(id -un 2>/dev/null) || user=${USER:-}; fi
  [[ -n $user ]] || user="uid $EUID"
  printf -v list '%s, ' "${CANNOT_READ[@]}"
  REPLY="cannot read ${list%, } as user $user: preflight needs root to read these (README: Privileges)"
}

# find_cmd NAME: sets REPLY to where NAME is on PATH, without a subshell.
find_cmd() {
  local dir IFS=:
  REPLY=''
  for dir in $PATH; do
    if [[ -x ${dir:-.}/$1 && ! -d ${dir:-.}/$1 ]]; then
      REPLY=${dir:-.}/$1
      return 0
    fi
  done
  return 1
}

# read_first_line FILE: sets REPLY to FILE's first line, trimmed ("" if unreadable).
read_first_line() {
  REPLY=''
  [[ -r $1 && -f $1 ]] || return 1
  IFS='' read -r REPLY <"$1"
  trim "$REPLY"
}

# shown PATH: sets REPLY to PATH as it is on the machine, i.e. without --root.
shown() { REPLY=/${1#"$ROOT"/}; }

# glob_root PATTERN: sets MATCHES to the regular files matching the absolute
# PATTERN under --root, sorted. Word splitting is off: only the glob expands.
# A directory of the pattern that may not be listed is noted in CANNOT_READ:
# an empty match there does not mean "no files".
glob_root() {
  local IFS='' f dir=$1
  MATCHES=()
  dir=${dir%%[*?[]*} && dir=${dir%/*}
  if blocked_by "$ROOT$dir"; then
    # Name the file itself when the pattern is one; else the directory not listed.
    if [[ $1 == *[*?[]* ]]; then can_read "$ROOT$dir"; else can_read "$ROOT$1"; fi
    return
  fi
  for f in "$ROOT"$1; do
    [[ -f $f ]] && MATCHES+=("$f")
  done
}

# version_ge A B: true when A >= B, comparing dot-separated parts as numbers
# (550.54.15 >= 535.0, 550.100 > 550.54); missing parts count as 0.
version_ge() {
  local -a a b
  local i n x y
  IFS=. read -r -a a <<<"$1"
  IFS=. read -r -a b <<<"$2"
  n=${#a[@]}
  ((${#b[@]} > n)) && n=${#b[@]}
  for ((i = 0; i < n; i++)); do
    x=${a[i]:-0} y=${b[i]:-0}
    x=${x%%[!0-9]*} y=${y%%[!0-9]*}
    x=$((10#${x:0:17}0 / 10)) y=$((10#${y:0:17}0 / 10))
    ((x > y)) && return 0
    ((x < y)) && return 1
  done
  return 0
}
