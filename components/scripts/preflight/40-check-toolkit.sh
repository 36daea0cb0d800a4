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
