"""`package/`, gpu-nodes' own plugin folder, through the real CLI and the Python host: what
`pulumi package add <checkout>/package` reads. The CLI first installs the folder's
requirements.txt into the virtualenv PulumiPlugin.yaml names (the checkout's `.venv`: pip, the
pinned requirements and gpu-nodes from the checkout), then runs the plugin and asks its schema.
And a Pulumi YAML program's mistakes, which stop it before anything is registered, with no cluster:
a word outside an enum refused by the YAML host's own type check, the reader's by property path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpu_nodes.package.provider import package_schema
from tests.engine.project import Project, engine_project, explain, new_yaml_project

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parents[2]


def outline(schema: dict) -> dict:
    """What a program's SDK is made from: each resource's inputs (type, secret, plain), outputs and
    required inputs, each type's properties. The CLI writes the schema back through its own types,
    which drop what they have no field for (the description of a list's items)."""

    def props(properties: dict) -> dict:
        return {
            name: (p.get("type"), p.get("$ref"), p.get("secret"), p.get("plain"), json.dumps(p.get("oneOf"), sort_keys=True))
            for name, p in properties.items()
        }

    resources = {
        token: (props(r["inputProperties"]), sorted(r.get("requiredInputs", [])), props(r["properties"]))
        for token, r in schema["resources"].items()
    }
    def enum(t: dict) -> list:
        return [(v["value"], v.get("name")) for v in t.get("enum", [])]

    types = {
        token: (props(t.get("properties", {})), sorted(t.get("required", [])), enum(t)) for token, t in schema["types"].items()
    }
    described = {key: schema.get(key) for key in ("description", "keywords", "homepage", "repository", "license", "publisher")}
    names = {lang: {k: v for k, v in opts.items() if k != "packageDescription"} for lang, opts in schema["language"].items()}
    return {
        "name": schema["name"],
        "version": schema["version"],
        "resources": resources,
        "types": types,
        "described": described,
        "names": names,
    }


def test_get_schema_of_the_package_folder_is_the_schema_the_provider_serves(tmp_path: Path):
    project = engine_project(tmp_path, "pulumi-language-python")
    result = project.run("pulumi", "package", "get-schema", str(ROOT / "package"), timeout=900)
    assert result.returncode == 0, explain("pulumi package get-schema package/ failed", result)
    assert outline(json.loads(result.stdout)) == outline(package_schema()), "package/: the CLI reads another schema"


def yaml_project(tmp_path: Path, alone: bool = False, **group_changes: object) -> Project:
    """examples/yaml's program with this checkout's package and virtualenv, no cluster (the
    mistakes stop it first), preflight off, and the group changed as given; `alone`: the group as
    a `gpu-nodes:GpuNodeGroup` of its own instead of the fleet's."""
    program = yaml.safe_load((ROOT / "examples/yaml/Pulumi.yaml").read_text())
    program["packages"]["gpu-nodes"] = str(ROOT / "package")
    program["runtime"]["options"]["virtualenv"] = str(ROOT / ".venv")
    gpus = program["resources"]["gpus"]
    del program["resources"]["cluster"], gpus["options"], gpus["properties"]["sshPrivateKey"], program["config"]
    (group,) = gpus["properties"]["nodeGroups"]
    group.update({"preflight": {"enabled": False}, **group_changes})
    if alone:
        gpus.update({"type": "gpu-nodes:GpuNodeGroup", "properties": group})
        program["outputs"] = {"nodes": "${gpus.nodes}"}
    return new_yaml_project(tmp_path, yaml.safe_dump(program, sort_keys=False))


def test_a_word_outside_an_enum_stops_a_yaml_program_at_its_type_check_naming_the_words(tmp_path: Path):
    """The YAML host checks a word against the schema's enum before the program runs
    (pulumi-yaml pkg/pulumiyaml/analyser.go, hasValidEnumValue), here a group's own property."""
    project = yaml_project(tmp_path, alone=True, isolation="tight")
    result = project.pulumi("preview", check=False, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode != 0, explain("a preview with isolation: tight passed", result)
    assert 'Allowed values are "default", "strict"' in output, explain("not the enum's words", result)
    assert "Traceback" not in output, explain("a Python traceback for a user's mistake", result)
    assert not project.resources(), "registered something"


def test_in_a_list_a_word_outside_an_enum_is_the_readers_to_refuse(tmp_path: Path):
    """pulumi-yaml 1.25 checks no word inside a list's objects (hasValidEnumValue is given the list,
    not the word, and lets it through): the fleet's reader refuses it, by its property path."""
    project = yaml_project(tmp_path, isolation="tight")
    result = project.pulumi("preview", check=False, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode != 0, explain("a preview with isolation: tight passed", result)
    assert "nodeGroups[0].isolation" in output and "expected one of default, strict" in output, explain("not by path", result)
    assert not project.resources(), "registered something"


def test_the_readers_mistakes_stop_a_yaml_program_each_by_its_property_path(tmp_path: Path):
    """What the schema cannot say (a count of at least 1, kubectl's taint syntax) the component's
    reader refuses, every mistake at once, before it registers anything."""
    project = yaml_project(tmp_path, gpusPerNode=0, taints=["nvidia.com/gpu=present:Sometimes"])
    result = project.pulumi("preview", check=False, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode != 0, explain("a preview with gpusPerNode 0 passed", result)
    assert "nodeGroups[0].gpusPerNode" in output and "nodeGroups[0].taints[0]" in output, explain("not by path", result)
    assert "Traceback" not in output, explain("a Python traceback for a user's mistake", result)
    assert not project.resources(), "registered something"
