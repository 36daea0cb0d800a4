# ------------------------------------------------------------------- isolation
#
# Whether a pod can see GPUs it was not given. NVIDIA's CUDA images carry
# NVIDIA_VISIBLE_DEVICES=all, and the nvidia runtime hands a container the GPUs that
# variable names unless the toolkit's config.toml says
# accept-nvidia-visible-devices-envvar-when-unprivileged = false (default true); then only
# privileged containers (CAP_SYS_ADMIN in the bounding set: internal/config/image/privileged.go)
# and lists given as volume mounts under
# /var/run/nvidia-container-devices (accept-nvidia-visible-devices-as-volume-mounts = true,
# default false), name GPUs (nvidia-container-toolkit: internal/config/config.go GetDefault,
# cmd/nvidia-container-runtime-hook/container_config.go getDevices, internal/modifier/cdi.go).
# The two keys are top-level; a missing file is the defaults (internal/config/toml.go).
#
# - --require-cdi (gpuAccess: cdi): nvidia must not be the default runtime
#   (k8s-device-plugin docs/cdi.md), or a pod given one GPU as a CDI device sees them all.
# - --isolation strict: both keys hardened; the device plugin then hands GPUs out as volume
#   mounts (DEVICE_LIST_STRATEGY=volume-mounts) and gets its own the same way.
# - otherwise (default): a toolkit hardened already fails, since the plugin's envvar list
#   (or, under CDI, the plugin's own NVIDIA_VISIBLE_DEVICES) is then never read.

# The toolkit's config.toml is read by toolkit_config (40-check-toolkit.sh).
readonly ENVVAR_KEY=accept-nvidia-visible-devices-envvar-when-unprivileged
readonly MOUNTS_KEY=accept-nvidia-visible-devices-as-volume-mounts

# toolkit_settings: sets TK_ENVVAR and TK_MOUNTS (true, false, or the raw text of a value
# that is neither), TK_WHERE (how the values were learnt), TK_ENVVAR_SET (the file sets it)
# and TK_BAD (the keys whose value is neither true nor false).
toolkit_settings() {
  local key value
  TK_ENVVAR=true TK_MOUNTS=false TK_BAD='' TK_ENVVAR_SET=false
  toolkit_config || return 1
  if ! $TK_CONFIG_FOUND; then
    TK_WHERE="no $TOOLKIT_CONFIG: the toolkit's defaults"
    return 0
  fi
  TK_WHERE="read $TOOLKIT_CONFIG"
  for key in "$ENVVAR_KEY" "$MOUNTS_KEY"; do
    [[ -n ${TK_CONFIG["/$key"]+set} ]] || continue
    value=${TK_CONFIG["/$key"]}
    [[ $value == true || $value == false ]] || TK_BAD+="${TK_BAD:+, }$key = $value"
    if [[ $key == "$ENVVAR_KEY" ]]; then TK_ENVVAR=$value TK_ENVVAR_SET=true; else TK_MOUNTS=$value; fi
  done
}

# hardening_fix: sets REPLY to how to set the two keys hardened in the found toolkit's config. The GPU Operator's
# toolkit container writes its config.toml anew at each start, from its flags (nvidia-container-toolkit
# cmd/nvidia-ctk-installer/toolkit/toolkit.go: accept-nvidia-visible-devices-envvar-when-unprivileged and
# accept-nvidia-visible-devices-as-volume-mounts, from the environment variables named here), so an edit there
# does not last: its toolkit.env is where they are set.
hardening_fix() {
  if [[ $TOOLKIT_CONFIG != "$PACKAGE_TOOLKIT_CONFIG" ]]; then
    REPLY="the GPU Operator's toolkit container writes $TOOLKIT_CONFIG at each start: set ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false and ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true in its toolkit.env"
  else
    REPLY="nvidia-ctk config --in-place --set $ENVVAR_KEY=false --set $MOUNTS_KEY=true"
  fi
}

