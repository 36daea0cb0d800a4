#!/usr/bin/env bash
# preflight.sh: checks one GPU machine before Kubernetes GPU work is put on it.
#
# Usage:
#   bash preflight.sh --runtime containerd|docker|cri-o|k3s|rke2|auto --expect-gpus N
#                     [--min-driver X.Y[.Z]] [--require-default-runtime] [--root DIR]
#
# Run it by hand on a node, or over SSH the way the Pulumi component does:
#   ssh root@node bash -s -- --runtime containerd --expect-gpus 8 < preflight.sh
#
# Output contract (stable: the component parses it)
#   stdout  exactly one JSON object, whatever happens:
#     {"ok": bool, "hostname": str, "driverVersion": str|null,
#      "gpus": [{"index": int, "name": str, "uuid": str, "memoryMiB": int}],
#      "runtime": {"name": "containerd"|"docker"|"cri-o"|"k3s"|"rke2"|null,
#                  "nvidiaDefault": bool, "runtimeClassNeeded": bool,
#                  "source": "config-dump"|"files"|"file-fallback"|null,
#                  "certain": bool},
#      "checks": [{"name": str, "ok": bool, "detail": str}]}
#   stderr  a human summary, one line per check.
#   exit    0 every check passed, 1 a check failed, 2 usage error (the JSON then
#           holds ok=false and one check named "usage"; --help counts as one,
#           since no machine was checked).
#
#   "checks" always holds these seven, in this order: driver, gpu-count,
#   driver-version, container-toolkit, runtime, device-plugin-socket,
#   kubelet-feature-gates. Without --min-driver, driver-version is ok with detail
#   "not requested", so the list never changes shape. A detail that starts with
#   "warning:" passed but wants a human to look.
#   runtime.name is null only when no runtime could be chosen (usage error, or
#   auto found none). runtimeClassNeeded is true when the nvidia runtime is
#   configured but is not the default: GPU pods then need runtimeClassName of a
#   RuntimeClass whose handler is "nvidia" (with --require-default-runtime the
#   runtime check fails instead). Both flags are false when the nvidia runtime is
#   missing (the runtime check has failed then).
#   runtime.source says where the verdict comes from: "config-dump" (containerd's
#   own merge of its files), "files" (config files read as the runtime reads them:
#   daemon.json, CRI-O's, k3s's generated config) or "file-fallback" (containerd's
#   files merged by this script because config dump was unavailable).
#   runtime.certain is false when the verdict rests on this script's reading of
#   containerd's import and merge rules, or when no runtime was inspected. Both
#   fields came later than the others: readers may ignore them.
#
# Privileges: run it as root. The files that decide the verdict are often
# root-only (containerd's config.toml 0600, /var/lib/kubelet 0750, /var/lib/rancher
# 0700), and a file that cannot be read must not pass for one that says "no". As
# another user every check still runs, and what it cannot read fails the check
# that needed it with "cannot read X as user U" (README: Privileges).
#
# Files are read under --root (default /), so tests can point it at a prepared
# tree; commands (nvidia-smi, nvidia-ctk, containerd, kubelet, timeout) come from
# PATH. It needs bash >= 4.4 and coreutils (mktemp; timeout if present), and
# deliberately neither jq nor python: GPU nodes often have neither.
#
# Knobs (environment)
#   PREFLIGHT_NVIDIA_SMI_TIMEOUT  seconds nvidia-smi may take (default 20): with a
#                                 wedged driver it hangs forever.
#   PREFLIGHT_CMD_TIMEOUT         seconds for the other commands (default 10).

readonly QUERY_FIELDS=index,name,uuid,driver_version,memory.total
# The DevicePlugins feature gate was removed in Kubernetes 1.28: kubelet refuses
# to start when it is still set.
readonly GATE_REMOVED_MINOR=28
# What nvidia-smi says, on stdout and with exit 0 on some versions, when it is unusable.
readonly SMI_ERROR_RE="NVIDIA-SMI has failed|No devices were found|Failed to initialize NVML|couldn't communicate with the NVIDIA driver|Unable to determine the device handle|GPU is lost"
# runtimes.nvidia, runtimes."nvidia" or runtimes.'nvidia', as a table or a dotted key,
# but not runtimes.nvidia-cdi and friends.
readonly NVIDIA_RUNTIME_RE="runtimes\\.(nvidia|\"nvidia\"|'nvidia')([].[:space:]=]|\$)"
readonly JP_STRING_RE='^"(([^"\\]|\\.)*)"'
readonly JP_SCALAR_RE='^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)'

print_usage() {
  cat <<'EOF'
usage: bash preflight.sh --runtime containerd|docker|cri-o|k3s|rke2|auto --expect-gpus N
                         [--min-driver X.Y[.Z]] [--require-default-runtime] [--root DIR]
EOF
}

init_state() {
  ROOT='' RUNTIME_ARG='' EXPECT_GPUS='' MIN_DRIVER='' USAGE_ERROR='' REQUIRE_DEFAULT=false
  SMI_TIMEOUT=${PREFLIGHT_NVIDIA_SMI_TIMEOUT:-20}
  CMD_TIMEOUT=${PREFLIGHT_CMD_TIMEOUT:-10}
  HOST_NAME=unknown DRIVER_VERSION='' SMI_OK=false GPU_COUNT=0 GPUS_JSON='' GPU_NAMES=''
  RT_NAME='' RT_DEFAULT=false RT_CLASS=false RT_SRC='' RT_CERTAIN=false
  # What the current check could not read for lack of permission (see can_read).
  CANNOT_READ=()
  CHECKS_JSON='' ALL_OK=true EMITTED=false TMPD='' LAST_CHECK='' FAILED_NAMES=''
}

# ---------------------------------------------------------------- JSON output

