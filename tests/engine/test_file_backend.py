"""The file backend's sidecars and a killed run. Real engine; no cluster or machine needed.

Without `?metadata=skip`, each state save truncates and rewrites `<stack>.json.attrs` before it
renames the new state into place (gocloud.dev blob/fileblob fileblob.go, writerWithSidecar.Close,
and attrs.go, setAttrs); every read decodes that sidecar (getAttrs). A run killed between the two
leaves it empty. Pulumi's file backend never uses what it holds (pkg/backend/diy reads no blob
attributes), so the local stacks skip it (tools/local/env.sh) and docs/operations.md tells operators.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.project import STACK, new_project

pytestmark = pytest.mark.engine

PROGRAM = """
import pulumi

pulumi.export("greeting", "hello")
"""
PROJECT = "file-backend-test"


def sidecars(backend: Path) -> list[str]:
    return sorted(str(p.relative_to(backend)) for p in backend.rglob("*.attrs"))


def test_a_sidecar_left_empty_by_a_killed_save_stops_every_command_until_it_is_removed(tmp_path):
    project = new_project(tmp_path, PROGRAM, name=PROJECT)
    backend = tmp_path / "backend"
    project.env["PULUMI_BACKEND_URL"] = f"file://{backend}"  # the file backend's default: sidecars
    project.up()
    sidecar = backend / f".pulumi/stacks/{PROJECT}/{STACK}.json.attrs"
    assert sidecar.exists(), f"no sidecar written: {sidecars(backend)}"

    sidecar.write_text("")  # what a kill between setAttrs's create and its write leaves
    broken = project.pulumi("stack", "export", check=False)
    assert broken.returncode != 0 and "failed to load checkpoint: EOF" in broken.stderr, broken.stderr

    sidecar.unlink()  # docs/operations.md's step: the backend never reads what it held
    project.pulumi("stack", "export")
    project.up()


def test_the_local_stacks_backend_writes_no_sidecar(tmp_path):
    project = new_project(tmp_path, PROGRAM, name=PROJECT)
    assert project.env["PULUMI_BACKEND_URL"].endswith("?metadata=skip"), project.env["PULUMI_BACKEND_URL"]
    project.up()
    project.up()
    backend = tmp_path / "backend"
    assert (backend / f".pulumi/stacks/{PROJECT}/{STACK}.json").exists(), "the stack's state is not where expected"
    assert sidecars(backend) == [], f"sidecars written: {sidecars(backend)}"
