"""The command itself: bad input refused before any stack runs, no traceback; the stack files it writes."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from pulumi import automation as auto

from gpu_nodes.cli.main import main, parser
from gpu_nodes.cli.plan import plan_fleet
from gpu_nodes.cli.stack_files import header, managed_settings, write_stack_file
from gpu_nodes.proof.checklist import plugin_problem
from tests.cli.events import error, outputs
from tests.cli.fleets import ROOT, fleet, fleet_raw, group
from tests.cli.reports import ctrf_errors, entry, stays_gated
from tests.fakes import target

# The module itself: the package's `main` is its function.
main_module = importlib.import_module("gpu_nodes.cli.main")


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


# --- the reports: `fleet report --format`, `fleet up --ctrf`, and `gpu-nodes report` for one stack


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["fleet", "report"], {"format": "table", "out": None, "json": None}),
        (["fleet", "report", "--format", "ctrf", "--out", "r.json"], {"format": "ctrf", "out": Path("r.json")}),
        (["fleet", "up", "--ctrf", "-"], {"ctrf": Path("-")}),
        (["report"], {"source": Path("-"), "format": "table", "stack": None, "out": None}),
        (
            ["report", "ng.json", "--format", "ctrf", "--stack", "prod"],
            {"source": Path("ng.json"), "format": "ctrf", "stack": "prod"},
        ),
    ],
    ids=["fleet-report", "fleet-report-ctrf", "fleet-up-ctrf", "report", "report-ctrf"],
)
def test_the_report_options(argv: list[str], expected: dict):
    args = vars(parser().parse_args(argv))
    assert {key: args[key] for key in expected} == expected, args


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["fleet", "report", "--format", "junit"], "invalid choice: 'junit' (choose from 'table', 'ctrf')"),
        (["fleet", "drift", "--ctrf", "d.json"], "unrecognized arguments: --ctrf d.json"),
        (["report", "--stack", ""], "expected the stack's name, not an empty string"),
    ],
    ids=["unknown-format", "ctrf-on-drift", "empty-stack"],
)
def test_the_report_options_refuse_what_they_do_not_take(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(argv)
    assert exit_.value.code == 2 and expected in capsys.readouterr().err


def gpu_nodes_report(*argv: str, stdin: str = "", cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpu_nodes.cli", "report", *argv], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
    )


# A real run's `pulumi stack output nodeGroups --json` (tests/cli/fixtures/README.md).
RECORDED = ROOT / "tests/cli/fixtures/node-groups-local.json"


def test_one_stacks_report_read_from_stdin_is_written_as_ctrf():
    run = gpu_nodes_report("--format", "ctrf", "--stack", "local", stdin=RECORDED.read_text())
    written = json.loads(run.stdout)
    assert run.returncode == 0 and ctrf_errors(written) == [], f"exit {run.returncode}: {run.stderr}"
    assert [t["name"] for t in written["results"]["tests"]][-1] == "local/local-gpu/gpu-node-3: gate", written


def test_one_stacks_report_is_the_table_by_default():
    run = gpu_nodes_report(str(RECORDED))
    lines = run.stdout.splitlines()
    assert run.returncode == 0 and lines[0].split()[:2] == ["GROUP", "NODE"], run.stdout
    assert [line.split()[:3] for line in lines[1:]] == [["local-gpu", f"gpu-node-{i}", "passed"] for i in (1, 2, 3)], run.stdout


def test_out_writes_the_report_to_its_file_and_nothing_to_stdout(tmp_path: Path):
    run = gpu_nodes_report("--format", "ctrf", "--out", str(tmp_path / "r.json"), stdin=json.dumps({"h100": {"gpu-01": entry()}}))
    assert run.returncode == 0 and run.stdout == "", run.stdout
    assert ctrf_errors(json.loads((tmp_path / "r.json").read_text())) == []


@pytest.mark.parametrize(("gate", "code"), [("lifted", 0), ("up", 1)])
def test_one_stacks_report_exits_non_zero_when_a_node_is_out_of_service(gate: str, code: int):
    report = {"h100": {"gpu-01": entry(), "gpu-02": entry(gate=gate)}}
    assert gpu_nodes_report("--format", "ctrf", stdin=json.dumps(report)).returncode == code


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        ("Outputs:\n    nodeGroups: {...}", "stdin: invalid nodeGroups output:\n  - not JSON: Expecting value: line 1 column 1"),
        ("[1, 2]", "got [1, 2]; expected an object of group: {node: its report}"),
        (
            '{"nodeGroups": {}, "tenantAccess": {}}',
            "got all the stack's outputs; expected one, `pulumi stack output nodeGroups --json`",
        ),
        ('{"h100": ["gpu-01"]}', "h100: got ['gpu-01']; expected an object of node: its report"),
        ('{"h100": {"gpu-01": "pass"}}', "h100.gpu-01: got 'pass'; expected the node's report, an object"),
        (
            '{"h100": {"gpu-01": {"checklist": ["labelled"]}}}',
            "h100.gpu-01.checklist: got ['labelled']; expected an object of item",
        ),
        ('{"h100": {"gpu-01": {"measured": 230.1}}}', "h100.gpu-01.measured: got 230.1; expected an object or null"),
        ('{"h100": {"gpu-01": {"gate": true}}}', "h100.gpu-01.gate: got True; expected lifted or up"),
    ],
    ids=[
        "not-json",
        "a-list",
        "every-output",
        "group-a-list",
        "node-a-string",
        "checklist-a-list",
        "measured-a-number",
        "gate-a-bool",
    ],
)
def test_a_report_that_is_not_a_nodegroups_output_is_refused_without_a_traceback(stdin: str, expected: str):
    run = gpu_nodes_report("--format", "ctrf", stdin=stdin)
    assert run.returncode == 2 and expected in run.stderr and run.stdout == "", f"exit {run.returncode}: {run.stderr}"
    assert run.stderr.startswith("gpu-nodes report: ") and "Traceback" not in run.stderr, run.stderr


def test_a_report_file_that_cannot_be_read_is_named(tmp_path: Path):
    run = gpu_nodes_report(str(tmp_path / "nope.json"))
    assert run.returncode == 2 and f"{tmp_path / 'nope.json'}: invalid nodeGroups output:\n  - cannot read it" in run.stderr, (
        run.stderr
    )


def test_a_fleet_reports_ctrf_and_its_json_both_on_stdout_are_refused():
    run = subprocess.run(
        [sys.executable, "-m", "gpu_nodes.cli", "fleet", "report", "--format", "ctrf", "--json", "-"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "--json - and the CTRF report would both go to stdout" in run.stderr, run.stderr


class Workspace:
    """What the command asks of Pulumi's LocalWorkspace for a report: each stack's outputs (a stack never
    deployed has none) and its state."""

    def __init__(self, outputs: dict[str, dict]) -> None:
        self.outputs = outputs

    def stack_outputs(self, stack: str) -> dict[str, auto.OutputValue]:
        found = self.outputs.get(stack)
        return {"nodeGroups": auto.OutputValue(found, secret=False)} if found is not None else {}

    def export_stack(self, stack: str) -> auto.Deployment:
        return auto.Deployment(version=3, deployment={"resources": []})


def use_workspace(monkeypatch: pytest.MonkeyPatch, outputs: dict[str, dict]) -> None:
    monkeypatch.setattr(auto, "LocalWorkspace", lambda work_dir: Workspace(outputs))


def test_the_fleet_report_as_ctrf_has_every_node_of_the_fleet(tmp_path: Path, monkeypatch, capsys):
    use_workspace(monkeypatch, {"a": {"a": {"n1": entry(), "n2": entry(gate="up", gpusRegistered="fail")}}})
    path = write_fleet(tmp_path, fleet_raw(group("a", "n1", "n2"), group("b", "n3")))
    code = main(["fleet", "report", "-f", str(path), "--format", "ctrf"])
    written = json.loads(capsys.readouterr().out)
    assert code == 1 and ctrf_errors(written) == [], written
    failed = [(t["name"], t.get("message", "")[:10]) for t in written["results"]["tests"] if t["status"] == "failed"]
    assert failed == [("a/a/n2: gpusRegistered", "fail in th"), ("a/a/n2: gate", "the readin"), ("b/b/n3: gate", "no report:")], (
        failed
    )


def test_fleet_up_writes_ctrf_naming_each_item_a_node_failed_on(tmp_path: Path, monkeypatch):
    """The node's failure comes as the engine's diagnostic on its readiness check; the stack's output after
    a failed `up` is the one its last update wrote (here: everything passed)."""
    problem = str(plugin_problem(target(), []))
    stale = {"b": {"n3": entry()}}

    def run_stack(stack, command, progress, log_dir, options, digest=""):
        progress.start(command)
        if progress.name == "a":
            progress.on_event(outputs("create", "a-n1-readiness"))
            progress.outputs = {"a": {"n1": entry()}}
            progress.finish(True)
            return True
        progress.on_event(error(stays_gated("n3", [("pluginRunning", problem)]), "b-n3-readiness"))
        progress.finish(False, "pulumi up exited 255")
        return False

    use_workspace(monkeypatch, {"b": stale})
    monkeypatch.setattr(main_module, "prepare_stack", lambda *args, **kwargs: object())
    monkeypatch.setattr(main_module, "deployment_digests", lambda program, files: {})
    monkeypatch.setattr(main_module, "run_stack", run_stack)
    path = write_fleet(tmp_path, fleet_raw(group("a", "n1"), group("b", "n3")))
    code = main(["fleet", "up", "-f", str(path), "--log-dir", str(tmp_path / "logs"), "--ctrf", str(tmp_path / "up.json")])
    written = json.loads((tmp_path / "up.json").read_text())
    assert code == 1 and ctrf_errors(written) == [], written
    failed = {t["name"]: t["message"] for t in written["results"]["tests"] if t["status"] == "failed"}
    assert failed == {
        "b/b/n3: pluginRunning": problem,
        "b/b/n3: gate": "node n3 stays gated (gpu-nodes.dev/unverified=true:NoSchedule) after 630s; what failed:",
    }, failed
    summary = written["results"]["summary"]
    assert summary["passed"] == 10 and summary["start"] <= summary["stop"], summary
