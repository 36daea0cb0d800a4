# ------------------------------------------------------- the CDI spec version
#
# A runtime resolves CDI devices with the CDI library it vendors
# (tags.cncf.io/container-device-interface), which reads specs up to the spec
# version its specs-go knows and refuses newer ones ("unresolvable CDI devices";
# nvidia-container-toolkit issues 1860 and 1940: `json: unknown field
# "additionalGids"`, a 0.7.0 field). Toolkit 1.19.1, the advisories' floor, writes
# specs at cdiVersion 0.7.0 by default (its release notes' known issue,
# NVIDIA/cloud-native-docs PR 419); the device plugin writes its own specs with
# the toolkit it vendors (1.19.1 from v0.19.2, its changelog: "Bump toolkit go
# module to 1.19.1"). What each runtime release vendors, read from its go.mod:
# - containerd 1.7.2-1.7.12: container-orchestrated-devices v0.5.4 (up to 0.5.0);
#   1.7.13-1.7.15: tags.cncf.io v0.6.2, specs-go v0.6.0 (up to 0.6.0);
#   1.7.16 and later 1.7: v0.7.2, specs-go v0.7.0 (1.7.27: v0.8.1);
#   2.0.0: v0.8.0, specs-go v0.8.0.
# - CRI-O 1.29.4: v0.6.2, specs-go v0.6.0; 1.30.0: v0.7.2, specs-go v0.7.0
#   (cri-o PR 7971, "update CDI deps").

# cdi_spec_version: sets CDI_SPEC to the highest cdiVersion the machine's CDI specs carry or
# its toolkit writes, and CDI_SPEC_WHY to where that was read; empty when neither says.
cdi_spec_version() {
  local f line version version_re='cdiVersion"?[[:space:]]*:[[:space:]]*["'"'"']?([0-9]+\.[0-9]+\.[0-9]+)'
  CDI_SPEC='' CDI_SPEC_WHY=''
  if toolkit_version && version_ge "$TK_VERSION" 1.19.1; then
    CDI_SPEC=0.7.0 CDI_SPEC_WHY="toolkit $TK_VERSION writes cdiVersion 0.7.0"
  fi
  for f in "$ROOT"/etc/cdi/* "$ROOT"/var/run/cdi/*; do
    [[ -f $f && -r $f ]] || continue
    version=''
    # The spec's top-level cdiVersion, YAML or JSON, within its first lines (no grep on the machines: bash reads it).
    while IFS='' read -r line; do
      [[ $line =~ $version_re ]] && version=${BASH_REMATCH[1]} && break
    done < <(head_lines "$f" 20)
    [[ -n $version ]] || continue
    if [[ -z $CDI_SPEC ]] || ! version_ge "$CDI_SPEC" "$version"; then
      CDI_SPEC=$version CDI_SPEC_WHY="${f#"$ROOT"} is cdiVersion $version"
    fi
  done
}

# head_lines FILE N: prints the first N lines of FILE (bash only).
head_lines() {
  local i line
  for ((i = 0; i < $2; i++)); do
    IFS='' read -r line || { [[ -n $line ]] && printf '%s\n' "$line"; return 0; }
    printf '%s\n' "$line"
  done <"$1"
}

# runtime_cdi_reads NAME VERSION: sets REPLY to the highest CDI spec version runtime NAME
# at VERSION reads, and FIRST_READS_07 to the first release of NAME that reads 0.7.0.
runtime_cdi_reads() {
  case $1 in
    containerd | rke2)
      FIRST_READS_07=1.7.16
      if version_ge "$2" 2.0.0; then
        REPLY=0.8.0
      elif version_ge "$2" 1.7.16; then
        REPLY=0.7.0
      elif version_ge "$2" 1.7.13; then
        REPLY=0.6.0
      else
        REPLY=0.5.0
      fi
      ;;
    cri-o)
      FIRST_READS_07=1.30.0
      if version_ge "$2" 1.30.0; then REPLY=0.7.0; else REPLY=0.6.0; fi
      ;;
    *) return 1 ;;
  esac
}

# crio_version: sets REPLY to `crio --version`'s version; status 1 when it gives none.
crio_version() {
  command -v crio >/dev/null 2>&1 || return 1
  run_capture "$CMD_TIMEOUT" crio --version
  ((CAP_RC == 0)) && [[ $CAP_OUT =~ [Vv]ersion:?[[:space:]]+v?([0-9]+\.[0-9]+\.[0-9]+) ]] || return 1
  REPLY=${BASH_REMATCH[1]}
}

# cdi_spec_readable NAME VERSION: appends to the caller's cdi_problems when runtime NAME at
# VERSION cannot read the CDI spec version the machine's specs carry, naming the release needed.
cdi_spec_readable() {
  local reads
  [[ -n $2 ]] || return 0
  cdi_spec_version
  [[ -n $CDI_SPEC ]] || return 0
  runtime_cdi_reads "$1" "$2" || return 0
  reads=$REPLY
  version_ge "$reads" "$CDI_SPEC" && return 0
  cdi_problems+=("$1 $2 reads CDI specs up to cdiVersion $reads, and $CDI_SPEC_WHY: pods given GPUs as CDI devices fail with \"unresolvable CDI devices\"; upgrade $1 to $FIRST_READS_07 or later")
}