# json_str S: sets REPLY to S as a JSON string literal. Every string in the output
# goes through here: hostnames, GPU names and tool error text are not ours to trust.
json_str() {
  local s=$1 i oct ch rep
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  if [[ $s == *[[:cntrl:]]* ]]; then
    s=${s//$'\n'/\\n}
    s=${s//$'\r'/\\r}
    s=${s//$'\t'/\\t}
    for ((i = 1; i < 32; i++)); do
      printf -v oct '%03o' "$i"
      printf -v ch '%b' "\\$oct"
      [[ $s == *"$ch"* ]] || continue
      printf -v rep '\\u%04x' "$i"
      s=${s//"$ch"/$rep}
    done
    s=${s//$'\x7f'/\\u007f}
  fi
  REPLY="\"$s\""
}

# add_check NAME OK DETAIL: records one entry of "checks" and one summary line.
add_check() {
  local name=$1 ok=$2 detail=$3 jname word=PASS
  json_str "$name"
  jname=$REPLY
  json_str "$detail"
  CHECKS_JSON+="${CHECKS_JSON:+, }{\"name\": $jname, \"ok\": $ok, \"detail\": $REPLY}"
  if [[ $ok != true ]]; then
    ALL_OK=false word=FAIL
    FAILED_NAMES+="${FAILED_NAMES:+, }$name"
  fi
  printf 'preflight: %s %s: %s\n' "$word" "$name" "$detail" >&2
  LAST_CHECK=$name
}

add_gpu() {
  local idx=$1 name=$2 uuid=$3 mem=$4 jn
  json_str "$name"
  jn=$REPLY
  json_str "$uuid"
  GPUS_JSON+="${GPUS_JSON:+, }{\"index\": $idx, \"name\": $jn, \"uuid\": $REPLY, \"memoryMiB\": $mem}"
  ((GPU_COUNT++))
  [[ ", $GPU_NAMES, " == *", $name, "* ]] || GPU_NAMES+="${GPU_NAMES:+, }$name"
}

# emit: writes the one JSON object to fd 3, the saved stdout.
emit() {
  local host driver rt src
  json_str "$HOST_NAME"
  host=$REPLY
  driver=null rt=null src=null
  if [[ -n $DRIVER_VERSION ]]; then json_str "$DRIVER_VERSION" && driver=$REPLY; fi
  if [[ -n $RT_NAME ]]; then json_str "$RT_NAME" && rt=$REPLY; fi
  if [[ -n $RT_SRC ]]; then json_str "$RT_SRC" && src=$REPLY; fi
  printf '{"ok": %s, "hostname": %s, "driverVersion": %s, "gpus": [%s], "runtime": {"name": %s, "nvidiaDefault": %s, "runtimeClassNeeded": %s, "source": %s, "certain": %s}, "checks": [%s]}\n' \
    "$ALL_OK" "$host" "$driver" "$GPUS_JSON" "$rt" "$RT_DEFAULT" "$RT_CLASS" "$src" "$RT_CERTAIN" "$CHECKS_JSON" >&3
  EMITTED=true
}

# If anything makes the script stop early, the caller still gets valid JSON.
# shellcheck disable=SC2317  # called by the EXIT trap
on_exit() {
  local rc=$?
  [[ -n $TMPD ]] && rm -rf -- "$TMPD"
  if [[ $EMITTED != true ]]; then
    add_check internal false "preflight.sh stopped unexpectedly (status $rc) after ${LAST_CHECK:-its start}"
    emit
    exit 1
  fi
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

# ------------------------------------------------------------------- arguments

# parse_args ARGS...: fills the settings; on a usage error sets USAGE_ERROR, fails.
parse_args() {
  local opt val root=/
  while (($#)); do
    opt=$1
    case $opt in
      --runtime | --expect-gpus | --min-driver | --root)
        if (($# < 2)); then
          USAGE_ERROR="$opt needs a value"
          return 1
        fi
        val=$2
        shift 2
        ;;
      --runtime=* | --expect-gpus=* | --min-driver=* | --root=*)
        val=${opt#*=} opt=${opt%%=*}
        shift
        ;;
      --require-default-runtime)
        REQUIRE_DEFAULT=true
        shift
        continue
        ;;
      -h | --help)
        USAGE_ERROR="help requested: no checks were run"
        return 1
        ;;
      *)
        USAGE_ERROR="unknown argument: $opt"
        return 1
        ;;
    esac
    case $opt in
      --runtime) RUNTIME_ARG=$val ;;
      --expect-gpus) EXPECT_GPUS=$val ;;
      --min-driver) MIN_DRIVER=$val ;;
      --root) root=$val ;;
    esac
  done
  validate_args "$root"
}

validate_args() {
  local root=$1 var val
  case $RUNTIME_ARG in
    containerd | docker | cri-o | k3s | rke2 | auto) ;;
    '') USAGE_ERROR="missing --runtime containerd|docker|cri-o|k3s|rke2|auto" && return 1 ;;
    *) USAGE_ERROR="unknown runtime '$RUNTIME_ARG': want containerd, docker, cri-o, k3s, rke2 or auto" && return 1 ;;
  esac
  if [[ -z $EXPECT_GPUS ]]; then
    USAGE_ERROR="missing --expect-gpus N"
    return 1
  fi
  if ! [[ $EXPECT_GPUS =~ ^[0-9]{1,6}$ ]]; then
    USAGE_ERROR="--expect-gpus wants a whole number, got '$EXPECT_GPUS'"
    return 1
  fi
  EXPECT_GPUS=$((10#$EXPECT_GPUS))
  if [[ -n $MIN_DRIVER && ! $MIN_DRIVER =~ ^[0-9]+(\.[0-9]+)*$ ]]; then
    USAGE_ERROR="--min-driver wants a version like 535.104.05, got '$MIN_DRIVER'"
    return 1
  fi
  if [[ ! -d $root ]]; then
    USAGE_ERROR="--root '$root' is not a directory"
    return 1
  fi
  while [[ $root == */ ]]; do root=${root%/}; done
  ROOT=$root
  for var in PREFLIGHT_NVIDIA_SMI_TIMEOUT PREFLIGHT_CMD_TIMEOUT; do
    val=${!var-}
    if [[ -n $val ]] && ! [[ $val =~ ^[0-9]{1,5}(\.[0-9]+)?$ && $val =~ [1-9] ]]; then
      USAGE_ERROR="$var wants a positive number of seconds, got '$val'"
      return 1
    fi
  done
}

detect_hostname() {
  # The kernel's name first: /etc/hostname can lag behind a rename.
  read_first_line "$ROOT/proc/sys/kernel/hostname" || true
  [[ -n $REPLY ]] || read_first_line "$ROOT/etc/hostname" || true
  if [[ -z $REPLY ]] && command -v hostname >/dev/null 2>&1; then
    REPLY=$(hostname 2>/dev/null)
  fi
  HOST_NAME=${REPLY:-unknown}
}

# ---------------------------------------------------------------- check: driver

# parse_gpu_line LINE: splits one line of the nvidia-smi query into G_INDEX,
# G_NAME, G_UUID, G_DRIVER and G_MEM. The name is everything between the first
# comma and the last three fields, so names with spaces (or commas) survive.
parse_gpu_line() {
  local rest
  [[ $1 == *,*,*,*,* ]] || return 1
  trim "${1%%,*}" && G_INDEX=$REPLY
  rest=${1#*,}
  trim "${rest##*,}" && G_MEM=$REPLY && rest=${rest%,*}
  trim "${rest##*,}" && G_DRIVER=$REPLY && rest=${rest%,*}
  trim "${rest##*,}" && G_UUID=$REPLY && rest=${rest%,*}
  trim "$rest" && G_NAME=$REPLY
  # "81920 MiB" when a version ignores nounits.
  G_MEM=${G_MEM%[Mm][Ii][Bb]}
  trim "$G_MEM" && G_MEM=$REPLY
  [[ $G_INDEX =~ ^[0-9]{1,6}$ && $G_MEM =~ ^[0-9]{1,12}$ ]] || return 1
  [[ -n $G_NAME && -n $G_UUID && -n $G_DRIVER ]]
}

check_driver() {
  local line driver=''
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    add_check driver false "nvidia-smi not found on PATH: the NVIDIA driver utilities are not installed"
    return
  fi
  run_capture "$SMI_TIMEOUT" nvidia-smi --query-gpu="$QUERY_FIELDS" --format=csv,noheader,nounits
  if timed_out; then
    add_check driver false "nvidia-smi did not answer within ${SMI_TIMEOUT}s: the driver is wedged or a GPU fell off the bus"
    return
  fi
  if ((CAP_RC != 0)) || [[ $CAP_OUT =~ $SMI_ERROR_RE ]]; then
    brief "$CAP_OUT"$'\n'"$CAP_ERR"
    add_check driver false "nvidia-smi failed (exit $CAP_RC): ${REPLY:-no output}"
    return
  fi
  while IFS='' read -r line; do
    trim "$line"
    line=$REPLY
    [[ -n $line ]] || continue
    if ! parse_gpu_line "$line"; then
      ((${#line} > 300)) && line="${line:0:300}..."
      add_check driver false "cannot read this line of nvidia-smi --query-gpu output: $line"
      return
    fi
    add_gpu "$((10#$G_INDEX))" "$G_NAME" "$G_UUID" "$((10#$G_MEM))"
    driver=${driver:-$G_DRIVER}
  done <<<"$CAP_OUT"
  if ((GPU_COUNT == 0)); then
    add_check driver false "nvidia-smi listed no GPUs"
    return
  fi
  DRIVER_VERSION=$driver SMI_OK=true
  add_check driver true "NVIDIA driver $driver, $GPU_COUNT GPU(s): $GPU_NAMES"
}

check_gpu_count() {
  local ok=false why=''
  ((GPU_COUNT == EXPECT_GPUS)) && ok=true
  $SMI_OK || why=" (nvidia-smi gave no usable GPU list, see the driver check)"
  add_check gpu-count "$ok" "found $GPU_COUNT GPU(s), expected $EXPECT_GPUS$why"
}

check_driver_version() {
  if [[ -z $MIN_DRIVER ]]; then
    add_check driver-version true "not requested"
  elif [[ -z $DRIVER_VERSION ]]; then
    add_check driver-version false "driver version unknown (see the driver check), need >= $MIN_DRIVER"
  elif version_ge "$DRIVER_VERSION" "$MIN_DRIVER"; then
    add_check driver-version true "$DRIVER_VERSION >= $MIN_DRIVER"
  else
    add_check driver-version false "$DRIVER_VERSION < $MIN_DRIVER: upgrade the NVIDIA driver"
  fi
}

# ------------------------------------------------------ check: container toolkit

check_toolkit() {
  local ctk='' runtime=''
  find_cmd nvidia-ctk && ctk=$REPLY
  find_cmd nvidia-container-runtime && runtime=$REPLY
  if [[ -n $ctk ]]; then
    run_capture "$CMD_TIMEOUT" nvidia-ctk --version
    brief "$CAP_OUT"
    if ((CAP_RC == 0)) && [[ -n $REPLY ]]; then
      add_check container-toolkit true "nvidia-ctk: $REPLY"
    else
      add_check container-toolkit true "warning: $ctk is installed but nvidia-ctk --version failed (exit $CAP_RC)"
    fi
  elif [[ -n $runtime ]]; then
    add_check container-toolkit true "nvidia-container-runtime at $runtime (no nvidia-ctk, version unknown)"
  else
    add_check container-toolkit false "neither nvidia-ctk nor nvidia-container-runtime is on PATH: install the NVIDIA Container Toolkit"
  fi
}

# ----------------------------------------------------------- kubelet's settings
#
# Kubelet's flags and config files answer two questions: which CRI endpoint it
# talks to (for --runtime auto) and whether the removed DevicePlugins gate is set.
# collect_kubelet reads them once, in kubelet's order of precedence: the running
# kubelet's command line, the flag files, then the config file and its drop-ins.

# Where kubeadm, distro packages, systemd units and EKS's AMI put kubelet's flags,
# and where k3s and RKE2 take them (kubelet-arg in their config.yaml).
readonly -a KUBELET_FLAG_FILES=(
  /var/lib/kubelet/kubeadm-flags.env /etc/default/kubelet /etc/sysconfig/kubelet
  /etc/systemd/system/kubelet.service "/etc/systemd/system/kubelet.service.d/*.conf"
  "/usr/lib/systemd/system/kubelet.service.d/*.conf"
  /etc/rancher/k3s/config.yaml "/etc/rancher/k3s/config.yaml.d/*.yaml"
  /etc/rancher/rke2/config.yaml "/etc/rancher/rke2/config.yaml.d/*.yaml"
)
# kubelet's --config default under kubeadm, and the usual drop-in dir (kubelet
# reads a drop-in dir only when given --config-dir; a gate waiting there for that
# flag is worth reporting all the same).
readonly KUBELET_DEFAULT_CONFIG=/var/lib/kubelet/config.yaml
readonly KUBELET_DEFAULT_CONFIG_DIR=/etc/kubernetes/kubelet.conf.d

# kl_add LABEL TEXT: one source of kubelet settings.
kl_add() {
  KL_LABELS+=("$1")
  KL_TEXTS+=("$2")
}

# kl_note_flags TEXT: adds the paths of --config and --config-dir in TEXT.
kl_note_flags() {
  local text=$1 re="--config(-dir)?(=|[[:space:]]+)[\"']?([^[:space:]\"']+)"
  while [[ $text =~ $re ]]; do
    if [[ -n ${BASH_REMATCH[1]} ]]; then
      KL_DIRS+=("${BASH_REMATCH[3]}")
    else
      KL_CONFIGS+=("${BASH_REMATCH[3]}")
    fi
    text=${text#*"${BASH_REMATCH[0]}"}
  done
}

# collect_kubelet: fills KL_LABELS/KL_TEXTS (flag sources first: KL_FLAG_COUNT of
# them, then config files in the order kubelet applies them) and KL_CANNOT_READ.
collect_kubelet() {
  local f g pid config dir text
  local -a argv
  local -A seen=()
  KL_LABELS=() KL_TEXTS=() KL_CONFIGS=("$KUBELET_DEFAULT_CONFIG") KL_DIRS=("$KUBELET_DEFAULT_CONFIG_DIR")
  CANNOT_READ=()
  for f in "$ROOT"/proc/[0-9]*/cmdline; do
    mapfile -d '' -t argv <"$f" 2>/dev/null || continue
    ((${#argv[@]})) || continue
    [[ ${argv[0]##*/} == kubelet ]] || continue
    pid=${f%/cmdline} && pid=${pid##*/}
    kl_add "the command line of kubelet (pid $pid)" "${argv[*]}"
    kl_note_flags "${argv[*]}"
  done
  for f in "${KUBELET_FLAG_FILES[@]}"; do
    glob_root "$f"
    for g in "${MATCHES[@]}"; do
      slurp "$g" || continue
      text=$REPLY
      shown "$g"
      kl_add "$REPLY" "$text"
      kl_note_flags "$text"
    done
  done
  KL_FLAG_COUNT=${#KL_TEXTS[@]}
  for config in "${KL_CONFIGS[@]}"; do
    [[ $config == /* && -z ${seen[$config]-} ]] || continue
    seen[$config]=1
    slurp "$ROOT$config" && kl_add "$config" "$REPLY"
  done
  # Drop-ins: *.conf only, in lexical order, each overriding the ones before.
  for dir in "${KL_DIRS[@]}"; do
    [[ $dir == /* && -z ${seen[$dir]-} ]] || continue
    seen[$dir]=1
    glob_root "${dir%/}/*.conf"
    for g in "${MATCHES[@]}"; do
      slurp "$g" || continue
      config=$REPLY
      shown "$g"
      kl_add "$REPLY" "$config"
    done
  done
  KL_CANNOT_READ=("${CANNOT_READ[@]}")
}

# kubelet_endpoint: sets KL_ENDPOINT to the CRI endpoint kubelet is given, and
# KL_ENDPOINT_WHERE to where that was found; fails when it is given none.
kubelet_endpoint() {
  local i line re_flag re_config
  re_flag="--container-runtime-endpoint(=|[[:space:]]+)[\"']?([^[:space:]\"']+)"
  re_config="(^|[^A-Za-z])containerRuntimeEndpoint[\"']?[[:space:]]*:[[:space:]]*[\"']?([^[:space:]\"',}]+)"
  KL_ENDPOINT='' KL_ENDPOINT_WHERE=''
  # A flag beats the config file; among flag sources the running kubelet comes first.
  for ((i = 0; i < KL_FLAG_COUNT; i++)); do
    while IFS='' read -r line; do
      [[ $line =~ ^[[:space:]]*# ]] && continue
      if [[ $line =~ $re_flag ]]; then
        KL_ENDPOINT=${BASH_REMATCH[2]}
        KL_ENDPOINT_WHERE="kubelet --container-runtime-endpoint $KL_ENDPOINT in ${KL_LABELS[i]}"
        return 0
      fi
    done <<<"${KL_TEXTS[i]}"
  done
  # Config files: a later drop-in overrides the config file.
  for ((i = KL_FLAG_COUNT; i < ${#KL_TEXTS[@]}; i++)); do
    while IFS='' read -r line; do
      [[ $line =~ ^[[:space:]]*# ]] && continue
      if [[ $line =~ $re_config ]]; then
        KL_ENDPOINT=${BASH_REMATCH[2]}
        KL_ENDPOINT_WHERE="kubelet containerRuntimeEndpoint $KL_ENDPOINT in ${KL_LABELS[i]}"
      fi
    done <<<"${KL_TEXTS[i]}"
  done
  [[ -n $KL_ENDPOINT ]]
}

# ----------------------------------------------------------------- check: runtime

# nvidia-ctk's name for each runtime, and the service to restart after it.
declare -rA CTK_RUNTIME=([containerd]=containerd [docker]=docker [cri-o]=crio)
declare -rA RUNTIME_SERVICE=([containerd]=containerd [docker]=docker [cri-o]=crio)
# CRI sockets, most telling first. docker-ce always installs containerd and leaves
# its socket, so a cri-dockerd socket outranks containerd's; k3s and RKE2 share
# /run/k3s/containerd and may sit beside a system containerd.
readonly -a CRI_SOCKETS=(
  /var/run/cri-dockerd.sock /run/cri-dockerd.sock
  /var/run/crio/crio.sock /run/crio/crio.sock
  /run/k3s/containerd/containerd.sock
  /run/containerd/containerd.sock /var/run/containerd/containerd.sock
)

# scan_toml TEXT DEFAULT_KEY: notes whether TEXT configures the nvidia runtime and
# the last value given to DEFAULT_KEY (later files override earlier ones).
scan_toml() {
  local line key_re="^[[:space:]]*$2[[:space:]]*=[[:space:]]*[\"']([^\"']*)[\"']"
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*# ]] && continue
    [[ $line =~ $NVIDIA_RUNTIME_RE ]] && RT_CONFIGURED=true
    [[ $line =~ $key_re ]] && RT_DEFAULT_NAME=${BASH_REMATCH[1]}
  done <<<"$1"
  [[ $RT_DEFAULT_NAME == nvidia ]] && RT_IS_DEFAULT=true
}

# read_files FILE...: sets REPLY to the files' text, and RT_SOURCE to their names.
read_files() {
  local f text='' names=''
  for f in "$@"; do
    slurp "$f"
    text+=$REPLY$'\n'
    shown "$f"
    names+="${names:+, }$REPLY"
  done
  RT_SOURCE=$names
  REPLY=$text
}

# toml_head TEXT: from the keys before TEXT's first table, sets IMPORTS (the
# patterns of imports = [...]) and CFG_VERSION (version; 1 when unset, as in containerd).
toml_head() {
  local line buf='' collecting=false
  IMPORTS=() CFG_VERSION=1
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*# ]] && continue
    if $collecting; then
      buf+=" $line"
      [[ $line == *]* ]] && collecting=false
      continue
    fi
    [[ $line =~ ^[[:space:]]*\[ ]] && break # top-level keys end at the first table
    if [[ $line =~ ^[[:space:]]*version[[:space:]]*=[[:space:]]*([0-9]+) ]]; then
      CFG_VERSION=$((10#${BASH_REMATCH[1]}))
    elif [[ $line =~ ^[[:space:]]*imports[[:space:]]*= ]]; then
      buf=${line#*=}
      [[ $buf == *]* ]] || collecting=true
    fi
  done <<<"$1"
  while [[ $buf =~ [\"\']([^\"\']*)[\"\'] ]]; do
    IMPORTS+=("${BASH_REMATCH[1]}")
    buf=${buf#*"${BASH_REMATCH[0]}"}
  done
}

# containerd_files MAIN: the files containerd loads for the config MAIN (as on the
# machine), in its order, as containerd's LoadConfig does it (containerd
# services/server/config/config.go in 1.x, cmd/containerd/server/config/config.go
# in 2.x): MAIN first, then, breadth first, what each loaded file's `imports`
# names; a pattern with * is a glob, a relative path is relative to the importing
# file's directory (containerd 1.x resolved a relative *glob* against its working
# directory instead; such configs are rare and the verdict is marked uncertain
# anyway); a file already loaded is skipped. Nothing else is read: a
# conf.d that no `imports` names is never loaded, whatever the version. Sets
# FILES, FILE_TEXTS, ROOT_VERSION (MAIN's config version) and UNIMPORTED (drop-ins
# lying in the usual dirs beside MAIN that were not loaded).
containerd_files() {
  local main=$1 i=0 f pattern dir
  local -a pending=("$ROOT$main")
  local -A loaded=()
  FILES=() FILE_TEXTS=() ROOT_VERSION='' UNIMPORTED=()
  while ((i < ${#pending[@]} && i < 256)); do
    f=${pending[i]} && ((i++))
    [[ -z ${loaded[$f]-} ]] || continue
    loaded[$f]=1
    slurp "$f" || continue
    FILES+=("$f") FILE_TEXTS+=("$REPLY")
    toml_head "$REPLY"
    [[ -n $ROOT_VERSION ]] || ROOT_VERSION=$CFG_VERSION
    shown "$f" && dir=${REPLY%/*}
    for pattern in "${IMPORTS[@]}"; do
      [[ $pattern == /* ]] || pattern=$dir/$pattern
      if [[ $pattern == *[*?[]* ]]; then
        glob_root "$pattern"
        pending+=("${MATCHES[@]}")
      else
        pending+=("$ROOT$pattern")
      fi
    done
  done
  dir=${main%/*}
  for pattern in "$dir/conf.d/*.toml" "$dir/config.toml.d/*.toml" "$dir/config-v3.toml.d/*.toml"; do
    glob_root "$pattern"
    for f in "${MATCHES[@]}"; do
      [[ -n ${loaded[$f]-} ]] || { shown "$f" && UNIMPORTED+=("$REPLY"); }
    done
  done
}

# containerd_major BIN...: sets REPLY to containerd's major version (1 or 2) and
# MAJOR_WHY to how it is known: from `BIN --version` when it answers, else from
# the config version (3 exists only in containerd 2; 1 and 2 are taken as 1.x).
containerd_major() {
  if (($#)); then
    run_capture "$CMD_TIMEOUT" "$@" --version
    if ((CAP_RC == 0)) && [[ $CAP_OUT =~ [[:space:]]v?([0-9]+)\.[0-9]+\.[0-9]+ ]]; then
      REPLY=${BASH_REMATCH[1]} MAJOR_WHY="containerd ${BASH_REMATCH[0]# }"
      return
    fi
  fi
  if ((ROOT_VERSION >= 3)); then
    REPLY=2 MAJOR_WHY="config version $ROOT_VERSION"
  else
    REPLY=1 MAJOR_WHY="config version $ROOT_VERSION, so taken for containerd 1.x"
  fi
}

# merge_1x: sets REPLY to FILES merged as containerd 1.x merges imports: shallow,
# per top-level section under `plugins` (mergeConfig: `to.Plugins[k] = v`). A file
# that names plugins."io.containerd.grpc.v1.cri" at all replaces the whole cri
# section of the files before it, runtimes and default_runtime_name included.
# Sets MERGE_NOTES to each such replacement.
merge_1x() {
  local i line key cur text=''
  local header_re="^[[:space:]]*\\[+[[:space:]]*plugins[[:space:]]*\\.[[:space:]]*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.-]+)"
  local -A owner=()
  MERGE_NOTES=()
  for i in "${!FILE_TEXTS[@]}"; do
    while IFS='' read -r line; do
      [[ $line =~ $header_re ]] || continue
      key=${BASH_REMATCH[1]} && cur=${key//[\"\']/}
      [[ $key == [\"\']* ]] || { key=${key%%.*} && cur=$key; } # a bare key ends at the first dot
      if [[ -n ${owner[$cur]-} && ${owner[$cur]} != "$i" ]]; then
        shown "${FILES[i]}" && line=$REPLY
        shown "${FILES[${owner[$cur]}]}"
        MERGE_NOTES+=("$line replaces plugins.$key of $REPLY")
      fi
      owner[$cur]=$i
    done <<<"${FILE_TEXTS[i]}"
  done
  for i in "${!FILE_TEXTS[@]}"; do
    cur=''
    while IFS='' read -r line; do
      if [[ $line =~ ^[[:space:]]*\[ ]]; then
        cur=''
        if [[ $line =~ $header_re ]]; then
          key=${BASH_REMATCH[1]} && cur=${key//[\"\']/}
          [[ $key == [\"\']* ]] || cur=${cur%%.*}
        fi
      fi
      [[ -z $cur || ${owner[$cur]} == "$i" ]] && text+=$line$'\n'
    done <<<"${FILE_TEXTS[i]}"
  done
  REPLY=$text
}

# containerd_dump LABEL CMD...: reads the effective config from CMD (config dump);
# fails with DUMP_NOTE saying why when it cannot.
containerd_dump() {
  local label=$1
  shift
  run_capture "$CMD_TIMEOUT" "$@"
  if ((CAP_RC == 0)) && [[ -n ${CAP_OUT//[[:space:]]/} ]]; then
    RT_SOURCE=$label RT_SRC=config-dump RT_CERTAIN=true
    scan_toml "$CAP_OUT" default_runtime_name
    return 0
  fi
  brief "$CAP_ERR"
  timed_out && REPLY="timed out after ${CMD_TIMEOUT}s"
  DUMP_NOTE="$label failed (exit $CAP_RC: ${REPLY:-no output}), so read the files: "
  return 1
}

# containerd_from_files MAIN SRC NOTE BIN...: the verdict from containerd's files
# for config MAIN, merged by containerd's rules (see containerd_files, merge_1x;
# containerd 2.x merges plugin sections key by key, so later files simply win).
# SRC is "files" (k3s, RKE2: their generated config is the file containerd reads)
# or "file-fallback" (config dump was unavailable). Certain only when one file
# decides and no merge rule had to be guessed.
containerd_from_files() {
  local main=$1 src=$2 note=$3 list text
  shift 3
  RT_SRC=$src RT_CERTAIN=false
  containerd_files "$main"
  if ((${#FILES[@]} == 0)); then
    RT_SOURCE="${note}no $main"
  else
    printf -v list '%s, ' "${FILES[@]#"$ROOT"}"
    list=${list%, }
    if ((${#FILES[@]} == 1)); then
      text=${FILE_TEXTS[0]}
      [[ $src == files ]] && RT_CERTAIN=true
      RT_SOURCE="$note$list"
    else
      containerd_major "$@"
      if ((REPLY == 1)); then
        merge_1x && text=$REPLY
        RT_SOURCE="$note$list, merged as containerd 1.x does ($MAJOR_WHY: an imported file replaces whole plugin sections)"
      else
        printf -v text '%s\n' "${FILE_TEXTS[@]}"
        MERGE_NOTES=()
        RT_SOURCE="$note$list, merged as containerd 2.x does ($MAJOR_WHY)"
      fi
      ((${#MERGE_NOTES[@]})) && printf -v list '; %s' "${MERGE_NOTES[@]}" && RT_SOURCE+=$list
    fi
    scan_toml "$text" default_runtime_name
  fi
  if ((${#UNIMPORTED[@]})); then
    printf -v list '%s, ' "${UNIMPORTED[@]}"
    list=${list%, }
    if ((${#UNIMPORTED[@]} == 1)); then list+=" is"; else list+=" are"; fi
    RT_SOURCE+="; $list not imported"
  fi
  [[ $src == file-fallback ]] && RT_SOURCE+="; a verdict from the files is less certain than one from containerd config dump"
}

inspect_containerd() {
  # The effective config is what counts: a drop-in from nvidia-ctk (1.18+) never
  # shows up in config.toml itself, and config dump merges them all.
  local -a version_cmd=()
  DUMP_NOTE=''
  if command -v containerd >/dev/null 2>&1; then
    containerd_dump "containerd config dump" containerd config dump && return
    version_cmd=(containerd)
  fi
  containerd_from_files /etc/containerd/config.toml file-fallback "$DUMP_NOTE" "${version_cmd[@]}"
}

# inspect_rancher: k3s and RKE2 run their own containerd with the config they
# generate at each start under /var/lib/rancher/<name>/agent/etc/containerd (from
# config.toml.tmpl or config-v3.toml.tmpl beside it when present), with no
# containerd on PATH. k3s embeds containerd (no config dump); RKE2 ships the binary
# in /var/lib/rancher/rke2/bin, which can dump that config.
inspect_rancher() {
  local name=$RT_NAME main bin=/var/lib/rancher/rke2/bin/containerd tmpl
  main=/var/lib/rancher/$name/agent/etc/containerd/config.toml
  DUMP_NOTE=''
  if [[ $name == rke2 && -x $ROOT$bin ]]; then
    containerd_dump "$bin config dump" "$ROOT$bin" --config "$ROOT$main" config dump && return
  fi
  containerd_from_files "$main" files "$DUMP_NOTE"
  for tmpl in config-v3.toml.tmpl config.toml.tmpl; do
    if [[ -f $ROOT${main%/*}/$tmpl ]]; then
      RT_SOURCE+="; $name renders it from ${main%/*}/$tmpl at each start"
      break
    fi
  done
}

inspect_crio() {
  FILES=()
  if [[ -f $ROOT/etc/crio/crio.conf ]] || can_read "$ROOT/etc/crio/crio.conf"; then
    FILES+=("$ROOT/etc/crio/crio.conf")
  fi
  # CRI-O reads every file of crio.conf.d, in lexical order, later ones winning.
  glob_root "/etc/crio/crio.conf.d/*"
  FILES+=("${MATCHES[@]}")
  RT_SRC=files RT_CERTAIN=true
  if ((${#FILES[@]} == 0)); then
    RT_SOURCE="no /etc/crio/crio.conf nor /etc/crio/crio.conf.d files"
    return
  fi
  read_files "${FILES[@]}"
  scan_toml "$REPLY" default_runtime
}

inspect_docker() {
  local f="$ROOT/etc/docker/daemon.json" doc
  RT_SOURCE=/etc/docker/daemon.json RT_SRC=files RT_CERTAIN=true
  if ! slurp "$f"; then
    RT_SOURCE="/etc/docker/daemon.json (missing)"
    return
  fi
  doc=$REPLY
  if [[ -z ${doc//[[:space:]]/} ]]; then
    RT_ERROR="docker: /etc/docker/daemon.json is empty, so dockerd will not start with it"
    return
  fi
  if ! json_scan_daemon "$doc"; then
    RT_ERROR="docker: /etc/docker/daemon.json is not valid JSON ($JP_ERR), so dockerd will not start with it"
    return
  fi
  RT_CONFIGURED=$JP_HAS_NVIDIA
  RT_DEFAULT_NAME=$JP_DEFAULT
  [[ $JP_DEFAULT == nvidia ]] && RT_IS_DEFAULT=true
}

# endpoint_runtime ENDPOINT: sets REPLY to the runtime that serves CRI at
# ENDPOINT ('' when unknown), and RANCHER_WHY to what told k3s from RKE2.
endpoint_runtime() {
  RANCHER_WHY=''
  case ${1#unix://} in
    */k3s/containerd/containerd.sock)
      # k3s and RKE2 both serve it; their data directories tell them apart.
      if [[ -d $ROOT/var/lib/rancher/rke2 ]]; then
        REPLY=rke2 RANCHER_WHY=/var/lib/rancher/rke2
      else
        REPLY=k3s
        [[ -d $ROOT/var/lib/rancher/k3s ]] && RANCHER_WHY=/var/lib/rancher/k3s
      fi
      ;;
    *cri-dockerd.sock | *dockershim.sock) REPLY=docker ;;
    *crio.sock) REPLY=cri-o ;;
    *containerd.sock) REPLY=containerd ;;
    *) REPLY='' ;;
  esac
}

# detect_runtime: for --runtime auto. What kubelet is told to use decides; then
# which CRI socket is listening; then, with neither (kubelet or the runtime down),
# what is installed. "containerd on PATH" alone would be wrong on docker machines:
# docker-ce always installs containerd.
detect_runtime() {
  local path name bin dir
  DETECT_NOTE=''
  if kubelet_endpoint; then
    endpoint_runtime "$KL_ENDPOINT"
    if [[ -n $REPLY ]]; then
      DETECTED=$REPLY DETECT_WHY="$KL_ENDPOINT_WHERE${RANCHER_WHY:+, $RANCHER_WHY}"
      return 0
    fi
    DETECT_NOTE="kubelet's endpoint $KL_ENDPOINT names no runtime we know; "
  elif ((${#KL_CANNOT_READ[@]})); then
    DETECT_NOTE="kubelet's flags could not all be read; "
  fi
  for path in "${CRI_SOCKETS[@]}"; do
    [[ -S $ROOT$path ]] || continue
    endpoint_runtime "$path"
    DETECTED=$REPLY DETECT_WHY="${DETECT_NOTE}CRI socket $path${RANCHER_WHY:+, $RANCHER_WHY}"
    return 0
  done
  for name in rke2 k3s containerd cri-o docker; do
    case $name in
      rke2) bin='' dir=/var/lib/rancher/rke2/agent/etc/containerd ;;
      k3s) bin=k3s dir=/var/lib/rancher/k3s/agent/etc/containerd ;;
      containerd) bin=containerd dir=/etc/containerd ;;
      cri-o) bin=crio dir=/etc/crio ;;
      docker) bin=dockerd dir=/etc/docker ;;
    esac
    if [[ -n $bin ]] && command -v "$bin" >/dev/null 2>&1; then
      DETECTED=$name DETECT_WHY="${DETECT_NOTE}no CRI socket found; $bin on PATH"
      return 0
    fi
    if [[ -d $ROOT$dir ]]; then
      DETECTED=$name DETECT_WHY="${DETECT_NOTE}no CRI socket found; $dir exists"
      return 0
    fi
  done
  return 1
}

# fix_missing NAME: sets REPLY to how to give runtime NAME the nvidia runtime.
fix_missing() {
  case $1 in
    k3s | rke2)
      local svc=k3s
      [[ $1 == rke2 ]] && svc=rke2-server
      REPLY="$1 adds it itself when it finds nvidia-container-runtime at start: install the NVIDIA Container Toolkit, then restart $svc (or $1-agent)"
      ;;
    *) REPLY="run nvidia-ctk runtime configure --runtime=${CTK_RUNTIME[$1]}, then restart ${RUNTIME_SERVICE[$1]}" ;;
  esac
}

# fix_default NAME: sets REPLY to how to make nvidia the default runtime of NAME.
fix_default() {
  case $1 in
    k3s | rke2) REPLY="start $1 with --default-runtime=nvidia (default-runtime: nvidia in /etc/rancher/$1/config.yaml)" ;;
    *) REPLY="nvidia-ctk runtime configure --runtime=${CTK_RUNTIME[$1]} --set-as-default, then restart ${RUNTIME_SERVICE[$1]}" ;;
  esac
}

check_runtime() {
  local name=$RUNTIME_ARG how=''
  if [[ $name == auto ]]; then
    if ! detect_runtime; then
      add_check runtime false "auto: no container runtime found (kubelet names no CRI endpoint, no CRI socket listens; no containerd, k3s, crio or dockerd on PATH; no /etc/containerd, /var/lib/rancher/{k3s,rke2}, /etc/crio or /etc/docker)"
      return
    fi
    name=$DETECTED how="auto chose $DETECTED ($DETECT_WHY); "
  fi
  RT_NAME=$name RT_CONFIGURED=false RT_IS_DEFAULT=false RT_DEFAULT_NAME='' RT_SOURCE='' RT_ERROR=''
  CANNOT_READ=()
  case $name in
    containerd) inspect_containerd ;;
    k3s | rke2) inspect_rancher ;;
    cri-o) inspect_crio ;;
    docker) inspect_docker ;;
  esac
  if ((${#CANNOT_READ[@]})); then
    # A file we could not read may hold (or undo) the nvidia runtime: no verdict.
    RT_CERTAIN=false
    cannot_read_text
    add_check runtime false "$how$name: $REPLY, so whether $name has the nvidia runtime is unknown"
  elif [[ -n $RT_ERROR ]]; then
    add_check runtime false "$how$RT_ERROR"
  elif [[ $RT_CONFIGURED != true ]]; then
    fix_missing "$name"
    add_check runtime false "$how$name has no nvidia runtime (read $RT_SOURCE): $REPLY"
  elif [[ $RT_IS_DEFAULT == true ]]; then
    RT_DEFAULT=true
    add_check runtime true "$how$name: nvidia runtime configured and the default (read $RT_SOURCE)"
  elif $REQUIRE_DEFAULT; then
    # Asked for when the stack gives pods no RuntimeClass: under runc the device
    # plugin cannot load NVML and the verification pods see no GPU.
    RT_CLASS=true
    fix_default "$name"
    add_check runtime false "$how$name: nvidia runtime configured, but nvidia is not the default runtime (the default is ${RT_DEFAULT_NAME:-runc}) (read $RT_SOURCE): pods that name no RuntimeClass, the device plugin's included, would run without the GPUs. Make nvidia the default ($REPLY), or give GPU pods a RuntimeClass with handler nvidia"
  else
    RT_CLASS=true
    add_check runtime true "$how$name: nvidia runtime configured but the default is ${RT_DEFAULT_NAME:-runc} (read $RT_SOURCE): GPU pods need a RuntimeClass with handler nvidia"
  fi
}

# ------------------------------------------------ a small JSON reader for docker

# json_scan_daemon TEXT: validates TEXT as one JSON object and notes what the docker
# check needs: JP_HAS_NVIDIA (runtimes.nvidia exists) and JP_DEFAULT
# (default-runtime). Fails with JP_ERR saying what is wrong and where.
json_scan_daemon() {
  JP_S=$1 JP_I=0 JP_N=${#1} JP_ERR='' JP_DEPTH=0 JP_HAS_NVIDIA=false JP_DEFAULT=''
  jp_ws
  if [[ ${JP_S:JP_I:1} != '{' ]]; then
    jp_fail "expected an object"
    return 1
  fi
  jp_value "" || return 1
  jp_ws
  ((JP_I >= JP_N)) || { jp_fail "unexpected text after the object" && return 1; }
}

jp_fail() {
  local before=${JP_S:0:JP_I} lines found=${JP_S:JP_I:1}
  lines=${before//[!$'\n']/}
  [[ -n $JP_ERR ]] && return
  JP_ERR="$1 at line $((${#lines} + 1))"
  if [[ -n $found ]]; then
    json_str "$found"
    JP_ERR+=", found $REPLY"
  else
    JP_ERR+=", at the end of the file"
  fi
}

jp_ws() {
  while ((JP_I < JP_N)) && [[ ${JP_S:JP_I:1} == [$' \t\r\n'] ]]; do
    ((++JP_I))
  done
}

# jp_value PATH: one value; PATH is where it sits, like /runtimes/nvidia.
jp_value() {
  local path=$1 rest
  jp_ws
  if ((++JP_DEPTH > 64)); then
    jp_fail "nested too deeply"
    return 1
  fi
  case ${JP_S:JP_I:1} in
    '{') jp_object "$path" || return 1 ;;
    '[') jp_array "$path" || return 1 ;;
    '"')
      jp_string || return 1
      [[ $path == /default-runtime ]] && JP_DEFAULT=$JP_STR
      ;;
    '') jp_fail "unexpected end of file" && return 1 ;;
    *)
      rest=${JP_S:JP_I:400}
      [[ $rest =~ $JP_SCALAR_RE ]] || { jp_fail "unexpected character" && return 1; }
      ((JP_I += ${#BASH_REMATCH[0]}))
      ;;
  esac
  ((JP_DEPTH--))
  return 0
}

jp_string() {
  local rest=${JP_S:JP_I}
  if [[ $rest =~ $JP_STRING_RE ]]; then
    JP_STR=${BASH_REMATCH[1]}
    ((JP_I += ${#BASH_REMATCH[0]}))
    return 0
  fi
  jp_fail "unterminated string"
  return 1
}

jp_object() {
  local path=$1
  ((++JP_I))
  jp_ws
  [[ ${JP_S:JP_I:1} == '}' ]] && { ((++JP_I)) && return 0; }
  while :; do
    jp_ws
    [[ ${JP_S:JP_I:1} == '"' ]] || { jp_fail "expected a quoted key" && return 1; }
    jp_string || return 1
    [[ $path == /runtimes && $JP_STR == nvidia ]] && JP_HAS_NVIDIA=true
    jp_ws
    [[ ${JP_S:JP_I:1} == : ]] || { jp_fail "expected ':'" && return 1; }
    ((++JP_I))
    jp_value "$path/$JP_STR" || return 1
    jp_ws
    case ${JP_S:JP_I:1} in
      ,) ((++JP_I)) ;;
      '}') ((++JP_I)) && return 0 ;;
      *) jp_fail "expected ',' or '}'" && return 1 ;;
    esac
  done
}

jp_array() {
  local path=$1
  ((++JP_I))
  jp_ws
  [[ ${JP_S:JP_I:1} == ']' ]] && { ((++JP_I)) && return 0; }
  while :; do
    jp_value "${path}[]" || return 1
    jp_ws
    case ${JP_S:JP_I:1} in
      ,) ((++JP_I)) ;;
      ']') ((++JP_I)) && return 0 ;;
      *) jp_fail "expected ',' or ']'" && return 1 ;;
    esac
  done
}

# ---------------------------------------------------- check: device-plugin socket

check_socket() {
  local path=/var/lib/kubelet/device-plugins/kubelet.sock
  # Only a socket counts: a plain file there is debris, and kubelet not listening.
  if [[ -S $ROOT$path ]]; then
    add_check device-plugin-socket true "$path is present: kubelet accepts device plugins"
  elif blocked_by "$ROOT$path"; then
    CANNOT_READ=()
    can_read "$ROOT$path"
    cannot_read_text
    add_check device-plugin-socket false "$REPLY, so whether kubelet serves device plugins is unknown"
  elif [[ -e $ROOT$path ]]; then
    add_check device-plugin-socket false "$path exists but is not a socket: kubelet is not serving device-plugin registration there"
  else
    add_check device-plugin-socket false "$path is missing: kubelet is not running, or is not serving device plugins"
  fi
}

# ------------------------------------------------- check: kubelet feature gates

# scan_gate LABEL TEXT: when TEXT sets the DevicePlugins gate, adds "LABEL
# (DevicePlugins=VALUE)" to GATE_HITS. Finds it as a flag (--feature-gates=
# DevicePlugins=true), as a YAML key, bare or quoted ("DevicePlugins": true,
# 'DevicePlugins': true) and as a JSON member, one object per line or not (EKS
# writes JSON). The name must stand alone: MyDevicePlugins is another gate.
scan_gate() {
  local line re="(^|[^A-Za-z0-9_])DevicePlugins[\"']?[[:space:]]*[=:][[:space:]]*[\"']?([A-Za-z]*)"
  while IFS='' read -r line; do
    [[ $line =~ ^[[:space:]]*# ]] && continue
    if [[ $line =~ $re ]]; then
      GATE_HITS+=("$1 (DevicePlugins=${BASH_REMATCH[2]})")
      return
    fi
  done <<<"$2"
}

# kubelet_version: sets KV_TEXT ("v1.30.2"), KV_MINOR and KV_MAJOR, or KV_WHY.
kubelet_version() {
  KV_TEXT='' KV_MAJOR='' KV_MINOR='' KV_WHY=''
  if ! command -v kubelet >/dev/null 2>&1; then
    KV_WHY="kubelet is not on PATH"
    return 1
  fi
  run_capture "$CMD_TIMEOUT" kubelet --version
  if ((CAP_RC == 0)) && [[ $CAP_OUT =~ v?([0-9]+)\.([0-9]+)(\.[0-9]+)? ]]; then
    KV_TEXT="v${BASH_REMATCH[0]#v}" KV_MAJOR=$((10#${BASH_REMATCH[1]})) KV_MINOR=$((10#${BASH_REMATCH[2]}))
    return 0
  fi
  brief "$CAP_OUT"$'\n'"$CAP_ERR"
  KV_WHY="kubelet --version gave no version (exit $CAP_RC: ${REPLY:-no output})"
  return 1
}

check_kubelet_gates() {
  local i where looked version
  GATE_HITS=()
  for i in "${!KL_TEXTS[@]}"; do
    scan_gate "${KL_LABELS[i]}" "${KL_TEXTS[i]}"
  done
  kubelet_version
  version=${KV_TEXT:-of unknown version}
  printf -v looked '%s, ' "${KL_LABELS[@]}"
  looked=${looked%, }
  if ((${#GATE_HITS[@]} == 0)) && ((${#KL_CANNOT_READ[@]})); then
    CANNOT_READ=("${KL_CANNOT_READ[@]}")
    cannot_read_text
    add_check kubelet-feature-gates false "$REPLY, so whether kubelet is given the removed DevicePlugins gate is unknown (kubelet $version; read: ${looked:-nothing else})"
    return
  fi
  if ((${#GATE_HITS[@]} == 0)); then
    add_check kubelet-feature-gates true "no DevicePlugins feature gate (kubelet $version; read: ${looked:-no kubelet flags found})"
    return
  fi
  printf -v where '%s, ' "${GATE_HITS[@]}"
  where=${where%, }
  if [[ -n $KV_TEXT ]] && ((KV_MAJOR == 1 && KV_MINOR < GATE_REMOVED_MINOR)); then
    add_check kubelet-feature-gates true "warning: DevicePlugins gate set in $where; kubelet $KV_TEXT still accepts it, but it is GA since 1.26 and removed in 1.28: drop it before upgrading"
  elif [[ -n $KV_TEXT ]]; then
    add_check kubelet-feature-gates false "DevicePlugins gate set in $where: kubelet $KV_TEXT (>= 1.28) no longer knows this removed gate and refuses to start; remove it"
  else
    add_check kubelet-feature-gates false "DevicePlugins gate set in $where and the kubelet version is unknown ($KV_WHY): on kubelet >= 1.28 this removed gate stops it from starting; remove it"
  fi
}

# ----------------------------------------------------------------------- main

summarize() {
  if $ALL_OK; then
    printf 'preflight: %s is READY\n' "$HOST_NAME" >&2
  else
    printf 'preflight: %s is NOT READY: failed %s\n' "$HOST_NAME" "$FAILED_NAMES" >&2
  fi
}

main() {
  # fd 3 carries the JSON; everything else, stray tool output included, goes to stderr.
  exec 3>&1 1>&2
  export LC_ALL=C
  shopt -s nullglob
  init_state
  trap on_exit EXIT
  trap 'exit 1' HUP INT TERM
  TMPD=$(mktemp -d 2>/dev/null) || TMPD=''
  if ! parse_args "$@"; then
    detect_hostname
    print_usage >&2
    add_check usage false "$USAGE_ERROR"
    emit
    return 2
  fi
  detect_hostname
  check_driver
  check_gpu_count
  check_driver_version
  check_toolkit
  collect_kubelet # for the runtime (auto) and the feature-gate checks
  check_runtime
  check_socket
  check_kubelet_gates
  summarize
  emit
  $ALL_OK
}

# Sent as `bash -s` over SSH, the rest of this script is still unread on stdin:
# no command may read it, hence </dev/null.
main "$@" </dev/null
exit
