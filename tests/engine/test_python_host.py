"""The Python language host the engine runs (the stand-in where Pulumi's own is not installed):
what `pulumi up` and `pulumi preview` ask of it for a program, its dynamic providers and a
policy pack. Real engine; no cluster or machine needed."""

from __future__ import annotations

import json

from tests.engine.project import ROOT, explain, new_project

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
