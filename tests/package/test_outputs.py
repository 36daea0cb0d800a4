"""gpu_nodes/package/outputs.py: the report's types name every key the component reports, and each
value the real preflight script reports is of the type they say. An SDK reads the outputs by these
types; Go's decodes each into a struct field of that type."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, NotRequired, get_args, get_origin

from gpu_nodes.package.outputs import NodeReport, PreflightReport, QuarantineReport, TenantAccess
from gpu_nodes.preflight.command import parse_report
from gpu_nodes.proof.quarantine import Quarantine
from gpu_nodes.resources.fleet import tenant_access
from tests.factories import group
from tests.pulumi_mocks import run_inline
from tests.scripts.preflight_node import FakeNode, make_system_bin
from tests.specs import group_spec


def mismatches(value: Any, annotation: Any, path: str = "") -> list[str]:
    """Where value is not of the annotated type (None stands for a key left out)."""
    if get_origin(annotation) is NotRequired:
        (annotation,) = get_args(annotation)
    if value is None:
        return []
    if typing.is_typeddict(annotation):
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is no object"]
        fields = annotation.__annotations__
        found = [f"{path}.{key}: no such key in {annotation.__name__}" for key in value if key not in fields]
        return found + [m for key, item in value.items() if key in fields for m in mismatches(item, fields[key], f"{path}.{key}")]
    origin = get_origin(annotation)
    if origin is list:
        (item,) = get_args(annotation)
        return [m for index, v in enumerate(value) for m in mismatches(v, item, f"{path}[{index}]")]
    if origin is dict:
        _, item = get_args(annotation)
        return [m for key, v in value.items() for m in mismatches(v, item, f"{path}.{key}")]
    if annotation is Any:
        return []
    ok = isinstance(value, annotation) and not (annotation is int and isinstance(value, bool))
    return [] if ok else [f"{path}: {value!r} is no {annotation.__name__}"]


def test_the_node_report_type_names_every_key_the_report_has():
    from gpu_nodes import GpuFleet, GpuFleetArgs

    reports: list = []

    def program() -> None:
        built = GpuFleet("gpus", GpuFleetArgs(node_groups=[group("a100", preflight={"enabled": False})]))
        built.node_groups.apply(reports.append)

    run_inline(program)
    (by_group,) = reports
    keys = {key for nodes in by_group.values() for report in nodes.values() for key in report}
    assert keys and keys <= set(NodeReport.__annotations__), f"NodeReport lacks {sorted(keys - set(NodeReport.__annotations__))}"
    for nodes in by_group.values():
        for name, report in nodes.items():
            assert not mismatches(report, NodeReport, name), mismatches(report, NodeReport, name)


def test_the_tenant_access_type_names_every_key_tenant_access_has():
    shared = group_spec("t4", devicePlugin={"sharing": {"strategy": "mps", "replicas": 4}})
    plain = group_spec("b200", allocator="dra", dra={"extendedResourceName": True})
    groups = (group_spec("a100"), group_spec("h100", allocator="dra"), shared, plain)
    keys = {key for spec in groups for key in tenant_access(spec)}
    assert keys == set(TenantAccess.__annotations__), f"TenantAccess: {sorted(keys)}"


def test_the_preflight_report_type_says_what_the_real_script_reports(tmp_path: Path):
    node = FakeNode.healthy(tmp_path / "node", make_system_bin(tmp_path / "bin"))
    for args in ((), ("--mig-strategy", "mixed")):
        result = node.preflight(*args)
        summary = parse_report(result.stdout)
        assert set(summary) | {"skipped"} == set(PreflightReport.__annotations__), sorted(summary)
        assert not mismatches(summary, PreflightReport, "preflight"), mismatches(summary, PreflightReport, "preflight")
        for part in ("driverAdvisories", "runtime", "kubelet", "toolkit"):
            assert summary[part] is not None, f"{args}: the script reported no {part}; the check above saw none of its keys"


def test_a_skipped_preflight_is_a_preflight_report():
    assert not mismatches({"skipped": True}, PreflightReport)


def test_the_quarantine_report_type_names_every_key_of_a_quarantine():
    held = Quarantine(by="NVSentinel", state="quarantined", cordoned=True, taints=("a=b:NoSchedule",), conditions=("GpuXid",))
    assert set(held.as_output()) == set(QuarantineReport.__annotations__), sorted(held.as_output())
    assert not mismatches(held.as_output(), QuarantineReport), mismatches(held.as_output(), QuarantineReport)
