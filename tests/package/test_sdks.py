"""gpu-nodes from TypeScript and Go: both SDKs generate from the package's schema, and the example
programs compile against them (docs/own-program.md, "From any Pulumi language").

- The Node.js SDK is written into examples/typescript/sdks/gpu-nodes, `npm ci` installs the
  example's pinned packages and the SDK (whose postinstall compiles it), and `tsc --noEmit`
  passes on the example under `strict`. A wrong type in a copy of it (`gpusPerNode: "four"`)
  fails tsc, naming the property.
- The Go SDK is written into examples/go/sdks/gpu-nodes, a module that the example's go.work adds
  to its workspace (go.mod has no `replace`), and `go build` passes; a wrong type there fails the
  build at that field.

Compile only: Pulumi's Node.js and Go language hosts, which would run these programs, are refused
by the Go module proxy (tools/engine/README.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.package import sdks

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("schema") / "schema.json"
    path.write_text(json.dumps(sdks.package_schema()))
    return path


@pytest.fixture(scope="module")
def typescript_example(schema_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    generated = sdks.generate(schema_file, "nodejs", sdks.TYPESCRIPT, tmp_path_factory.mktemp("sdk"))
    assert generated.ok, f"examples/typescript: the Node.js SDK did not generate.\n{generated.explain()}"
    installed = sdks.install_typescript_example()
    assert installed.ok, f"examples/typescript: {installed.explain()}"
    return sdks.TYPESCRIPT


@pytest.fixture(scope="module")
def go_example(schema_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    generated = sdks.generate(schema_file, "go", sdks.GO, tmp_path_factory.mktemp("sdk"))
    assert generated.ok, f"examples/go: the Go SDK did not generate.\n{generated.explain()}"
    return sdks.GO


def test_the_typescript_example_compiles_against_the_generated_sdk(typescript_example: Path):
    step = sdks.tsc(typescript_example)
    assert step.ok, f"examples/typescript does not compile (tsc --noEmit, strict):\n{step.explain()}"


def test_a_wrong_type_in_the_typescript_example_fails_tsc_naming_the_property(typescript_example: Path, tmp_path: Path):
    broken = sdks.broken_typescript_copy(tmp_path, ("gpusPerNode: 8,", 'gpusPerNode: "four",'))
    # The libraries' declarations were checked by the test above; only the program's own errors count here.
    step = sdks.tsc(broken, "--skipLibCheck")
    assert not step.ok, f'tsc accepted gpusPerNode: "four" in a copy of examples/typescript:\n{step.output}'
    line = sdks.line_of(broken / "index.ts", 'gpusPerNode: "four"')
    errors = sdks.errors_at(step.output, "index.ts")
    assert list(errors) == [line], f"tsc's errors are not (only) at gpusPerNode, line {line}:\n{step.output}"
    says_number = any("'number'" in e or "<number>" in e for e in errors[line])
    assert says_number, f"tsc does not say gpusPerNode takes a number:\n{step.output}"


def test_the_go_example_builds_against_the_generated_sdk(go_example: Path, schema_file: Path, tmp_path: Path):
    step = sdks.go_build(go_example, tmp_path)
    assert step.ok, f"examples/go does not build:\n{step.explain()}{sdks.go_sdk_hint(step, schema_file)}"


def test_a_wrong_type_in_the_go_example_fails_the_build_naming_the_field(go_example: Path, tmp_path: Path):
    broken = sdks.broken_go_copy(tmp_path / "src", ("GpusPerNode: 8,", 'GpusPerNode: "four",'))
    step = sdks.go_build(broken, tmp_path / "out")
    assert not step.ok, f'go build accepted GpusPerNode: "four" in a copy of examples/go:\n{step.output}'
    line = sdks.line_of(broken / "main.go", 'GpusPerNode: "four"')
    errors = sdks.errors_at(step.output, "main.go")
    assert list(errors) == [line], f"go build's errors are not (only) at GpusPerNode, line {line}:\n{step.output}"
    says_int = any(re.search(r"\bint\b|IntInput", e) for e in errors[line])
    assert says_int, f"go does not say GpusPerNode takes an int:\n{step.output}"
