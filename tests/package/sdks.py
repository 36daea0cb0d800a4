"""The TypeScript and Go SDKs of the gpu-nodes package, generated from its schema, and the example
programs that use them (examples/typescript, examples/go): the helpers of tests/package/test_sdks.py.

The SDKs are build outputs. Each is written where `pulumi package add` would write it, into the
example's own `sdks/gpu-nodes/` (git-ignored), by gpu-nodes-sdkgen, our own tool over Pulumi's code
generators (tools/engine/sdkgen/: `pulumi package gen-sdk` asks the Node.js and Go language hosts,
which the Go module proxy refuses). Nothing here runs a program: those two hosts are missing here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.tiers import needs_the_engine

ROOT = Path(__file__).resolve().parents[2]
TYPESCRIPT = ROOT / "examples" / "typescript"
GO = ROOT / "examples" / "go"
# Where `pulumi package add` puts a package's SDK inside a project.
SDK_FOLDER = Path("sdks") / "gpu-nodes"
SCHEMA_CODE = "import json; from gpu_nodes.package.provider import package_schema; print(json.dumps(package_schema()))"
# npm ci leaves this in node_modules: what it installed from (see install_typescript_example).
INSTALL_STAMP = ".gpu-nodes-install"


@dataclass
class Step:
    """One command's outcome, for a failure message that shows what it printed."""

    what: str
    result: subprocess.CompletedProcess[str]

    @property
    def ok(self) -> bool:
        return self.result.returncode == 0

    @property
    def output(self) -> str:
        return (self.result.stdout + self.result.stderr).strip()

    def explain(self) -> str:
        return f"{self.what} exited {self.result.returncode}:\n{self.output[-8000:]}"


def run(what: str, *args: str | Path, cwd: Path, timeout: int, env: dict[str, str] | None = None) -> Step:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    return Step(what, result)


def package_schema() -> dict[str, Any]:
    """The package's schema, as the package itself gives it (gpu_nodes/package/provider.py)."""
    step = run("package_schema()", sys.executable, "-c", SCHEMA_CODE, cwd=ROOT, timeout=120)
    assert step.ok, step.explain()
    schema: dict[str, Any] = json.loads(step.result.stdout)
    return schema


def sdkgen() -> Path:
    """gpu-nodes-sdkgen, built (once per machine, then cached) by tools/engine/build.sh."""
    needs_the_engine("gpu-nodes-sdkgen")
    script = 'source tools/engine/versions.sh && echo "$ENGINE_SDKGEN_BIN_DIR/gpu-nodes-sdkgen"'
    binary = Path(subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip())
    if not binary.is_file():
        step = run("tools/engine/build.sh sdkgen", ROOT / "tools/engine/build.sh", "sdkgen", cwd=ROOT, timeout=1200)
        assert step.ok and binary.is_file(), step.explain()
    return binary


def generate(schema_file: Path, language: str, example: Path, scratch: Path) -> Step:
    """The SDK for `language` (nodejs or go), from the schema, into the example's sdks/gpu-nodes.
    Written to `scratch` first and moved in only when it differs from what is there, so an SDK that
    npm already installed and compiled (examples/typescript) stays installed."""
    out = scratch / language
    step = run(
        f"gpu-nodes-sdkgen -language {language}",
        sdkgen(),
        "-schema",
        schema_file,
        "-language",
        language,
        "-out",
        out,
        cwd=ROOT,
        timeout=300,
    )
    target = example / SDK_FOLDER
    if step.ok and (not target.is_dir() or sdk_digest(out) != sdk_digest(target)):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(out, target)
    return step


def digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def sdk_digest(root: Path) -> bytes:
    """What a generated SDK in `root` holds, file by file (not what npm and tsc added to it)."""
    added = {"node_modules", "bin"}
    files = sorted(p for p in root.rglob("*") if p.is_file() and not added & set(p.relative_to(root).parts))
    return "\n".join(f"{p.relative_to(root)} {hashlib.sha256(p.read_bytes()).hexdigest()}" for p in files).encode()


