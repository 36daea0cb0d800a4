# ------------------------------------------------------------------------ CUDA
#
# The driver's CUDA version is the "CUDA Version" of nvidia-smi's header (no
# --query-gpu field gives it). The verification runs a CUDA kernel from an image
# built for CUDA X.Y (--min-cuda, from its tag). Whether that image starts and runs
# here is NVIDIA's rule, not "driver CUDA >= X.Y":
#
# - NVIDIA's CUDA images (and the CUDA samples built on them) declare
#   NVIDIA_REQUIRE_CUDA="cuda>=X.Y brand=tesla,driver>=535,driver<536 ...": a list of
#   alternatives, spaces OR, commas AND (libnvidia-container src/cli/dsl.c,
#   dsl_evaluate; the rules cuda, driver, arch, brand in src/cli/configure.c). So an
#   image starts on a driver older than X.Y when its branch is one the image lists.
# - Only the toolkit's legacy mode checks it: the legacy hook passes each
#   requirement to nvidia-container-cli as --require
#   (nvidia-container-toolkit cmd/nvidia-container-runtime-hook/main.go,
#   container_config.go), unless disable-require = true in its config.toml
#   (image.WithDisableRequire). The CDI and jit-cdi modes inject devices from a CDI
#   spec and check no requirement (internal/modifier/cdi.go; toolkit issue 1470,
#   "At present CDI mode does not support checking of the NVIDIA_REQUIRE_ envvars").
#   csv mode (Tegra) checks them too. A group on CDI (--require-cdi) is served by
#   the container runtime's own CDI support: the nvidia runtime is not involved.
# - The mode is config.toml's nvidia-container-runtime.mode (internal/config), "auto"
#   by default. auto resolves (internal/info/auto.go) to cdi when a container asks for
#   CDI devices only, else to the default mode: legacy before toolkit 1.18.0, jit-cdi
#   from 1.18.0 (toolkit PR 910).
# - Within a major version, CUDA minor-version compatibility runs X.Y code on any
#   X.* driver, so an image that starts runs. Across a major version only CUDA
#   forward compatibility (the image's cuda-compat libraries, datacenter GPUs) can:
#   that is a warning, never a refusal. The verification's vectorAdd has the last
#   word either way: this check refuses only what the toolkit itself would refuse.
readonly CUDA_VERSION_RE="CUDA Version:[[:space:]]*([0-9]+)\\.([0-9]+)"
# The toolkit release from which auto means jit-cdi (internal/info/auto.go, PR 910).
readonly TOOLKIT_JIT_CDI_DEFAULT=1.18.0

# The one table of NVIDIA_REQUIRE_CUDA: for each CUDA version of NVIDIA's images
# (major.minor), the driver branches its alternatives list (brand=...,driver>=B,driver<B+1),
# read from the x86_64 base Dockerfiles of NVIDIA's container-images/cuda repository at the point
# release NVIDIA supports for each version (doc/supported-tags.md: only the latest point release of
# a CUDA version is kept): dist/<version>/ubuntu2x04/base/Dockerfile of 11.7.1, 11.8.0, 12.0.1,
# 12.1.1, 12.2.2, 12.3.2, 12.4.1, 12.5.1, 12.6.3, 12.8.2, 12.9.2, 13.0.3, 13.1.2, 13.2.1 and 13.3.1
# (tests/scripts/fixtures/README.md names the copies read). Every branch there lists the
# datacenter brands (tesla, nvidia, unknown; libnvidia-container src/driver.c names every brand
# it does not know "Unknown"), R450 for tesla only; GeForce and TITAN are listed for R470-R535
# up to 12.4 and not at all from 12.5: preflight takes the GPUs for datacenter ones. A CUDA
# version not in the table (13.4, whose images' Dockerfiles could not be read) is a warning, not
# a refusal.
declare -rA CUDA_IMAGE_BRANCHES=(
  [11.7]="450 470"
  [11.8]="450 470"
  [12.0]="450 470"
  [12.1]="450 470 525"
  [12.2]="470 525"
  [12.3]="470 525 535"
  [12.4]="470 525 535"
  [12.5]="470 535 550"
  [12.6]="470 535 550"
  [12.8]="535 550 560 565 570 580"
  [12.9]="535 550 560 565 570 580"
  [13.0]="535 550 565 570 575"
  [13.1]="535 550 560 565 570 580"
  [13.2]="535 570 580 590"
  [13.3]="535 570 580 590 595"
)
# The first driver of each CUDA version: NVIDIA's CUDA Toolkit release notes, "CUDA Toolkit and
# Corresponding Driver Versions" (Table 3), the Linux x86_64 driver of its GA release. A driver
# from it on reports that CUDA version in nvidia-smi's header, which is what the image's
# cuda>=X.Y asks for; the refusal names it as the driver to upgrade to.
declare -rA CUDA_FIRST_DRIVER=(
  [11.7]=515.43.04
  [11.8]=520.61.05
  [12.0]=525.60.13
  [12.1]=530.30.02
  [12.2]=535.54.03
  [12.3]=545.23.06
  [12.4]=550.54.14
  [12.5]=555.42.02
  [12.6]=560.28.03
  [12.8]=570.26
  [12.9]=575.51.03
  [13.0]=580.65.06
  [13.1]=590.44.01
  [13.2]=595.45.04
  [13.3]=610.43.02
)

