"""Where we reach into private parts of Pulumi's Python SDK: here only, each citing the SDK file
it relies on (pulumi/pulumi, sdk/python/lib/pulumi/...).

The SDK does not promise any of them. tests/test_pulumi_internals.py exercises each on the
installed SDK, so an upgrade that moves one fails that test, not a deployment.
"""

from __future__ import annotations

import gc
import pathlib
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pulumi
    from pulumi.dynamic import ConfigureRequest

# The provider server's module, as Python runs it: `python -m pulumi.dynamic`.
_PROVIDER_SERVER_FILE = "pulumi/dynamic/__main__.py"


def dynamic_provider_server() -> types.ModuleType | None:
    """The module of Pulumi's Python provider server when this process is that server, else None.

    The engine serves every dynamic resource from `python -m pulumi.dynamic`, whose `__main__`
    (dynamic/__main__.py) starts the gRPC server when it loads and waits there; the providers'
    modules load inside it."""
    main = sys.modules.get("__main__")
    if str(getattr(main, "__file__", "") or "").replace("\\", "/").endswith(_PROVIDER_SERVER_FILE):
        return main
    return None


def raise_worker_limit(workers: int) -> list[ThreadPoolExecutor]:
    """Raise the limit of every thread pool in this process that has fewer workers; returns them.

    The provider server runs its gRPC calls on `futures.ThreadPoolExecutor(max_workers=4)`
    (dynamic/__main__.py, `main`), and only that pool exists when our code first loads in it.
    The limit is the pool's `_max_workers`, read by each submit when it decides whether to
    start another thread (CPython's concurrent/futures/thread.py, `_adjust_thread_count`)."""
    raised = []
    for executor in (o for o in gc.get_objects() if isinstance(o, ThreadPoolExecutor)):
        if executor._max_workers < workers:
            executor._max_workers = workers
            raised.append(executor)
    return raised


def replace_failure_formatter(server: Any, formatter: types.ModuleType) -> None:
    """Make the provider server module `server` format a failed call with `formatter`.

    The server answers every failed call with `context.abort(grpc.StatusCode.UNKNOWN,
    traceback.format_exc())` (dynamic/__main__.py, `_abort_with_traceback`), looking `traceback`
    up in its module's globals when a call fails: a module in its place answers instead."""
    server.traceback = formatter


def dynamic_provider_config(req: ConfigureRequest) -> dict[str, Any]:
    """The inputs of a dynamic resources' provider, by their own keys, as its server received them.

    `Config.get` would look for "<project>:kubeconfig"; the server hands `configure` the raw
    inputs in `Config._props` (dynamic/config.py; built in dynamic/__main__.py, `get_provider`)."""
    raw: dict[str, Any] = getattr(req.config, "_props", None) or {}
    return raw


def unwrap_secret(value: Any) -> Any:
    """`value` as plain data when it is a secret as the provider server hands our providers'
    `diff` and `update` their olds and news, else `value` itself.

    The server decodes them keeping secrets wrapped in the wire's signature object
    (dynamic/__main__.py, `rpc.deserialize_properties`); runtime/rpc.py, `unwrap_rpc_secret`,
    takes the wrapping off, as the server does for a provider's config."""
    from pulumi.runtime.rpc import unwrap_rpc_secret

    return unwrap_rpc_secret(value)


def plain(value: Any) -> Any:
    """`value` with every secret in it, at any depth, unwrapped (`unwrap_secret`): what a program's
    mocks are handed as a resource's inputs keeps each secret in the wire's signature object
    (runtime/mocks.py `MockMonitor.RegisterResource`, `rpc.deserialize_properties(..., keep_secrets=True)`)."""
    if isinstance(value, dict):
        unwrapped = unwrap_secret(value)
        if unwrapped is not value:
            return plain(unwrapped)
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def provider_input(provider: pulumi.ProviderResource, key: str) -> Any:
    """The output of `provider` named `key` (one of its inputs), or None.

    A provider's outputs are its inputs; the SDK keeps each output a resource registers in
    the instance's `__dict__` under its name (runtime/rpc.py, `transfer_properties`), and
    provider classes such as pulumi_kubernetes.Provider declare no property for them."""
    return provider.__dict__.get(key)


def run_monitor() -> object:
    """This program run's resource monitor: one per run of a program, a new one per mock run.

    The SDK keeps it in its run settings (runtime/settings.py, `SETTINGS.monitor`)."""
    from pulumi.runtime import settings

    return settings.SETTINGS.monitor


def run_config() -> tuple[dict[str, Any], frozenset[str]]:
    """Every stack config key of this run with its value (text as given), and those set as secrets.

    `pulumi.Config` reads one key at a time. The SDK keeps them all in runtime/config.py: `CONFIG`
    (set by `set_all_config`) and `get_config_env` (the `PULUMI_CONFIG` variable), the secret
    keys in `is_config_secret` and `get_config_secret_keys_env` (`PULUMI_CONFIG_SECRET_KEYS`); the
    language host sets both variables (sdk/python/cmd/pulumi-language-python/main.go,
    pulumiConfigVar and pulumiConfigSecretKeysVar)."""
    from pulumi.runtime import config as runtime_config

    values = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = {key for key in values if runtime_config.is_config_secret(key)}
    secret |= set(runtime_config.get_config_secret_keys_env())
    return values, frozenset(secret)


def with_secrecy(output: pulumi.Output[Any]) -> pulumi.Output[list[Any]]:
    """`[value, is_secret]` of `output`, as one Output (a secret itself when `output` is one), so that
    what reads the value can tell a secret, which it must not show.

    An apply sees the value only; whether it is secret is `Output.is_secret()`, a coroutine among the
    methods pulumi/output.py marks "Private implementation details - do not document"."""
    import asyncio

    import pulumi

    secret: asyncio.Future[bool] = asyncio.ensure_future(output.is_secret())
    return pulumi.Output.all(output, secret)


def keep_program_frames(program_dir: str) -> None:
    """From now on, keep in each resource's stack trace where it was made and the frames of the
    program's own files, not this package's.

    The SDK sends the whole Python stack with every registration (runtime/resource.py,
    `_get_stack_trace`, read by `register_resource` and `read_resource` through the module's
    globals), and the engine keeps it in the state beside the resource (pkg/resource/deploy/
    source_eval.go `newStackTrace`, step.go): 18 frames, about 1.4 KB, on each of a node's five
    resources, of which one says where the resource was made (its `sourcePosition` too,
    `_get_source_position`) and one or two are the program's lines that made the fleet; the
    rest are this package's, the SDK's, asyncio's and the language host's. Calling it again
    changes nothing."""
    from pulumi.runtime import resource

    whole = getattr(resource._get_stack_trace, "whole", resource._get_stack_trace)
    program = pathlib.Path(program_dir).resolve().as_uri() + "/"
    package = pathlib.Path(__file__).resolve().parent.as_uri() + "/"

    def program_frames() -> Any:
        trace = whole()
        kept = [f for i, f in enumerate(trace.frames) if i == 0 or _in_program(f.pc.uri, program, package)]
        del trace.frames[:]
        trace.frames.extend(kept)
        return trace

    program_frames.whole = whole  # type: ignore[attr-defined]
    resource._get_stack_trace = program_frames


def _in_program(uri: str, program: str, package: str) -> bool:
    # An installed package inside the program's directory (its .venv) is not the program.
    return uri.startswith(program) and not uri.startswith(package) and "/site-packages/" not in uri
