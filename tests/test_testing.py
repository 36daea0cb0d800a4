"""A team's unit tests of its own program: under Pulumi's mocks as its testing guide writes them, and
under gpu_nodes/testing.py's, in an update and in a preview."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from pulumi.runtime.mocks import MockMonitor

from gpu_nodes import GpuFleet, GpuFleetArgs
from gpu_nodes.package.components import GpuNodeGroup
from gpu_nodes.preflight.command import preflight_command
from gpu_nodes.preflight.report import CHECKS, read_report
from gpu_nodes.proof.checklist import CHECKLIST_ITEMS, DIAGNOSTICS_PASSED
from gpu_nodes.testing import HEALTHY_MODEL, GpuNodesMocks, expected_gpus, failing_report, healthy_report
from gpu_nodes.vocabulary import GFD_COUNT_LABEL, GFD_PRODUCT_LABEL
from tests.factories import SSH_KEY, group
from tests.specs import group_spec

COMMAND = "command:remote:Command"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
JOB = "kubernetes:batch/v1:Job"
NODE_PATCH = "kubernetes:core/v1:NodePatch"


class GuideMocks(pulumi.runtime.Mocks):
    """Pulumi's testing guide's mocks, as it writes them (pulumi/examples testing-unit-py/test_ec2.py):
    every resource's outputs are its inputs."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> Any:
        return [args.name + "_id", args.inputs]

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}


class Run:
    """One program run in a fresh mock runtime: what it registered and what it returned."""

    def __init__(self, mocks: pulumi.runtime.Mocks, program: Callable[[], Any], preview: bool) -> None:
        self.monitor = MockMonitor(mocks)
        # reset_options forgets the root stack resource (pulumi/runtime/settings.py), so that
        # set_mocks makes a new one for this run (pulumi/runtime/mocks.py, set_mocks).
        pulumi.runtime.reset_options()
        pulumi.runtime.set_mocks(mocks, preview=preview, monitor=self.monitor)
        scope: dict[str, Any] = {}

        @pulumi.runtime.test
        def run() -> None:
            scope["result"] = program()

        run()
        self.result = scope["result"]

    def of_type(self, typ: str) -> dict[str, dict[str, Any]]:
        """What each resource of the type returned as its outputs, by name (`urn:...::<name>`)."""
        registered = self.monitor.get_registered_resources().values()
        return {r.urn.rsplit("::", 1)[1]: r.state for r in registered if f"::{typ}::" in r.urn or f"${typ}::" in r.urn}

    def value(self, output: Any) -> tuple[bool, Any]:
        """Whether the Output is known, and its value; Pulumi runs no apply on an unknown
        (pulumi/output.py, `apply`), as in a preview of a value not yet known."""
        found: list[Any] = []

        @pulumi.runtime.test
        def wait() -> Any:
            return pulumi.Output.from_input(output).apply(found.append)

        wait()
        return (True, found[0]) if found else (False, None)


def fleet(**raw: Any) -> Callable[[], GpuFleet]:
    """A program with one fleet of group a100 (preflight on, as by default), given to a provider of its own."""

    def program() -> GpuFleet:
        cluster = pulumi.ProviderResource("kubernetes", "cluster", {})
        args = GpuFleetArgs(node_groups=[group("a100", gpusPerNode=8, **raw)], ssh_private_key=pulumi.Output.secret(SSH_KEY))
        return GpuFleet("gpus", args, opts=pulumi.ResourceOptions(provider=cluster))

    return program


def lone_group() -> GpuNodeGroup:
    """The component package's group on its own, as a program in another language asks for it."""
    return GpuNodeGroup("gpus", {**group("a100", gpusPerNode=8), "ssh_private_key": pulumi.Output.secret(SSH_KEY)})


def report_of(run: Run) -> tuple[bool, dict[str, Any]]:
    """Per node, its report: a fleet's `node_groups` of group a100, or a lone group's `nodes`."""
    if isinstance(run.result, GpuFleet):
        known, groups = run.value(run.result.node_groups)
        return known, (groups or {}).get("a100", {})
    return run.value(run.result.nodes)


SUBJECTS = {"a fleet": fleet(), "a group on its own": lone_group}
MODES = {"update": False, "preview": True}