# toolkit_mode: sets TK_MODE (legacy, cdi, jit-cdi, csv; '' when unknown), TK_MODE_WHY (how
# it was found) and TK_DISABLE_REQUIRE (true/false), from config.toml and the toolkit version.
toolkit_mode() {
  local mode='' word_re="^[\"']?([^\"'[:space:]]*)" # a string value, quoted or bare, without its quotes
  TK_MODE='' TK_MODE_WHY='' TK_DISABLE_REQUIRE=false
  CANNOT_READ=()
  if ! toolkit_config; then
    cannot_read_text
    TK_MODE_WHY=$REPLY
    return
  elif $TK_CONFIG_FOUND; then
    [[ ${TK_CONFIG["/disable-require"]-} =~ $word_re && ${BASH_REMATCH[1]} == true ]] && TK_DISABLE_REQUIRE=true
    [[ ${TK_CONFIG["nvidia-container-runtime/mode"]-} =~ $word_re ]] && mode=${BASH_REMATCH[1]}
    TK_MODE_WHY="$TOOLKIT_CONFIG mode ${mode:-unset}"
  else
    TK_MODE_WHY="no $TOOLKIT_CONFIG"
  fi
  case ${mode:-auto} in
    legacy | cdi | jit-cdi | csv) TK_MODE=$mode ;;
    auto)
      if ! toolkit_version; then
        TK_MODE_WHY+=", auto, and the toolkit version is unknown ($TK_WHY)"
      elif version_ge "$TK_VERSION" "$TOOLKIT_JIT_CDI_DEFAULT"; then
        TK_MODE=jit-cdi TK_MODE_WHY+=": auto, jit-cdi from toolkit $TOOLKIT_JIT_CDI_DEFAULT"
      else
        TK_MODE=legacy TK_MODE_WHY+=": auto, legacy before toolkit $TOOLKIT_JIT_CDI_DEFAULT"
      fi
      ;;
    *) TK_MODE=invalid ;;
  esac
}

# cuda_branch_verdict IMAGE: sets REPLY to "listed", "unlisted" or "unknown" (IMAGE is not in
# the table) for the driver's branch, and BRANCHES to the image's branches as "R470, R535".
cuda_branch_verdict() {
  local branch=${DRIVER_VERSION%%.*} b
  BRANCHES=''
  if [[ -z ${CUDA_IMAGE_BRANCHES[$1]-} ]]; then
    REPLY=unknown
    return
  fi
  REPLY=unlisted
  for b in ${CUDA_IMAGE_BRANCHES[$1]}; do
    BRANCHES+="${BRANCHES:+, }R$b"
    [[ $b == "$branch" ]] && REPLY=listed
  done
}

