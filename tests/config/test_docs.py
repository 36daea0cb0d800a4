"""The README's config tables (stack config, the fleet file, the operator settings) and Pulumi.yaml's
config schema say what the declarations say.

Each config field is declared once (gpu_nodes/config/, one module per section); these tests fail when the README
or Pulumi.yaml describes a field otherwise, lacks one or describes one that does not exist.
"""

from __future__ import annotations

import re

import yaml

from gpu_nodes.cli.fleet_file import FleetFileSpec
from gpu_nodes.cli.operator_export import OperatorSettings
from gpu_nodes.config.fields import readme_rows
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import STACK_SETTINGS
from gpu_nodes.constants import NAMESPACE
from tests.pulumi_mocks import ROOT

_HEADERS = {
    "stack": "| key | type | default | meaning |",
    "group": "| field | type | default | meaning |",
    "fleet": "| fleet file key | type | default | meaning |",
    "operator": "| operator setting | type | default | meaning |",
}


def readme_table(header: str) -> list[tuple[str, str, str, str]]:
    """The rows of the README table under `header`: (key without backticks, type, default, meaning)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines.count(header) == 1, f"README.md: expected one table headed {header!r}"
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        assert len(cells) == 4, f"README.md: expected 4 cells in {line!r}"
        key = cells[0]
        assert key.startswith("`") and key.endswith("`"), f"README.md: key not in backticks: {line!r}"
        rows.append((key[1:-1], cells[1], cells[2], cells[3]))
    return rows


def test_readme_stack_table_matches_the_declarations():
    expected = [(s.key, s.type_text, s.readme_default(), s.help) for s in STACK_SETTINGS]
    assert readme_table(_HEADERS["stack"]) == expected


def test_readme_node_group_table_matches_the_declarations():
    assert readme_table(_HEADERS["group"]) == readme_rows(NodeGroupSpec)


def test_readme_fleet_file_table_matches_the_declarations():
    assert readme_table(_HEADERS["fleet"]) == readme_rows(FleetFileSpec)


def test_readme_operator_settings_table_matches_the_declarations():
    assert readme_table(_HEADERS["operator"]) == readme_rows(OperatorSettings)


def test_pulumi_yaml_config_schema_matches_the_declarations():
    schema = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    declared = {s.key.removeprefix(f"{NAMESPACE}:"): s for s in STACK_SETTINGS if s.pulumi_type is not None}
    assert sorted(schema) == sorted(declared), "Pulumi.yaml config: keys differ from the declarations with pulumi_type"
    for key, s in declared.items():
        assert schema[key] == {"type": s.pulumi_type, "default": s.default, "description": s.pulumi_description}, key


def test_every_declared_field_has_help():
    rows = readme_rows(NodeGroupSpec)
    assert all(meaning for _, _, _, meaning in rows), rows