@pytest.mark.parametrize("preview", MODES.values(), ids=list(MODES))
@pytest.mark.parametrize("subject", SUBJECTS.values(), ids=list(SUBJECTS))
def test_with_pulumis_plain_mocks_preflight_on_builds_every_part(subject: Callable[[], Any], preview: bool) -> None:
    run = Run(GuideMocks(), subject, preview)
    commands = run.of_type(COMMAND)
    for role, typ in (("preflight", COMMAND), ("labels", NODE_PATCH)):
        names = sorted(run.of_type(typ))
        assert [name.rsplit("-a100-", 1)[1] for name in names] == [f"node-1-{role}", f"node-2-{role}"], names
    assert all(command.get("stdout") is None for command in commands.values()), commands
    assert [name.endswith("-device-plugin") for name in run.of_type(DAEMON_SET)] == [True], run.of_type(DAEMON_SET)
    assert run.of_type(JOB), "no verification Job registered"


@pytest.mark.parametrize("subject", SUBJECTS.values(), ids=list(SUBJECTS))
def test_with_pulumis_plain_mocks_an_update_reports_each_machine_as_not_checked(subject: Callable[[], Any]) -> None:
    run = Run(GuideMocks(), subject, preview=False)
    known, report = report_of(run)
    assert known and sorted(report) == ["a100-node-1", "a100-node-2"], report
    for node, entry in report.items():
        assert entry["preflight"] == {"checked": False}, f"{node}: {entry}"
        assert GFD_COUNT_LABEL not in entry["labels"], f"{node}: labels from facts no machine gave: {entry['labels']}"
        # The taints and the readiness check answered nothing either: no round, no verdict.
        assert entry["gate"] is None and entry["checklist"] is None, f"{node}: {entry}"


@pytest.mark.parametrize("preview", MODES.values(), ids=list(MODES))
def test_the_helpers_healthy_machines_are_labelled_with_the_gpus_their_group_expects(preview: bool) -> None:
    run = Run(GpuNodesMocks(), fleet(gpuModel="NVIDIA A100-SXM4-80GB"), preview)
    patches = run.of_type(NODE_PATCH)
    assert len(patches) == 2, patches
    for name, patch in patches.items():
        labels = patch["metadata"]["labels"]
        assert (labels[GFD_COUNT_LABEL], labels[GFD_PRODUCT_LABEL]) == ("8", "NVIDIA-A100-SXM4-80GB"), f"{name}: {labels}"


def test_the_helpers_healthy_machines_pass_every_check_and_are_proven() -> None:
    run = Run(GpuNodesMocks(), fleet(gpuModel="NVIDIA A100-SXM4-80GB"), preview=False)
    known, report = report_of(run)
    assert known and sorted(report) == ["a100-node-1", "a100-node-2"], report
    for node, entry in report.items():
        preflight = entry["preflight"]
        assert preflight["passed"] is True and preflight["failedChecks"] == [], f"{node}: {preflight}"
        assert preflight["passedChecks"] == list(CHECKS), f"{node}: {preflight}"
        assert (preflight["gpuCount"], preflight["gpuModels"]) == (8, ["NVIDIA A100-SXM4-80GB"]), f"{node}: {preflight}"
        # The group runs DCGM's diagnostics by default: an item of its checklist too.
        items = [*CHECKLIST_ITEMS, DIAGNOSTICS_PASSED.key]
        assert entry["checklist"] == dict.fromkeys(items, "pass") and entry["gate"] == "lifted", f"{node}: {entry}"


def test_a_preview_knows_no_report_even_of_proven_machines() -> None:
    """A proven node's recovery and quarantine are null, and a preview reads a null output as unknown
    (pulumi/runtime/rpc.py, resolve_properties), under the engine as under the mocks."""
    run = Run(GpuNodesMocks(), fleet(), preview=True)
    known, report = report_of(run)
    assert not known, report


def test_the_helper_fails_the_named_check_on_the_named_machine_only() -> None:
    run = Run(GpuNodesMocks(failing={"a100-node-2": "driver"}), fleet(), preview=False)
    _, report = report_of(run)
    failed, healthy = report["a100-node-2"], report["a100-node-1"]
    assert failed["preflight"]["passed"] is False and failed["preflight"]["failedChecks"] == ["driver"], failed
    # In a real run `pulumi up` stops at that command: no readiness check ever proves the node.
    assert failed["gate"] is None and failed["checklist"] is None, failed
    assert healthy["preflight"]["passed"] is True and healthy["gate"] == "lifted", healthy


