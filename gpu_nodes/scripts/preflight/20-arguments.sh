# ------------------------------------------------------------------- arguments

# An advisory as the component passes it (gpu_nodes/advisories.py): a CVE id and the first fixed
# release of each release line, oldest first.
readonly ADVISORY_RE='^CVE-[0-9]{4}-[0-9]{4,}=[0-9]+(\.[0-9]+)+(,[0-9]+(\.[0-9]+)+)*$'
# A driver bulletin: its id, the CVE ids it names (a last "+N" counts the others), the first fixed
# driver of each branch.
readonly DRIVER_ADVISORY_RE='^[0-9]{1,8}:CVE-[0-9]{4}-[0-9]{4,}(,CVE-[0-9]{4}-[0-9]{4,})*(,\+[0-9]{1,4})?=[0-9]+(\.[0-9]+)+(,[0-9]+(\.[0-9]+)+)*$'

# parse_args ARGS...: fills the settings; on a usage error sets USAGE_ERROR, fails.
parse_args() {
  local opt val root=/
  while (($#)); do
    opt=$1
    case $opt in
      --runtime | --expect-gpus | --min-driver | --min-cuda | --mig-strategy | --mig-devices | --gpu-model | --min-toolkit | --isolation | --cdi-hook-path | --root | --toolkit-advisory | --accepted-toolkit-advisory | --driver-advisory | --patched-driver-branches | --allocator | --mps-replicas | --mps-driver-root | --nvlink-clique | --imex | --imex-peers | --imex-channels | --toolkit)
        if (($# < 2)); then
          USAGE_ERROR="$opt needs a value"
          return 1
        fi
        val=$2
        shift 2
        ;;
      --runtime=* | --expect-gpus=* | --min-driver=* | --min-cuda=* | --mig-strategy=* | --mig-devices=* | --gpu-model=* | --min-toolkit=* | --isolation=* | --cdi-hook-path=* | --root=* | --toolkit-advisory=* | --accepted-toolkit-advisory=* | --driver-advisory=* | --patched-driver-branches=* | --allocator=* | --mps-replicas=* | --mps-driver-root=* | --nvlink-clique=* | --imex=* | --imex-peers=* | --imex-channels=* | --toolkit=*)
        val=${opt#*=} opt=${opt%%=*}
        shift
        ;;
      --require-default-runtime)
        REQUIRE_DEFAULT=true
        shift
        continue
        ;;
      --require-cdi)
        REQUIRE_CDI=true
        shift
        continue
        ;;
      --refuse-driver-advisories)
        DRV_REFUSE=true
        shift
        continue
        ;;
      --imex-required)
        IMEX_REQUIRED=true
        shift
        continue
        ;;
      --dra-mig)
        DRA_MIG=true
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
      --min-cuda) MIN_CUDA=$val ;;
      --mig-strategy) MIG_STRATEGY=$val ;;
      --mig-devices) MIG_DEVICES=$val MIG_DEVICES_GIVEN=true ;;
      --gpu-model) GPU_MODEL=$val ;;
      --min-toolkit) MIN_TOOLKIT=$val ;;
      --toolkit-advisory) TK_ADVISORIES+=("$val") ;;
      --accepted-toolkit-advisory) TK_ACCEPTED+=("$val") ;;
      --driver-advisory) DRV_ADVISORIES+=("$val") ;;
      --patched-driver-branches) DRV_PATCHED=$val DRV_PATCHED_GIVEN=true ;;
      --isolation) ISOLATION=$val ;;
      --allocator) ALLOCATOR=$val ;;
      --mps-replicas) MPS_REPLICAS=$val ;;
      --mps-driver-root) MPS_DRIVER_ROOT=$val ;;
      --cdi-hook-path) CDI_HOOK_PATH=$val HOOK_PATH_GIVEN=true ;;
      --nvlink-clique) NVLINK_CLIQUE=$val ;;
      --imex) IMEX_MODE=$val ;;
      --imex-peers) IMEX_PEERS=$val ;;
      --imex-channels) IMEX_CHANNELS=$val ;;
      --toolkit) TOOLKIT_VIA=$val ;;
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
  if [[ -n $MIN_CUDA && ! $MIN_CUDA =~ ^[0-9]+\.[0-9]+$ ]]; then
    USAGE_ERROR="--min-cuda wants a CUDA version like 12.4, got '$MIN_CUDA'"
    return 1
  fi
  if [[ -n $MIN_TOOLKIT && ! $MIN_TOOLKIT =~ ^[0-9]+(\.[0-9]+)*$ ]]; then
    USAGE_ERROR="--min-toolkit wants a version like 1.17.8, got '$MIN_TOOLKIT'"
    return 1
  fi
  for val in "${TK_ADVISORIES[@]}" "${TK_ACCEPTED[@]}"; do
    if ! [[ $val =~ $ADVISORY_RE ]]; then
      USAGE_ERROR="--toolkit-advisory wants CVE-ID=FIXED[,FIXED...] such as CVE-2026-24260=1.19.1, got '$val'"
      return 1
    fi
  done
  for val in "${DRV_ADVISORIES[@]}"; do
    if ! [[ $val =~ $DRIVER_ADVISORY_RE ]]; then
      USAGE_ERROR="--driver-advisory wants BULLETIN:CVE-ID[,CVE-ID...][,+N]=FIXED[,FIXED...] such as 5747:CVE-2025-33219=580.126.09, got '$val'"
      return 1
    fi
  done
  if $DRV_PATCHED_GIVEN && ! [[ $DRV_PATCHED =~ ^[0-9]{1,4}(,[0-9]{1,4})*$ ]]; then
    USAGE_ERROR="--patched-driver-branches wants driver branches such as 580,595,620, got '$DRV_PATCHED'"
    return 1
  fi
  case $ISOLATION in
    default | strict) ;;
    *) USAGE_ERROR="--isolation wants default or strict, got '$ISOLATION'" && return 1 ;;
  esac
  # Who hands out the group's GPUs (the group's allocator): NVIDIA's device plugin, or NVIDIA's DRA
  # driver, whose prerequisites the dra-* checks judge (68-check-dra.sh).
  case $ALLOCATOR in
    devicePlugin | dra) ;;
    *) USAGE_ERROR="--allocator wants devicePlugin or dra, got '$ALLOCATOR'" && return 1 ;;
  esac
  if $HOOK_PATH_GIVEN && [[ $CDI_HOOK_PATH != /?* ]]; then
    USAGE_ERROR="--cdi-hook-path wants an absolute path like $DEFAULT_CDI_HOOK_PATH, got '$CDI_HOOK_PATH'"
    return 1
  fi
  $HOOK_PATH_GIVEN || CDI_HOOK_PATH=$DEFAULT_CDI_HOOK_PATH
  case $MIG_STRATEGY in
    '' | single | mixed) ;;
    *) USAGE_ERROR="--mig-strategy wants single or mixed, got '$MIG_STRATEGY'" && return 1 ;;
  esac
  if $MIG_DEVICES_GIVEN; then parse_mig_devices || return 1; fi
  validate_mps_args || return 1
  validate_nvlink_args || return 1
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

