# -------------------------------------------------------------- check: dev-char-links
#
# Running pods lose their GPUs after `systemctl daemon-reload` where runc manages their cgroups
# through systemd and the NVIDIA device nodes have no /dev/char/MAJOR:MINOR link: runc hands systemd
# each allowed device as the path /dev/char/MAJOR:MINOR (opencontainers/runc
# libcontainer/cgroups/devices/systemd.go, systemdProperties), systemd rebuilds the container's
# device rules from those paths on a reload, and udev makes the links only for devices the kernel
# announces, which the NVIDIA driver's nodes (made by nvidia-modprobe with mknod) are not (runc
# issue 3708; NVIDIA's container toolkit troubleshooting guide and nvidia-docker issue 1730: "Affected
# environments are those using runc and enabling systemd cgroup management"). The fix is
# `nvidia-ctk system create-dev-char-symlinks --create-all`, which the GPU Operator's validator runs;
# recent nvidia-modprobe releases also link each node they make (symlink_char_dev). runc 1.1.7 with
# systemd 240 or later no longer drops a rule whose path is missing (runc pull request 3842), but the
# links are what NVIDIA documents, and they cost nothing: the check does not judge versions.
# So, only where runc runs the pods with systemd cgroups, every NVIDIA device node must have its link,
# and the link must lead to it.
#
# Which device nodes, and their numbers, as nvidia-ctk knows them without stat(2), which bash cannot
# do: the nodes are upstream's (cmd/nvidia-ctk/system/create-dev-char-symlinks/existing.go: /dev/nvidia*
# and /dev/nvidia-caps/nvidia-*, not nvidia-fs*, nvidia-nvswitch*, nvidia-nvlink), their numbers those
# --create-all gives them (all.go): the majors of /proc/devices' "nvidia" (before driver 550.40
# "nvidia-frontend"), "nvidia-uvm" and "nvidia-caps" (internal/info/proc/devices/devices.go), the minors
# nvidiaN's N, nvidiactl 255, nvidia-modeset 254, nvidia-uvm 0, nvidia-uvm-tools 1 and nvidia-capN's N
# (internal/nvcaps/nvcaps.go, DevicePath); nvidia-modprobe makes the nodes with those very numbers
# (modprobe-utils/nvidia-modprobe-utils.c). /sys/dev/char does not help: it lists only devices the
# kernel announces. A node whose name says no number (nvidia-vgpuN, ...) is not judged.
#
# Which low-level runtime: nvidia-container-runtime runs the first of config.toml's
# nvidia-container-runtime.runtimes (default docker-runc, runc, crun: internal/config/config.go) that
# its PATH holds (internal/oci/runtime_low_level.go, findRuntime), the daemon's PATH (SERVICE_PATH).
# Which cgroup driver: the runtime's own where this script read it (the nvidia runtime's SystemdCgroup
# for containerd, k3s and RKE2; cgroup_manager for CRI-O, systemd by default), and kubelet's, which must
# agree (check runtime-entry): judged when either is systemd, or when neither is known.

readonly DEVCHAR_FIX="nvidia-ctk system create-dev-char-symlinks --create-all"
# The toolkit's low-level runtimes when its config.toml names none (internal/config/config.go, GetDefault).
readonly -a TOOLKIT_LOW_LEVEL=(docker-runc runc crun)
# The NVIDIA device nodes upstream links, under /dev (existing.go's patterns).
readonly -a DEVCHAR_PATTERNS=("/dev/nvidia*" "/dev/nvidia-caps/nvidia-*")
declare -A CHR_MAJOR=()

# chr_majors: sets CHR_MAJOR (name -> major) from /proc/devices' "Character devices:" section, as
# nvidia-modprobe reads it (nvidia_get_chardev_major); fails when /proc/devices cannot be read.
chr_majors() {
  local line in_chr=false
  CHR_MAJOR=()
  slurp "$ROOT/proc/devices" || return 1
  while IFS='' read -r line; do
    if [[ $line == "Character devices:" ]]; then
      in_chr=true
    elif [[ -z $line ]]; then
      in_chr=false
    elif $in_chr && [[ $line =~ ^[[:space:]]*([0-9]+)[[:space:]]+([^[:space:]]+) ]]; then
      CHR_MAJOR[${BASH_REMATCH[2]}]=${BASH_REMATCH[1]}
    fi
  done <<<"$REPLY"
}

