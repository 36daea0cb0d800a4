"""A source-based Python component package (a folder with PulumiPlugin.yaml `runtime: python`)
used from a Pulumi YAML program: what the CLI asks of the Python host for it (install its
virtualenv, run it as a provider plugin) and of Pulumi YAML's host, and where the dynamic
provider of a resource the component registers runs. Real engine; no cluster or machine needed.

The package here is the smallest of the shape gpu-nodes' is to have: a ComponentResource with
TypedDict args (one string in, one string out), served by the SDK's
`component_provider_host`, which registers a dynamic resource whose provider lives in another
module of the package.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest

from tests.engine.project import Project, engine_project, explain, new_yaml_project

pytestmark = pytest.mark.engine

MAIN = """
from pulumi.provider.experimental import component_provider_host

from greeter import Greeter

if __name__ == "__main__":
    component_provider_host([Greeter], "greeter")
"""

GREETER = """
from typing import Optional, TypedDict

import pulumi

from thing import Thing


class GreeterArgs(TypedDict):
    who: pulumi.Input[str]


class Greeter(pulumi.ComponentResource):
    greeting: pulumi.Output[str]

    def __init__(self, name: str, args: GreeterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("greeter:index:Greeter", name, {}, opts)
        thing = Thing(f"{name}-thing", args["who"], pulumi.ResourceOptions(parent=self))
        self.greeting = thing.greeting
        self.register_outputs({"greeting": self.greeting})
"""

# The dynamic provider's class is in this module, not __main__, so the provider is pickled by
# reference: whatever Python serves it must be able to `import thing`.
THING = """
import pulumi
from pulumi.dynamic import CreateResult, Resource, ResourceProvider


class ThingProvider(ResourceProvider):
    def create(self, props):
        return CreateResult(id_="thing-1", outs={**props, "greeting": f"hello, {props['who']}"})


class Thing(Resource):
    greeting: pulumi.Output[str]

    def __init__(self, name, who, opts=None):
        super().__init__(ThingProvider(), name, {"who": who, "greeting": None}, opts)
"""


@dataclass
class Package:
    dir: Path
    venv: Path


def make_package(root: Path, *, virtualenv_option: bool = True) -> Package:
    """The component package in root/greeter, with its own virtualenv: root/venv, named in
    PulumiPlugin.yaml's runtime options, or (virtualenv_option=False) greeter/venv, named nowhere.
    Made without pip in a second, the virtualenv sees the repository virtualenv's packages (the
    Pulumi SDK) and the package's own folder through a .pth file, as one with both installed
    would. (Installing the package's dependencies runs `python -m venv` on it and upgrades pip,
    setuptools and wheel in it, as Pulumi's host does: a few seconds.)"""
    package = root / "greeter"
    venv = root / "venv" if virtualenv_option else package / "venv"
    package.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    sdk_site = Path(pulumi.__file__).resolve().parents[1]
    (site / "engine-test.pth").write_text(f"{sdk_site}\n{package}\n")
    options = f"  options:\n    virtualenv: {venv}\n" if virtualenv_option else ""
    (package / "PulumiPlugin.yaml").write_text(f"runtime:\n  name: python\n{options}")
    (package / "__main__.py").write_text(MAIN)
    (package / "greeter.py").write_text(GREETER)
    (package / "thing.py").write_text(THING)
    return Package(package, venv)


def yaml_program(package: Package, dynamic_providers_venv: Path | None) -> str:
    """A YAML program using the component. The engine starts the dynamic provider of a resource
    the component registers with this program's runtime options (PULUMI_RUNTIME_VIRTUALENV from
    `virtualenv`), so naming the package's virtualenv here is how that provider finds Python."""
    options = f"  options:\n    virtualenv: {dynamic_providers_venv}\n" if dynamic_providers_venv else ""
    return (
        "name: yaml-uses-a-component\n"
        f"runtime:\n  name: yaml\n{options}"
        f"packages:\n  greeter: {package.dir}\n"
        "resources:\n"
        "  hello:\n"
        "    type: greeter:Greeter\n"
        "    properties:\n"
        "      who: world\n"
        "outputs:\n"
        "  greeting: ${hello.greeting}\n"
    )


def child(project: Project) -> dict[str, Any] | None:
    return project.resource("hello-thing")


@dataclass
class Deployed:
    project: Project
    up: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    """One YAML stack with the component up, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("deployed")
    package = make_package(root)
    project = new_yaml_project(root, yaml_program(package, package.venv))
    return Deployed(project, project.up(timeout=600))


def python_without_pulumi(root: Path) -> Path:
    """A Python that has no Pulumi SDK: a bare virtualenv's."""
    venv = root / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv / "bin" / "python"


def test_get_schema_prints_the_components_schema(tmp_path: Path):
    package = make_package(tmp_path)
    project = engine_project(tmp_path, "pulumi-language-python")
    result = project.run("pulumi", "package", "get-schema", str(package.dir), timeout=600)
    assert result.returncode == 0, explain("pulumi package get-schema failed", result)
    schema = json.loads(result.stdout)
    greeter = schema["resources"]["greeter:index:Greeter"]
    assert greeter["isComponent"] is True, greeter
    assert greeter["inputProperties"] == {"who": {"type": "string"}}, greeter
    assert greeter["requiredInputs"] == ["who"], greeter
    assert greeter["properties"] == {"greeting": {"type": "string"}}, greeter


def test_a_package_that_names_no_virtualenv_runs_in_venv_beside_it(tmp_path: Path):
    """PulumiPlugin.yaml `runtime: python` alone: a plugin never runs in the ambient Python, so
    with pip the host takes the package's ./venv, as Pulumi's does."""
    package = make_package(tmp_path, virtualenv_option=False)
    project = engine_project(tmp_path, "pulumi-language-python")
    result = project.run("pulumi", "package", "get-schema", str(package.dir), timeout=600)
    assert result.returncode == 0, explain("pulumi package get-schema failed", result)
    assert "greeter:index:Greeter" in json.loads(result.stdout)["resources"], result.stdout


def test_a_package_that_exits_before_serving_fails_with_its_exit_status(tmp_path: Path):
    """RunPlugin sends the plugin's exit code; the CLI, which got no port, reports it."""
    package = make_package(tmp_path)
    (package.dir / "__main__.py").write_text("import sys\n\nsys.exit(3)\n")
    project = engine_project(tmp_path, "pulumi-language-python")
    result = project.run("pulumi", "package", "get-schema", str(package.dir), timeout=600)
    assert result.returncode != 0, explain("get-schema passed", result)
    assert f"could not read plugin [{package.dir}]: exit status 3" in result.stderr, explain("no exit status", result)


def test_a_yaml_program_gets_the_components_output(deployed: Deployed):
    assert deployed.project.outputs() == {"greeting": "hello, world"}


def test_the_components_dynamic_resource_is_in_the_state(deployed: Deployed):
    thing = child(deployed.project)
    assert thing is not None, [r["urn"] for r in deployed.project.resources()]
    assert thing["type"] == "pulumi-python:dynamic:Resource", thing
    assert thing["outputs"]["greeting"] == "hello, world", thing
    assert thing["parent"].endswith("greeter:index:Greeter::hello"), thing


def test_every_language_host_is_the_bundled_one(deployed: Deployed):
    """The YAML host runs the package to read its schema and looks for the Python host beside
    its own executable: build.sh puts it beside the CLI as a file, not a link, so it finds it."""
    assert "from $PATH" not in deployed.up.stdout + deployed.up.stderr, explain("a host from PATH", deployed.up)


def test_a_second_preview_expects_no_changes(deployed: Deployed):
    deployed.project.pulumi("preview", "--expect-no-changes", timeout=600)


def test_destroy_removes_the_component_and_its_dynamic_resource(tmp_path: Path):
    package = make_package(tmp_path)
    project = new_yaml_project(tmp_path, yaml_program(package, package.venv))
    project.up(timeout=600)
    project.pulumi("destroy", "--yes", "--skip-preview", timeout=600)
    assert project.resources() == [], [r["urn"] for r in project.resources()]


# What upstream cannot do, pinned so a change of the engine or the SDK shows here.


def test_without_a_virtualenv_in_the_program_the_dynamic_provider_has_no_pulumi(tmp_path: Path):
    """The engine starts pulumi-resource-pulumi-python for the component's dynamic resource with
    the YAML program's runtime options, not the package's: with no `virtualenv` there, the script
    runs $PULUMI_PYTHON_CMD (else python3 from PATH), here a Python without the SDK."""
    package = make_package(tmp_path)
    project = new_yaml_project(tmp_path, yaml_program(package, None))
    project.env["PULUMI_PYTHON_CMD"] = str(python_without_pulumi(tmp_path))
    result = project.up(check=False, timeout=600)
    assert result.returncode != 0, explain("the dynamic provider ran", result)
    assert "No module named 'pulumi'" in result.stdout, explain("not the missing SDK", result)
    assert "could not read plugin" in result.stdout and "pulumi-resource-pulumi-python" in result.stdout, explain(
        "not the dynamic provider's plugin failing", result
    )


def test_the_dynamic_providers_module_must_be_importable_from_that_virtualenv(tmp_path: Path):
    """The provider's class is pickled by reference (`thing.ThingProvider`), and the dynamic
    provider runs in the program's folder: the package's own folder is not on its sys.path, so
    the package must be installed in (or added by a .pth to) the virtualenv the program names."""
    package = make_package(tmp_path)
    pth = next(package.venv.glob("lib/python3*/site-packages/engine-test.pth"))
    pth.write_text(pth.read_text().splitlines()[0] + "\n")  # the SDK only, not the package's folder
    project = new_yaml_project(tmp_path, yaml_program(package, package.venv))
    result = project.up(check=False, timeout=600)
    assert result.returncode != 0, explain("the dynamic provider ran", result)
    assert "ModuleNotFoundError: No module named 'thing'" in result.stdout, explain("not the missing module", result)
    assert child(project) is None, "a dynamic resource that failed is in the state"


def test_package_add_cannot_link_into_a_yaml_project(tmp_path: Path):
    """pulumi-yaml v1.25.0 has no Link: `pulumi package add <dir>` writes sdks/<name>/ and then
    fails, leaving Pulumi.yaml without the package; name it under `packages:` instead."""
    package = make_package(tmp_path)
    program = yaml_program(package, package.venv).replace(f"packages:\n  greeter: {package.dir}\n", "")
    project = new_yaml_project(tmp_path, program)
    result = project.run("pulumi", "package", "add", str(package.dir), timeout=600)
    assert result.returncode != 0, explain("package add passed: use it in the tests above", result)
    assert "linking package: method Link not implemented" in result.stderr, explain("another failure", result)
    assert "packages:" not in (project.dir / "Pulumi.yaml").read_text()
