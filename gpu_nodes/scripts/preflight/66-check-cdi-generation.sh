# ------------------------------------------------------------ check: CDI spec generation
#
# Where GPU containers get their devices from a CDI spec, the spec must be buildable on this
# machine, or containers start without their devices (the device plugin's log then says "No
# devices found"). Three places build one with the toolkit's nvcdi library, as
# `nvidia-ctk cdi generate` does (cmd/nvidia-ctk/cdi/generate/generate.go: nvcdi.New, the device
# specs, the common edits, spec.New, Save):
# - jit-cdi mode (auto from toolkit 1.18.0, 35-check-cuda.sh toolkit_mode): the runtime builds an
#   in-memory spec at each container start (internal/modifier/mode.go newModeModifier;
#   internal/modifier/cdi.go newAutomaticCDISpecModifier: nvcdi.New with the config's
#   nvidia-container-cli.root as the driver root, GetSpec), and a failure fails the container;
# - cdi mode: the runtime injects devices from the specs under /etc/cdi and /var/run/cdi, which
#   `nvidia-ctk cdi generate` writes;
# - gpuAccess: cdi (--require-cdi): the device plugin writes its spec the same way, and drops a
#   class whose spec fails with "invalid device, empty device edits" (k8s-device-plugin
#   internal/cdi/cdi.go), so it then finds no devices.
# That message comes from the CDI library refusing a device without edits (container-device-interface
# pkg/cdi/device.go validate, wrapped by pkg/cdi/spec.go as `invalid CDI Spec: failed add device
# "all": ...`): with no GPU device found, the merged "all" device has none
# (pkg/nvcdi/transform/merged-device.go). nvidia-ctk logs the error at level error and exits 1
# (cmd/nvidia-ctk/main.go). Legacy and csv modes build no spec: there the check is not tried.
#
# The spec goes to the script's temporary directory (the EXIT trap removes it): --output=FILE
# writes FILE (a name without .yaml or .json gets the format's extension, container-device-interface
# api/producer/spec-format.go), so preflight leaves no spec for a runtime to find.

readonly CDI_GENERATION_SPEC=cdi-generation.yaml
# A line nvidia-ctk logs its error on, in logrus' text format without a terminal: its msg, quoted.
readonly CTK_LOG_ERROR_RE='level=(error|fatal) msg="(([^"\\]|\\.)*)"'
# The same with a terminal ("ERRO[0000] ...").
readonly CTK_TTY_ERROR_RE='^(ERRO|FATA)\[[0-9]+\][[:space:]]*(.*)'
# How a machine goes back to the legacy mode, which builds no spec.
# A TOML string value, quoted or bare: its text.
readonly TOML_WORD_RE="^[\"']?([^\"'[:space:]]*)"

