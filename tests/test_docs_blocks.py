"""Every YAML, JSON and Python block in README.md and docs/ parses, as a reader would paste it: a
config a user copies into `Pulumi.<stack>.yaml`, a Pulumi YAML program, a program or a test."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.pulumi_mocks import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A fenced block: its indent, its language and its text up to the closing fence at the same indent.
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.M | re.S)
PARSERS = {"yaml": lambda text: list(yaml.safe_load_all(text)), "json": json.loads, "python": ast.parse}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    text: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.language})"


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        body = "\n".join(line[len(m[1]) :] for line in m[3].splitlines())
        found.append(Block(page, text[: m.start()].count("\n") + 1, m[2], body))
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def test_every_fenced_block_names_its_language():
    unnamed = [str(b) for b in ALL if not b.language]
    assert not unnamed, f"blocks with no language, which no reader highlights and this test cannot parse: {unnamed}"


@pytest.mark.parametrize("block", [b for b in ALL if b.language in PARSERS], ids=str)
def test_the_block_parses(block):
    try:
        PARSERS[block.language](block.text)
    except (yaml.YAMLError, ValueError, SyntaxError) as error:
        pytest.fail(f"{block} does not parse: {error}")


def test_a_flow_sequence_holding_an_interpolation_is_refused_as_yaml_reads_it():
    """The reason own-program.md's `providers:` is a block list: `[${cluster}]` is a flow sequence
    holding a flow mapping (`{cluster}` after `$`), which YAML refuses."""
    with pytest.raises(yaml.YAMLError):
        PARSERS["yaml"]("options:\n  providers: [${cluster}]\n")
    assert PARSERS["yaml"]("options:\n  providers:\n    - ${cluster}\n") == [{"options": {"providers": ["${cluster}"]}}]


def test_the_pages_hold_blocks_of_each_kind_a_reader_pastes():
    kinds = {b.language for b in ALL}
    assert {"yaml", "python"} <= kinds, f"blocks found: {sorted(kinds)}"
