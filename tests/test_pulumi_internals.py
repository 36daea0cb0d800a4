"""Each reach of gpu_nodes/pulumi_internals.py into the Pulumi SDK, on the SDK installed: one test each,
so that an SDK upgrade that moves one fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from google.protobuf.struct_pb2 import Struct
from pulumi.dynamic import Config, ConfigureRequest
from pulumi.runtime import rpc

from gpu_nodes.pulumi_internals import (
    dynamic_provider_config,
    dynamic_provider_server,
    keep_program_frames,
    plain,
    provider_input,
    run_config,
    run_monitor,
    unwrap_secret,
    with_secrecy,
)
from tests.factories import SECRET_KEYS, local_stack
from tests.pulumi_mocks import PROJECT, STACK, Recorder, RecordingMonitor, fresh_runtime, run_inline, run_program

ROOT = Path(__file__).resolve().parents[1]

# The SDK's provider server as the engine starts it (`python -m pulumi.dynamic`), in a thread of
# a process of its own: its module loads as `__main__` and waits in `main()` once its gRPC server
# has started, which it tells by printing its port. Our package loads first: loaded in the
# server, it would patch it itself (gpu_nodes/providers/provider_server.py).
IN_THE_PROVIDER_SERVER = """
import io, runpy, sys, threading, time
import gpu_nodes.pulumi_internals

sys.stdout = io.TextIOWrapper(io.BytesIO())
threading.Thread(
    target=runpy.run_module, args=("pulumi.dynamic",), kwargs={"run_name": "__main__", "alter_sys": True}, daemon=True
).start()
deadline = time.monotonic() + 30
while not sys.stdout.buffer.getvalue().endswith(b"\\n") and time.monotonic() < deadline:
    time.sleep(0.05)
sys.stdout = sys.__stdout__
"""


def in_the_provider_server(code: str) -> str:
    """What `code` prints, run in a process where the SDK's provider server runs."""
    ran = subprocess.run([sys.executable, "-c", IN_THE_PROVIDER_SERVER + code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def test_the_provider_server_is_found_where_it_runs_only():
    code = """
from gpu_nodes.pulumi_internals import dynamic_provider_server
server = dynamic_provider_server()
print(server is sys.modules["__main__"] and callable(server.main))
"""
    assert in_the_provider_server(code) == "True"
    assert dynamic_provider_server() is None, "the tests' process taken for the provider server"


def test_the_provider_servers_pool_runs_every_waiting_call_once_raised():
    code = """
import threading
from concurrent.futures import ThreadPoolExecutor
from gpu_nodes.pulumi_internals import raise_worker_limit

larger = ThreadPoolExecutor(max_workers=512)
raised = raise_worker_limit(256)
print([pool._max_workers for pool in raised], larger._max_workers)
release, started = threading.Event(), threading.Semaphore(0)

def wait():
    started.release()
    release.wait(10)

futures = [raised[0].submit(wait) for _ in range(8)]
print(sum(started.acquire(timeout=5) for _ in range(8)))
release.set()
"""
    # The server's one pool, of four, raised; a larger one left alone; eight waiting calls run at once.
    assert in_the_provider_server(code).splitlines() == ["[256] 512", "8"]


def test_the_provider_server_formats_a_failed_call_with_the_module_put_in_its_place():
    code = """
import types
from gpu_nodes.pulumi_internals import dynamic_provider_server, replace_failure_formatter

server = dynamic_provider_server()
formatter = types.ModuleType("traceback")
formatter.format_exc = lambda *args, **kwargs: "in our words"
replace_failure_formatter(server, formatter)

class Context:
    def abort(self, code, details):
        print(code.name, details)

def fail(self, request, context):
    raise RuntimeError("a failure of ours")

server._abort_with_traceback(fail)(None, None, Context())
"""
    assert in_the_provider_server(code) == "UNKNOWN in our words"


def test_a_dynamic_provider_is_configured_with_its_inputs_by_their_own_keys():
    # As the provider server builds it for `configure` (pulumi/dynamic/__main__.py, get_provider).
    request = ConfigureRequest(config=Config(raw_config={"kubeconfig": "/ci/kubeconfig", "context": ""}, project_name=PROJECT))
    assert dynamic_provider_config(request) == {"kubeconfig": "/ci/kubeconfig", "context": ""}


def test_a_secret_among_a_diffs_inputs_reads_as_its_value():
    # A secret on the wire (pulumi/pulumi, sdk/go/common/resource/sig/sig.go, Secret), decoded
    # as the provider server decodes a diff's olds and news (pulumi/dynamic/__main__.py, Diff).
    wire = Struct()
    wire.update({"kubeconfig": {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "kc"}})
    olds = rpc.deserialize_properties(wire, True)
    assert olds["kubeconfig"] != "kc", olds
    assert (unwrap_secret(olds["kubeconfig"]), unwrap_secret("plain")) == ("kc", "plain")


def test_secrets_at_any_depth_of_a_mocks_inputs_read_as_their_values():
    # What a program's mocks are handed (pulumi/runtime/mocks.py, MockMonitor.RegisterResource, keep_secrets):
    # a secret inside a secret inside a list.
    sig = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
    wire = Struct()
    wire.update({"connection": {**sig, "value": {"host": "h", "keys": [{**sig, "value": "k"}, "plain"]}}, "port": 22})
    inputs = rpc.deserialize_properties(wire, True)
    assert inputs["connection"] != {"host": "h", "keys": ["k", "plain"]}, inputs
    assert plain(inputs) == {"connection": {"host": "h", "keys": ["k", "plain"]}, "port": 22}


def test_a_providers_inputs_are_read_back_from_it():
    run = run_inline(lambda: k8s.Provider("platform", kubeconfig="/ci/kubeconfig", context="gpu-cluster"))
    provider = run.globals["result"]
    read = [provider_input(provider, key) for key in ("kubeconfig", "context")]
    assert all(isinstance(value, pulumi.Output) for value in read), read
    assert [run.resolve(value) for value in read] == ["/ci/kubeconfig", "gpu-cluster"]


def test_the_runs_monitor_is_the_one_the_run_was_given():
    recorder = Recorder()
    monitor = RecordingMonitor(recorder)
    pulumi.runtime.set_mocks(recorder, project=PROJECT, stack=STACK, preview=False, monitor=monitor)
    assert run_monitor() is monitor


def test_the_runs_config_holds_every_key_and_its_secrets(monkeypatch):
    fresh_runtime({"gpu-nodes:set": "1", "gpu-nodes:secretSet": "x"}, ["gpu-nodes:secretSet"])
    # As the language host hands them over (pulumi-language-python, pulumiConfigVar and pulumiConfigSecretKeysVar).
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"gpu-nodes:fromEnv": "2", "gpu-nodes:secretFromEnv": "y"}))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["gpu-nodes:secretFromEnv"]))
    values, secret_keys = run_config()
    assert values == {"gpu-nodes:set": "1", "gpu-nodes:secretSet": "x", "gpu-nodes:fromEnv": "2", "gpu-nodes:secretFromEnv": "y"}
    assert secret_keys == {"gpu-nodes:secretSet", "gpu-nodes:secretFromEnv"}