# A MIG profile as the device plugin names MIG devices (go-nvlib MigProfileInfo.String; the
# forms gpu_nodes/config/device_plugin.py accepts for devicePlugin.migDevices, and cites).
readonly MIG_PROFILE_RE='^([1-46-8]c\.)?[1-46-8]g\.[1-9][0-9]*gb([+](me|me\.all|gfx)|-me)?$'

# parse_mig_devices: MIG_WANT (profile -> MIG devices on every GPU) and MIG_WANT_ORDER (its
# profiles, in order) from --mig-devices, the group's devicePlugin.migDevices as PROFILE=COUNT,...;
# sets USAGE_ERROR and fails on a malformed one.
parse_mig_devices() {
  local item profile
  local -a items=()
  declare -gA MIG_WANT=()
  MIG_WANT_ORDER=()
  if [[ -z $MIG_STRATEGY ]]; then
    USAGE_ERROR="--mig-devices needs --mig-strategy single or mixed"
    return 1
  fi
  if [[ $MIG_DEVICES =~ ^[^,=]+=[1-7](,[^,=]+=[1-7])*$ ]]; then
    IFS=, read -r -a items <<<"$MIG_DEVICES"
  fi
  for item in "${items[@]}"; do
    profile=${item%=*}
    if ! [[ $profile =~ $MIG_PROFILE_RE ]]; then
      items=()
      break
    fi
    if [[ -n ${MIG_WANT[$profile]+set} ]]; then
      USAGE_ERROR="--mig-devices names $profile twice: '$MIG_DEVICES'"
      return 1
    fi
    MIG_WANT[$profile]=${item##*=}
    MIG_WANT_ORDER+=("$profile")
  done
  if ((${#items[@]} == 0)); then
    USAGE_ERROR="--mig-devices wants PROFILE=COUNT[,PROFILE=COUNT...] such as 1g.10gb=7 or 1g.10gb=3,2g.20gb=2, each COUNT 1 to 7 and each PROFILE a MIG profile (devicePlugin.migDevices), got '$MIG_DEVICES'"
    return 1
  fi
  # Under single the plugin stops on a node with two MIG device types (k8s-device-plugin
  # internal/rm/device_map.go, assertAllMigDevicesAreValid: "more than one MIG device type").
  if [[ $MIG_STRATEGY == single ]] && ((${#items[@]} > 1)); then
    USAGE_ERROR="--mig-devices takes one profile with --mig-strategy single (the device plugin wants one MIG device type), got '$MIG_DEVICES'"
    return 1
  fi
}

# A clique as GPU Feature Discovery labels it, <ClusterUUID>.<CliqueId> (gpu_nodes/config/nvlink.py takes the same),
# and an IPv4 or IPv6 address as the IMEX nodes config lists one (the component passes only addresses it parsed).
readonly CLIQUE_RE='^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\.[0-9]{1,10}$'
readonly PEER_RE='^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)$'

# validate_nvlink_args: the NVLink domain (--nvlink-clique), who runs its IMEX daemons (--imex host: the machine's
# nvidia-imex service; driver: NVIDIA's DRA driver, its ComputeDomains), the peers the host daemon must list
# (--imex-peers A,B), the channels the device plugin injects (--imex-channels 0, --imex-required), the DRA
# driver's dynamic MIG (--dra-mig) and how the toolkit reaches containers (--toolkit runtime|nri).
validate_nvlink_args() {
  local peer
  local -a peers=()
  if [[ -n $NVLINK_CLIQUE && ! $NVLINK_CLIQUE =~ $CLIQUE_RE ]]; then
    USAGE_ERROR="--nvlink-clique wants <ClusterUUID>.<CliqueId> such as 9c6f5af3-53bf-49b5-a436-b66766c413c3.4026, got '$NVLINK_CLIQUE'"
    return 1
  fi
  case $IMEX_MODE in
    '' | host | driver) ;;
    *) USAGE_ERROR="--imex wants host or driver, got '$IMEX_MODE'" && return 1 ;;
  esac
  if [[ -n $IMEX_MODE && -z $NVLINK_CLIQUE ]]; then
    USAGE_ERROR="--imex needs --nvlink-clique: an IMEX domain is the machines of one NVLink clique"
    return 1
  fi
  if [[ -n $IMEX_PEERS ]]; then
    [[ $IMEX_MODE == host ]] || { USAGE_ERROR="--imex-peers needs --imex host: only the machine's own IMEX daemon reads them from its nodes config" && return 1; }
    IFS=, read -r -a peers <<<"$IMEX_PEERS"
    for peer in "${peers[@]}" ''; do
      [[ -z $peer ]] && break
      [[ $peer =~ $PEER_RE ]] || { USAGE_ERROR="--imex-peers wants IP addresses separated by commas, got '$IMEX_PEERS'" && return 1; }
    done
  fi
  if [[ -n $IMEX_CHANNELS && ! $IMEX_CHANNELS =~ ^[0-9]{1,4}(,[0-9]{1,4})*$ ]]; then
    USAGE_ERROR="--imex-channels wants channel numbers separated by commas, such as 0, got '$IMEX_CHANNELS'"
    return 1
  fi
  if [[ -n $IMEX_CHANNELS && $IMEX_MODE != host ]]; then
    USAGE_ERROR="--imex-channels needs --imex host: the device plugin injects the channels the machine's IMEX daemon serves"
    return 1
  fi
  if $IMEX_REQUIRED && [[ -z $IMEX_CHANNELS ]]; then
    USAGE_ERROR="--imex-required needs --imex-channels"
    return 1
  fi
  if $DRA_MIG && [[ $ALLOCATOR != dra ]]; then
    USAGE_ERROR="--dra-mig needs --allocator dra: dynamic MIG is NVIDIA's DRA driver's"
    return 1
  fi
  case $TOOLKIT_VIA in
    runtime | nri) ;;
    *) USAGE_ERROR="--toolkit wants runtime or nri, got '$TOOLKIT_VIA'" && return 1 ;;
  esac
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

# detect_machine: FEAT_MACHINE, the machine's DMI product name ("DGX H100"), which GPU Feature
# Discovery labels as nvidia.com/gpu.machine (k8s-device-plugin internal/lm/machine-type.go, its
# default machine type file); empty where the file is missing or unreadable.
detect_machine() {
  read_first_line "$ROOT/sys/class/dmi/id/product_name" || true
  FEAT_MACHINE=$REPLY
}
