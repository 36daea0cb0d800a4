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


def test_the_benchmarks_depend_on_the_package_not_on_the_tests():
    offenders = {
        str(path.relative_to(ROOT)): [m for m in imported_modules(path) if m == "tests" or m.startswith("tests.")]
        for path in sorted(ROOT.glob("bench/**/*.py"))
    }
    offenders = {path: modules for path, modules in offenders.items() if modules}
    assert not offenders, f"bench modules importing the tests: {offenders}"


def test_the_runbook_renders_objects_with_the_pure_builders_not_the_pulumi_layers():
    """bench/runbook.py is the by-hand side of the engine bench: kubectl, with no Pulumi in between."""
    pulumi_layers = ("gpu_nodes.resources", "gpu_nodes.providers")
    reached = [m for m in imported_modules(ROOT / "bench/runbook.py") if m.startswith(pulumi_layers)]
    assert not reached, f"bench/runbook.py imports the Pulumi layers: {reached}"


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
    # Not what the SDK tier installs or generates into the examples (npm's packages, the SDKs: git-ignored).
    examples = [p for p in ROOT.glob("examples/**/*.py") if not {"node_modules", "sdks"} & set(p.relative_to(ROOT).parts)]
    sources += [ROOT / "__main__.py", *examples]
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


# The SDK's modules no program imports, and the attribute that bypasses a class's own.
SDK_PRIVATE_MODULES = ("pulumi.runtime", "pulumi.dynamic.__main__", "pulumi.dynamic.config")
# But for the mocks Pulumi's testing guide documents (its `set_mocks` and `test` included), which
# gpu_nodes/testing.py builds on: public, in pulumi/runtime/__init__.py's __all__.
SDK_TESTING_API = ("pulumi.runtime.Mocks", "pulumi.runtime.MockResourceArgs", "pulumi.runtime.MockCallArgs")


def test_only_one_module_reaches_into_the_pulumi_sdk():
    """gpu_nodes/pulumi_internals.py, each reach tested on the SDK installed (tests/test_pulumi_internals.py)."""
    found = {}
    for path in sorted([*ROOT.glob("gpu_nodes/**/*.py"), ROOT / "__main__.py"]):
        if path.name == "pulumi_internals.py":
            continue
        nodes = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)]
        # `pulumi.runtime.Mocks` holds the attribute `pulumi.runtime`, which it excuses too.
        public = [n for n in nodes if ast.unparse(n) in SDK_TESTING_API]
        attributes = [ast.unparse(n) for n in nodes if n not in public and not any(n is p.value for p in public)]
        reaches = [m for m in imported_modules(path) if m.startswith(SDK_PRIVATE_MODULES)]
        reaches += [a for a in attributes if a.endswith(".__dict__") or a.startswith(SDK_PRIVATE_MODULES)]
        if reaches:
            found[str(path.relative_to(ROOT))] = reaches
    assert not found, f"reaches into the Pulumi SDK outside gpu_nodes/pulumi_internals.py: {found}"


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


# The package's layers, bottom first: a module imports only from its own layer or those below,
# and no two modules import each other, directly or round a circle. Preflight sits below the
# manifests, which write its facts as node labels (manifests/node_labels.py), and below the
# proof, which compares a node's facts with its group's. The bandwidth floors are data beside the
# advisories: the config reads them for a group's default floor and the proof judges a run by them.
LAYERS = (
    ("vocabulary", ("gpu_nodes.vocabulary", "gpu_nodes.errors", "gpu_nodes.pulumi_internals")),
    ("constants", ("gpu_nodes.constants", "gpu_nodes.advisories", "gpu_nodes.bandwidth_floors")),
    ("config", ("gpu_nodes.config",)),
    ("preflight", ("gpu_nodes.preflight",)),
    ("proof", ("gpu_nodes.proof",)),
    ("manifests", ("gpu_nodes.manifests",)),
    ("kube", ("gpu_nodes.kube",)),
    ("providers", ("gpu_nodes.providers",)),
    ("resources", ("gpu_nodes.resources",)),
    ("cli", ("gpu_nodes.cli",)),
    ("package", ("gpu_nodes.package",)),
    ("top", ("gpu_nodes", "__main__")),
)


