"""How the code is laid out: what the next engineer can rely on when reading it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append("." * node.level + node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_no_test_module_imports_another_test_module():
    """Shared helpers live in support modules (tests/fakes.py, tests/e2e/conftest.py, ...)."""
    offenders = {
        str(path.relative_to(ROOT)): [m for m in imported_modules(path) if m.rsplit(".", 1)[-1].startswith("test_")]
        for path in sorted([*ROOT.glob("tests/**/test_*.py"), *ROOT.glob("tools/**/test_*.py")])
    }
    offenders = {path: modules for path, modules in offenders.items() if modules}
    assert not offenders, f"test modules importing test modules: {offenders}"


def test_no_module_of_the_program_is_over_400_lines():
    """A module the next engineer reads in one pass; a bigger one is split by concern."""
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in sorted(ROOT.glob("gpu_nodes/**/*.py"))}
    over = {path: lines for path, lines in sizes.items() if lines > 400}
    assert not over, f"modules over 400 lines: {over}"


def test_every_kubernetes_object_is_registered_one_way():
    """gpu_nodes/resources/registration.py `register`: a manifest dict in, a typed resource out."""
    import re

    direct = re.compile(r"\bk8s\.[a-z_]+\.v[0-9a-z]+\.[A-Z][A-Za-z]*\(")
    found = {
        str(p.relative_to(ROOT)): [line.strip() for line in p.read_text().splitlines() if direct.search(line)]
        for p in sorted(ROOT.glob("gpu_nodes/**/*.py"))
    }
    found = {path: lines for path, lines in found.items() if lines}
    assert not found, f"Kubernetes objects registered directly: {found}"


def test_nothing_edits_sys_path():
    """The package is found as installed, or through pytest's `pythonpath`; benches run with `-m`."""
    sources = [*ROOT.glob("gpu_nodes/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tools/*/*.py")]
    sources += [ROOT / "__main__.py", *ROOT.glob("examples/**/*.py")]
    edits = sorted(str(p.relative_to(ROOT)) for p in sources if "sys.path." in p.read_text() and p != Path(__file__).resolve())
    assert not edits, f"modules that edit sys.path: {edits}"


def test_every_package_directory_is_a_regular_package():
    """Namespace packages hide a missing file from setuptools' package discovery."""
    missing = sorted(
        str(d.relative_to(ROOT)) for d in ROOT.glob("gpu_nodes/**/") if any(d.glob("*.py")) and not (d / "__init__.py").exists()
    )
    assert not missing, f"package directories without __init__.py: {missing}"


def test_every_dynamic_resource_derives_from_the_one_cluster_resource_base():
    """gpu_nodes/providers/cluster_resource.py: the cluster's access among the inputs, the kubeconfig secret."""
    direct = {
        str(p.relative_to(ROOT)): [
            c.name
            for c in ast.walk(ast.parse(p.read_text()))
            if isinstance(c, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "Resource" for b in c.bases)
        ]
        for p in sorted(ROOT.glob("gpu_nodes/**/*.py"))
        if p.name != "cluster_resource.py"
    }
    direct = {path: classes for path, classes in direct.items() if classes}
    assert not direct, f"dynamic resources not derived from ClusterResource: {direct}"


# A string that is a whole key of ours, Kubernetes', or NVIDIA's (not a message mentioning one).
MARK_KEY = re.compile(r"(gpu-nodes\.dev|[a-z.-]*kubernetes\.io|nvidia\.com)/[A-Za-z0-9._-]*")
# Values under the same domains that are no key: a Secret's type.
NOT_KEYS = {"kubernetes.io/dockerconfigjson"}


def test_every_key_we_write_or_read_is_named_in_the_vocabulary():
    """gpu_nodes/vocabulary.py: a label, taint, annotation or selector key spelled anywhere else is a second spelling."""
    found = {
        str(p.relative_to(ROOT)): sorted(
            {c.value for c in ast.walk(ast.parse(p.read_text())) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            & {m.group(0) for m in MARK_KEY.finditer(p.read_text())}
            - NOT_KEYS
        )
        for p in sorted(ROOT.glob("gpu_nodes/**/*.py"))
        if p.name != "vocabulary.py"
    }
    found = {path: keys for path, keys in found.items() if keys}
    assert not found, f"keys spelled outside gpu_nodes/vocabulary.py: {found}"
