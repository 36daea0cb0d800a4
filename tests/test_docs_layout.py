"""The README and docs/: the README and each docs page open with a table of contents that lists their
sections, every docs page is linked from the README, and every relative link in them leads to a
file and, with an `#anchor`, to a heading. docs/layout.md names every module of the package,
docs/upgrading.md names only resource types that deployed stacks hold, and docs/package.md (the
package's description on an index) links nothing.

Anchors are made as GitHub makes them, so a link that passes here works on the rendered page.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
CHANGELOG = ROOT / "CHANGELOG.md"
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


@pytest.mark.parametrize("path", [README, *PAGES, CHANGELOG], ids=rel)
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


@pytest.mark.parametrize("path", [README, *DOCS, CHANGELOG, ROOT / "bench/README.md"], ids=rel)
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


# --- docs/package.md: shown on a package index, where links relative to the repository do not resolve


def test_the_package_description_is_the_packages_readme():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["readme"] == rel(PACKAGE_DESCRIPTION)


def test_the_package_description_links_nothing():
    assert _LINK.findall(prose(PACKAGE_DESCRIPTION.read_text())) == []


def test_the_files_the_package_description_names_exist():
    named = re.findall(r"`((?:docs/)?[\w./-]+\.md)`", PACKAGE_DESCRIPTION.read_text())
    assert named, "docs/package.md names no page"
    assert [name for name in named if not (ROOT / name).exists()] == []


# --- docs/layout.md names every module of the package


def layout_bullets() -> list[tuple[int, str, str]]:
    """docs/layout.md's bullets: (indent, the name in its first code span, its text up to the next bullet)."""
    found: list[tuple[int, str, str]] = []
    current: tuple[int, str, str] | None = None
    for line in [*(ROOT / "docs/layout.md").read_text().splitlines(), ""]:
        bullet = re.match(r"^( *)- `([^`]+)`", line)
        if current and (bullet or not line.startswith(" ")):
            found.append(current)
            current = None
        if bullet:
            current = (len(bullet[1]), bullet[2], line)
        elif current:
            current = (current[0], current[1], f"{current[2]}\n{line}")
    return found


def named_in(text: str, name: str) -> bool:
    return f"`{name}`" in text


def package_modules() -> list[Path]:
    """Every module of gpu_nodes/ but the subpackages' `__init__.py` (a subpackage is named by its folder)."""
    modules = sorted((ROOT / "gpu_nodes").rglob("*.py"))
    return [m for m in modules if m.name != "__init__.py" or m.parent == ROOT / "gpu_nodes"]


def test_layout_names_every_subpackage():
    names = {name for _, name, _ in layout_bullets()}
    packages = sorted(p.parent.relative_to(ROOT / "gpu_nodes") for p in (ROOT / "gpu_nodes").glob("*/__init__.py"))
    assert [f"{p}/" for p in packages if f"{p}/" not in names and f"gpu_nodes/{p}/" not in names] == []


@pytest.mark.parametrize("module", package_modules(), ids=lambda m: str(m.relative_to(ROOT / "gpu_nodes")))
def test_layout_names_every_module(module: Path):
    """Named by its path (`config/reading.py`, `gpu_nodes/config/reading.py`) anywhere, or by its bare name in
    its subpackage's bullet; a top-level module by its name in the `gpu_nodes/` bullet and those beneath it
    that are not a subpackage's."""
    path = module.relative_to(ROOT / "gpu_nodes")
    layout = (ROOT / "docs/layout.md").read_text()
    if named_in(layout, str(path)) or named_in(layout, f"gpu_nodes/{path}"):
        return
    bullets = layout_bullets()
    if len(path.parts) == 1:
        top = [i for i, (indent, name, _) in enumerate(bullets) if indent == 0 and name == "gpu_nodes/"]
        assert top, "docs/layout.md: no bullet for gpu_nodes/"
        own = [bullets[top[0]][2]]
        for indent, name, text in bullets[top[0] + 1 :]:
            if indent == 0:
                break
            if not name.endswith("/"):
                own.append(text)
        where = "\n".join(own)
    else:
        package = str(path.parent)
        where = "\n".join(text for _, name, text in bullets if name in (f"{package}/", f"gpu_nodes/{package}/"))
        assert where, f"docs/layout.md: no bullet for {package}/"
    assert named_in(where, path.name), f"docs/layout.md does not name gpu_nodes/{path}"