def install_typescript_example() -> Step:
    """`npm ci` in examples/typescript, from npm's own cache where it can. It installs the pinned
    packages of package-lock.json and the generated SDK (a `file:` dependency), whose postinstall
    compiles it with tsc. Skipped when node_modules was installed from the same lock file and
    the same generated SDK (a stamp in node_modules says which), so a second run costs nothing."""
    stamp = TYPESCRIPT / "node_modules" / INSTALL_STAMP
    wanted = digest((TYPESCRIPT / "package-lock.json").read_bytes(), sdk_digest(TYPESCRIPT / SDK_FOLDER), node_version().encode())
    if stamp.is_file() and stamp.read_text() == wanted and (TYPESCRIPT / SDK_FOLDER / "bin" / "index.d.ts").is_file():
        return Step("npm ci (cached)", subprocess.CompletedProcess([], 0, "node_modules is up to date\n", ""))
    step = run(
        "npm ci in examples/typescript",
        "npm",
        "ci",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        cwd=TYPESCRIPT,
        timeout=900,
    )
    if step.ok:
        stamp.write_text(wanted)
    return step


def node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def tsc(project: Path, *options: str) -> Step:
    """`npx tsc --noEmit` in a TypeScript project (the example's installed compiler, never a download)."""
    command = ("npx", "--no", "--", "tsc", "--noEmit", "--pretty", "false", *options)
    return run(f"{' '.join(command)} in {project}", *command, cwd=project, timeout=300)


def errors_at(output: str, file: str) -> dict[int, list[str]]:
    """A compiler's errors in `file` by line: tsc's `index.ts(17,17): error TS2322: ...` and
    go's `./main.go:27:19: cannot use ...`."""
    found: dict[int, list[str]] = {}
    pattern = rf"^(?:\./)?{re.escape(file)}(?:\((\d+),\d+\)|:(\d+):\d+):? *(.*)$"
    for match in re.finditer(pattern, output, re.M):
        found.setdefault(int(match[1] or match[2]), []).append(match[3])
    return found


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of `path` holding `text`."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def broken_typescript_copy(tmp: Path, replace: tuple[str, str]) -> Path:
    """examples/typescript with one edit to index.ts, in tmp, using the example's installed packages."""
    old, new = replace
    source = (TYPESCRIPT / "index.ts").read_text()
    assert old in source, f"examples/typescript/index.ts no longer has {old!r}: update the test"
    (tmp / "index.ts").write_text(source.replace(old, new, 1))
    shutil.copy(TYPESCRIPT / "tsconfig.json", tmp / "tsconfig.json")
    shutil.copy(TYPESCRIPT / "package.json", tmp / "package.json")
    # node_modules links the SDK relative to itself (../../sdks/gpu-nodes), so it resolves in the example.
    (tmp / "node_modules").symlink_to(TYPESCRIPT / "node_modules")
    return tmp


def go_env(project: Path) -> dict[str, str]:
    # The program's own workspace (its go.work: the program and the generated SDK), never one
    # above it; VCS stamping needs a git checkout, which a copy in a tmp dir is not.
    return {**os.environ, "GOFLAGS": "-buildvcs=false", "GOWORK": str(project / "go.work")}


def go_build(project: Path, out: Path) -> Step:
    """`go build` of a Go program, in its workspace; -trimpath as tools/engine builds the CLI, so the
    compiled sdk/v3 packages of the CLI's build are reused from Go's build cache."""
    command = ("go", "build", "-trimpath", "-o", f"{out}/", "./...")
    return run(f"{' '.join(command)} in {project}", *command, cwd=project, env=go_env(project), timeout=1200)


def broken_go_copy(tmp: Path, replace: tuple[str, str]) -> Path:
    """examples/go with one edit to main.go, in tmp, against the same generated SDK."""
    old, new = replace
    source = (GO / "main.go").read_text()
    assert old in source, f"examples/go/main.go no longer has {old!r}: update the test"
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("go.mod", "go.sum", "go.work", "go.work.sum"):
        shutil.copy(GO / name, tmp / name)
    (tmp / "main.go").write_text(source.replace(old, new, 1))
    (tmp / "sdks").symlink_to(GO / "sdks")
    return tmp


def go_sdk_hint(step: Step, schema_file: Path) -> str:
    """Why a Go SDK may not compile: Go's code generator writes `<Type>Args` for an object type
    only where the type is an input, so one given only plain (`"plain": true`) is left undefined
    unless the schema asks for every type's input types."""
    go = json.loads(schema_file.read_text()).get("language", {}).get("go", {})
    if "undefined: " in step.output and "sdks/gpu-nodes" in step.output and not go.get("generateExtraInputTypes"):
        return (
            "\nThe generated SDK itself does not compile: an object type the schema gives only plain has no"
            " `<Type>Args` struct unless the schema sets language.go.generateExtraInputTypes: true."
        )
    return ""
