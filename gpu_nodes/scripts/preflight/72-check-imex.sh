# ------------------------------------------------------------ checks: imex-daemon, imex-peers
#
# A job spanning the machines of an NVLink domain shares GPU memory through IMEX: each machine runs NVIDIA's
# IMEX daemon, and each container gets an IMEX channel (NVIDIA IMEX guide, "Overview" and "IMEX Channels").
# Who runs the daemons (--imex):
# - host: the machine's own `nvidia-imex` service (the device plugin's IMEX channels, devicePlugin.imex). The IMEX
#   package installs the daemon and registers it as the systemd service nvidia-imex (IMEX guide, "Getting Started
#   with IMEX": "register the service as a systemd service called nvidia-imex"; `systemctl start nvidia-imex`).
#   At start it checks the loaded driver's version and aborts on one it is not made for (same page), so a
#   running daemon is one that matches the driver: NVIDIA's guide gives no other driver floor ("starting with
#   version TBD"). It reads its peers once, at start, from the file IMEX_NODE_CONFIG_FILE of its config
#   (/etc/nvidia-imex/config.cfg, KEY=VALUE lines, # comments; default /etc/nvidia-imex/nodes_config.cfg: "the IP
#   addresses of the nodes that are in this IMEX domain", one per line), and the daemons of a domain must agree
#   on that map ("IP address mapping discrepancies will lead to failures": "IMEX Service Config Options",
#   "Deployment Models"). The channels the device plugin injects must exist: /dev/nvidia-caps-imex-channels/
#   channel<N>, made by hand or at module load with NVreg_CreateImexChannel0=1 ("IMEX Channels"); the plugin
#   refuses to start without one it is told is required (k8s-device-plugin internal/imex/imex.go, GetChannels).
# - driver: NVIDIA's DRA driver runs them, per ComputeDomain, and wants the machine's own service off:
#   "systemctl disable --now nvidia-imex.service && systemctl mask nvidia-imex.service"
#   (kubernetes-sigs/dra-driver-nvidia-gpu site/content/docs/prerequisites.md, "ComputeDomains additional
#   prerequisites"); it writes its daemons' configs itself.
# Without --imex both pass as "not requested".

readonly IMEX_SERVICE=nvidia-imex
readonly IMEX_CONFIG=/etc/nvidia-imex/config.cfg
readonly IMEX_DEFAULT_NODES=/etc/nvidia-imex/nodes_config.cfg
readonly IMEX_CHANNEL_DIR=/dev/nvidia-caps-imex-channels
readonly IMEX_SOURCE="NVIDIA IMEX guide"
readonly IMEX_DRA_SOURCE="kubernetes-sigs/dra-driver-nvidia-gpu docs/prerequisites.md"

# imex_state: sets IMEX_INSTALLED (where nvidia-imex is on the daemons' PATH, '' when nowhere) and IMEX_ACTIVE (the
# service's state as systemctl says it: active, inactive, failed, activating...; "running" or "not running" from
# the processes where there is no systemctl), once per run.
imex_state() {
  local dir IFS=: f comm
  [[ -z ${IMEX_STATE_READ-} ]] || return 0
  IMEX_STATE_READ=true IMEX_INSTALLED='' IMEX_ACTIVE=''
  for dir in $SERVICE_PATH; do
    if [[ -f $ROOT$dir/nvidia-imex && -x $ROOT$dir/nvidia-imex ]]; then
      IMEX_INSTALLED=$dir/nvidia-imex
      break
    fi
  done
  if command -v systemctl >/dev/null 2>&1; then
    run_capture "$CMD_TIMEOUT" systemctl is-active "$IMEX_SERVICE"
    trim "$CAP_OUT"
    IMEX_ACTIVE=${REPLY:-unknown}
    return 0
  fi
  IMEX_ACTIVE="not running"
  for f in "$ROOT"/proc/[0-9]*/comm; do
    read -r comm <"$f" 2>/dev/null || continue
    [[ $comm == nvidia-imex ]] && IMEX_ACTIVE=running && return 0
  done
}

check_imex_daemon() {
  case $IMEX_MODE in
    '') add_check imex-daemon true "not requested" ;;
    driver) imex_daemon_off ;;
    host) imex_daemon_on ;;
  esac
}

# imex_daemon_off: under NVIDIA's DRA driver's ComputeDomains the machine's own service must not run.
imex_daemon_off() {
  imex_state
  if [[ $IMEX_ACTIVE == active || $IMEX_ACTIVE == activating || $IMEX_ACTIVE == running ]]; then
    add_check imex-daemon false "the machine's own $IMEX_SERVICE service is $IMEX_ACTIVE, but NVIDIA's DRA driver runs the IMEX daemons of its ComputeDomains itself and wants it off ($IMEX_DRA_SOURCE): systemctl disable --now $IMEX_SERVICE.service && systemctl mask $IMEX_SERVICE.service"
  elif [[ -n $IMEX_INSTALLED ]]; then
    add_check imex-daemon true "$IMEX_INSTALLED is installed and its service is $IMEX_ACTIVE: NVIDIA's DRA driver runs the IMEX daemons of its ComputeDomains"
  else
    add_check imex-daemon true "no $IMEX_SERVICE service runs here: NVIDIA's DRA driver runs the IMEX daemons of its ComputeDomains"
  fi
}

