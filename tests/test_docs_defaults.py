"""Every default README.md and docs/ quote is the code's: the images and namespaces a group gets when
it says nothing, the labels and taint, the tenant path, and the dependency floors docs/own-program.md
lists. The reference tables of docs/configuration.md are checked against the declarations on their
own (tests/config/test_docs.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from gpu_nodes.config.device_plugin import DEFAULT_DEVICE_PLUGIN_IMAGE, DEFAULT_DEVICE_PLUGIN_NAMESPACE
from gpu_nodes.config.node_group import DEFAULT_LABELS, DEFAULT_TAINTS
from gpu_nodes.config.stack import parse_stack
from gpu_nodes.config.verification import DEFAULT_CUDA_IMAGE, DEFAULT_VERIFICATION_IMAGE
from gpu_nodes.manifests.dra_driver import RELEASE
from gpu_nodes.vocabulary import GROUP_LABEL
from tests.factories import group
from tests.pulumi_mocks import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README = (ROOT / "README.md").read_text()
# An image reference as the docs write one: registry/path:tag.
IMAGE = re.compile(r"\b((?:nvcr\.io|registry\.k8s\.io)/[a-z0-9./_-]+):([A-Za-z0-9._-]+)")
DRA_DRIVER_IMAGE = f"{RELEASE.repository}:v{RELEASE.version}"
# Each repository gpu-nodes deploys from, and the image it deploys when a group says nothing.
DEFAULT_IMAGES = {
    image.rsplit(":", 1)[0]: image
    for image in (DEFAULT_DEVICE_PLUGIN_IMAGE, DEFAULT_VERIFICATION_IMAGE, DEFAULT_CUDA_IMAGE, DRA_DRIVER_IMAGE)
}
# Images of those repositories the docs quote that are not ours, each with what it is there.
NOT_OURS = {
    # Someone else's device plugin, in the message a claim stops the run with.
    ("what-it-creates.md", "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"),
    # Someone else's DRA driver, in the same message.
    ("what-it-creates.md", "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"),
    # A tenant's own pod, which asks for a GPU through a claim.
    ("dra.md", "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"),
}


def quoted_images() -> set[tuple[str, str]]:
    return {(page.name, f"{m[1]}:{m[2]}") for page in PAGES for m in IMAGE.finditer(page.read_text()) if m[1] in DEFAULT_IMAGES}


def test_every_image_of_ours_the_docs_quote_is_the_default():
    quoted = quoted_images()
    stale = sorted((page, image) for page, image in quoted - NOT_OURS if image != DEFAULT_IMAGES[image.rsplit(":", 1)[0]])
    assert not stale, f"images quoted as ours that are not the code's defaults {sorted(DEFAULT_IMAGES.values())}: {stale}"
    assert quoted >= NOT_OURS, f"NOT_OURS names quotes the docs no longer have: {sorted(NOT_OURS - quoted)}"


def test_the_readmes_defaults_are_the_codes():
    said = re.search(r"Everything else has a default: (.*?)\. The\n", README, re.S)
    assert said, "README.md: no 'Everything else has a default' paragraph"
    text = " ".join(said[1].split())
    assert f"the device plugin `{DEFAULT_DEVICE_PLUGIN_IMAGE}` in namespace `{DEFAULT_DEVICE_PLUGIN_NAMESPACE}`" in text, text
    access = parse_stack([group("a100")]).node_groups[0].gpu_access
    assert f"`gpuAccess: {access}`" in text, text


def test_the_readmes_labels_and_taint_are_the_defaults():
    labels = ", ".join(f"`{key}={value}`" for key, value in DEFAULT_LABELS.items())
    said = f"labels its nodes ({labels} and `{GROUP_LABEL}=<group>`)"
    assert said in " ".join(README.split()), f"README.md: the default labels are {labels}, with the group's"
    assert f"taints them (`{DEFAULT_TAINTS[0]}`)" in README, f"README.md: the default taint is {DEFAULT_TAINTS[0]}"


def floors() -> dict[str, str]:
    """pyproject.toml's floor of each dependency, by name."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = {}
    for line in pyproject["project"]["dependencies"]:
        requirement = Requirement(line)
        found[requirement.name] = next(s.version for s in requirement.specifier if s.operator == ">=")
    return found


@pytest.mark.parametrize("name", sorted(floors()))
def test_the_versions_section_quotes_each_floor(name):
    section = (ROOT / "docs/own-program.md").read_text().split("## Versions", 1)[1].split("\n## ", 1)[0]
    versions = " ".join(section.split())
    quoted = re.search(rf"`{re.escape(name)}`(?: \(the API client\))? from ([0-9.]+)", versions, re.I)
    assert quoted, f"docs/own-program.md, Versions: no floor quoted for {name}"
    floor = floors()[name]
    assert quoted[1] == floor, f"docs/own-program.md, Versions: {name} from {quoted[1]}, pyproject.toml >={floor}"


def test_the_readme_names_the_docs_pages_it_points_to():
    """Where README.md sends a reader for the versions, the page has that section."""
    assert "docs/own-program.md#versions" in README and "## Versions" in Path(ROOT / "docs/own-program.md").read_text()
