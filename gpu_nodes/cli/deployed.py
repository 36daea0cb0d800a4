"""What a stack's last `gpu-nodes fleet up` deployed from, so that a drift check can skip the preview.

`pulumi preview --expect-no-changes` compares the program's code and config with the stack's state;
`pulumi refresh --preview-only --expect-no-changes` compares the state with the cluster. When
neither the program nor the stack's settings changed since the update that wrote the state, the
preview can only agree, and the refresh alone answers whether the cluster moved: at 100 nodes the
preview is half a drift check's work (bench/README.md, "Where a drift check's work goes").

A successful `fleet up` keeps, as a stack tag, the update's number and a digest of what it ran:
the program directory's sources, the gpu-nodes package it ran with, the Pulumi SDKs' versions and
the config of the stack's settings file (secrets as their ciphertext there, which `prepare_stack`
rewrites only when a secret's value changes). A drift check skips the preview only when the stack's last update is
that one and succeeded, and the digest is the same now. Anything else (another update since, a
failed one, a tag a plain `pulumi up` left behind, no tag) runs both checks, as before.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

TAG = "gpu-nodes:deployed"
# The program's own sources: what it runs and what decides its dependencies.
SOURCE_SUFFIXES = (".py", ".sh")
SOURCE_NAMES = ("Pulumi.yaml", "PulumiPlugin.yaml", "requirements.txt", "pyproject.toml")
# The gpu-nodes package this command runs with, which the program imports.
PACKAGE = Path(__file__).resolve().parent.parent
# Folders of a program directory that hold no source of it (virtualenvs, state, caches, logs).
SKIPPED_DIRS = ("node_modules", "__pycache__", "fleet-logs", "build")
SDKS = ("pulumi", "pulumi-kubernetes", "pulumi-command")


def _sources(root: Path) -> list[Path]:
    """The program's source files under root, in path order; skipped folders are not entered."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (d.startswith(".") or d in SKIPPED_DIRS or d.endswith(".egg-info"))]
        found += [Path(folder, name) for name in files if Path(name).suffix in SOURCE_SUFFIXES or name in SOURCE_NAMES]
    return sorted(path for path in found if path.is_file())


def _sdk_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def deployment_digests(program: Path, stack_files: Mapping[str, Path]) -> dict[str, str]:
    """For each stack, a digest of what an `up` of it runs: the program, the package and the SDKs,
    read once for all, and the stack's settings."""
    shared = hashlib.sha256()
    roots = [program.resolve()] + ([PACKAGE] if not PACKAGE.is_relative_to(program.resolve()) else [])
    for root in roots:
        for path in _sources(root):
            shared.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in SDKS:
        shared.update(f"{name}={_sdk_version(name)}\0".encode())
    digests = {}
    for stack, stack_file in stack_files.items():
        digest = shared.copy()
        digest.update(json.dumps(stack_settings(stack_file), sort_keys=True).encode())
        digests[stack] = digest.hexdigest()
    return digests


def stack_settings(stack_file: Path) -> object:
    """The stack's config as its file holds it: the settings the program reads, a secret as its
    ciphertext. Not the rest of the file, which the CLI rewrites as it sees fit (the secrets
    provider's salt, formatting), nor its header."""
    settings = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else None
    return settings.get("config") if isinstance(settings, dict) else None


@dataclass(frozen=True)
class Deployed:
    """What the tag says: the update that deployed the stack, and the digest of what it ran."""

    version: int
    digest: str

    def tag(self) -> str:
        return f"{self.version} {self.digest}"

    @classmethod
    def from_tag(cls, text: str | None) -> Deployed | None:
        version, _, digest = (text or "").partition(" ")
        return cls(int(version), digest) if version.isdigit() and digest else None


def why_preview(deployed: Deployed | None, last_version: int | None, last_result: str | None, digest: str) -> str:
    """Why a drift check must run the preview; "" when the refresh alone answers it."""
    if deployed is None:
        return f"no {TAG} tag: the stack was not deployed by gpu-nodes fleet up"
    if last_version != deployed.version:
        return f"the stack's last update is {last_version}, not update {deployed.version} that the tag records"
    if last_result != "succeeded":
        return f"its last update {last_version} {last_result or 'has no result'}"
    if digest != deployed.digest:
        return "the program, the gpu-nodes package, the SDKs or the stack's settings changed since that update"
    return ""
