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
