# ------------------------------------------------------------- the CDI hook program
#
# The device plugin's CDI specs name hooks (update-ldcache, create-symlinks, ...) that the
# runtime runs on the host, as the program at the plugin's NVIDIA_CDI_HOOK_PATH, when a
# tenant's container starts (k8s-device-plugin api/config/v1/consts.go: DefaultNvidiaCTKPath
# /usr/bin/nvidia-ctk; nvidia-container-toolkit internal/discover/hooks.go). The component
# passes the group's devicePlugin.cdiHookPath as --cdi-hook-path; without it, upstream's default.
# A machine without that program starts no container that was given a GPU.

readonly DEFAULT_CDI_HOOK_PATH=/usr/bin/nvidia-ctk

# cdi_hook_program: true when CDI_HOOK_PATH is an executable file on the machine; REPLY says
# what was found, or why the hooks would fail and where nvidia-ctk is instead.
cdi_hook_program() {
  # The toolkit the runtime runs (find_toolkit): the GPU Operator's has nvidia-ctk under /usr/local/nvidia/toolkit.
  find_toolkit
  local path=$ROOT$CDI_HOOK_PATH where="no nvidia-ctk is found either ($TK_HOW)"
  if [[ -f $path && -x $path ]]; then
    REPLY="CDI hooks run $CDI_HOOK_PATH"
    return 0
  fi
  if blocked_by "$path"; then
    shown "$REPLY"
    REPLY="cannot tell whether $CDI_HOOK_PATH can run: $REPLY may not be read or searched by this user; preflight needs root (README: Privileges)"
    return 1
  fi
  if [[ -n $TK_CTK ]]; then
    where="nvidia-ctk is at $TK_CTK: set devicePlugin.cdiHookPath to it, or link it as $CDI_HOOK_PATH"
  elif find_cmd nvidia-ctk; then
    where="nvidia-ctk is at $REPLY: set devicePlugin.cdiHookPath to it, or link it as $CDI_HOOK_PATH"
  fi
  if [[ -e $path ]]; then
    REPLY="the device plugin's CDI specs run their hooks as $CDI_HOOK_PATH, which is not an executable file; $where"
  else
    REPLY="the device plugin's CDI specs run their hooks as $CDI_HOOK_PATH, which is not on this machine, so no container given a GPU would start; $where"
  fi
  return 1
}