check_cuda() {
  CUDA_VERSION=''
  if [[ $SMI_OK != true && -z $MIN_CUDA ]]; then
    add_check cuda true "not requested"
    return
  elif [[ $SMI_OK != true ]]; then
    add_check cuda false "the driver's CUDA version is unknown (see the driver check), need >= $MIN_CUDA for the verification's CUDA image"
    return
  fi
  run_capture "$SMI_TIMEOUT" nvidia-smi
  if [[ $CAP_OUT =~ $CUDA_VERSION_RE ]]; then
    CUDA_VERSION="$((10#${BASH_REMATCH[1]})).$((10#${BASH_REMATCH[2]}))"
  fi
  if [[ -z $MIN_CUDA ]]; then
    add_check cuda true "not requested${CUDA_VERSION:+ (the driver supports CUDA $CUDA_VERSION)}"
  elif [[ -z $CUDA_VERSION ]]; then
    brief "$CAP_OUT"$'\n'"$CAP_ERR"
    add_check cuda false "nvidia-smi names no CUDA Version (exit $CAP_RC: ${REPLY:-no output}), need >= $MIN_CUDA for the verification's CUDA image"
  elif version_ge "$CUDA_VERSION" "$MIN_CUDA"; then
    add_check cuda true "driver $DRIVER_VERSION supports CUDA $CUDA_VERSION >= $MIN_CUDA (the verification's CUDA image)"
  else
    cuda_newer_image
  fi
}

# cuda_newer_image: the verdict for an image built for a newer CUDA than the driver's.
cuda_newer_image() {
  local facts runs how
  facts="driver $DRIVER_VERSION supports CUDA up to $CUDA_VERSION, the verification's CUDA image is built for CUDA $MIN_CUDA"
  if [[ ${MIN_CUDA%%.*} == "${CUDA_VERSION%%.*}" ]]; then
    runs="runs under CUDA minor-version compatibility (CUDA $MIN_CUDA code on a CUDA ${CUDA_VERSION%%.*}.x driver)"
  else
    runs="warning: it can run only under CUDA forward compatibility (the image's cuda-compat libraries, datacenter GPUs only): the verification's vectorAdd decides"
  fi
  if $REQUIRE_CDI; then
    cuda_runs "$facts; the runtime injects the group's CDI devices itself, so no NVIDIA_REQUIRE_CUDA check applies, and it $runs"
    return
  fi
  toolkit_version || true
  toolkit_mode
  how="toolkit ${TK_VERSION:-of unknown version}, ${TK_MODE:-unknown} mode ($TK_MODE_WHY)"
  case $TK_MODE in
    cdi | jit-cdi)
      cuda_runs "$facts; the $how checks no NVIDIA_REQUIRE_CUDA, so it starts, and $runs"
      ;;
    legacy | csv)
      if $TK_DISABLE_REQUIRE; then
        cuda_runs "$facts; the $how has disable-require = true, so it starts, and $runs"
        return
      fi
      cuda_branch_verdict "$MIN_CUDA"
      case $REPLY in
        listed) cuda_runs "$facts; the $how checks its NVIDIA_REQUIRE_CUDA, which lists the R${DRIVER_VERSION%%.*} branch, so it starts, and $runs" ;;
        unlisted) add_check cuda false "$facts; the $how refuses to start it (\"unsatisfied condition: cuda>=$MIN_CUDA\": its NVIDIA_REQUIRE_CUDA takes older drivers only of the $BRANCHES branches): upgrade the driver to one for CUDA $MIN_CUDA or later${CUDA_FIRST_DRIVER[$MIN_CUDA]:+ (${CUDA_FIRST_DRIVER[$MIN_CUDA]} or newer)} or to one of a listed branch, set verification.cudaImage to an image built for CUDA $CUDA_VERSION or older, or use the toolkit's jit-cdi mode (the default from $TOOLKIT_JIT_CDI_DEFAULT), which checks no requirement" ;;
        unknown) add_check cuda true "warning: $facts; the $how checks its NVIDIA_REQUIRE_CUDA, and which driver branches NVIDIA's CUDA $MIN_CUDA images list is not known here (README: CUDA): the verification's vectorAdd decides" ;;
      esac
      ;;
    invalid) add_check cuda false "$facts; $TK_MODE_WHY is not a mode of the toolkit (legacy, cdi, jit-cdi, csv, auto), and its runtime refuses every GPU container: fix nvidia-container-runtime.mode in $TOOLKIT_CONFIG" ;;
    *) add_check cuda true "warning: $facts; the toolkit's mode is unknown ($TK_MODE_WHY): in legacy mode it checks the image's NVIDIA_REQUIRE_CUDA, in jit-cdi and CDI modes it does not: the verification's vectorAdd decides" ;;
  esac
}

# cuda_runs DETAIL: passes the check, as a warning when DETAIL holds one.
cuda_runs() {
  local detail=$1
  if [[ $detail == *"warning: "* ]]; then
    detail="warning: ${detail/warning: /}"
  fi
  add_check cuda true "$detail"
}
