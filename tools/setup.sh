#!/usr/bin/env bash
# Prepares this machine for the tests and the local environment: the Python virtualenv
# with the pinned requirements, OpenSSH's server for the SSH tests and fake machines, and
# Node.js with npm for the TypeScript example (tests/package/test_sdks.py).
# Idempotent and quiet when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
stamp=.venv/.requirements.sha256
wanted=$(cat requirements.txt requirements-dev.txt policy/requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]]; then
  echo "setup: installing Python requirements into .venv" >&2
  "$python" -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
  # gpu-nodes itself, editable: the component package's plugin (package/) and the dynamic providers
  # a Pulumi YAML program's fleet runs import it from this virtualenv, outside this folder.
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
  echo "$wanted" >"$stamp"
fi

if [[ ! -x /usr/sbin/sshd || ! -x /usr/bin/sudo || ! -x /usr/bin/shellcheck ]]; then
  # The SSH tests run a real sshd on loopback; preflight.become is tested with a real sudo;
  # tools/shellcheck.sh lints every shell script.
  echo "setup: installing openssh-server, sudo and shellcheck" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends openssh-server openssh-client sudo shellcheck >/dev/null
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  # tests/package/test_sdks.py installs examples/typescript with npm and compiles it with tsc.
  # A machine that already has Node.js (and its npm) keeps it; Debian's are the fallback.
  echo "setup: installing nodejs and npm" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
