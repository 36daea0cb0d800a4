"""examples/ci: the scheduled drift check runs the README's two drift commands and passes
actionlint, the linter for GitHub Actions workflows (built by tools/actionlint.sh)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples/ci/drift-check.yml"


def actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "tools/actionlint.sh"), str(path)], capture_output=True, text=True, timeout=300)


def readme_drift_commands() -> list[str]:
    """The commands under "Detect drift", with the stack name left to the workflow."""
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^ {4}(pulumi (?:preview|refresh) --stack prod [^#\n]*?)\s*(?:#.*)?$", readme, re.M)
    return [c.replace("--stack prod", '--stack "$STACK"') for c in commands if "--expect-no-changes" in c]


def test_the_workflow_passes_actionlint():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, f"{WORKFLOW}: {result.stdout}{result.stderr}"


def test_actionlint_refuses_a_broken_workflow(tmp_path: Path):
    broken = tmp_path / "drift-check.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:"))
    result = actionlint(broken)
    assert result.returncode != 0 and "runs-on" in result.stdout, result.stdout


def test_the_workflow_runs_both_drift_commands_of_the_readme():
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["drift"]["steps"]
    runs = [step.get("run", "") for step in steps]
    commands = readme_drift_commands()
    assert len(commands) == 2, f"README drift commands: {commands}"
    for command in commands:
        assert any(run.startswith(command) for run in runs), f"{WORKFLOW}: no step runs {command!r}: {runs}"


def test_the_second_check_runs_even_when_the_first_found_drift():
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["drift"]["steps"]
    refresh = next(step for step in steps if step.get("run", "").startswith("pulumi refresh"))
    assert refresh.get("if") == "${{ !cancelled() }}", f"{WORKFLOW}: {refresh}"
