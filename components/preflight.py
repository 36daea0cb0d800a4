"""Preflight: run the check script on each machine over SSH before it is brought in.

The script is kept as parts (`scripts/preflight/*.sh`, one per check plus what they share)
and joined here into one text. It travels on the command's stdin, gzipped and in base64
(about 22 KB where the script is 50 KB): pulumi-command keeps stdin in each node's state
twice, as input and as output, and Pulumi rewrites the whole state after every step. The
command line decodes all of stdin, and gzip checks it, before `bash -s` runs the script, so
the machine runs exactly the script in this repository or nothing; nothing is copied to it.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import pulumi
from pulumi_command import remote

from components.deflate import gzip_compress
from components.specs import NodeGroupSpec, NodeSpec, PreflightSpec

SCRIPT_DIR = Path(__file__).parent / "scripts" / "preflight"
REQUIRE_DEFAULT_RUNTIME = "--require-default-runtime"
# Run by bash on the machine, with the script's arguments as "$@". $(...) reads all of stdin,
# and gzip checks its CRC, before anything runs: a cut or damaged stdin runs nothing (exit
# status gzip's). printf puts back the one final newline that $(...) drops. The script is
# fed to `bash -s` through a pipe, not given as an argument, which Linux caps at 128 KiB.
DECODE_AND_RUN = 'script=$(base64 -d | gzip -dc) || exit; printf "%s\\n" "$script" | bash -s -- "$@"'


def script_parts() -> list[Path]:
    """The script's parts in the order they are joined: by name, 00-common.sh first, 90-main.sh last."""
    return sorted(SCRIPT_DIR.glob("*.sh"))


# Read once per program run, not once per node.
@functools.cache
def preflight_script() -> str:
    """The one script every machine runs (and the tests run): its parts, joined in order.

    Joined as `cat components/scripts/preflight/*.sh` joins them, so that a script run by hand
    is byte for byte the one the component sends."""
    return "".join(part.read_text() for part in script_parts())


def script_digest() -> str:
    return hashlib.sha256(preflight_script().encode()).hexdigest()


@functools.cache
def compact_script() -> str:
    """What the command's stdin carries: the script, gzipped (the same bytes on every run and
    every Python, see components/deflate.py), in base64 (stdin is a string)."""
    script = preflight_script().encode()
    packed = gzip_compress(script)
    # Decoded by the standard gzip: the encoder is ours, so prove it round-trips before sending.
    if gzip.decompress(packed) != script:
        raise RuntimeError("the compressed preflight script does not decode to the script: a bug in components/deflate.py")
    return base64.b64encode(packed).decode("ascii")


def preflight_arguments(spec: PreflightSpec, expect_gpus: int) -> list[str]:
    """The script's arguments (20-arguments.sh reads them)."""
    args = ["--runtime", spec.container_runtime, "--expect-gpus", str(expect_gpus)]
    if spec.min_driver:
        args += ["--min-driver", spec.min_driver]
    if spec.require_default_runtime:
        # No RuntimeClass names the nvidia runtime: the machine passes only when it is the default.
        args.append(REQUIRE_DEFAULT_RUNTIME)
    return args


def preflight_command(spec: PreflightSpec, expect_gpus: int) -> str:
    """The remote command line: it decodes the script from stdin (compact_script) and runs it with its arguments."""
    # bash -c, so that the login shell (whatever it is) only splits words.
    return shlex.join(["bash", "-c", DECODE_AND_RUN, "preflight", *preflight_arguments(spec, expect_gpus)])


def triggers(spec: PreflightSpec, expect_gpus: int) -> list[str]:
    """What re-runs the checks: a new script, GPU count, runtime, minimum driver, whether nvidia
    must be the default runtime (the stack's RuntimeClass off), or a new recheck value."""
    # The last two join only when set, so that stacks without them keep their triggers.
    optional = [REQUIRE_DEFAULT_RUNTIME] if spec.require_default_runtime else []
    if spec.recheck is not None:
        optional.append(f"recheck={spec.recheck}")
    return [script_digest(), str(expect_gpus), spec.container_runtime, spec.min_driver or "", *optional]


def connection(node: NodeSpec, spec: PreflightSpec, private_key: pulumi.Input[str]) -> remote.ConnectionArgs:
    if node.ssh_host is None:
        # parse_stack requires sshHost wherever preflight runs.
        raise ValueError(f"node {node.name}: preflight needs its sshHost")

    def endpoint(host: str, port: int, user: str | None, host_key: str | None) -> dict[str, Any]:
        """The same key and dial timeout for the machine and its bastion."""
        # ssh_timeout_seconds unset (None): pulumi-command's own default (15 s), as before the setting existed.
        return dict(
            host=host, port=port, user=user, host_key=host_key, private_key=private_key, per_dial_timeout=spec.ssh_timeout_seconds
        )

    bastion = spec.proxy
    proxy = (
        remote.ProxyConnectionArgs(**endpoint(bastion.host, bastion.port, bastion.user, bastion.host_key)) if bastion else None
    )
    return remote.ConnectionArgs(**endpoint(node.ssh_host, node.ssh_port, node.ssh_user, node.host_key), proxy=proxy)


def parse_report(stdout: str) -> dict[str, Any]:
    """The per-node summary kept in outputs, from the script's JSON report."""
    report = json.loads(stdout)
    gpus = report.get("gpus") or []
    checks = report.get("checks") or []
    return {
        "passed": bool(report.get("ok")),
        "hostname": report.get("hostname"),
        "driverVersion": report.get("driverVersion"),
        "gpuCount": len(gpus),
        "gpuModels": sorted({gpu.get("name", "") for gpu in gpus}),
        "runtime": report.get("runtime"),
        "passedChecks": [c["name"] for c in checks if c.get("ok")],
        "failedChecks": [c["name"] for c in checks if not c.get("ok")],
    }


def node_preflight(
    name: str,
    group: NodeGroupSpec,
    node: NodeSpec,
    private_key: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> remote.Command:
    """One remote command per node; it fails (exit 1) when a required check fails."""
    spec = group.preflight
    return remote.Command(
        name,
        connection=connection(node, spec, private_key),
        create=preflight_command(spec, group.gpus_per_node),
        stdin=compact_script(),
        triggers=triggers(spec, group.gpus_per_node),
        opts=opts,
    )