# fix_not_default NAME: sets REPLY to how to make runc the default of runtime NAME again. For
# containerd, nvidia-ctk without --set-as-default deletes default_runtime_name when it names the
# runtime it configures (nvidia-container-toolkit pkg/config/engine/containerd/config.go,
# AddRuntimeWithOptions).
fix_not_default() {
  case $1 in
    k3s | rke2) REPLY="start $1 without --default-runtime=nvidia (default-runtime in /etc/rancher/$1/config.yaml), then restart it" ;;
    containerd) REPLY="run nvidia-ctk runtime configure --runtime=containerd without --set-as-default (it deletes a default_runtime_name of nvidia: pkg/config/engine/containerd/config.go), or remove default_runtime_name = \"nvidia\" where it is set; then restart containerd" ;;
    cri-o) REPLY="remove default_runtime = \"nvidia\" from /etc/crio/crio.conf.d, then restart crio" ;;
    *) REPLY="remove \"default-runtime\": \"nvidia\" from /etc/docker/daemon.json, then restart docker" ;;
  esac
}

check_isolation() {
  local -a iso_problems=() iso_found=()
  local line why
  CANNOT_READ=()
  if $REQUIRE_CDI; then
    if [[ -z $RT_NAME ]]; then
      iso_problems+=("no container runtime was inspected, so whether nvidia is its default is unknown")
    elif [[ $RT_DEFAULT == true ]]; then
      fix_not_default "$RT_NAME"
      iso_problems+=("nvidia is $RT_NAME's default runtime (read $RT_SOURCE): under CDI it must not be (k8s-device-plugin docs/cdi.md): CUDA images carry NVIDIA_VISIBLE_DEVICES=all and the nvidia runtime honours it, so a pod given one GPU sees them all. Make runc the default again: $REPLY")
    else
      iso_found+=("nvidia is not $RT_NAME's default runtime (${RT_DEFAULT_NAME:-runc} is): pods that name no RuntimeClass get only the CDI devices they were given")
    fi
  fi
  if ! toolkit_settings; then
    cannot_read_text
    iso_problems+=("$REPLY, so what the toolkit lets a pod see is unknown")
  elif [[ -n $TK_BAD ]]; then
    iso_problems+=("$TK_BAD in $TOOLKIT_CONFIG is not true or false: the toolkit cannot read its config, so no GPU container starts; write true or false, unquoted")
  elif [[ $ISOLATION == strict ]]; then
    why=''
    [[ $TK_ENVVAR == false ]] || why+="$ENVVAR_KEY = false (it is $TK_ENVVAR), "
    [[ $TK_MOUNTS == true ]] || why+="$MOUNTS_KEY = true (it is $TK_MOUNTS), "
    if [[ -n $why ]]; then
      hardening_fix
      iso_problems+=("strict isolation needs ${why%, } in $TOOLKIT_CONFIG, at the top level before any [table] ($TK_WHERE): set them ($REPLY); the runtime reads the file for each new container, no restart needed")
    else
      iso_found+=("strict: $ENVVAR_KEY = false, $MOUNTS_KEY = true ($TK_WHERE): an unprivileged pod gets only the GPUs the device plugin mounts for it; a pod with CAP_SYS_ADMIN still gets every GPU")
    fi
  elif [[ $TK_ENVVAR == false ]]; then
    if $REQUIRE_CDI; then
      why="the device plugin itself (unprivileged, NVIDIA_VISIBLE_DEVICES=all) gets no GPU to load NVML from"
    else
      why="the device plugin's envvar list gives tenants' pods no GPU"
    fi
    iso_problems+=("$ENVVAR_KEY = false in $TOOLKIT_CONFIG (the toolkit is hardened): the nvidia runtime reads no NVIDIA_VISIBLE_DEVICES from an unprivileged container, so $why; set the group's isolation: strict (the plugin then uses volume mounts, $MOUNTS_KEY = true), or undo the hardening")
  else
    if $TK_ENVVAR_SET; then
      line="set in $TOOLKIT_CONFIG"
    else
      line="the toolkit's default; $TK_WHERE"
    fi
    iso_found+=("default: $ENVVAR_KEY is true ($line): under the nvidia runtime a pod that requests no GPU but runs a CUDA image (NVIDIA_VISIBLE_DEVICES=all) sees every GPU; isolation: strict prevents it")
  fi
  list_check isolation "pods could see GPUs they were not given, or get none" "${#iso_problems[@]}" "${iso_problems[@]}" "${iso_found[@]}"
}
