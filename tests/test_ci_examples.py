"""examples/ci: the scheduled drift check runs the fleet command's drift as docs/fleet.md shows it (which
runs the README's two drift commands on every stack: tests/cli/test_runner.py), publishes each node's
checklist as CTRF with ctrf-io's reporter, pins each action to a release's major tag, and passes actionlint,
the linter for GitHub Actions workflows (built by tools/actionlint.sh)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples/ci/drift-check.yml"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "tools/actionlint.sh"), str(path)], capture_output=True, text=True, timeout=300)


def steps() -> list[dict]:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["drift"]["steps"]


def test_the_workflow_passes_actionlint():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, f"{WORKFLOW}: {result.stdout}{result.stderr}"


def test_actionlint_refuses_a_broken_workflow(tmp_path: Path):
    broken = tmp_path / "drift-check.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:"))
    result = actionlint(broken)
    assert result.returncode != 0 and "runs-on" in result.stdout, result.stdout


def test_the_workflow_runs_the_fleet_drift_command_of_the_docs():
    page = (ROOT / "docs/fleet.md").read_text()
    commands = re.findall(r"^ {4}gpu-nodes fleet drift\b.*$", page, re.M)
    assert commands, "docs/fleet.md shows no `gpu-nodes fleet drift` command"
    runs = [step.get("run", "") for step in steps()]
    assert any(re.search(r"gpu-nodes fleet drift -f \"\$FLEET\" .*--json", run) for run in runs), f"{WORKFLOW}: {runs}"


def test_the_verdict_and_logs_are_kept_even_when_drift_was_found():
    upload = next(step for step in steps() if str(step.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload.get("if") == "${{ !cancelled() }}", f"{WORKFLOW}: {upload}"
    kept = upload["with"]["path"].split()
    assert {"fleet-drift.json", "fleet-report.ctrf.json", "fleet-logs/"} <= set(kept), upload


# `owner/name@vN`: an action at a release's major tag, as its README tells its users to pin it (ctrf-io's
# github-test-reporter README: `uses: ctrf-io/github-test-reporter@v1`).
_PINNED = re.compile(r"^[\w.-]+/[\w.-]+@v\d+$")


@pytest.mark.parametrize("uses", [step["uses"] for step in steps() if "uses" in step])
def test_each_action_is_pinned_to_a_releases_major_tag(uses: str):
    assert _PINNED.match(uses), f"{WORKFLOW}: {uses}"


def test_the_ctrf_report_the_docs_show_is_written_and_published_even_after_drift():
    page = (ROOT / "docs/fleet.md").read_text()
    assert re.search(r"^ {4}gpu-nodes fleet report .*--format ctrf\b", page, re.M), "docs/fleet.md shows no CTRF report"
    report = next(step for step in steps() if "--format ctrf" in step.get("run", ""))
    written = re.search(r'gpu-nodes fleet report -f "\$FLEET" --format ctrf --out (\S+)$', report["run"])
    publish = next(step for step in steps() if str(step.get("uses", "")).startswith("ctrf-io/github-test-reporter@"))
    assert written and publish["with"]["report-path"] == written[1], f"{WORKFLOW}: {report}, {publish}"
    assert report.get("if") == publish.get("if") == "${{ !cancelled() }}", f"{WORKFLOW}: {report}, {publish}"
