"""The example programs in other languages (examples/yaml, typescript, go) as a user copies them:
each names the virtualenv the fleet's own dynamic resources run in, and uses the SDK by the
names the schema gives it, the Go one with no `replace`. tests/package/test_sdks.py compiles them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from gpu_nodes.package.metadata import GO_IMPORT_BASE_PATH, GO_MODULE_PATH, NPM_PACKAGE
from tests.factories import ROOT

PACKAGE_FOLDER = ROOT / "package"
EXAMPLES = [ROOT / "examples" / name for name in ("yaml", "typescript", "go")]


def virtualenv(project_file: Path) -> Path:
    """The virtualenv a Pulumi.yaml or PulumiPlugin.yaml names, as the engine resolves it: from the
    file's folder (the dynamic provider's `$PWD`, sdk/python/dist/pulumi-resource-pulumi-python)."""
    named = yaml.safe_load(project_file.read_text())["runtime"]["options"]["virtualenv"]
    return (project_file.parent / named).resolve()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_each_example_names_the_virtualenv_the_package_runs_in(example: Path):
    """The engine starts the dynamic resources' provider with the program's runtime options
    (PULUMI_RUNTIME_VIRTUALENV), whatever its language; without one: `No module named 'pulumi'`."""
    assert virtualenv(example / "Pulumi.yaml") == virtualenv(PACKAGE_FOLDER / "PulumiPlugin.yaml"), example.name


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_each_example_names_the_package_folder(example: Path):
    packages = yaml.safe_load((example / "Pulumi.yaml").read_text())["packages"]
    assert (example / packages["gpu-nodes"]).resolve() == PACKAGE_FOLDER, example.name


def test_the_typescript_example_uses_the_sdk_by_its_npm_name():
    example = ROOT / "examples/typescript"
    dependencies = json.loads((example / "package.json").read_text())["dependencies"]
    assert dependencies.get(NPM_PACKAGE) == "file:sdks/gpu-nodes", dependencies
    assert not any(name.startswith("@pulumi/gpu-nodes") for name in dependencies), dependencies
    assert f'from "{NPM_PACKAGE}"' in (example / "index.ts").read_text()
    locked = json.loads((example / "package-lock.json").read_text())["packages"]
    assert locked[""]["dependencies"].get(NPM_PACKAGE) == "file:sdks/gpu-nodes", "package-lock.json: run npm install"


def test_the_go_example_imports_the_sdk_by_its_path_with_no_replace():
    example = ROOT / "examples/go"
    assert f'"{GO_IMPORT_BASE_PATH}"' in (example / "main.go").read_text()
    go_mod = (example / "go.mod").read_text()
    assert not re.search(r"^\s*replace\b", go_mod, re.M), "examples/go/go.mod has a replace"
    assert GO_MODULE_PATH not in go_mod, "examples/go/go.mod requires the SDK, which no proxy serves yet"
    uses = re.search(r"use\s*\(([^)]*)\)", (example / "go.work").read_text())
    assert uses and set(uses[1].split()) == {".", "./sdks/gpu-nodes"}, "examples/go/go.work: the program and the SDK"