# imex_daemon_on: the machine's own daemon installed and running, and the channels the device plugin injects there.
imex_daemon_on() {
  local id missing='' present=''
  local -a ids=()
  imex_state
  if [[ -z $IMEX_INSTALLED ]]; then
    add_check imex-daemon false "nvidia-imex is not installed (no directory of the daemons' PATH, $SERVICE_PATH, holds it), so no IMEX daemon serves this machine's IMEX channels: install the nvidia-imex package of the driver's version ($DRIVER_VERSION), then systemctl enable --now $IMEX_SERVICE ($IMEX_SOURCE, Getting Started with IMEX)"
    return
  fi
  if [[ $IMEX_ACTIVE != active && $IMEX_ACTIVE != running ]]; then
    add_check imex-daemon false "the $IMEX_SERVICE service is $IMEX_ACTIVE, so a job across the NVLink domain cannot share memory with this machine: systemctl enable --now $IMEX_SERVICE, and see journalctl -u $IMEX_SERVICE (it stops when the loaded driver, $DRIVER_VERSION, is not the one it was made for: install the nvidia-imex package of that version; $IMEX_SOURCE, Getting Started with IMEX)"
    return
  fi
  IFS=, read -r -a ids <<<"$IMEX_CHANNELS"
  for id in "${ids[@]}"; do
    if [[ -e $ROOT$IMEX_CHANNEL_DIR/channel$id ]]; then
      present+="${present:+, }$IMEX_CHANNEL_DIR/channel$id"
    else
      missing+="${missing:+, }$IMEX_CHANNEL_DIR/channel$id"
    fi
  done
  local how="the $IMEX_SERVICE service is $IMEX_ACTIVE ($IMEX_INSTALLED)"
  if [[ -z $missing ]]; then
    add_check imex-daemon true "$how${present:+; the channels the device plugin injects are there: $present}"
    return
  fi
  local fix="create it with the nvidia module's NVreg_CreateImexChannel0=1 (modprobe options, from the next load) or mknod $IMEX_CHANNEL_DIR/channel<N> c <the major of nvidia-caps-imex-channels in /proc/devices> <N> ($IMEX_SOURCE, IMEX Channels)"
  if $IMEX_REQUIRED; then
    add_check imex-daemon false "$how, but $missing is missing, and devicePlugin.imex.required makes the device plugin refuse to start without it: $fix"
  else
    add_check imex-daemon true "warning: $how, but $missing is missing: the device plugin leaves it out of every container (devicePlugin.imex.required is false): $fix"
  fi
}

# imex_nodes_file: sets REPLY to the nodes config the daemon reads (IMEX_NODE_CONFIG_FILE of its config, the last
# value given, else its default) and IMEX_NODES_WHY to where that came from; fails when the config may not be read.
imex_nodes_file() {
  local line value=''
  IMEX_NODES_WHY="the default, no IMEX_NODE_CONFIG_FILE in $IMEX_CONFIG"
  if slurp "$ROOT$IMEX_CONFIG"; then
    while IFS='' read -r line; do
      [[ $line =~ ^[[:space:]]*IMEX_NODE_CONFIG_FILE[[:space:]]*=[[:space:]]*([^#[:space:]]*) ]] && value=${BASH_REMATCH[1]}
    done <<<"$REPLY"
    [[ -n $value ]] && IMEX_NODES_WHY="IMEX_NODE_CONFIG_FILE in $IMEX_CONFIG"
  elif ((${#CANNOT_READ[@]})); then
    return 1
  else
    IMEX_NODES_WHY="the default, no $IMEX_CONFIG"
  fi
  REPLY=${value:-$IMEX_DEFAULT_NODES}
}

check_imex_peers() {
  local file line peer listed=' ' missing='' extra=0
  local -a peers=()
  case $IMEX_MODE in
    '') add_check imex-peers true "not requested" && return ;;
    driver) add_check imex-peers true "not judged: NVIDIA's DRA driver writes the nodes config of the IMEX daemons it runs" && return ;;
  esac
  CANNOT_READ=()
  if ! imex_nodes_file; then
    cannot_read_text
    add_check imex-peers false "$REPLY, so which machines the IMEX daemon serves is unknown"
    return
  fi
  file=$REPLY
  if ! slurp "$ROOT$file"; then
    if ((${#CANNOT_READ[@]})); then
      cannot_read_text
      add_check imex-peers false "$REPLY, so which machines the IMEX daemon serves is unknown"
    else
      add_check imex-peers false "no $file ($IMEX_NODES_WHY): the IMEX daemon knows no machine of the NVLink domain. Write the domain's addresses there, one per line ($IMEX_PEERS), then systemctl restart $IMEX_SERVICE ($IMEX_SOURCE, IMEX Service Config Options)"
    fi
    return
  fi
  while IFS='' read -r line; do
    line=${line%%#*}
    trim "$line"
    [[ -n $REPLY ]] && listed+="${REPLY,,} "
  done <<<"$REPLY"
  IFS=, read -r -a peers <<<"$IMEX_PEERS"
  for peer in "${peers[@]}"; do
    [[ $listed == *" ${peer,,} "* ]] || missing+="${missing:+, }$peer"
  done
  for line in $listed; do
    [[ ",${IMEX_PEERS,,}," == *",$line,"* ]] || extra=$((extra + 1))
  done
  if [[ -n $missing ]]; then
    add_check imex-peers false "the IMEX daemon's nodes config $file ($IMEX_NODES_WHY) lacks $missing of nvlinkDomain.imexPeers: the daemons of one domain must each list its machines, or they share no memory with the ones left out. Add them, then systemctl restart $IMEX_SERVICE, which reads the file only at start ($IMEX_SOURCE, IMEX Service Config Options and Deployment Models)"
    return
  fi
  local more=''
  ((extra)) && more=" and $extra other address(es)"
  add_check imex-peers true "$file ($IMEX_NODES_WHY) lists the ${#peers[@]} address(es) of nvlinkDomain.imexPeers$more"
}
