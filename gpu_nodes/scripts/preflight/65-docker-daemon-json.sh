# ------------------------------------------------------------ a small JSON reader
#
# /etc/docker/daemon.json decides docker's verdict from its files through two top-level
# keys: runtimes.nvidia (present? its path?) and default-runtime; the running daemons answer in JSON
# too (`crictl info`, `docker info --format '{{json .}}'`, see 61-running-runtime.sh).
# Nothing else is kept, but the whole text is walked: dockerd refuses to start with a file
# that is not one JSON object, and a key-only grep would be fooled by the same names deeper
# down or in strings. Tested on its own in tests/scripts/test_65_docker_daemon_json.py.

readonly JP_STRING_RE='^"(([^"\\]|\\.)*)"'
readonly JP_SCALAR_RE='^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)'
declare -A JP_VALUE=() JP_KEYS=()

# json_scan TEXT: validates TEXT as one JSON object and notes what is asked for: for each
# path in JP_WANT (space-separated paths like "/config/enableCDI"), the value there, a
# string's text or a scalar as written, in JP_VALUE[path]; for each path in JP_WANT_KEYS, the
# keys of the object there, space-separated, in JP_KEYS[path]. The last of two equal keys
# wins, as in Go's encoding/json. Fails with JP_ERR saying what is wrong and where.
json_scan() {
  JP_S=$1 JP_I=0 JP_N=${#1} JP_ERR='' JP_DEPTH=0
  JP_VALUE=() JP_KEYS=()
  jp_ws
  if [[ ${JP_S:JP_I:1} != '{' ]]; then
    jp_fail "expected an object"
    return 1
  fi
  jp_value "" || return 1
  jp_ws
  ((JP_I >= JP_N)) || { jp_fail "unexpected text after the object" && return 1; }
}

# json_scan_daemon TEXT: json_scan for daemon.json; sets JP_HAS_NVIDIA (runtimes.nvidia
# exists) and JP_DEFAULT (default-runtime), and keeps runtimes.nvidia's path and runtimeType
# in JP_VALUE for the runtime-entry check.
json_scan_daemon() {
  JP_WANT=" /default-runtime /runtimes/nvidia/path /runtimes/nvidia/runtimeType " JP_WANT_KEYS=" /runtimes " JP_HAS_NVIDIA=false JP_DEFAULT=''
  json_scan "$1" || return 1
  JP_DEFAULT=${JP_VALUE[/default-runtime]-}
  [[ " ${JP_KEYS[/runtimes]-} " == *" nvidia "* ]] && JP_HAS_NVIDIA=true
  return 0
}

jp_fail() {
  local before=${JP_S:0:JP_I} lines found=${JP_S:JP_I:1}
  lines=${before//[!$'\n']/}
  [[ -n $JP_ERR ]] && return
  JP_ERR="$1 at line $((${#lines} + 1))"
  if [[ -n $found ]]; then
    json_str "$found"
    JP_ERR+=", found $REPLY"
  else
    JP_ERR+=", at the end of the file"
  fi
}

jp_ws() {
  # Indented JSON (crictl's) is mostly white space: skip it by runs, not one by one.
  while [[ ${JP_S:JP_I:64} =~ ^[$' \t\r\n']+ ]]; do
    ((JP_I += ${#BASH_REMATCH[0]}))
  done
}

# jp_value PATH: one value; PATH is where it sits, like /runtimes/nvidia.
jp_value() {
  local path=$1 rest
  jp_ws
  if ((++JP_DEPTH > 64)); then
    jp_fail "nested too deeply"
    return 1
  fi
  case ${JP_S:JP_I:1} in
    '{') jp_members "$path" '}' || return 1 ;;
    '[') jp_members "$path" ']' || return 1 ;;
    '"')
      jp_string || return 1
      [[ $JP_WANT == *" $path "* ]] && JP_VALUE[$path]=$JP_STR
      ;;
    '') jp_fail "unexpected end of file" && return 1 ;;
    *)
      rest=${JP_S:JP_I:400}
      [[ $rest =~ $JP_SCALAR_RE ]] || { jp_fail "unexpected character" && return 1; }
      ((JP_I += ${#BASH_REMATCH[0]}))
      [[ $JP_WANT == *" $path "* ]] && JP_VALUE[$path]=${BASH_REMATCH[0]}
      ;;
  esac
  ((JP_DEPTH--))
  return 0
}

jp_string() {
  local rest=${JP_S:JP_I}
  if [[ $rest =~ $JP_STRING_RE ]]; then
    JP_STR=${BASH_REMATCH[1]}
    ((JP_I += ${#BASH_REMATCH[0]}))
    return 0
  fi
  jp_fail "unterminated string"
  return 1
}

# jp_members PATH CLOSE: the members of an object (CLOSE '}') or the items of an
# array (CLOSE ']'), each followed by ',' or CLOSE.
jp_members() {
  local path=$1 close=$2
  ((++JP_I))
  jp_ws
  [[ ${JP_S:JP_I:1} == "$close" ]] && { ((++JP_I)) && return 0; }
  while :; do
    if [[ $close == ']' ]]; then
      jp_value "${path}[]" || return 1
    else
      jp_ws
      [[ ${JP_S:JP_I:1} == '"' ]] || { jp_fail "expected a quoted key" && return 1; }
      jp_string || return 1
      if [[ $JP_WANT_KEYS == *" $path "* && " ${JP_KEYS[$path]-} " != *" $JP_STR "* ]]; then
        JP_KEYS[$path]+="${JP_KEYS[$path]:+ }$JP_STR"
      fi
      jp_ws
      [[ ${JP_S:JP_I:1} == : ]] || { jp_fail "expected ':'" && return 1; }
      ((++JP_I))
      jp_value "$path/$JP_STR" || return 1
    fi
    jp_ws
    case ${JP_S:JP_I:1} in
      ,) ((++JP_I)) ;;
      "$close") ((++JP_I)) && return 0 ;;
      *) jp_fail "expected ',' or '$close'" && return 1 ;;
    esac
  done
}