def test_layout_names_every_support_module_of_the_tests():
    tests = "\n".join(text for _, name, text in layout_bullets() if name == "tests/")
    support = [p.name for p in sorted((ROOT / "tests").glob("*.py")) if not p.name.startswith("test_")]
    support = [name for name in support if name not in ("__init__.py", "conftest.py")]
    assert [name for name in support if not named_in(tests, name)] == []


# --- docs/upgrading.md names resource types as deployed stacks hold them

_PULUMI_TYPE = re.compile(r"`([a-z][\w.-]*:[\w./-]*:[A-Z]\w*)`")


def golden_types() -> set[str]:
    """Every resource type tests/golden/*.json holds: each resource's, and each alias's."""
    found: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "type" and isinstance(item, str):
                    found.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted((ROOT / "tests/golden").glob("*.json")):
        walk(json.loads(path.read_text()))
    return found


def test_upgrading_names_only_types_the_golden_state_holds():
    named = set(_PULUMI_TYPE.findall((ROOT / "docs/upgrading.md").read_text()))
    assert named, "docs/upgrading.md names no resource type"
    assert sorted(named - golden_types()) == []


def test_the_type_pattern_finds_our_dynamic_types():
    assert _PULUMI_TYPE.findall("`pulumi-python:dynamic/gpu-nodes:NodeTaints`, `gpu-nodes:index:GpuFleet`") == [
        "pulumi-python:dynamic/gpu-nodes:NodeTaints",
        "gpu-nodes:index:GpuFleet",
    ]
    assert "pulumi-python:dynamic/gpu-nodes:NodeTaints" in golden_types()


# --- the sections the code, the tests and the tools name: `README, "Detect drift"`, `docs/tenants.md, "CUDA"`

# The root README or a page of docs/ (not tools/cluster/README.md), then the section's title in quotes.
_SECTION_REFERENCE = re.compile(r'(?<![\w/.])(README|docs/[\w-]+\.md)(?:\]\([^)\s]*\))?,\s*(?:#\s*)?\\?"([^"\\]{1,80}?)\\?"')
REFERRING = [
    *ROOT.glob("*.py"),
    *(p for p in ROOT.glob("gpu_nodes/**/*") if p.suffix in (".py", ".sh")),
    *(p for p in ROOT.glob("tests/**/*.py")),
    *(p for p in ROOT.glob("tools/**/*") if p.suffix in (".py", ".sh", ".md") and ".cache" not in p.parts),
    *ROOT.glob("bench/*"),
    *(
        p
        for p in ROOT.glob("examples/**/*")
        # Not the SDKs and modules the e2e tier generates there (git ignores them), as tests/test_layout.py.
        if p.suffix in (".py", ".ts", ".go", ".yml", ".yaml") and not {"node_modules", "sdks"} & set(p.relative_to(ROOT).parts)
    ),
    *ROOT.glob("package/*"),
    ROOT / "pyproject.toml",
]


def section_references(text: str) -> list[tuple[str, str]]:
    """(page, title) for each section a text names, the title's line breaks and comment marks taken out."""
    found = _SECTION_REFERENCE.findall(text)
    return [(page, " ".join(re.sub(r"^\s*#", " ", title, flags=re.M).split())) for page, title in found]


def test_the_section_reference_pattern():
    text = (
        'x (README, "Detect drift"); # (docs/tenants.md,\n# "How tenants get their GPUs")'
        ' "should hold (docs/operations.md, \\"Large fleets\\")"'
    )
    assert section_references(text) == [
        ("README", "Detect drift"),
        ("docs/tenants.md", "How tenants get their GPUs"),
        ("docs/operations.md", "Large fleets"),
    ]
    assert section_references('(tools/cluster/README.md, "DRA")') == []


@pytest.mark.parametrize("path", sorted({p for p in REFERRING if p.is_file()}), ids=rel)
def test_every_section_a_file_names_is_a_heading(path: Path):
    """A title may be the start of a longer heading ("Past one machine" for "Past one machine: the Pulumi
    Kubernetes Operator"). A `docs/...` that is no page of ours is upstream's (NVIDIA's docs/cdi.md)."""
    missing = []
    ours = {"README", *(rel(d) for d in DOCS)}
    for page, title in section_references(path.read_text(errors="replace")):
        if page not in ours:
            continue
        titles = [t.replace("`", "") for t in headings((ROOT / ("README.md" if page == "README" else page)).read_text())]
        if not any(t.startswith(title) for t in titles):
            missing.append(f"{page}, {title!r}")
    assert missing == [], f"{rel(path)} names sections that are not there"
