"""What a program run registers, as the engine would keep it in a stack's state, and how that
differs from a recorded golden file (tests/golden/, tests/resources/test_golden_state.py).

Per resource: its URN, its inputs and the options that decide its identity in the state.
Secrets and unknowns are markers, and `__provider` (a dynamic resource's pickled provider)
is the class it names: a golden file holds no secret and no pickle. Runs from the program's
directory, as Pulumi runs it, so that the preflight scripts' path is the one a stack holds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickletools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from pulumi.runtime import rpc

from tests.pulumi_mocks import ROOT, ProgramRun, Registered

GOLDEN_DIR = ROOT / "tests/golden"
UPDATE_ENV = "GPU_NODES_UPDATE_GOLDEN"
TEST_MODULE = "tests/resources/test_golden_state.py"
HOW_TO_UPDATE = (
    f"If this change to deployed stacks is on purpose, run `{UPDATE_ENV}=1 .venv/bin/python -m pytest {TEST_MODULE}` "
    "and commit tests/golden/ in a commit of its own that says why the state changes "
    '(docs/testing.md, "The golden state"); a deployed stack changes on its next `pulumi up`, so the change is a new '
    "version with its CHANGELOG.md entry (tests/test_release.py)."
)


def golden_digest() -> str:
    """One digest of every golden state file, by name and content (releases.txt records it per release)."""
    return digest_of((path.name, path.read_bytes()) for path in GOLDEN_DIR.glob("*.json"))


def digest_of(files: Iterable[tuple[str, bytes]]) -> str:
    """The golden digest of (name, content) pairs, in name order."""
    digest = hashlib.sha256()
    for name, content in sorted(files):
        digest.update(name.encode() + b"\0" + content + b"\0")
    return f"sha256:{digest.hexdigest()}"

SECRET = "[secret]"
UNKNOWN = "[unknown]"
ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
# How much of a changed value a failure message shows.
SHOWN = 400
MAX_LINES = 60

# The options of a registration kept in the state or deciding its identity: name in the golden
# file -> field of the RegisterResourceRequest (pulumi/pulumi proto/pulumi/resource.proto).
OPTIONS = {
    "protect": "protect",
    "deleteBeforeReplace": "deleteBeforeReplace",
    "ignoreChanges": "ignoreChanges",
    "replaceOnChanges": "replaceOnChanges",
    "additionalSecretOutputs": "additionalSecretOutputs",
    "retainOnDelete": "retainOnDelete",
    "customTimeouts": "customTimeouts",
    "version": "version",
    "pluginDownloadURL": "pluginDownloadURL",
    "importId": "importId",
    "replaceWith": "replace_with",
    "hideDiffs": "hideDiffs",
}


def engine_urns(run: ProgramRun) -> dict[str, str]:
    """Each resource's URN as the engine makes it. The mocks put only the parent's own type in
    a child's URN; the engine puts the parent's whole type chain, the root stack's left out
    (`Deployment.generateURN`, pkg/resource/deploy/deployment.go; `NewURN`,
    sdk/go/common/resource/urn.go in pulumi/pulumi)."""
    by_mock = {r.urn: r for r in run.resources}
    urns: dict[str, str] = {}

    def urn_of(mock: str) -> str:
        if mock not in urns:
            resource = by_mock[mock]
            stack, project = mock.removeprefix("urn:pulumi:").split("::")[:2]
            qualified = resource.type
            parent = resource.request.parent
            if parent and by_mock[parent].type != ROOT_STACK_TYPE:
                qualified = f"{urn_of(parent).split('::')[2]}${qualified}"
            urns[mock] = f"urn:pulumi:{stack}::{project}::{qualified}::{resource.request.name}"
        return urns[mock]

    for mock in by_mock:
        urn_of(mock)
    return urns


def snapshot(run: ProgramRun) -> dict[str, dict[str, Any]]:
    """Every registered resource by its engine URN: type, inputs and options, sorted."""
    urns = engine_urns(run)
    return {urns[r.urn]: _resource(r, urns) for r in sorted(run.resources, key=lambda r: urns[r.urn])}


def _resource(resource: Registered, urns: dict[str, str]) -> dict[str, Any]:
    request = resource.request
    inputs = _render(json_format.MessageToDict(request.object), urns)
    if isinstance(inputs.get("__provider"), str):
        inputs["__provider"] = f"[pickled {pickled_class(inputs['__provider'])}]"
    return {"type": request.type, "custom": request.custom, "inputs": inputs, "options": _options(request, urns)}


def _options(request: Any, urns: dict[str, str]) -> dict[str, Any]:
    wire = json_format.MessageToDict(request, preserving_proto_field_name=True)
    options: dict[str, Any] = {}
    if request.parent:
        options["parent"] = urns.get(request.parent, request.parent)
    if request.provider:
        options["provider"] = _provider(request.provider, urns)
    if request.providers:
        options["providers"] = {pkg: _provider(ref, urns) for pkg, ref in sorted(request.providers.items())}
    if request.dependencies:
        options["dependencies"] = sorted(urns.get(u, u) for u in request.dependencies)
    if request.deletedWith:
        options["deletedWith"] = urns.get(request.deletedWith, request.deletedWith)
    aliases = [_alias(json_format.MessageToDict(a), urns) for a in request.aliases]
    aliases += [{"urn": urns.get(u, u)} for u in request.aliasURNs]
    if aliases:
        options["aliases"] = sorted(aliases, key=lambda a: json.dumps(a, sort_keys=True))
    for name, field in OPTIONS.items():
        value = wire.get(field)
        if value not in (None, False, "", [], {}):
            options[name] = sorted(value) if isinstance(value, list) else value
    if request.HasField("replacement_trigger"):
        options["replacementTrigger"] = _render(json_format.MessageToDict(request.replacement_trigger), urns)
    return options


def _provider(reference: str, urns: dict[str, str]) -> str:
    """A provider reference is `<urn>::<id>`: the URN alone (the id is the mocks', not the engine's)."""
    urn = reference.rsplit("::", 1)[0]
    return urns.get(urn, urn)


def _alias(alias: dict[str, Any], urns: dict[str, str]) -> dict[str, Any]:
    if "urn" in alias:
        return {"urn": urns.get(alias["urn"], alias["urn"])}
    spec = dict(alias.get("spec", {}))
    if "parentUrn" in spec:
        spec["parentUrn"] = urns.get(spec["parentUrn"], spec["parentUrn"])
    return spec


def _render(value: Any, urns: dict[str, str]) -> Any:
    """Wire-format inputs (pulumi/runtime/rpc.py) as plain data with markers for what is not."""
    if isinstance(value, dict):
        signature = value.get(rpc._special_sig_key)
        if signature == rpc._special_secret_sig:
            return SECRET
        if signature == rpc._special_resource_sig:
            return {"[resource]": urns.get(value["urn"], value["urn"])}
        if signature in (rpc._special_asset_sig, rpc._special_archive_sig):
            kind = "[asset]" if signature == rpc._special_asset_sig else "[archive]"
            return {kind: {k: v for k, v in sorted(value.items()) if k != rpc._special_sig_key}}
        if signature is not None:
            raise ValueError(f"a value of unknown signature {signature} among the inputs")
        return {key: _render(item, urns) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [_render(item, urns) for item in value]
    if value == rpc.UNKNOWN:
        return UNKNOWN
    # The wire carries every number as a double.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def pickled_class(encoded: str) -> str:
    """The class a pickled provider names, read from the pickle's opcodes without loading it:
    dill pickles an importable class by reference, its module and name (`GLOBAL` or `STACK_GLOBAL`)."""
    strings: list[str] = []
    for opcode, argument, _ in pickletools.genops(base64.b64decode(encoded)):
        if opcode.name == "GLOBAL":
            module, name = str(argument).split(" ", 1)
            return f"{module}.{name}"
        if opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            return f"{strings[-2]}.{strings[-1]}"
        if isinstance(argument, str):
            strings.append(argument)
    return "an unreadable class"


def golden_path(config: str) -> Path:
    return GOLDEN_DIR / f"{config}.json"


def golden_text(config: str, about: str, resources: dict[str, dict[str, Any]]) -> str:
    document = {"config": config, "about": about, "resources": resources}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def updating() -> bool:
    return os.environ.get(UPDATE_ENV, "") not in ("", "0")


def differences(golden: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]]) -> list[str]:
    """What changed, by URN: resources gone, resources new (a rename is both: a replacement on every
    deployed stack unless the new one has an alias to the old URN), then each key changed."""
    gone = [f"- {urn}: in the golden file, no longer registered" for urn in sorted(set(golden) - set(now))]
    new = [f"+ {urn}: registered now, not in the golden file" for urn in sorted(set(now) - set(golden))]
    changed: list[str] = []
    for urn in sorted(set(golden) & set(now)):
        keys = list(_changes(golden[urn], now[urn], ""))
        if keys:
            changed.append(f"~ {urn}:")
            changed += [f"    {key}: {change}" for key, change in keys]
    return gone + new + changed


_ABSENT = object()
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _changes(old: Any, new: Any, path: str) -> Iterator[tuple[str, str]]:
    """(key, what became of it) for each leaf that differs; lists of one length item by item, a
    list of names that grew or shrank by the names it lost and gained."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            step = f"{path}.{key}" if _IDENTIFIER.match(key) else f"{path}[{json.dumps(key)}]"
            yield from _changes(old.get(key, _ABSENT), new.get(key, _ABSENT), step.lstrip("."))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _changes(a, b, f"{path}[{index}]")
    elif isinstance(old, list) and isinstance(new, list) and all(isinstance(v, str) for v in old + new):
        lost = [_shown(v) for v in old if v not in new]
        gained = [_shown(v) for v in new if v not in old]
        yield path, "; ".join([*(f"without {v}" for v in lost), *(f"with {v}" for v in gained)]) or "reordered"
    elif old != new:
        yield path, f"{_shown(old)} -> {_shown(new)}"


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


def failure_message(config: str, lines: list[str]) -> str:
    shown = lines[:MAX_LINES]
    if len(lines) > MAX_LINES:
        shown.append(f"... and {len(lines) - MAX_LINES} more lines")
    path = golden_path(config).relative_to(ROOT)
    return f"golden state {config!r} changed ({path}):\n" + "\n".join(shown) + "\n" + HOW_TO_UPDATE
