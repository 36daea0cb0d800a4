"""The package as a team gets it: the wheel and sdist built from this checkout (`python -m build`: the
sdist first, then the wheel from the sdist, so a file the sdist leaves out is missing from the wheel
too), their metadata checked (`twine check --strict`), and the wheel installed into an empty
virtualenv with no checkout beside it, where `gpu-nodes fleet --help` runs and examples/own-program's
tests pass, a team's tests of its own program, with the preflight script read from the wheel.

The example's requirements install as a team's would, with the wheel in place of its `../..` (the
checkout); the resolver is uv, from its cache where it can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.pulumi_mocks import ROOT

EXAMPLE = ROOT / "examples/own-program"
UV = Path(sys.executable).parent / "uv"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout, check=False)


def outside(env: dict[str, str], venv: Path) -> dict[str, str]:
    """The environment of a shell in `venv`, with nothing of this checkout on Python's path."""
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GPU_NODES_TIER", "PYTEST_ADDOPTS")}
    return {**clean, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{clean.get('PATH', '')}"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = run(sys.executable, "-m", "build", "--outdir", out, ROOT, cwd=out)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def wheel(dist: Path) -> Path:
    return next(dist.glob(f"gpu_nodes-{VERSION}-py3-none-any.whl"))


def test_the_build_gives_a_wheel_and_an_sdist_of_this_version_whose_metadata_checks(dist):
    names = sorted(p.name for p in dist.iterdir())
    assert names == [f"gpu_nodes-{VERSION}-py3-none-any.whl", f"gpu_nodes-{VERSION}.tar.gz"], names
    checked = run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()), cwd=dist)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_wheel_holds_the_package_its_script_and_its_typing_marker_and_nothing_of_the_repository(dist):
    with zipfile.ZipFile(wheel(dist)) as archive:
        names = archive.namelist()
    scripts = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("gpu_nodes/scripts/preflight/"))
    expected = sorted(p.name for p in (ROOT / "gpu_nodes/scripts/preflight").glob("*.sh"))
    assert scripts == expected, f"the wheel's preflight script parts: {scripts}"
    assert "gpu_nodes/py.typed" in names, "no py.typed: a team's mypy would not read our types"
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"gpu_nodes", f"gpu_nodes-{VERSION}.dist-info"}, f"the wheel installs more than the package: {sorted(tops)}"


@pytest.fixture(scope="module")
def team(dist, tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """An empty virtualenv with the example's requirements and the wheel, and a copy of the example
    beside it: no checkout on disk or on the path."""
    where = tmp_path_factory.mktemp("team")
    venv, program = where / "venv", where / "own-program"
    shutil.copytree(EXAMPLE, program, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    requirements = (program / "requirements.txt").read_text().replace("\n../..\n", f"\n{wheel(dist)}\n")
    assert str(wheel(dist)) in requirements, "examples/own-program/requirements.txt no longer installs gpu-nodes as ../.."
    (program / "requirements.txt").write_text(requirements)
    made = run(UV, "venv", "--quiet", "--python", sys.executable, venv, cwd=where)
    assert made.returncode == 0, made.stderr
    installed = run(UV, "pip", "install", "--quiet", "--python", venv / "bin/python", "-r", "requirements-dev.txt", cwd=program)
    assert installed.returncode == 0, installed.stderr
    return venv, program, outside(dict(os.environ), venv)


def test_the_package_and_its_script_come_from_the_wheel(team):
    venv, program, env = team
    code = "import gpu_nodes.preflight.command as c; print(c.__file__); print(len(c.script_parts()))"
    shown = run("python", "-c", code, cwd=program, env=env)
    assert shown.returncode == 0, shown.stderr
    module, parts = shown.stdout.split()
    assert Path(module).is_relative_to(venv), f"gpu_nodes imported from {module}, not the virtualenv"
    assert int(parts) == len(list((ROOT / "gpu_nodes/scripts/preflight").glob("*.sh"))), f"{parts} preflight parts in the wheel"


def test_the_fleet_command_runs_from_the_wheel(team):
    venv, program, env = team
    helped = run("gpu-nodes", "fleet", "--help", cwd=program, env=env)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: gpu-nodes fleet"), helped.stdout[:400]


def test_the_examples_own_tests_pass_against_the_wheel_with_no_deprecation_warning(team):
    """As a team runs them (pytest in the program's folder), every DeprecationWarning an error: none
    comes from our use of pulumi-command."""
    venv, program, env = team
    pytest_args = ("-q", "-p", "no:cacheprovider", "-W", "error::DeprecationWarning")
    tested = run("python", "-m", "pytest", *pytest_args, cwd=program, env=env)
    assert tested.returncode == 0, tested.stdout[-4000:] + tested.stderr[-2000:]
    assert " passed" in tested.stdout and "warning" not in tested.stdout.lower(), tested.stdout[-2000:]
