"""`package/`, gpu-nodes' own plugin folder, through the real CLI and the Python host: what
`pulumi package add <checkout>/package` reads. The CLI first installs the folder's
requirements.txt into the virtualenv PulumiPlugin.yaml names (the checkout's `.venv`: pip, the
pinned requirements and gpu-nodes from the checkout), then runs the plugin and asks its schema.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_nodes.package.provider import package_schema
from tests.engine.project import engine_project, explain

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parents[2]


def outline(schema: dict) -> dict:
    """What a program's SDK is made from: each resource's inputs (type, secret, plain), outputs and
    required inputs, each type's properties. The CLI writes the schema back through its own types,
    which drop what they have no field for (the description of a list's items)."""

    def props(properties: dict) -> dict:
        return {name: (p.get("type"), p.get("$ref"), p.get("secret"), p.get("plain")) for name, p in properties.items()}

    resources = {
        token: (props(r["inputProperties"]), sorted(r.get("requiredInputs", [])), props(r["properties"]))
        for token, r in schema["resources"].items()
    }
    types = {token: (props(t["properties"]), sorted(t.get("required", []))) for token, t in schema["types"].items()}
    return {"name": schema["name"], "version": schema["version"], "resources": resources, "types": types}


def test_get_schema_of_the_package_folder_is_the_schema_the_provider_serves(tmp_path: Path):
    project = engine_project(tmp_path, "pulumi-language-python")
    result = project.run("pulumi", "package", "get-schema", str(ROOT / "package"), timeout=900)
    assert result.returncode == 0, explain("pulumi package get-schema package/ failed", result)
    assert outline(json.loads(result.stdout)) == outline(package_schema()), "package/: the CLI reads another schema"