check_cdi_generation() {
  local need fix harm="GPU containers here would not get their devices"
  CDI_GENERATION='not tried'
  toolkit_version || true
  toolkit_mode
  fix="fix or reinstall the NVIDIA driver so that the generation finds its devices (run nvidia-ctk cdi generate for its whole log)"
  if $REQUIRE_CDI; then
    # The plugin itself needs the spec: the runtime's mode is no way out.
    need="the group's gpuAccess: cdi, whose device plugin builds its CDI spec the same way"
    harm="the device plugin would drop its spec and find no devices"
  else
    case $TK_MODE in
      jit-cdi) need="the toolkit's jit-cdi mode ($TK_MODE_WHY) builds a CDI spec at each container start" ;;
      cdi) need="the toolkit's cdi mode ($TK_MODE_WHY) injects GPUs from CDI specs that nvidia-ctk cdi generate writes" ;;
      legacy | csv)
        add_check cdi-generation true "not tried: the toolkit runs in $TK_MODE mode ($TK_MODE_WHY), which builds no CDI spec"
        return
        ;;
      invalid)
        add_check cdi-generation false "not tried: $TK_MODE_WHY is not a mode of the toolkit (legacy, cdi, jit-cdi, csv, auto), and its runtime refuses every GPU container: fix nvidia-container-runtime.mode in $TOOLKIT_CONFIG"
        return
        ;;
      *)
        if ((${#CANNOT_READ[@]})); then
          add_check cdi-generation false "$TK_MODE_WHY; so whether the toolkit's mode builds a CDI spec is unknown"
          return
        fi
        need="the toolkit's mode is unknown ($TK_MODE_WHY), and jit-cdi and cdi modes need a CDI spec"
        ;;
    esac
    fix+=", or set mode = \"legacy\" under [nvidia-container-runtime] in $TOOLKIT_CONFIG"
  fi
  cdi_generate "$need" "$harm: $fix"
}

# cdi_generate NEED FIX: runs the found toolkit's `nvidia-ctk cdi generate` (find_toolkit) into TMPD and adds the check: NEED says why
# the spec matters here, FIX what follows when it cannot be built and what to do.
cdi_generate() {
  local need=$1 fix=$2 out=$TMPD/$CDI_GENERATION_SPEC
  local -a args=(cdi generate)
  # Where nvidia-ctk is missing, nothing here builds the spec this mode or group needs: the
  # machine is not known to work, so it fails, as the cdi check fails what it cannot tell.
  find_toolkit
  if [[ -z $TK_CTK ]]; then
    add_check cdi-generation false "could not be tried: no nvidia-ctk ($TK_HOW), and $need: install the NVIDIA Container Toolkit (the container-toolkit check names what is there)"
    return
  fi
  if [[ -z $TMPD ]]; then
    add_check cdi-generation false "could not be tried: mktemp -d made no temporary directory for its spec, and $need"
    return
  fi
  if [[ ${TK_CONFIG["nvidia-container-cli/root"]-} =~ $TOML_WORD_RE && -n ${BASH_REMATCH[1]} ]]; then
    args+=("--driver-root=${BASH_REMATCH[1]}")
  fi
  # It asks the driver through NVML, as nvidia-smi does: it gets nvidia-smi's time.
  run_capture "$SMI_TIMEOUT" "$TK_CTK_RUN" "${args[@]}" "--output=$out"
  CDI_GENERATION=failed
  if timed_out; then
    add_check cdi-generation false "$need; nvidia-ctk cdi generate did not finish within ${SMI_TIMEOUT}s: the driver is wedged or a GPU fell off the bus"
  elif ((CAP_RC != 0)); then
    ctk_error "$CAP_ERR"$'\n'"$CAP_OUT"
    add_check cdi-generation false "$need; nvidia-ctk cdi generate failed (exit $CAP_RC): ${REPLY:-no output}; $fix"
  else
    cdi_spec_devices "$out"
    if ((REPLY == 0)); then
      brief "$CAP_ERR"$'\n'"$CAP_OUT"
      add_check cdi-generation false "$need; nvidia-ctk cdi generate exited 0 but wrote no CDI spec with devices (${REPLY:-no output}); $fix"
    else
      CDI_GENERATION=ok
      add_check cdi-generation true "$need; nvidia-ctk cdi generate built one here, with $REPLY CDI devices"
    fi
  fi
}

# ctk_error TEXT: sets REPLY to the last error nvidia-ctk logged in TEXT, else to brief TEXT.
ctk_error() {
  local line found=''
  while IFS='' read -r line; do
    if [[ $line =~ $CTK_LOG_ERROR_RE ]]; then
      found=${BASH_REMATCH[2]//\\\"/\"}
    elif [[ $line =~ $CTK_TTY_ERROR_RE ]]; then
      found=${BASH_REMATCH[2]}
    fi
  done <<<"$1"
  brief "${found:-$1}"
}

# cdi_spec_devices FILE: sets REPLY to how many devices the YAML CDI spec FILE lists (the "- name:"
# entries of its top-level devices list, "all" among them, as `nvidia-ctk cdi list` counts them); 0
# when it has none or there is no FILE.
cdi_spec_devices() {
  local line in_devices=false indent='' first=true n=0
  if ! slurp "$1"; then
    REPLY=0
    return
  fi
  while IFS='' read -r line; do
    if [[ $line =~ ^[^[:space:]#-] ]]; then
      in_devices=false
      [[ $line =~ ^devices: ]] && in_devices=true
    elif $in_devices && [[ $line =~ ^([[:space:]]*)-[[:space:]]+name: ]]; then
      if $first; then indent=${BASH_REMATCH[1]} first=false; fi
      [[ ${BASH_REMATCH[1]} == "$indent" ]] && n=$((n + 1))
    fi
  done <<<"$REPLY"
  REPLY=$n
}
