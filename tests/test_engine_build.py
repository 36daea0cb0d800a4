"""tools/engine: builds from the upstream snapshots are keyed by the archive, and a missing
archive stops the build naming the file (no Go build runs in these tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = "pulumi-command-v1.2.1.tar.gz"


def engine(upstream: Path, cache: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPU_NODES_UPSTREAM": str(upstream), "GPU_NODES_CACHE": str(cache)}
    return subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def command_bin_dir(upstream: Path, cache: Path) -> str:
    return engine(upstream, cache, "source tools/engine/versions.sh && echo $ENGINE_COMMAND_PROVIDER_BIN_DIR").stdout.strip()


def test_a_missing_archive_stops_the_build_naming_the_file(tmp_path: Path):
    result = engine(tmp_path / "nowhere", tmp_path / "cache", "tools/engine/build.sh command")
    assert result.returncode == 1, result
    missing = tmp_path / "nowhere" / ARCHIVE
    assert f"pulumi-resource-command: NOT BUILT: missing upstream archive {missing}" in result.stdout, result


def test_a_new_archive_is_a_new_build(tmp_path: Path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / ARCHIVE).write_bytes(b"one snapshot")
    first = command_bin_dir(upstream, tmp_path)
    (upstream / ARCHIVE).write_bytes(b"another snapshot")
    second = command_bin_dir(upstream, tmp_path)
    assert first.startswith(f"{tmp_path}/pulumi-resource-command-1.2.1-"), first
    assert first != second, f"the same cache folder {first} for two different archives"
