"""Reading the pod-level knobs of stack config: tolerations, resources, XIDs to ignore.

Each reader returns the value as the manifest takes it and adds one problem per mistake,
named by its key, as gpu_nodes/config/parse.py does for everything else.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from gpu_nodes.config.fields import Problems
from gpu_nodes.config.k8s_syntax import TAINT_EFFECTS, is_label_key, is_label_value

_TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
_QUANTITY = re.compile(r"[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")
_RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage")


def read_tolerations(problems: Problems, key: str, raw: Any) -> tuple[dict[str, Any], ...]:
    """Tolerations as the pod spec takes them, in the order given."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, "expected a list of tolerations, e.g. [{key: example.com/dedicated, operator: Exists}]")
        return ()
    found: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        here = f"{key}[{index}]"
        if not isinstance(item, dict) or not item or set(item) - set(_TOLERATION_KEYS):
            problems.add(here, item, f"expected an object with {', '.join(_TOLERATION_KEYS)}")
            continue
        problem = _toleration_problem(item)
        if problem:
            problems.add(here, item, problem)
        else:
            found.append(dict(item))
    return tuple(found)


def _toleration_problem(item: dict[str, Any]) -> str | None:
    operator = item.get("operator", "Equal")
    if operator not in ("Equal", "Exists"):
        return "expected operator Equal or Exists"
    if "key" in item and not (isinstance(item["key"], str) and is_label_key(item["key"])):
        return "expected a label key as key"
    if "key" not in item and operator != "Exists":
        return "a toleration without a key must have operator Exists (it tolerates every taint)"
    if "value" in item and not isinstance(item["value"], str):
        return "a toleration's value is a string, as a taint's is: quote it (value: \"1\")"
    if any(name in item and not isinstance(item[name], str) for name in ("key", "operator", "effect")):
        return "key, operator and effect are strings"
    if isinstance(item.get("value"), str) and not is_label_value(item["value"]):
        # The API server takes an Equal toleration's value only as a label value (ValidateTolerations,
        # kubernetes/kubernetes pkg/apis/core/validation/validation.go).
        return "expected a label value as value: at most 63 letters, digits, '-', '_' or '.'"
    if operator == "Exists" and item.get("value") not in (None, ""):
        return "operator Exists takes no value"
    if "effect" in item and item["effect"] not in TAINT_EFFECTS:
        return f"expected effect {', '.join(TAINT_EFFECTS)} (or none: every effect)"
    if "tolerationSeconds" in item:
        seconds = item["tolerationSeconds"]
        if item.get("effect") != "NoExecute" or not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 0:
            return "tolerationSeconds is whole seconds, and only with effect NoExecute"
    return None


def read_resources(problems: Problems, key: str, raw: Any) -> dict[str, dict[str, str]]:
    """`{requests: {...}, limits: {...}}` with quantities as strings."""
    if not raw:
        return {}
    if not isinstance(raw, dict) or set(raw) - {"requests", "limits"}:
        problems.add(key, raw, 'expected {requests: {cpu: "50m", memory: 64Mi}, limits: {memory: 128Mi}}')
        return {}
    resources: dict[str, dict[str, str]] = {}
    for part in ("requests", "limits"):
        values = raw.get(part)
        if values is None:
            continue
        if not isinstance(values, dict):
            problems.add(f"{key}.{part}", values, f"expected a map of {', '.join(_RESOURCE_NAMES)} to quantities")
            continue
        for name, quantity in sorted(values.items(), key=lambda item: str(item[0])):
            text = str(quantity) if isinstance(quantity, (int, float)) and not isinstance(quantity, bool) else quantity
            if name not in _RESOURCE_NAMES:
                problems.add(f"{key}.{part}.{name}", name, f"expected one of {', '.join(_RESOURCE_NAMES)}")
            elif not isinstance(text, str) or not _QUANTITY.fullmatch(text):
                problems.add(f"{key}.{part}.{name}", quantity, "expected a Kubernetes quantity such as 50m, 0.5, 64Mi or 1Gi")
            else:
                resources.setdefault(part, {})[name] = text
    for name, request in sorted(resources.get("requests", {}).items()):
        limit = resources.get("limits", {}).get(name)
        if limit is not None and quantity_value(request) > quantity_value(limit):
            problems.add(
                f"{key}.requests.{name}", request, f"expected at most limits.{name} ({limit}): a request is within its limit"
            )
    return resources


_SUFFIXES = {
    **{
        s: Decimal(1000) ** p
        for s, p in (("n", -3), ("u", -2), ("m", -1), ("", 0), ("k", 1), ("M", 2), ("G", 3), ("T", 4), ("P", 5), ("E", 6))
    },
    **{s: Decimal(1024) ** p for s, p in (("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6))},
}


def quantity_value(text: str) -> Decimal:
    """A quantity's value, as apimachinery's resource.Quantity reads `<number><suffix>`."""
    found = _QUANTITY.fullmatch(text)
    assert found is not None, text
    number = text[: found.start(3)] if found[3] is not None else text
    suffix = found[3] or ""
    if suffix[:1] in ("e", "E") and suffix not in _SUFFIXES:
        return Decimal(text)
    return Decimal(number.lstrip("+")) * _SUFFIXES[suffix]


def read_xids(problems: Problems, key: str, raw: Any) -> tuple[int, ...]:
    """XIDs the plugin's health check should ignore, as it takes them: whole numbers."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(key, raw, "expected a list of XID numbers, e.g. [109]")
        return ()
    xids: list[int] = []
    for index, xid in enumerate(raw):
        if not isinstance(xid, int) or isinstance(xid, bool) or xid < 1:
            problems.add(f"{key}[{index}]", xid, "expected an XID number, e.g. 109")
        elif xid not in xids:
            xids.append(xid)
    return tuple(sorted(xids))
