"""The container-toolkit check (40-check-toolkit.sh): nvidia-ctk's version, and with --min-toolkit
at least that version (releases before 1.17.8 are open to CVE-2025-23266)."""

from __future__ import annotations

import pytest

from .check_cases import CheckCase, run_case
from .preflight_node import FAILED_EXIT, PASSED_EXIT, FakeNode

# The first line nvidia-ctk --version prints, as in NVIDIA/nvidia-container-toolkit issue 50.
CTK_1_12 = 'echo "NVIDIA Container Toolkit CLI version 1.12.0"; echo "commit: 62bd015475656ef795cb0d59cc4030a6bd4a9526"'


def runtime_without_ctk(node: FakeNode) -> None:
    node.drop_command("nvidia-ctk")
    node.command("nvidia-container-runtime", "exit 0")


CASES = [
    CheckCase(
        "the version is reported",
        exit=PASSED_EXIT,
        ok=True,
        detail="nvidia-ctk: NVIDIA Container Toolkit CLI version 1.17.8",
    ),
    CheckCase(
        "a missing toolkit fails",
        lambda node: node.drop_command("nvidia-ctk"),
        exit=FAILED_EXIT,
        ok=False,
        starts="neither nvidia-ctk nor nvidia-container-runtime is on PATH",
    ),
    CheckCase(
        "a toolkit at the minimum passes",
        args=("--min-toolkit", "1.17.8"),
        ok=True,
        detail="nvidia-ctk: NVIDIA Container Toolkit CLI version 1.17.8 (>= 1.17.8)",
    ),
    CheckCase(
        "a toolkit open to the CVE fails naming it",
        lambda node: node.command("nvidia-ctk", CTK_1_12),
        ("--min-toolkit", "1.17.8"),
        exit=FAILED_EXIT,
        ok=False,
        says=("version 1.12.0 < 1.17.8: releases before 1.17.8 are open to CVE-2025-23266",),
        ends="upgrade the NVIDIA Container Toolkit",
    ),
    CheckCase(
        "a higher minimum names no CVE for a patched toolkit",
        args=("--min-toolkit", "1.18.0"),
        ok=False,
        says=("1.17.8 < 1.18.0; upgrade",),
        never=("CVE",),
    ),
    CheckCase(
        "a toolkit of unknown version fails a minimum",
        runtime_without_ctk,
        ("--min-toolkit", "1.17.8"),
        ok=False,
        says=("its version is unknown: install nvidia-ctk 1.17.8 or later",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_container_toolkit_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "container-toolkit")


# ------------------------------------------- the toolkit's config.toml, read for other checks

NOBODY = 65534


def test_a_config_toml_that_may_not_be_read_is_named_by_every_check_that_reads_it(open_node: FakeNode) -> None:
    """toolkit_config serves the CUDA and the cdi-generation checks (the toolkit's mode) and the
    isolation check (its hardening): none takes a file it may not read for a missing one, the
    toolkit's defaults."""
    (open_node.root / "etc/nvidia-container-runtime/config.toml").chmod(0o600)
    # An image for a newer CUDA than the driver's (12.4): the CUDA check then asks the toolkit's mode.
    result = open_node.preflight("--min-cuda", "13.0", env={"USER": "nobody"}, uid=NOBODY)
    unreadable = "cannot read /etc/nvidia-container-runtime/config.toml as user nobody"
    assert unreadable in result.check("cuda")["detail"], result.check("cuda")
    assert "the toolkit's mode is unknown" in result.check("cuda")["detail"], result.check("cuda")
    isolation = result.check("isolation")
    assert isolation["ok"] is False and unreadable in isolation["detail"], isolation
    generation = result.check("cdi-generation")
    assert generation["ok"] is False and unreadable in generation["detail"], generation
