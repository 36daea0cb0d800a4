"""The command itself: bad input refused before any stack runs, no traceback; the stack files it writes."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from gpu_nodes.cli.main import parser
from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.cli.stack_files import header, managed_settings, write_stack_file
from tests.cli.fleets import ROOT, fleet, fleet_raw, group


def write_fleet(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (fleet_raw(group("a", "n1"), group("b", "n1")), "a node may belong to one group only"),
        (fleet_raw(group("a", "n1"), stacks={"rack a": ["a"]}), "stack name 'rack a'"),
        (fleet_raw(group("a", "n1"), owner=["a"]), "owner: got ['a']; expected a string"),
        (
            fleet_raw(
                group("a", "n1"),
                group("b", "n2", verification={"namespace": "v-bc"}),
                group("c", "n3", verification={"namespace": "v-bc"}),
            ),
            "namespace 'v-bc': used by groups b (stack b), c (stack c)",
        ),
    ],
    ids=["node-in-two-groups", "stack-name", "owner-a-list", "namespace-another-stack-owns"],
)
def test_bad_input_is_refused_before_any_stack_runs_without_a_traceback(tmp_path: Path, raw: dict, expected: str):
    path = write_fleet(tmp_path, raw)
    # No Pulumi CLI on PATH: the command must stop before it would need one.
    run = subprocess.run(
        [sys.executable, "-m", "gpu_nodes.cli", "fleet", "up", "-f", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent", "HOME": str(tmp_path)},
        timeout=60,
    )
    assert run.returncode == 2 and expected in run.stderr, f"exit {run.returncode}: {run.stderr}"
    assert "Traceback" not in run.stderr, run.stderr
    assert not list(ROOT.glob("Pulumi.rack*.yaml")) and not (tmp_path / "fleet-logs").exists()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("repository: [a, b\n", "operator.yaml: invalid operator settings:\n  - not YAML"),
        (
            "repository: https://git.example.com/p.git\nbackend: s3://state\nenv: {PULUMI_CONFIG_PASSPHRASE: 5}\n",
            "env.PULUMI_CONFIG_PASSPHRASE: got 5; expected an object",
        ),
    ],
    ids=["not-yaml", "env-value-a-number"],
)
def test_bad_operator_settings_are_refused_without_a_traceback(tmp_path: Path, settings: str, expected: str):
    path = write_fleet(tmp_path, fleet_raw(group("a", "n1")))
    (tmp_path / "operator.yaml").write_text(settings)
    run = subprocess.run(
        [sys.executable, "-m", "gpu_nodes.cli", "fleet", "export", "-f", str(path), "--operator"]
        + ["--operator-settings", str(tmp_path / "operator.yaml"), "--out", str(tmp_path / "out.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and expected in run.stderr, f"exit {run.returncode}: {run.stderr}"
    assert "Traceback" not in run.stderr and not (tmp_path / "out.yaml").exists(), run.stderr


def test_a_missing_fleet_file_is_named(tmp_path: Path):
    run = subprocess.run(
        [sys.executable, "-m", "gpu_nodes.cli", "fleet", "drift", "-f", str(tmp_path / "nope.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "nope.yaml: invalid fleet file" in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_the_package_declares_the_gpu_nodes_command():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"gpu-nodes": "gpu_nodes.cli:main"}, scripts


def test_a_stack_file_says_the_command_manages_it_and_keeps_what_pulumi_wrote(tmp_path: Path):
    read = fleet(group("a", "n1"), group("b", "n2"), secrets={"gpu-nodes:sshPrivateKey": {"env": "K"}})
    stack = plan_fleet(read).stack("b")
    old = {
        "encryptionsalt": "v1:abc",
        "config": {"gpu-nodes:sshPrivateKey": {"secure": "v1:cipher"}, "gpu-nodes:nodeGroups": "hand-edited", "x:y": 1},
    }
    path = tmp_path / "Pulumi.b.yaml"
    write_stack_file(path, read, managed_settings(old, stack, {"gpu-nodes:sshPrivateKey"}))
    text = path.read_text()
    assert text.startswith(header(read)) and "Managed by `gpu-nodes fleet`" in text, text
    written = yaml.safe_load(text)
    assert written["encryptionsalt"] == "v1:abc", written
    assert written["config"]["gpu-nodes:sshPrivateKey"] == {"secure": "v1:cipher"}, written
    assert written["config"]["gpu-nodes:nodeGroups"] == [group("b", "n2")] and "x:y" not in written["config"], written


def test_parallel_defaults_to_the_cores_this_process_may_use():
    args = parser().parse_args(["fleet", "drift"])
    assert args.parallel == len(os.sched_getaffinity(0)) >= 1, args.parallel