# node_number NAME: sets REPLY to the device number (MAJOR:MINOR) nvidia-ctk gives the NVIDIA device
# node NAME, or fails with REPLY saying why it has none: a node upstream does not link, or a driver
# /proc/devices does not list.
node_number() {
  local name=$1 driver minor
  case $name in
    nvidia-fs* | nvidia-nvswitch* | nvidia-nvlink*) REPLY='' && return 1 ;;
    nvidiactl) driver=nvidia minor=255 ;;
    nvidia-modeset) driver=nvidia minor=254 ;;
    nvidia-uvm) driver=nvidia-uvm minor=0 ;;
    nvidia-uvm-tools) driver=nvidia-uvm minor=1 ;;
    *)
      if [[ $name =~ ^nvidia([0-9]+)$ ]]; then
        driver=nvidia minor=${BASH_REMATCH[1]}
      elif [[ $name =~ ^nvidia-cap([0-9]+)$ ]]; then
        driver=nvidia-caps minor=${BASH_REMATCH[1]}
      else
        REPLY='' && return 1
      fi
      ;;
  esac
  minor=$((10#$minor))
  if [[ -n ${CHR_MAJOR[$driver]-} ]]; then
    REPLY=${CHR_MAJOR[$driver]}:$minor
  elif [[ $driver == nvidia && -n ${CHR_MAJOR[nvidia-frontend]-} ]]; then
    REPLY=${CHR_MAJOR[nvidia-frontend]}:$minor
  else
    REPLY="/proc/devices lists no $driver driver"
    return 1
  fi
}

# devchar_driver: sets DC_SYSTEMD (the sources that say systemd), DC_CGROUPFS (those that say
# cgroupfs): the runtime's setting where it was read, and kubelet's.
devchar_driver() {
  local where
  DC_SYSTEMD=() DC_CGROUPFS=()
  if [[ $RT_CONFIGURED == true && -z ${RT_ERROR-} ]] && ! $RT_UNREADABLE && ! $ENT_INLINE; then
    case $RT_NAME in
      containerd | k3s | rke2)
        # SystemdCgroup is the runc shim's option; another shim's entry says nothing here.
        if [[ $ENT_TYPE == "$RUNC_SHIM" ]]; then
          systemd_text "$ENT_SYSTEMD"
          where="the nvidia runtime's ${REPLY% (*} (read $RT_SOURCE)"
          if [[ $ENT_SYSTEMD == true ]]; then DC_SYSTEMD+=("$where"); else DC_CGROUPFS+=("$where"); fi
        fi
        ;;
      cri-o)
        where="CRI-O's cgroup_manager ${ENT_CGROUP_MANAGER:-systemd} (${ENT_CGROUP_MANAGER:+read $RT_SOURCE}${ENT_CGROUP_MANAGER:-its default})"
        if [[ ${ENT_CGROUP_MANAGER:-systemd} == systemd ]]; then DC_SYSTEMD+=("$where"); else DC_CGROUPFS+=("$where"); fi
        ;;
    esac
  fi
  if kubelet_driver; then
    if [[ $KL_CGROUP_DRIVER == systemd ]]; then DC_SYSTEMD+=("$KL_DRIVER_WHERE"); else DC_CGROUPFS+=("$KL_DRIVER_WHERE"); fi
  fi
}

