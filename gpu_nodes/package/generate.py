"""Writes `inputs.py`, the package's typed inputs, from the field declarations.

The Python SDK infers a component's schema from the type annotations of its `args` and from the
docstring under each annotation (pulumi/provider/experimental/analyzer.py, `analyze_type` and
`get_docstring`). Both come from the same `setting(...)` declarations that drive the stack
config's reader, the docs' config tables and Pulumi.yaml, so the schema cannot say other than they
do. tests/package/test_inputs.py holds the file to what this writes.

    .venv/bin/python -m gpu_nodes.package.generate   # rewrites gpu_nodes/package/inputs.py
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

from gpu_nodes.config.device_plugin import DevicePluginSpec
from gpu_nodes.config.dra import DraSpec
from gpu_nodes.config.fields import BOOLEAN, INTEGER, LIST, MISSING, STRING, Setting, settings
from gpu_nodes.config.node_group import NodeGroupSpec, NodeSpec, PriorityClassSpec
from gpu_nodes.config.preflight import PreflightSpec, SshProxySpec
from gpu_nodes.config.stack import ARGUMENTS
from gpu_nodes.config.verification import VerificationSpec

INPUTS_FILE = Path(__file__).with_name("inputs.py")


@dataclass(frozen=True)
class InputType:
    """An object type of the schema (`gpu-nodes:index:<name>`), read by a config section's spec."""

    name: str
    spec: type
    description: str


# Each object a program passes, each after the types it holds: the analyzer reads the annotations
# as objects, so inputs.py has no `from __future__ import annotations` and no forward reference.
# The schema names them; SDKs add `Args`.
INPUT_TYPES = (
    InputType("Node", NodeSpec, "One machine, already joined to the cluster as a node."),
    InputType("DevicePlugin", DevicePluginSpec, "The group's NVIDIA device plugin DaemonSet."),
    InputType("PriorityClass", PriorityClassSpec, "The PriorityClass of the group's GPU workloads."),
    InputType("Verification", VerificationSpec, "The verification Jobs that prove the group's GPUs as a tenant's pod gets them."),
    InputType("SshProxy", SshProxySpec, "A bastion the machines are reached through."),
    InputType("Preflight", PreflightSpec, "The checks run on each machine over SSH before it is brought in."),
    InputType("Dra", DraSpec, "What a group whose GPUs NVIDIA's DRA driver allocates offers beyond ResourceClaims."),
    InputType("NodeGroup", NodeGroupSpec, "One group of like GPU machines: an entry of `nodeGroups`."),
)
# The components' own inputs: the fleet's are the stack's settings, as `GpuFleetArgs` names them;
# a group on its own takes its keys and the fleet's others beside them.
FLEET_INPUTS = "GpuFleetInputs"
GROUP_INPUTS = "GpuNodeGroupInputs"
_SCALARS = {STRING: "str", INTEGER: "int", BOOLEAN: "bool"}


def type_name(spec: type) -> str:
    return next(t.name for t in INPUT_TYPES if t.spec is spec)


def annotation(s: Setting) -> str:
    """The value's type as a program passes it: an Input (not plain in the schema, so every SDK takes
    an Output there) for a secret, which arrives as a secret Output, and for a value that may come
    from another resource (`Setting.from_resource`); the rest plain, known when the component runs."""
    if s.annotation is not None:
        text = s.annotation
    elif s.section is not None:
        text = f"list[{type_name(s.section)}]" if s.kind is LIST else type_name(s.section)
    else:
        text = _SCALARS[s.kind]
    return f"pulumi.Input[{text}]" if s.secret or s.from_resource else text


def description(s: Setting) -> str:
    """The table's meaning (a section's own, its type's), then its default: one text for the schema,
    the docs' tables and a reader of inputs.py."""
    text = s.meaning or next((t.description for t in INPUT_TYPES if t.spec is s.section), "")
    text = text[:1].upper() + text[1:]
    if s.default is MISSING:
        return text.rstrip(".") + "."
    default = s.readme_default()
    ending = f"{default[:1].upper()}{default[1:]}" if default.startswith("required") else f"Default: {default}"
    return f"{text.rstrip('.')}. {ending}."


def _docstring_expression(text: str) -> list[str]:
    """A docstring as one string expression, a long one joined inside parentheses, lines under 130."""
    if len(text) <= 110:
        return [f"    {_quoted(text)}"]
    parts = textwrap.wrap(text, 100, break_on_hyphens=False, drop_whitespace=False)
    return ["    (", *(f"        {_quoted(part)}" for part in parts), "    )"]


def _quoted(text: str) -> str:
    # A JSON string is a Python string literal too, in double quotes as ruff writes them.
    return json.dumps(text, ensure_ascii=False)


def _class(name: str, doc: str, fields: list[tuple[str, Setting]]) -> list[str]:
    lines = [f"class {name}(TypedDict):", f"    {_quoted(doc)}", ""]
    for attr, s in fields:
        typed = annotation(s) if s.default is MISSING else f"NotRequired[{annotation(s)}]"
        lines += [f"    {attr}: {typed}", *_docstring_expression(description(s))]
    return lines + ["", ""]


def inputs_source() -> str:
    """The text of inputs.py."""
    lines = [
        '"""The package\'s typed inputs, written by gpu_nodes/package/generate.py from the field declarations: do not edit.',
        "",
        "Keys are the stack config's own (camelCase, as the schema and every SDK spell them); the component",
        "maps them onto `GpuFleetArgs` (gpu_nodes/package/components.py).",
        '"""',
        "",
        "from typing import Any, NotRequired, TypedDict",
        "",
        "import pulumi",
        "",
        "",
    ]
    for input_type in INPUT_TYPES:
        lines += _class(input_type.name, input_type.description, [(s.key, s) for _, s in settings(input_type.spec)])
    fleet = list(ARGUMENTS.items())
    lines += _class(FLEET_INPUTS, "What a GPU fleet asks for: the stack config's `gpu-nodes:*` settings.", fleet)
    group = [(s.key, s) for _, s in settings(NodeGroupSpec)] + [(name, s) for name, s in fleet if name != "node_groups"]
    lines += _class(GROUP_INPUTS, "What one GPU node group asks for on its own: its keys, and the fleet's beside them.", group)
    names = [*(t.name for t in INPUT_TYPES), FLEET_INPUTS, GROUP_INPUTS]
    lines += ["__all__ = [", *(f'    "{name}",' for name in names), "]", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    INPUTS_FILE.write_text(inputs_source())
    print(f"wrote {INPUTS_FILE}")
