"""This program's unit tests, written as Pulumi's testing guide writes them (pulumi/examples,
testing-unit-py): Mocks, `pulumi.runtime.set_mocks`, the program imported, then functions marked
`@pulumi.runtime.test` that assert on its resources' outputs. No engine, cluster or machine.

    pip install -r requirements-dev.txt && pytest

Where the guide sets its mocks and imports its program once, at the top of its test file, each test
here sets its own (`program`): a fresh runtime and a fresh import per test, since a module Python has
imported once does not run again, and so registers nothing in the next test's runtime.
"""

import importlib
import json
import sys
from pathlib import Path

import pulumi
import pytest
import yaml

from gpu_nodes.testing import GpuNodesMocks

HERE = Path(__file__).resolve().parent
# Pulumi.yaml's name: pulumi.Config() reads this program's keys under it.
PROJECT = "gpu-racks"
# The secrets each stack file's comments say to set; the mocks connect nowhere with them.
KUBECONFIG = {f"{PROJECT}:kubeconfig": "apiVersion: v1\nkind: Config\n"}
SSH_KEY = {f"{PROJECT}:sshPrivateKey": "a private key: the mocks log in nowhere"}
GROUP_LABEL = "gpu-nodes.dev/node-group"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
COMMAND = "command:remote:Command"


class MyMocks(pulumi.runtime.Mocks):
    """Pulumi's testing guide's mocks, as it writes them: every resource's outputs are its inputs."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return [args.name + "_id", args.inputs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


def stack_config(stack: str, secrets: dict[str, str]) -> dict[str, str]:
    """The stack's config as its Pulumi.<stack>.yaml holds it, with its secrets, each value as the
    engine hands it to a program: text, and an object or a list as its JSON."""
    config = {**yaml.safe_load((HERE / f"Pulumi.{stack}.yaml").read_text())["config"], **secrets}
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


def program(mocks: pulumi.runtime.Mocks, stack: str, secrets: dict[str, str], preview: bool = False):
    """The program (racks.py) imported afresh under `mocks` and the stack's config, in an update or a preview."""
    # reset_options forgets the last test's stack resource (pulumi/runtime/settings.py), and set_mocks
    # makes one only when there is none (pulumi/runtime/mocks.py): this test's own.
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview)
    pulumi.runtime.set_all_config(stack_config(stack, secrets), list(secrets))
    sys.modules.pop("racks", None)
    return importlib.import_module("racks")


# --- Pulumi's own mocks, nothing of gpu-nodes': rack C, whose machines preflight checks.


@pytest.fixture(params=[False, True], ids=["update", "preview"])
def plain_rack_c(request):
    """Rack C under the guide's mocks, in an update and in a preview."""
    return program(MyMocks(), "rack-c", {**KUBECONFIG, **SSH_KEY}, preview=request.param)


@pulumi.runtime.test
def test_with_pulumis_mocks_the_rack_builds_with_preflight_on(plain_rack_c):
    fleet = plain_rack_c.fleet
    # Tenants' pods name no RuntimeClass: preflight lets in only machines whose default runtime is nvidia's.
    access = fleet.tenant_access["rack-c"]
    assert access["gpuAccess"] == "defaultRuntime", f"fleet gpus: rack-c's tenants are told {access}"

    def check(urn):
        expected = "urn:pulumi:rack-c::gpu-racks::pulumi:pulumi:Stack$gpu-nodes:index:GpuFleet::gpus"
        assert urn == expected, f"{urn}: not rack-c's fleet"

    return fleet.urn.apply(check)


@pulumi.runtime.test
def test_with_pulumis_mocks_each_machine_is_reported_as_not_yet_checked():
    """The mocks give the preflight command no stdout: the report says the machine was not checked."""
    fleet = program(MyMocks(), "rack-c", {**KUBECONFIG, **SSH_KEY}).fleet

    def check(args):
        urn, groups = args
        for node in ("gpu-c-01", "gpu-c-02"):
            assert groups["rack-c"][node]["preflight"] == {"checked": False}, f"{urn}: {node}: {groups['rack-c'][node]}"

    return pulumi.Output.all(fleet.urn, fleet.node_groups).apply(check)


# --- gpu_nodes.testing: each machine's preflight answered as the test chooses.


@pulumi.runtime.test
def test_a_healthy_machine_is_labelled_with_the_gpus_it_reported():
    fleet = program(GpuNodesMocks(), "rack-c", {**KUBECONFIG, **SSH_KEY}).fleet

    def check(args):
        urn, groups = args
        for node, entry in groups["rack-c"].items():
            assert entry["preflight"]["passed"] is True, f"{urn}: {node}: {entry['preflight']}"
            assert entry["labels"][GROUP_LABEL] == "rack-c", f"{urn}: {node}: {entry['labels']}"
            assert entry["labels"]["nvidia.com/gpu.count"] == "8", f"{urn}: {node}: {entry['labels']}"

    return pulumi.Output.all(fleet.urn, fleet.node_groups).apply(check)