# devchar_low_level: sets DC_RUNTIME to the low-level runtime nvidia-container-runtime runs (its path
# on the machine, '' when none of the candidates is there) and DC_RUNTIME_WHERE to how that was found.
devchar_low_level() {
  local list candidate dir IFS=: from="config.toml's runtimes" default="the toolkit's default runtimes"
  local -a candidates=()
  DC_RUNTIME=''
  if ! toolkit_config; then
    default+=" ($TOOLKIT_CONFIG may not be read)"
  elif [[ -n ${TK_CONFIG["nvidia-container-runtime/runtimes"]-} ]]; then
    list=${TK_CONFIG["nvidia-container-runtime/runtimes"]}
    list=${list#[} && list=${list%]} && list=${list//[\"\' ]/}
    IFS=, read -r -a candidates <<<"$list"
  fi
  if ((${#candidates[@]} == 0)); then
    candidates=("${TOOLKIT_LOW_LEVEL[@]}") from=$default
  fi
  for candidate in "${candidates[@]}"; do
    if [[ $candidate == /* ]]; then
      [[ -f $ROOT$candidate && -x $ROOT$candidate ]] && DC_RUNTIME=$candidate && break
      continue
    fi
    for dir in $SERVICE_PATH; do
      [[ -f $ROOT$dir/$candidate && -x $ROOT$dir/$candidate ]] && DC_RUNTIME=$dir/$candidate && break 2
    done
  done
  IFS=' '
  if [[ -n $DC_RUNTIME ]]; then
    DC_RUNTIME_WHERE="$DC_RUNTIME, the first of $from (${candidates[*]}) on the daemon's PATH"
  else
    DC_RUNTIME_WHERE="none of $from (${candidates[*]}) is on the daemon's PATH: runc assumed"
  fi
}

# devchar_links: sets DC_MISSING (each node without the link it needs) and DC_LINKED, DC_UNJUDGED
# (nodes whose number is unknown) for the NVIDIA device nodes under /dev.
devchar_links() {
  local pattern f link shown_node
  DC_MISSING=() DC_LINKED=() DC_UNJUDGED=()
  for pattern in "${DEVCHAR_PATTERNS[@]}"; do
    # Not glob_root, which keeps regular files only: a device node is none.
    for f in "$ROOT"$pattern; do
      # A device node on a machine; the test fakes' are plain files, as nothing here reads them.
      [[ -e $f && ! -d $f ]] || continue
      shown "$f" && shown_node=$REPLY
      if ! node_number "${f##*/}"; then
        [[ -n $REPLY ]] && DC_UNJUDGED+=("$shown_node ($REPLY)")
        continue
      fi
      link=$ROOT/dev/char/$REPLY
      if [[ $link -ef $f ]]; then
        DC_LINKED+=("$shown_node")
      elif [[ -L $link && -e $link ]]; then
        DC_MISSING+=("/dev/char/$REPLY leads elsewhere, not to $shown_node")
      elif [[ -L $link ]]; then
        DC_MISSING+=("/dev/char/$REPLY for $shown_node is a dangling link")
      elif [[ -e $link ]]; then
        DC_MISSING+=("/dev/char/$REPLY is not a link to $shown_node")
      else
        DC_MISSING+=("/dev/char/$REPLY for $shown_node is missing")
      fi
    done
  done
}

check_dev_char() {
  local why line
  CANNOT_READ=()
  devchar_low_level
  if [[ -n $DC_RUNTIME && ${DC_RUNTIME##*/} != runc && ${DC_RUNTIME##*/} != docker-runc ]]; then
    add_check dev-char-links true "not judged: the nvidia runtime runs $DC_RUNTIME_WHERE, not runc; only runc with systemd cgroups loses devices on a daemon-reload"
    return
  fi
  devchar_driver
  CANNOT_READ=()
  if ((${#DC_SYSTEMD[@]})); then
    printf -v why '%s, ' "${DC_SYSTEMD[@]}"
    why="runc with systemd cgroups: ${why%, }; low-level runtime $DC_RUNTIME_WHERE"
  elif ((${#DC_CGROUPFS[@]})); then
    printf -v why '%s, ' "${DC_CGROUPFS[@]}"
    add_check dev-char-links true "not judged: cgroupfs (${why%, }); only runc with systemd cgroups loses devices on a daemon-reload"
    return
  else
    why="no runtime entry or kubelet settings say the cgroup driver, judged as systemd; low-level runtime $DC_RUNTIME_WHERE"
  fi
  if ! chr_majors && ((${#CANNOT_READ[@]})); then
    cannot_read_text
    add_check dev-char-links false "$REPLY, so the NVIDIA device nodes' numbers are unknown"
    return
  fi
  devchar_links
  if ((${#DC_MISSING[@]})); then
    printf -v line '%s; ' "${DC_MISSING[@]}"
    add_check dev-char-links false "running pods lose NVIDIA devices at the next systemctl daemon-reload (\"Failed to initialize NVML: Unknown Error\") without their /dev/char links ($why): ${line%; }; run $DEVCHAR_FIX (the GPU Operator's validator does), and again after each reboot and driver load: /dev is rebuilt then"
    return
  fi
  if ((${#DC_LINKED[@]} == 0)); then
    line="no NVIDIA device nodes under /dev to link ($why)"
  else
    printf -v line '%s, ' "${DC_LINKED[@]}"
    line="every NVIDIA device node has its /dev/char link (${line%, }; $why)"
  fi
  if ((${#DC_UNJUDGED[@]})); then
    printf -v why '%s, ' "${DC_UNJUDGED[@]}"
    line+="; not judged: ${why%, }"
  fi
  add_check dev-char-links true "$line"
}
