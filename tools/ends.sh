#!/usr/bin/env bash
# The unit tier against each end of the ranges pyproject.toml declares, as a team's resolver picks
# them: `floor` (every direct dependency at its lowest allowed release: uv's
# --resolution lowest-direct) and `newest` (every dependency at its newest release today). Each end
# gets a virtualenv of its own under .state/ends/<end>, kept while its resolved set is unchanged;
# the repository's own pins (requirements.txt, the engine's plugins) are not used.
#
#   tools/ends.sh floor|newest [pytest arguments]
#
# Left out of these runs, each because it pins something other than the dependencies' behaviour:
# the golden state and the release record (the exact provider versions in every registration,
# pinned by requirements.txt), the policy pack (its own program and requirements), the built package
# and the release tags (the build and git), and what runs no code of the dependencies: the preflight
# script under bash (tests/scripts), the docs' layout, and the local cluster's GPU registrar
# (tools/cluster). The main run tests each of them once.
set -euo pipefail
cd "$(dirname "$0")/.."

end=${1:-}
case "$end" in
  floor) resolution=(--resolution lowest-direct) ;;
  newest) resolution=(--resolution highest --upgrade) ;;
  *) echo "usage: tools/ends.sh floor|newest [pytest arguments]" >&2; exit 2 ;;
esac
shift

tools/setup.sh
uv=.venv/bin/uv
dir=.state/ends/$end
mkdir -p "$dir"
python=$(.venv/bin/python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')

# The package's own ranges, resolved as a team's resolver would, plus the test tools the unit tier
# imports (their versions as requirements-dev.txt pins them; jsonschema once the proof's tests import it; mypy, which
# a test runs on a team's program against the typed arguments).
tools=$(grep -E '^(pytest|kubernetes-validate|jsonschema|mypy)==' requirements-dev.txt)
"$uv" pip compile --quiet --python-version "$python" "${resolution[@]}" --no-header --no-annotate \
  pyproject.toml <(printf '%s\n' "$tools") -o "$dir/resolved.txt.new"
mv "$dir/resolved.txt.new" "$dir/resolved.txt"

wanted=$(sha256sum "$dir/resolved.txt" | cut -d' ' -f1)
if [[ ! -x "$dir/venv/bin/python" || "$(cat "$dir/venv/.resolved.sha256" 2>/dev/null)" != "$wanted" ]]; then
  rm -rf "$dir/venv"
  "$uv" venv --quiet --python .venv/bin/python "$dir/venv"
  "$uv" pip install --quiet --python "$dir/venv/bin/python" -r "$dir/resolved.txt"
  # gpu-nodes itself, without its dependencies (resolved above): its metadata names the version the
  # component package's schema reads.
  "$uv" pip install --quiet --python "$dir/venv/bin/python" --no-deps -e .
  echo "$wanted" >"$dir/venv/.resolved.sha256"
fi

shown=$(grep -iE '^(pulumi|pulumi-kubernetes|pulumi-command|kubernetes|pyyaml)==' "$dir/resolved.txt" | tr '\n' ' ')
echo "ends: $end: $shown" >&2

GPU_NODES_TIER=unit exec "$dir/venv/bin/python" -m pytest -p no:cacheprovider -m "not engine and not cluster" \
  --ignore tests/resources/test_golden_state.py --ignore tests/test_release.py --ignore tests/test_policy.py \
  --ignore tests/test_built_package.py --ignore tests/test_release_tags.py \
  --ignore tests/scripts --ignore tests/test_docs_layout.py --ignore tools/cluster "$@"
