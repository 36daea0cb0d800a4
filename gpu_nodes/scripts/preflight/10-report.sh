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

# minimum_check NAME VERSION MINIMUM UNASKED UNKNOWN OK LOW: VERSION checked against MINIMUM, with
# the detail for each case: no minimum asked for, the version unknown, at least MINIMUM, below it.
minimum_check() {
  local name=$1 version=$2 minimum=$3
  if [[ -z $minimum ]]; then
    add_check "$name" true "$4"
  elif [[ -z $version ]]; then
    add_check "$name" false "$5"
  elif version_ge "$version" "$minimum"; then
    add_check "$name" true "$6"
  else
    add_check "$name" false "$7"
  fi
}

# list_check NAME WHY N ITEMS...: the first N items are problems: with any, the check fails with
# WHY and them; with none, it passes with the other items (what was found), each joined by "; ".
list_check() {
  local name=$1 why=$2 n=$3 line
  shift 3
  if ((n)); then
    printf -v line '%s; ' "${@:1:n}"
    add_check "$name" false "$why: ${line%; }"
  else
    printf -v line '%s; ' "$@"
    add_check "$name" true "${line%; }"
  fi
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

# json_list ITEMS...: sets REPLY to the items as a JSON array of strings.
json_list() {
  local item list=''
  for item in "$@"; do
    json_str "$item"
    list+="${list:+, }$REPLY"
  done
  REPLY="[$list]"
}

# toolkit_json: the "toolkit" entry: which toolkit was judged (its nvidia-ctk, the nvidia-container-runtime
# the runtime's entry runs and the config.toml it reads: find_toolkit), the version nvidia-ctk reported,
# the advisories it is open to, the mode its runtime resolves to and whether a CDI spec could be built
# (cdi-generation).
toolkit_json() {
  local version=null mode=null generation open accepted path=null runtime=null config=null
  if [[ -n ${TK_CTK-} ]]; then json_str "$TK_CTK" && path=$REPLY; fi
  if [[ -n ${TK_RUNTIME-} ]]; then json_str "$TK_RUNTIME" && runtime=$REPLY; fi
  if [[ -n ${TK_FOUND-} ]]; then json_str "$TOOLKIT_CONFIG" && config=$REPLY; fi
  if [[ -n ${TK_VERSION-} ]]; then json_str "$TK_VERSION" && version=$REPLY; fi
  if [[ -n ${TK_MODE-} ]]; then json_str "$TK_MODE" && mode=$REPLY; fi
  json_str "${CDI_GENERATION:-not tried}"
  generation=$REPLY
  json_list "${TK_OPEN_IDS[@]}"
  open=$REPLY
  json_list "${TK_OPEN_ACCEPTED[@]}"
  accepted=$REPLY
  REPLY="{\"path\": $path, \"runtimeBinary\": $runtime, \"config\": $config, \"version\": $version, \"openAdvisories\": $open, \"acceptedAdvisories\": $accepted, \"mode\": $mode, \"cdiGeneration\": $generation}"
}

# driver_advisories_json: the "driverAdvisories" entry: the driver's branch, whether NVIDIA still
# patches it (null when not judged) and the bulletins it is open to (check driver-advisories).
driver_advisories_json() {
  local branch=null patched=null
  if [[ -n $DRV_BRANCH ]]; then json_str "$DRV_BRANCH" && branch=$REPLY; fi
  [[ -n $DRV_BRANCH_PATCHED ]] && patched=$DRV_BRANCH_PATCHED
  json_list "${DRV_OPEN_IDS[@]}"
  REPLY="{\"branch\": $branch, \"branchPatched\": $patched, \"openBulletins\": $REPLY}"
}

# emit: writes the one JSON object to fd 3, the saved stdout.
emit() {
  local host driver cuda rt src cgroup cpu machine=null capable=null clique=null compute=null toolkit
  json_str "$HOST_NAME"
  host=$REPLY
  driver=null cuda=null rt=null src=null cgroup=null cpu=null
  if [[ -n ${KL_CGROUP_DRIVER-} ]]; then json_str "$KL_CGROUP_DRIVER" && cgroup=$REPLY; fi
  if [[ -n ${KL_CPU_MANAGER-} ]]; then json_str "$KL_CPU_MANAGER" && cpu=$REPLY; fi
  if [[ -n $DRIVER_VERSION ]]; then json_str "$DRIVER_VERSION" && driver=$REPLY; fi
  if [[ -n $CUDA_VERSION ]]; then json_str "$CUDA_VERSION" && cuda=$REPLY; fi
  if [[ -n $RT_NAME ]]; then json_str "$RT_NAME" && rt=$REPLY; fi
  if [[ -n $RT_SRC ]]; then json_str "$RT_SRC" && src=$REPLY; fi
  if [[ -n $FEAT_MACHINE ]]; then json_str "$FEAT_MACHINE" && machine=$REPLY; fi
  if [[ -n $FEAT_CLIQUE ]]; then json_str "$FEAT_CLIQUE" && clique=$REPLY; fi
  [[ -n $FEAT_MIG_CAPABLE ]] && capable=$FEAT_MIG_CAPABLE
  if [[ -n $FEAT_COMPUTE ]]; then json_str "$FEAT_COMPUTE" && compute=$REPLY; fi
  toolkit_json
  toolkit=$REPLY
  driver_advisories_json
  printf '{"ok": %s, "hostname": %s, "driverVersion": %s, "driverAdvisories": %s, "cudaVersion": %s, "gpus": [%s], "mig": %s, "runtime": {"name": %s, "nvidiaDefault": %s, "runtimeClassNeeded": %s, "source": %s, "certain": %s}, "kubelet": {"cgroupDriver": %s, "cpuManagerPolicy": %s}, "gpuFeatures": {"machine": %s, "migCapable": %s, "clique": %s, "computeCapability": %s}, "toolkit": %s, "checks": [%s]}\n' \
    "$ALL_OK" "$host" "$driver" "$REPLY" "$cuda" "$GPUS_JSON" "$MIG_JSON" "$rt" "$RT_DEFAULT" "$RT_CLASS" "$src" "$RT_CERTAIN" "$cgroup" "$cpu" "$machine" "$capable" "$clique" "$compute" "$toolkit" "$CHECKS_JSON" >&3
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

# summarize: the human summary on stderr, one line for the whole machine.
summarize() {
  if $ALL_OK; then
    printf 'preflight: %s is READY\n' "$HOST_NAME" >&2
  else
    printf 'preflight: %s is NOT READY: failed %s\n' "$HOST_NAME" "$FAILED_NAMES" >&2
  fi
}
