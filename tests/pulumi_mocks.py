"""A fresh Pulumi mock runtime per test, recording every resource registration.

Records what `pulumi.runtime.Mocks` alone does not show: each resource's parent,
dependencies and options (secret outputs, delete-before-replace, timeouts).
"""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime.mocks import MockMonitor

from gpu_nodes.preflight.report import passing_report
from gpu_nodes.resources.child_names import PREFLIGHT_CHILD
from gpu_nodes.testing import GpuNodesMocks
from tests.factories import EXAMPLE_MODULE, EXAMPLE_PROGRAM, example_project, example_stack

# Our dynamic resources' types (each class names its own, `ClusterResource` subclasses).
TAINTS_TYPE = "pulumi-python:dynamic/gpu-nodes:NodeTaints"
READINESS_TYPE = "pulumi-python:dynamic/gpu-nodes:NodeReadiness"
CLAIM_TYPE = "pulumi-python:dynamic/gpu-nodes:ObjectClaim"
COEXISTENCE_TYPE = "pulumi-python:dynamic/gpu-nodes:DevicePluginCoexistence"
DYNAMIC_TYPES = (TAINTS_TYPE, READINESS_TYPE, CLAIM_TYPE, COEXISTENCE_TYPE)
# The provider they run under, one per fleet (`ClusterAccess.served`).
DYNAMIC_PROVIDER_TYPE = "pulumi:providers:pulumi-python"

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
PROJECT = "gpu-nodes"
STACK = "test"
# The fleet __main__.py builds; its children are named `gpu-nodes-...`.
FLEET = "gpu-nodes"


@dataclass
class Registered:
    urn: str
    type: str
    # Below the fleet, without its `gpu-nodes-` prefix (`a100-node-1-taints`); the URN has it.
    name: str
    inputs: dict[str, Any]
    parent: str
    dependencies: list[str]
    additional_secret_outputs: list[str]
    delete_before_replace: bool
    provider: str
    secret_inputs: list[str]
    deleted_with: str
    # The names alias specs give (`Alias(name=...)`); the providers' own type aliases give none.
    alias_names: list[str] = field(default_factory=list)
    # The registration as the engine receives it (inputs in wire form, every option): the golden state test reads it.
    request: Any = None


class Recorder(GpuNodesMocks):
    """The mocks a team's tests use (gpu_nodes/testing.py: outputs are the inputs, plus what a real run
    fills in), recording every registration. A healthy machine answers passing_report(), whose facts
    the golden state holds, whatever GPUs its group expects."""

    def __init__(self, failing: Mapping[str, str] | None = None, unchecked: Collection[str] = ()) -> None:
        super().__init__(failing, unchecked)
        self.resources: dict[str, Registered] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        # The golden state holds ids as `<name>-id` (a readiness check's preflightRun is one).
        return f"{args.name}-id", self.outputs(args)

    def preflight_stdout(self, args: pulumi.runtime.MockResourceArgs) -> str | None:
        if self.passes(self.node(args.name, PREFLIGHT_CHILD)):
            return json.dumps(passing_report())
        return super().preflight_stdout(args)


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: Recorder):
        super().__init__(mocks)
        self.recorder = mocks

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        inputs = self.resources[response.urn].state if response.urn in self.resources else {}
        self.recorder.resources[response.urn] = Registered(
            urn=response.urn,
            type=request.type,
            name=request.name.removeprefix(f"{FLEET}-"),
            inputs=_plain(inputs),
            parent=request.parent,
            dependencies=list(request.dependencies),
            additional_secret_outputs=list(request.additionalSecretOutputs),
            delete_before_replace=request.deleteBeforeReplace,
            provider=request.provider,
            secret_inputs=_secret_keys(json_format.MessageToDict(request.object)),
            deleted_with=request.deletedWith,
            alias_names=[a.spec.name for a in request.aliases if a.HasField("spec") and a.spec.name],
            request=request,
        )
        return response


def _secret_keys(inputs: dict[str, Any]) -> list[str]:
    """Top-level inputs that carry a secret anywhere inside them."""
    return sorted(key for key, value in inputs.items() if _SECRET_SIG in json.dumps(value))


