"""What a Python program passes that stack config cannot: the arguments' Python types and the stack
label. Checked before anything is registered, each problem named by the argument."""

from __future__ import annotations

from typing import Any

import pulumi

from gpu_nodes.config.checks import is_label_value

STACK_LABEL_ALLOWED = (
    "expected a label value: 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)


def secret_argument_problem(argument: str, value: Any) -> str | None:
    """A secret argument that is no text: named by its type only (it may hold the key all the same)."""
    if value is None or isinstance(value, (str, pulumi.Output)):
        return None
    kind = type(value).__name__
    return f"{argument}: got a value of type {kind}; expected the text as a string, best as a secret (pulumi.Output.secret)"


def stack_label_problem(value: Any) -> str | None:
    """The label each claimed object carries (gpu_nodes/providers/claims.py): the API server refuses any other."""
    if isinstance(value, str) and value and is_label_value(value):
        return None
    return f"stack_label: got {value!r}; {STACK_LABEL_ALLOWED}"
