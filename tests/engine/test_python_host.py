"""The Python language host the engine runs (the stand-in where Pulumi's own is not installed):
what `pulumi up` and `pulumi preview` ask of it for a program, its dynamic providers and a
policy pack. Real engine; no cluster or machine needed."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pulumi
import pytest

from tests.engine.project import ROOT, explain, new_project

pytestmark = pytest.mark.engine

PROGRAM = """
import pulumi
from pulumi.dynamic import CreateResult, Resource, ResourceProvider

config = pulumi.Config()


class ThingProvider(ResourceProvider):
    def create(self, props):
        return CreateResult(id_="thing-1", outs={**props, "made": "by-the-dynamic-provider"})


class Thing(Resource):
    made: pulumi.Output[str]

    def __init__(self, name, color):
        super().__init__(ThingProvider(), name, {"color": color, "made": None})


if config.get("fail") == "user":
    raise pulumi.RunError("greeting must be one of hello, hi; got 'howdy'")
if config.get("fail") == "crash":
    raise ValueError("a bug in the program")

thing = Thing("thing", config.get("color") or "blue")
pulumi.export("greeting", config.require("greeting"))
pulumi.export("token", config.require_secret("token"))
pulumi.export("made", thing.made)
"""

POLICY = """
from pulumi_policy import EnforcementLevel, PolicyPack, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy


def no_red(args: ResourceValidationArgs, report_violation: ReportViolation):
    if args.props.get("color") == "red":
        report_violation(f"{args.name} is red")


PolicyPack("test-policy", enforcement_level=EnforcementLevel.MANDATORY, policies=[
    ResourceValidationPolicy(name="no-red-things", description="Nothing red.", validate=no_red),
])
"""


def project_with_config(tmp_path, **config: str):
    project = new_project(tmp_path, PROGRAM)
    project.pulumi("config", "set", "greeting", "hello")
    project.set_secret("token", "s3cret-token")
    for key, value in config.items():
        project.pulumi("config", "set", key, value)
    return project


def test_a_program_runs_with_its_config_and_keeps_secrets_secret(tmp_path):
    project = project_with_config(tmp_path)
    project.up()
    outputs = project.outputs()
    assert outputs["greeting"] == "hello", f"greeting: {outputs}"
    assert outputs["token"] == "[secret]", f"token: shown as {outputs['token']}"
    shown = json.loads(project.pulumi("stack", "output", "--json", "--show-secrets").stdout)
    assert shown["token"] == "s3cret-token", f"token: {shown}"
    assert "s3cret-token" not in project.pulumi("stack", "export").stdout, "token: in the state in plain text"


def test_a_dynamic_provider_runs_in_the_programs_virtualenv(tmp_path):
    project = project_with_config(tmp_path)
    project.up()
    assert project.outputs()["made"] == "by-the-dynamic-provider", f"thing: {project.outputs()}"


def test_a_user_error_is_reported_in_its_own_words_without_a_traceback(tmp_path):
    project = project_with_config(tmp_path, fail="user")
    result = project.up(check=False)
    assert result.returncode != 0, explain("the run passed", result)
    assert "error: greeting must be one of hello, hi; got 'howdy'" in result.stdout, explain("the message is missing", result)
    assert "Traceback" not in result.stdout + result.stderr, explain("a traceback for a user error", result)


def test_a_crash_shows_the_traceback_once(tmp_path):
    """The exec script shows the traceback and exits 32; the host then adds no error of its own."""
    project = project_with_config(tmp_path, fail="crash")
    result = project.up(check=False)
    assert result.returncode != 0, explain("the run passed", result)
    assert "Program failed with an unhandled exception" in result.stdout, explain("no traceback", result)
    assert "ValueError: a bug in the program" in result.stdout, explain("not the program's error", result)
    assert "non-zero exit code" not in result.stdout, explain("the host added an error of its own", result)


def test_a_policy_pack_runs_and_its_mandatory_policy_stops_the_preview(tmp_path):
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "PulumiPolicy.yaml").write_text(
        f"name: test-policy\nruntime:\n  name: python\n  options:\n    virtualenv: {ROOT / '.venv'}\n"
    )
    (policy / "__main__.py").write_text(POLICY)
    project = project_with_config(tmp_path, color="red")
    refused = project.pulumi("preview", "--policy-pack", str(policy), check=False)
    assert refused.returncode != 0, explain("a red thing passed the policy", refused)
    assert "no-red-things" in refused.stdout and "thing is red" in refused.stdout, explain("the violation is not named", refused)
    project.pulumi("config", "set", "color", "blue")
    passed = project.pulumi("preview", "--policy-pack", str(policy), check=False)
    assert passed.returncode == 0, explain("a blue thing failed the policy", passed)


def installed(venv: Path, module: str, version: str, plugin_json: dict[str, object] | None = None) -> None:
    """A package `module` (distribution name with dashes) at `version` in venv, with a
    `<module>/pulumi-plugin.json` when given: what pip list and the host see of an installed one."""
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / module).mkdir()
    (site / module / "__init__.py").write_text("")
    if plugin_json is not None:
        (site / module / "pulumi-plugin.json").write_text(json.dumps(plugin_json))
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: {version}\n")


def test_the_plugins_a_program_needs_are_those_of_its_virtualenvs_pulumi_packages(tmp_path):
    """GetRequiredPackages, as `pulumi about` shows it: pulumi-plugin.json's name and version
    when the package has one (and no plugin when it says `resource: false`), else the package's
    name less `pulumi-` and its version made semver."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / "sdk.pth").write_text(f"{Path(pulumi.__file__).resolve().parents[1]}\n")  # the SDK and pip
    installed(venv, "pulumi_fakething", "1.2.3rc4")
    installed(venv, "acme_widgets", "0.1", {"resource": True, "name": "widgets", "version": "0.9.0"})
    installed(venv, "pulumi_nothing", "2.0", {"resource": False})
    project = new_project(tmp_path, "import pulumi\n")
    (project.dir / "Pulumi.yaml").write_text(
        f"name: required-plugins\nruntime:\n  name: python\n  options:\n    virtualenv: {venv}\n"
    )
    about = json.loads(project.pulumi("about", "--json").stdout)
    plugins = {p["name"]: p["version"] for p in about["plugins"] if p["kind"] == "resource"}
    assert plugins.get("fakething") == "1.2.3-rc.4", plugins
    assert plugins.get("widgets") == "0.9.0", plugins
    assert "nothing" not in plugins, plugins
