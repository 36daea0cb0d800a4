"""The README and docs/: the README and each docs page open with a table of contents that lists their
sections, every docs page is linked from the README, and every relative link in them leads to a
file and, with an `#anchor`, to a heading.

Anchors are made as GitHub makes them, so a link that passes here works on the rendered page.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# The package's description on an index (pyproject.toml's `readme`): no contents, no links.
PACKAGE_DESCRIPTION = ROOT / "docs/package.md"
PAGES = [d for d in DOCS if d != PACKAGE_DESCRIPTION]
CONTENTS = "**Contents**"
README_MAX_LINES = 400

_FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+).*?\1", re.S)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.M)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans: links and headings there are not Markdown's."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lowercase, punctuation dropped, spaces as hyphens."""
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(text: str, level: int | None = None) -> list[str]:
    """The headings of a Markdown text (only those of `level` when given), outside code blocks."""
    found = _HEADING.findall(_FENCE.sub("", text))
    return [title for hashes, title in found if level is None or len(hashes) == level]


def anchors(text: str) -> set[str]:
    """Every anchor a text's headings give, a repeated one with GitHub's `-1`, `-2`, ... suffix."""
    seen: dict[str, int] = {}
    result = set()
    for title in headings(text):
        base = anchor(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return result


def contents(text: str, name: str = "README.md") -> list[tuple[str, str]]:
    """A page's table of contents: (title, link) for each entry of the list under its Contents line."""
    lines = text.splitlines()
    assert lines.count(CONTENTS) == 1, f"{name}: expected one {CONTENTS!r} line"
    entries = []
    for line in lines[lines.index(CONTENTS) + 2 :]:
        found = re.fullmatch(r"- \[(.+)\]\((\S+)\)", line)
        if not found:
            break
        entries.append((found[1], found[2]))
    return entries


def relative_links(path: Path) -> list[str]:
    """The targets of a Markdown file's links that point inside the repository."""
    return [t for t in _LINK.findall(prose(path.read_text())) if not _EXTERNAL.match(t)]


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", [README, *PAGES], ids=rel)
def test_the_contents_list_every_section_in_order(path: Path):
    text = path.read_text()
    expected = [(title, f"#{anchor(title)}") for title in headings(text, level=2)]
    assert expected, f"{rel(path)}: no sections"
    assert contents(text, rel(path)) == expected


@pytest.mark.parametrize("path", [README, *PAGES], ids=rel)
def test_the_contents_come_before_the_first_section(path: Path):
    lines = path.read_text().splitlines()
    first_section = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines.index(CONTENTS) < first_section, f"{rel(path)}: the contents list is not at the top"


def test_the_readme_is_read_in_ten_minutes():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md: {lines} lines; move a subject to a page of docs/"


def test_every_docs_file_is_linked_from_the_readme():
    linked = {(ROOT / unquote(t.split("#", 1)[0])).resolve() for t in relative_links(README)}
    assert DOCS, "no docs/*.md"
    assert [d.name for d in DOCS if d.resolve() not in linked] == []


@pytest.mark.parametrize("path", [README, *DOCS], ids=rel)
def test_every_relative_link_leads_to_a_file_and_heading(path: Path):
    broken = []
    for target in relative_links(path):
        file_part, _, fragment = target.partition("#")
        file = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif fragment and (file.suffix != ".md" or fragment not in anchors(file.read_text())):
            broken.append(f"{target}: no heading with anchor #{fragment} in {file.relative_to(ROOT)}")
    assert broken == [], f"{path.relative_to(ROOT)}: broken links"


def test_anchors_are_made_as_github_makes_them():
    assert anchor("From before `gpuAccess`") == "from-before-gpuaccess"
    assert anchor("The device plugin's pod") == "the-device-plugins-pod"
    assert anchor("Past one machine: the Pulumi Kubernetes Operator") == "past-one-machine-the-pulumi-kubernetes-operator"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}

