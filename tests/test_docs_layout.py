"""The README and docs/: the README's table of contents lists its sections, every docs/ file is linked
from the README, and every relative link in them leads to a file and, with an `#anchor`, to a heading.

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
CONTENTS = "**Contents**"

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


def contents(text: str) -> list[tuple[str, str]]:
    """The README's table of contents: (title, link) for each entry of the list under its Contents line."""
    lines = text.splitlines()
    assert lines.count(CONTENTS) == 1, f"README.md: expected one {CONTENTS!r} line"
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


def test_the_readme_contents_list_every_section_in_order():
    text = README.read_text()
    expected = [(title, f"#{anchor(title)}") for title in headings(text, level=2)]
    assert contents(text) == expected


def test_every_docs_file_is_linked_from_the_readme():
    linked = {(ROOT / unquote(t.split("#", 1)[0])).resolve() for t in relative_links(README)}
    assert DOCS, "no docs/*.md"
    assert [d.name for d in DOCS if d.resolve() not in linked] == []


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
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
