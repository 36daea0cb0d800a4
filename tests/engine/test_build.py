"""tools/engine's build and environment scripts, without a Go build: where each part is cached,
which binaries are never used, and when a real part is used instead of our stand-in."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "tools" / "engine"
# Fake CLI: records what it is asked, as `pulumi plugin install` is asked by env.sh.
FAKE_PULUMI = '#!/bin/sh\necho "$@" >> "$(dirname "$0")/calls"\n'


def shell(script: str, cache: Path, home: Path, engine: Path = ENGINE) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPU_NODES_CACHE": str(cache), "HOME": str(home)}
    env.pop("PULUMI_HOME", None)
    return subprocess.run(["bash", "-c", script], cwd=engine, env=env, capture_output=True, text=True, timeout=60)


def variable(name: str, cache: Path, home: Path, engine: Path = ENGINE) -> str:
    return shell(f"source ./versions.sh && echo ${name}", cache, home, engine).stdout.strip()


def executable(path: Path, text: str = "#!/bin/sh\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_cli(tmp_path: Path) -> Path:
    """The cache with a CLI of ours in place (so build.sh builds no CLI), as a fake that records its calls."""
    bin_dir = Path(variable("ENGINE_PULUMI_BIN_DIR", tmp_path / "cache", tmp_path / "home"))
    executable(bin_dir / "pulumi", FAKE_PULUMI)
    return bin_dir


@pytest.mark.parametrize("name", ["shared/upstream", "GPU_NODES_UPSTREAM", ".tar.gz"])
def test_no_engine_script_or_module_refers_to_source_snapshots(name: str):
    files = [p for p in ENGINE.rglob("*") if p.is_file() and p.suffix in ("", ".sh", ".go", ".mod")]
    assert files, ENGINE
    naming = [str(p.relative_to(ROOT)) for p in files if name in p.read_text(errors="replace")]
    assert naming == [], f"{naming} name {name!r}"


@pytest.mark.parametrize(
    ("variable_name", "folder"),
    [("ENGINE_PYTHON_HOST_BIN_DIR", "python-host"), ("ENGINE_COMMAND_PROVIDER_BIN_DIR", "command-provider")],
)
def test_a_stand_in_is_cached_under_a_digest_of_its_source(tmp_path: Path, variable_name: str, folder: str):
    engine = tmp_path / "engine"
    shutil.copytree(ENGINE, engine, ignore=shutil.ignore_patterns("kubernetes", "pulumi"))
    cache, home = tmp_path / "cache", tmp_path / "home"
    before = variable(variable_name, cache, home, engine)
    with (engine / folder / "main.go").open("a") as main:
        main.write("\n// an edit\n")
    after = variable(variable_name, cache, home, engine)
    assert Path(before).parent.name.startswith("standin-"), before
    assert before != after, f"{folder}: the same cache folder {before} before and after an edit"


def test_our_sdk_generator_is_cached_under_a_digest_of_its_source(tmp_path: Path):
    engine = tmp_path / "engine"
    shutil.copytree(ENGINE, engine, ignore=shutil.ignore_patterns("kubernetes", "pulumi"))
    cache, home = tmp_path / "cache", tmp_path / "home"
    before = variable("ENGINE_SDKGEN_BIN_DIR", cache, home, engine)
    with (engine / "sdkgen" / "main.go").open("a") as main:
        main.write("\n// an edit\n")
    after = variable("ENGINE_SDKGEN_BIN_DIR", cache, home, engine)
    assert Path(before).parent.name.startswith("gpu-nodes-sdkgen-"), before
    assert before != after, f"sdkgen: the same cache folder {before} before and after an edit"


def test_builds_of_an_earlier_cache_layout_are_removed_never_used(tmp_path: Path, fake_cli: Path):
    cache, home = tmp_path / "cache", tmp_path / "home"
    retired = [
        executable(cache / "pulumi-language-python-1b5949891b3c-0123456789ab" / "bin" / "pulumi-language-python"),
        executable(cache / "pulumi-resource-command-1.2.1-0123456789ab" / "bin" / "pulumi-resource-command"),
        executable(
            cache / "pulumi-home" / "plugins" / "resource-command-v1.2.1" / "pulumi-resource-command", "#!/bin/sh\n# old\n"
        ),
    ]
    result = shell("./build.sh pulumi", cache, home)
    assert result.returncode == 0, result
    assert [p for p in retired if p.exists()] == [], f"kept: {[p for p in retired if p.exists()]}\n{result.stderr}"
    assert (fake_cli / "pulumi").exists(), "the cached CLI was removed"


def test_an_installed_real_command_plugin_is_used_and_no_stand_in_is_built(tmp_path: Path, fake_cli: Path):
    cache, home = tmp_path / "cache", tmp_path / "home"
    real = executable(home / ".pulumi" / "plugins" / "resource-command-v1.2.1" / "pulumi-resource-command", "#!/bin/sh\n# real\n")
    built = shell("./build.sh command", cache, home)
    assert built.returncode == 0, built
    assert f"the installed plugin ({real})" in built.stdout, built.stdout
    assert not Path(variable("ENGINE_COMMAND_PROVIDER_BIN_DIR", cache, home)).exists(), "a stand-in was built anyway"

    parts = shell('source ./env.sh 2>/dev/null && echo "$GPU_NODES_ENGINE_PARTS"', cache, home)
    assert f"pulumi-resource-command 1.2.1: real ({real})" in parts.stdout, parts
    calls = (fake_cli / "calls").read_text()
    assert f"plugin install resource command 1.2.1 --file {real} --reinstall" in calls, calls
    assert sorted(p.name for p in (home / ".pulumi").rglob("*")) == [
        "plugins",
        "pulumi-resource-command",
        "resource-command-v1.2.1",
    ], "the user's plugin home was written to"


def test_every_run_names_the_stand_ins(tmp_path: Path, fake_cli: Path):
    cache, home = tmp_path / "cache", tmp_path / "home"
    host = executable(Path(variable("ENGINE_PYTHON_HOST_BIN_DIR", cache, home)) / "pulumi-language-python")
    (fake_cli / "pulumi-language-python").symlink_to(host)
    executable(Path(variable("ENGINE_COMMAND_PROVIDER_BIN_DIR", cache, home)) / "pulumi-resource-command")
    result = shell("source ./env.sh", cache, home)
    assert "pulumi-language-python: STAND-IN (tools/engine/python-host)" in result.stderr, result.stderr
    assert "pulumi-resource-command 1.2.1: STAND-IN (tools/engine/command-provider)" in result.stderr, result.stderr
    assert "pulumi 3.274.1: real, built from Go modules" in result.stderr, result.stderr


def test_a_missing_host_is_named_missing_not_real(tmp_path: Path, fake_cli: Path):
    result = shell("source ./env.sh", tmp_path / "cache", tmp_path / "home")
    assert "pulumi-language-python: missing" in result.stderr, result.stderr
    assert "pulumi-language-yaml: missing" in result.stderr, result.stderr


def test_the_yaml_host_goes_beside_the_cli_as_a_file_not_a_link(tmp_path: Path, fake_cli: Path):
    """The YAML host looks for the Python host beside its own executable, symlinks resolved: a
    link into its cache folder would send it to PATH. A link left by an earlier build is replaced."""
    cache, home = tmp_path / "cache", tmp_path / "home"
    built = executable(Path(variable("ENGINE_YAML_HOST_BIN_DIR", cache, home)) / "pulumi-language-yaml", "#!/bin/sh\n# yaml\n")
    (fake_cli / "pulumi-language-yaml").symlink_to(built)
    result = shell("./build.sh yaml", cache, home)
    assert result.returncode == 0, result
    beside = fake_cli / "pulumi-language-yaml"
    assert not beside.is_symlink(), f"{beside} is a link"
    assert beside.read_bytes() == built.read_bytes(), "not the built host"
    parts = shell("source ./env.sh", cache, home)
    assert "pulumi-language-yaml 1.25.0: real, built from Go modules" in parts.stderr, parts.stderr


def test_no_yaml_host_is_built_without_a_cli_of_ours(tmp_path: Path):
    """An installed Pulumi brings its own YAML host beside it, as it does its Python host."""
    cache, home = tmp_path / "cache", tmp_path / "home"
    result = shell("./build.sh yaml", cache, home)
    assert result.returncode == 0, result
    assert "pulumi-language-yaml: not built" in result.stdout, result.stdout
    assert not Path(variable("ENGINE_YAML_HOST_BIN_DIR", cache, home)).exists(), "built anyway"
