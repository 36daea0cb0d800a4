"""The config tables of the docs (stack config and node groups in docs/configuration.md, the fleet file
and the operator settings in docs/fleet.md) and Pulumi.yaml's config schema say what the declarations say.

Each config field is declared once (gpu_nodes/config/, one module per section); these tests fail when a
table or Pulumi.yaml describes a field otherwise, lacks one or describes one that does not exist, and
when a row names a section (`see "MIG"`) that the page of its table does not link to.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpu_nodes.cli.fleet_file import FleetFileSpec
from gpu_nodes.cli.operator_export import OperatorSettings
from gpu_nodes.config.fields import readme_rows
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import STACK_SETTINGS
from gpu_nodes.constants import NAMESPACE
from gpu_nodes.package.generate import TABLES, page_with_table, release_rows
from tests.pulumi_mocks import ROOT

CONFIGURATION = ROOT / "docs/configuration.md"
FLEET = ROOT / "docs/fleet.md"
# Each table: the page it is on, and its header line.
STACK = (CONFIGURATION, "| key | type | default | meaning |")
GROUP = (CONFIGURATION, "| field | type | default | meaning |")
FLEET_FILE = (FLEET, "| fleet file key | type | default | meaning |")
OPERATOR = (FLEET, "| operator setting | type | default | meaning |")
RELEASES = (ROOT / "docs/machines.md", "| setting | needs | what is deployed for it | where upstream says so |")

Row = tuple[str, str, str, str]


def doc_table(table: tuple[Path, str]) -> list[Row]:
    """The rows of the table under `header` in `page`: (key without backticks, type, default, meaning)."""
    page, header = table
    name = page.relative_to(ROOT)
    lines = page.read_text().splitlines()
    assert lines.count(header) == 1, f"{name}: expected one table headed {header!r}"
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        assert len(cells) == 4, f"{name}: expected 4 cells in {line!r}"
        key = cells[0]
        assert key.startswith("`") and key.endswith("`"), f"{name}: key not in backticks: {line!r}"
        rows.append((key[1:-1], cells[1], cells[2], cells[3]))
    return rows


def stack_rows() -> list[Row]:
    return [(s.key, s.type_text, s.readme_default(), s.help) for s in STACK_SETTINGS]


def test_stack_table_matches_the_declarations():
    assert doc_table(STACK) == stack_rows()


def test_node_group_table_matches_the_declarations():
    assert doc_table(GROUP) == readme_rows(NodeGroupSpec)


def test_fleet_file_table_matches_the_declarations():
    assert doc_table(FLEET_FILE) == readme_rows(FleetFileSpec)


def test_operator_settings_table_matches_the_declarations():
    assert doc_table(OPERATOR) == readme_rows(OperatorSettings)


def test_the_releases_table_is_each_rule_declared_with_its_setting():
    assert doc_table(RELEASES) == release_rows()


@pytest.mark.parametrize("table", TABLES, ids=lambda t: f"{t.page}: {t.header}")
def test_the_generator_writes_each_table_as_it_is(table):
    """`python -m gpu_nodes.package.generate` writes every table: the pages are what it writes."""
    page = ROOT / table.page
    assert page_with_table(page.read_text(), table) == page.read_text(), f"{table.page} is stale: run the generator"


# A section a row's meaning names: `see "MIG"`, `See "How tenants get their GPUs"`.
_SEE = re.compile(r"\b[Ss]ee \"([^\"]+)\"")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


@pytest.mark.parametrize(
    "table, rows",
    [(STACK, stack_rows), (GROUP, lambda: readme_rows(NodeGroupSpec)), (FLEET_FILE, lambda: readme_rows(FleetFileSpec)),
     (OPERATOR, lambda: readme_rows(OperatorSettings))],
    ids=["stack", "group", "fleet file", "operator"],
)
def test_each_section_a_row_names_is_linked_from_its_page(table, rows):
    """The help texts name sections by their title alone (they are also the schema's descriptions): the page
    the table is on links each such title (tests/test_docs_layout.py checks that the link leads to it)."""
    page = table[0]
    named = {title for *_, meaning in rows() for title in _SEE.findall(meaning)}
    linked = {title for title, target in _LINK.findall(page.read_text()) if "#" in target}
    assert sorted(named - linked) == [], f"{page.relative_to(ROOT)}: link these sections near the table"


def test_pulumi_yaml_config_schema_matches_the_declarations():
    schema = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    declared = {s.key.removeprefix(f"{NAMESPACE}:"): s for s in STACK_SETTINGS if s.pulumi_type is not None}
    assert sorted(schema) == sorted(declared), "Pulumi.yaml config: keys differ from the declarations with pulumi_type"
    for key, s in declared.items():
        assert schema[key] == {"type": s.pulumi_type, "default": s.default, "description": s.pulumi_description}, key


def test_every_declared_field_has_help():
    rows = readme_rows(NodeGroupSpec)
    assert all(meaning for _, _, _, meaning in rows), rows