def _frames(run: Any, name: str) -> list[str]:
    registered = next(r for r in run.resources if r.name == name)
    return [frame.pc.uri for frame in registered.request.stackTrace.frames]


def test_a_resources_stack_trace_keeps_where_it_was_made_and_the_programs_own_frames(monkeypatch):
    from pulumi.runtime import resource

    monkeypatch.setattr(resource, "_get_stack_trace", getattr(resource._get_stack_trace, "whole", resource._get_stack_trace))
    whole = _frames(run_inline(lambda: k8s.core.v1.Namespace("whole")), "whole")
    run = run_program(local_stack(preflight=False), SECRET_KEYS, stack="local")  # the fleet keeps program frames
    taints = _frames(run, "local-gpu-gpu-node-1-taints")
    package = (ROOT / "gpu_nodes").as_uri() + "/"

    assert any("/site-packages/" in uri for uri in whole), f"Namespace whole: no installed package's frame in {whole}"
    assert taints[0] == f"{package}providers/cluster_resource.py", f"local-gpu-gpu-node-1-taints: not where it was made: {taints}"
    # Below the program's line, this test's own frames: under mocks, the test is the program's caller.
    assert taints[1] == (ROOT / "__main__.py").as_uri(), f"local-gpu-gpu-node-1-taints: the program's line is not next: {taints}"
    others = [u for u in taints[1:] if u.startswith(package) or "/site-packages/" in u]
    assert not others, f"local-gpu-gpu-node-1-taints: frames of the package or an installed one kept: {others}"


def test_keeping_the_programs_frames_twice_wraps_the_sdk_once(monkeypatch):
    from pulumi.runtime import resource

    monkeypatch.setattr(resource, "_get_stack_trace", getattr(resource._get_stack_trace, "whole", resource._get_stack_trace))
    keep_program_frames(str(ROOT))
    keep_program_frames(str(ROOT))  # a second fleet in the same program
    assert not hasattr(resource._get_stack_trace.whole, "whole"), "keep_program_frames wrapped its own wrapper"


def test_an_outputs_secrecy_is_read_beside_its_value():
    found: list[Any] = []

    def program() -> None:
        with_secrecy(pulumi.Output.secret("10.0.0.2")).apply(found.append)
        with_secrecy(pulumi.Output.from_input("10.0.0.3")).apply(found.append)

    run_inline(program)
    assert sorted(found) == [["10.0.0.2", True], ["10.0.0.3", False]], found