@pulumi.runtime.test
def test_a_machine_failing_its_driver_check_is_reported_failed_and_not_let_in():
    """In a real run its preflight exits 1 and `pulumi up` stops there; the mocks let the run go on
    so that the report can be read."""
    fleet = program(GpuNodesMocks(failing={"gpu-c-02": "driver"}), "rack-c", {**KUBECONFIG, **SSH_KEY}).fleet

    def check(args):
        urn, groups = args
        failed, healthy = groups["rack-c"]["gpu-c-02"], groups["rack-c"]["gpu-c-01"]
        assert failed["preflight"]["failedChecks"] == ["driver"], f"{urn}: gpu-c-02: {failed['preflight']}"
        assert failed["gate"] is None, f"{urn}: gpu-c-02 was let in: gate {failed['gate']}"
        assert healthy["gate"] == "lifted", f"{urn}: gpu-c-01: gate {healthy['gate']}"

    return pulumi.Output.all(fleet.urn, fleet.node_groups).apply(check)


@pulumi.runtime.test
def test_each_node_is_tainted_for_gpu_pods_only():
    fleet = program(GpuNodesMocks(), "rack-c", {**KUBECONFIG, **SSH_KEY}).fleet

    def check(args):
        urn, groups = args
        for node, entry in groups["rack-c"].items():
            expected = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
            assert entry["taints"] == [expected], f"{urn}: {node}: {entry['taints']}"

    return pulumi.Output.all(fleet.urn, fleet.node_groups).apply(check)


@pulumi.runtime.test
def test_each_node_is_verified_by_a_job_on_one_gpu():
    fleet = program(GpuNodesMocks(), "rack-c", {**KUBECONFIG, **SSH_KEY}).fleet

    def check(args):
        urn, groups = args
        for node, entry in groups["rack-c"].items():
            # Beside it, the proof's own Jobs: the access check and DCGM's diagnostics (their `role`).
            jobs = [j for j in entry["verification"] if j["role"] == "verification"]
            assert [(j["resource"], j["gpus"]) for j in jobs] == [("nvidia.com/gpu", 1)], f"{urn}: {node}: {jobs}"

    return pulumi.Output.all(fleet.urn, fleet.node_groups).apply(check)


@pytest.mark.parametrize("preview", [False, True], ids=["update", "preview"])
def test_the_device_plugin_runs_on_the_racks_nodes_in_the_shared_namespace(preview):
    """The fleet holds its DaemonSet as a child, not as an attribute: the mocks' record of what was registered has it."""
    mocks = GpuNodesMocks()

    # Imported inside a test run, which returns once every registration is answered (pulumi/runtime/
    # stack.py, run_pulumi_func waits for every RPC); in a preview the report is unknown, so no check
    # on it would run.
    @pulumi.runtime.test
    def build():
        program(mocks, "rack-c", {**KUBECONFIG, **SSH_KEY}, preview=preview)

    build()
    daemonsets = mocks.registered(DAEMON_SET)
    assert list(daemonsets) == ["gpus-rack-c-device-plugin"], f"DaemonSets registered: {list(daemonsets)}"
    plugin = daemonsets["gpus-rack-c-device-plugin"]
    assert plugin["metadata"]["namespace"] == "gpus-device-plugin", f"gpus-rack-c-device-plugin: {plugin['metadata']}"
    selector = plugin["spec"]["template"]["spec"]["nodeSelector"]
    assert selector == {GROUP_LABEL: "rack-c"}, f"gpus-rack-c-device-plugin: nodeSelector {selector}"


def test_each_machine_is_checked_over_ssh_with_the_stacks_key_and_its_pinned_host_key():
    """The preflight commands, as registered: plain values, the secret key as the stack config holds it."""
    mocks = GpuNodesMocks()

    @pulumi.runtime.test
    def build():
        program(mocks, "rack-c", {**KUBECONFIG, **SSH_KEY})

    build()
    commands = mocks.registered(COMMAND)
    assert sorted(commands) == ["gpus-rack-c-gpu-c-01-preflight", "gpus-rack-c-gpu-c-02-preflight"], sorted(commands)
    for name, command in commands.items():
        connection = command["connection"]
        assert connection["privateKey"] == SSH_KEY[f"{PROJECT}:sshPrivateKey"], f"{name}: the key is not the stack's, as set"
        assert connection["hostKey"].startswith("ssh-ed25519 "), f"{name}: no pinned host key: {connection}"
        assert command["logging"] == "none", f"{name}: the report would be echoed into the progress display"


@pulumi.runtime.test
def test_a_rack_without_a_key_brings_in_machines_another_tool_checked():
    fleet = program(GpuNodesMocks(), "rack-b", KUBECONFIG).fleet

    def check(args):
        urn, groups = args
        for node in ("gpu-b-01", "gpu-b-02"):
            assert groups["rack-b"][node]["preflight"] == {"skipped": True}, f"{urn}: {node}: {groups['rack-b'][node]}"

    return pulumi.Output.all(fleet.urn, fleet.node_groups).apply(check)