# How the Pulumi wire format marks a secret value: {_SIG_KEY: _SECRET_SIG, "value": ...}.
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def _plain(value: Any) -> Any:
    """Registered state as plain JSON-able data (Kubernetes manifests, for schema checks).

    Secrets are unwrapped here; `Registered.secret_inputs` says which inputs were secret.
    """
    if isinstance(value, dict):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return _plain(value["value"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    # Assets and archives as Pulumi keeps them in the state: what they are and their path, not their content.
    if isinstance(value, (pulumi.FileArchive, pulumi.FileAsset)):
        return {type(value).__name__: value.path}
    if isinstance(value, pulumi.StringAsset):
        return {"StringAsset": value.text}
    return json.loads(json.dumps(value, default=str))


def fresh_runtime(
    config: dict[str, Any],
    secret_keys: list[str] | None = None,
    recorder: Recorder | None = None,
    stack: str = STACK,
    project: str = PROJECT,
) -> Recorder:
    """Install a new mock runtime with this stack config (objects are given as Python data)."""
    recorder = recorder or Recorder()
    pulumi.runtime.settings.set_root_resource(None)  # a new stack for every test
    pulumi.runtime.set_mocks(recorder, project=project, stack=stack, preview=False, monitor=RecordingMonitor(recorder))
    pulumi.runtime.set_all_config(
        {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()},
        secret_keys or [],
    )
    return recorder


@dataclass
class ProgramRun:
    recorder: Recorder
    globals: dict[str, Any]

    @property
    def resources(self) -> list[Registered]:
        return list(self.recorder.resources.values())

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.type == typ]

    def named(self, name: str) -> Registered:
        matches = [r for r in self.resources if r.name == name]
        assert len(matches) == 1, f"expected one resource named {name!r}, found {[r.urn for r in matches]}"
        return matches[0]

    def resolve(self, output: Any) -> Any:
        """The value of an Output of this run."""
        result: list[Any] = []

        @pulumi.runtime.test
        def _wait() -> Any:
            return pulumi.Output.from_input(output).apply(result.append)

        _wait()
        return result[0]


def run_program(
    config: dict[str, Any], secret_keys: list[str] | None = None, recorder: Recorder | None = None, stack: str = STACK
) -> ProgramRun:
    """Evaluate `__main__.py` under mocks with this stack config, waiting for every registration."""
    recorder = fresh_runtime(config, secret_keys, recorder, stack)
    scope: dict[str, Any] = {}

    @pulumi.runtime.test
    def _evaluate() -> None:
        scope.update(runpy.run_path(str(PROGRAM), run_name="__main__"))

    _evaluate()
    return ProgramRun(recorder=recorder, globals=scope)


def run_inline(
    program: Callable[[], Any], config: dict[str, Any] | None = None, stack: str = STACK, project: str = PROJECT
) -> ProgramRun:
    """Run `program` (a function that registers resources) under mocks; its result is `globals["result"]`."""
    recorder = fresh_runtime(config or {}, [], stack=stack, project=project)
    scope: dict[str, Any] = {}

    @pulumi.runtime.test
    def _evaluate() -> None:
        scope["result"] = program()

    _evaluate()
    return ProgramRun(recorder=recorder, globals=scope)


def run_example(stack: str) -> ProgramRun:
    """examples/own-program (its own project, the package's Python API) with its `Pulumi.<stack>.yaml`,
    run as Pulumi runs it: the directory, with it first on sys.path while its __main__.py runs (runpy)."""

    def program() -> dict[str, Any]:
        # Its __main__.py imports the fleet from racks.py: imported by an earlier run, it would register nothing.
        sys.modules.pop(EXAMPLE_MODULE, None)
        try:
            return runpy.run_path(str(EXAMPLE_PROGRAM), run_name="__main__")
        finally:
            sys.modules.pop(EXAMPLE_MODULE, None)

    return run_inline(program, example_stack(stack), stack=stack, project=example_project())


def run_component(raw_group: dict[str, Any], kubeconfig: str | None = None, recorder: Recorder | None = None) -> ProgramRun:
    """Build one GpuNodeGroup from raw group config, in a fleet named as the program's."""
    import pulumi_kubernetes as k8s

    from gpu_nodes import GpuFleet, GpuFleetArgs

    recorder = fresh_runtime({}, [], recorder)
    scope: dict[str, Any] = {}

    @pulumi.runtime.test
    def _evaluate() -> None:
        provider = k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(kubeconfig) if kubeconfig else None)
        args = GpuFleetArgs(node_groups=[raw_group], ssh_private_key=pulumi.Output.secret("test-key"))
        fleet = GpuFleet(FLEET, args, opts=pulumi.ResourceOptions(provider=provider))
        scope["component"] = fleet.groups[raw_group["name"]]

    _evaluate()
    return ProgramRun(recorder=recorder, globals=scope)
