"""What a stack's last `fleet up` ran, as a digest: it moves with the program, the package and the
stack's settings, and not with what a program directory holds beside its sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_nodes.cli.deployed import Deployed, deployment_digests, why_preview


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: gpus\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("print('fleet')\n")
    (tmp_path / "Pulumi.rack-a.yaml").write_text("config:\n  gpu-nodes:nodeGroups: []\n")
    return tmp_path


def digest(program: Path) -> str:
    return deployment_digests(program, {"rack-a": program / "Pulumi.rack-a.yaml"})["rack-a"]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("__main__.py", "print('fleet, changed')\n"),
        ("racks/rack.py", "RACK = 1\n"),
        ("Pulumi.yaml", "name: gpus\nruntime: python\ndescription: x\n"),
        ("Pulumi.rack-a.yaml", "config:\n  gpu-nodes:nodeGroups: [{}]\n"),
        ("requirements.txt", "gpu-nodes==0.4.0\n"),
    ],
)
def test_the_digest_moves_with_what_an_up_runs(program: Path, path: str, text: str):
    before = digest(program)
    (program / path).parent.mkdir(parents=True, exist_ok=True)
    (program / path).write_text(text)
    assert digest(program) != before, f"{path} changed and the digest did not"


@pytest.mark.parametrize(
    "path",
    [".venv/lib/site.py", ".state/e2e.json", "fleet-logs/rack-a.up.log", "__pycache__/x.py", "notes.md", "Pulumi.rack-b.yaml"],
)
def test_the_digest_stays_with_what_an_up_does_not_run(program: Path, path: str):
    before = digest(program)
    (program / path).parent.mkdir(parents=True, exist_ok=True)
    (program / path).write_text("anything\n")
    assert digest(program) == before, f"{path} changed the digest"


def test_the_digest_reads_the_stack_file_s_config_not_what_the_cli_writes_beside_it(program: Path):
    before = digest(program)
    stack_file = program / "Pulumi.rack-a.yaml"
    stack_file.write_text("# Managed by gpu-nodes fleet\nencryptionsalt: v1:abc\n" + stack_file.read_text())
    assert digest(program) == before, stack_file.read_text()


def test_the_tag_reads_back_what_it_wrote_and_nothing_else():
    assert Deployed.from_tag(Deployed(3, "abc").tag()) == Deployed(3, "abc")
    for text in (None, "", "abc", "3", "x abc"):
        assert Deployed.from_tag(text) is None, text


def test_the_preview_is_needed_unless_everything_matches():
    deployed = Deployed(3, "abc")
    assert why_preview(deployed, 3, "succeeded", "abc") == ""
    assert why_preview(None, 3, "succeeded", "abc"), "no tag"
    assert why_preview(deployed, 4, "succeeded", "abc"), "another update since"
    assert why_preview(deployed, 3, "failed", "abc"), "that update failed"
    assert why_preview(deployed, 3, "succeeded", "abd"), "the program changed"
