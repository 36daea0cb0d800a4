"""A throwaway Pulumi project that the real engine runs, for the tests of tools/engine's parts.

Each test gets its own project folder, file backend and stack, with the engine that
tools/local/env.sh sets up (the CLI, the Python host and the plugins this machine has).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.tiers import needs_the_engine
from tools.local.environment import local_environment

ROOT = Path(__file__).resolve().parents[2]
STACK = "test"


@dataclass
class Project:
    dir: Path
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), cwd=self.dir, env=self.env, capture_output=True, text=True, input=stdin, timeout=timeout
        )

    def pulumi(self, *args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess[str]:
        result = self.run("pulumi", *args, "--stack", STACK, "--non-interactive", timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(explain(f"pulumi {' '.join(args)} exited {result.returncode}", result))
        return result

    def up(self, *args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess[str]:
        return self.pulumi("up", "--yes", "--skip-preview", *args, check=check, timeout=timeout)

    def set_secret(self, key: str, value: str) -> None:
        result = self.run("pulumi", "config", "set", "--secret", "--stack", STACK, key, stdin=value)
        assert result.returncode == 0, explain(f"pulumi config set --secret {key}", result)

    def resources(self) -> list[dict[str, Any]]:
        """The stack's resources as the state holds them (`pulumi stack export`)."""
        return json.loads(self.pulumi("stack", "export").stdout)["deployment"].get("resources") or []

    def resource(self, name: str) -> dict[str, Any] | None:
        return next((r for r in self.resources() if r["urn"].endswith(f"::{name}")), None)

    def outputs(self) -> dict[str, Any]:
        return json.loads(self.pulumi("stack", "output", "--json").stdout)

    def steps(self) -> dict[str, str]:
        """What a preview plans, by resource name (`pulumi preview --json`)."""
        preview = json.loads(self.pulumi("preview", "--json").stdout)
        return {s["urn"].rsplit("::", 1)[1]: s["op"] for s in preview.get("steps", [])}


def explain(what: str, result: subprocess.CompletedProcess[str]) -> str:
    return f"{what}\n--- stdout ---\n{result.stdout[-6000:]}\n--- stderr ---\n{result.stderr[-4000:]}"


def new_project(workdir: Path, program: str, name: str = "engine-parts-test") -> Project:
    """A Python project in workdir running `program`, with the repository's virtualenv, its own
    file backend and the stack `test` initialised."""
    project = engine_project(workdir, "pulumi-language-python")
    (project.dir / "Pulumi.yaml").write_text(
        f"name: {name}\nruntime:\n  name: python\n  options:\n    toolchain: pip\n    virtualenv: {ROOT / '.venv'}\n"
    )
    (project.dir / "__main__.py").write_text(program)
    project.pulumi("stack", "init")
    return project


def new_yaml_project(workdir: Path, pulumi_yaml: str) -> Project:
    """A Pulumi YAML project in workdir whose Pulumi.yaml (name, `runtime: yaml`, the program) is
    `pulumi_yaml`, with its own file backend and the stack `test` initialised."""
    project = engine_project(workdir, "pulumi-language-yaml")
    (project.dir / "Pulumi.yaml").write_text(pulumi_yaml)
    project.pulumi("stack", "init")
    return project


def engine_project(workdir: Path, language_host: str) -> Project:
    """An empty project folder, workdir/project, and the engine's environment with a file backend
    in workdir/backend; fails when the CLI or the language host is not built."""
    needs_the_engine("an engine project")
    env = local_environment(workdir / "backend")
    missing = [tool for tool in ("pulumi", language_host) if shutil.which(tool, path=env["PATH"]) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not built: run tools/engine/build.sh (make test does)")
    (workdir / "backend").mkdir(parents=True, exist_ok=True)
    project_dir = workdir / "project"
    project_dir.mkdir(parents=True, exist_ok=True)
    return Project(project_dir, env)