@pytest.mark.parametrize("preview", MODES.values(), ids=list(MODES))
def test_the_helpers_unchecked_machine_answers_as_pulumis_plain_mocks_do(preview: bool) -> None:
    run = Run(GpuNodesMocks(unchecked={"a100-node-1"}), fleet(), preview)
    commands = run.of_type(COMMAND)
    assert commands["gpus-a100-a100-node-1-preflight"].get("stdout") is None, commands
    assert read_report(commands["gpus-a100-a100-node-2-preflight"]["stdout"]), commands
    known, report = report_of(run)
    # In a preview a None output is an unknown (pulumi/runtime/rpc.py, resolve_properties): so is the report.
    assert known is not preview, report
    if not preview:
        assert report["a100-node-1"]["preflight"] == {"checked": False}, report
        assert report["a100-node-2"]["preflight"]["passed"] is True, report


def test_a_teams_own_mocks_answer_their_resources_and_leave_the_fleets_to_the_helper() -> None:
    class TeamMocks(pulumi.runtime.Mocks):
        fleet = GpuNodesMocks(failing={"a100-node-1": "cuda"})

        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> Any:
            outputs = self.fleet.outputs(args)
            if args.typ == "kubernetes:apps/v1:DaemonSet":
                outputs["status"] = {"numberReady": 2}
            return [args.name + "_id", outputs]

        def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
            return {}

    run = Run(TeamMocks(), fleet(), preview=False)
    assert run.of_type(DAEMON_SET)["gpus-a100-device-plugin"]["status"] == {"numberReady": 2}
    _, report = report_of(run)
    assert report["a100-node-1"]["preflight"]["failedChecks"] == ["cuda"], report


@pytest.mark.parametrize(
    ("failing", "unchecked", "problem"),
    [
        ({"a100-node-1": "drivers"}, (), "failing['a100-node-1']: got 'drivers'; expected one of the script's checks: driver, "),
        ({"a100-node-1": "driver"}, ("a100-node-1",), "unchecked: got 'a100-node-1', which failing names too"),
    ],
    ids=["an unknown check", "failing and unchecked"],
)
def test_the_helper_refuses_an_answer_it_cannot_give(failing: dict[str, str], unchecked: tuple[str, ...], problem: str) -> None:
    with pytest.raises(ValueError) as refused:
        GpuNodesMocks(failing=failing, unchecked=unchecked)
    assert problem in str(refused.value), str(refused.value)


def test_a_node_is_the_longest_name_given_that_ends_the_resources_name() -> None:
    mocks = GpuNodesMocks(failing={"a-1": "driver", "gpu-a-1": "cuda"})
    assert mocks.node("gpus-rack-gpu-a-1-preflight", "preflight") == "gpu-a-1"
    assert mocks.node("gpus-rack-a-1-preflight", "preflight") == "a-1"
    assert mocks.node("gpus-rack-b-1-preflight", "preflight") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (group("a100"), (4, HEALTHY_MODEL)),
        (group("a100", gpusPerNode=8, gpuModel="NVIDIA H200"), (8, "NVIDIA H200")),
    ],
    ids=["the group's count", "its count and model"],
)
def test_the_helper_reads_the_gpus_a_machine_is_asked_for_from_its_command_line(raw: dict[str, Any], expected: Any) -> None:
    spec = group_spec(raw["name"], raw["nodes"], **{k: v for k, v in raw.items() if k not in ("name", "nodes")})
    assert expected_gpus(preflight_command(spec)) == expected


@pytest.mark.parametrize(
    "report",
    [healthy_report(), healthy_report(8, "NVIDIA B200"), failing_report("gpu-health", 4)],
    ids=["healthy", "eight B200", "failing gpu-health"],
)
def test_the_helpers_reports_read_as_reports(report: dict[str, Any]) -> None:
    """What the helper answers goes through the same reading as a machine's report (preflight/report.py)."""
    assert read_report(json.dumps(report)) == report
    uuids = [gpu["uuid"] for gpu in report["gpus"]]
    assert len(set(uuids)) == len(uuids), uuids


def test_a_failing_report_names_a_check_the_script_runs() -> None:
    with pytest.raises(ValueError, match="check: got 'driverr'; expected one of the script's checks"):
        failing_report("driverr")