def program_modules() -> dict[str, Path]:
    """Every module of the package, and the Pulumi program (`__main__.py`), by dotted name."""
    modules = {"__main__": ROOT / "__main__.py"}
    for path in sorted(ROOT.glob("gpu_nodes/**/*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the longest prefix that names `module` or a package holding it."""
    matches = [
        (len(prefix), index)
        for index, (_, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(matches)[1] if matches else None


def program_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of the program's modules: at the top, inside functions and under TYPE_CHECKING alike."""
    found: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]) if node.level else ""
                source = ".".join(part for part in (base, node.module or "") if part)
                # `from gpu_nodes.kube import shared_views` imports the module; `from gpu_nodes import GpuFleet`, the package.
                imported |= {f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names}
        found[name] = {_known(m, modules) for m in imported if _known(m, modules)} - {name}
    return found


def _known(module: str, modules: dict[str, Path]) -> str:
    """`module`, or the package of ours it is in; "" for another project's."""
    while module and module not in modules:
        module = module.rpartition(".")[0]
    return module if module != "__main__" else ""


def test_every_module_of_the_program_has_a_layer():
    unplaced = sorted(name for name in program_modules() if layer_of(name) is None)
    assert not unplaced, f"modules in no layer of LAYERS (add them where their imports put them): {unplaced}"


def test_imports_point_down_the_layers():
    violations = []
    for importer, imported in sorted(program_imports(program_modules()).items()):
        for module in sorted(imported):
            low, high = layer_of(importer), layer_of(module)
            if low is not None and high is not None and high > low:
                violations.append(
                    f"{importer} ({LAYERS[low][0]}) imports {module} ({LAYERS[high][0]}), a layer above it"
                )
    assert not violations, "imports pointing up the layers:\n" + "\n".join(violations)


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Each circle of imports in `graph`, as `a -> b -> a`."""
    found = []
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            found.append(" -> ".join([*path[path.index(module) :], module]))
            return
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return found


def test_no_module_imports_itself_round_a_circle():
    found = circles(program_imports(program_modules()))
    assert not found, "modules that import each other:\n" + "\n".join(found)


def test_no_bench_module_imports_itself_round_a_circle():
    """bench/harness.py holds what the engine benches share, so neither imports the other."""
    modules = {f"bench.{path.stem}": path for path in sorted(ROOT.glob("bench/*.py"))}
    found = circles(program_imports(modules))
    assert not found, "bench modules that import each other:\n" + "\n".join(found)


# What the proof judges with is what the cluster reader returns: it needs no engine, no client, no wire.
NOT_IN_THE_PROOF = ("pulumi", "pulumi_kubernetes", "pulumi_command", "kubernetes", "urllib3", "requests", "http", "httpx")


def test_the_proof_imports_neither_pulumi_nor_a_kubernetes_client_nor_http():
    """gpu_nodes/proof/, and every module of ours it imports, down the layers."""
    modules = program_modules()
    graph = program_imports(modules)
    reached: set[str] = set()
    todo = [name for name in modules if name == "gpu_nodes.proof" or name.startswith("gpu_nodes.proof.")]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += sorted(graph.get(name, ()))
    found = {
        name: [m for m in imported_modules(modules[name]) if m.split(".")[0] in NOT_IN_THE_PROOF]
        for name in sorted(reached)
    }
    found = {name: imports for name, imports in found.items() if imports}
    assert len(reached) > 1, f"no proof modules found: {sorted(reached)}"
    assert not found, f"the proof reaches the engine, a client or the wire: {found}"
