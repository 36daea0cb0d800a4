"""Pulumi mocks for a team's unit tests of a program with a GPU fleet in it (docs/own-program.md,
"Testing your own program").

Pulumi's testing guide answers every resource with its inputs as its outputs. `GpuNodesMocks` does
the same, and adds what a real run adds to gpu-nodes' own resources: each machine's preflight
report, healthy or failing a named check, as the test chooses per node; the taints' first round;
for a node whose machine passed, the readiness check's verdict (every checklist item passed, those
its group runs beyond the runbook's included, the gate lifted, nothing measured); and, with a DRA
group, a cluster that keeps device taints and a DeviceClass's
extendedResourceName, as Kubernetes 1.36 does by default. A team whose tests have Mocks of their own
calls `outputs(args)` from theirs.

    pulumi.runtime.set_mocks(GpuNodesMocks(failing={"gpu-a-02": "driver"}), preview=False)
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Collection, Mapping
from typing import Any

import pulumi

from gpu_nodes.preflight.report import CHECKS, passing_report
from gpu_nodes.proof.checklist import BANDWIDTH_MET, CHECKLIST_ITEMS, DIAGNOSTICS_PASSED, METRICS_EXPORTED
from gpu_nodes.pulumi_internals import plain
from gpu_nodes.resources.child_names import COMMAND, DRA_FEATURES, PREFLIGHT_CHILD, READINESS, READINESS_CHILD, TAINTS

# What a healthy machine's GPUs are, unless its group declares a gpuModel.
HEALTHY_MODEL: str = passing_report()["gpus"][0]["name"]
# The readiness check's verdict on a node it proved (gpu_nodes/providers/readiness.py), before the items its group
# runs beyond the runbook's (`proven`). Nothing is measured under mocks: no DCGM, NCCL or exporter runs.
PROVEN: dict[str, Any] = {
    "checklist": dict.fromkeys(CHECKLIST_ITEMS, "pass"),
    "gate": "lifted",
    "measured": {"diagnostics": None, "busBandwidth": None, "metrics": None},
}
# The readiness inputs that add an item to a node's checklist, and the item (gpu_nodes/providers/readiness.py).
_OPTIONAL_ITEMS = {"diagnostics": DIAGNOSTICS_PASSED.key, "performance": BANDWIDTH_MET.key, "metrics": METRICS_EXPORTED.key}


def proven(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict on a node proven by these readiness inputs: every item of its checklist passed, the gate lifted."""
    verdict = copy.deepcopy(PROVEN)
    verdict["checklist"].update({item: "pass" for key, item in _OPTIONAL_ITEMS.items() if inputs.get(key)})
    return verdict
# A node's taints as first put on: the first verification round, no GPU found unhealthy.
FIRST_ROUND: dict[str, Any] = {"round": 1, "health": []}
# What the API server of a Kubernetes 1.36 cluster keeps of DRA's gated fields (DRADeviceTaints and
# DRAExtendedResource, beta and on there: gpu_nodes/providers/dra_features.py).
KEPT: dict[str, Any] = {"deviceTaints": True, "extendedResourceName": True}


def healthy_report(gpus: int = 1, model: str = HEALTHY_MODEL) -> dict[str, Any]:
    """What a machine that passes every check prints: `gpus` GPUs of `model` (the memory of
    passing_report's), each with its own UUID, and every check of the script passed."""
    gpu = passing_report()["gpus"][0]
    return {
        **passing_report(),
        "gpus": [{**gpu, "index": index, "name": model, "uuid": f"GPU-{index}"} for index in range(gpus)],
        "checks": [{"name": name, "ok": True, "detail": "passed (gpu_nodes.testing)"} for name in CHECKS],
    }


def failing_report(check: str, gpus: int = 1, model: str = HEALTHY_MODEL) -> dict[str, Any]:
    """What a machine prints that fails `check` (one of the script's checks) and passes the others."""
    if check not in CHECKS:
        raise ValueError(f"check: got {check!r}; expected one of the script's checks: {', '.join(CHECKS)}")
    report = healthy_report(gpus, model)
    failed = [{**c, "ok": False, "detail": "failed (gpu_nodes.testing)"} if c["name"] == check else c for c in report["checks"]]
    return {**report, "ok": False, "checks": failed}


class GpuNodesMocks(pulumi.runtime.Mocks):
    """Every resource's inputs as its outputs, as Pulumi's testing guide writes its mocks, with each
    machine's preflight answered as the test asks (a healthy machine by default).

    failing: node name -> the check its machine fails (a name of gpu_nodes.preflight.report.CHECKS).
    In a real run that command exits 1 and `pulumi up` stops at it: here the run goes on, so that a
    test can read what the report says of it. unchecked: nodes whose preflight answers nothing, as
    Pulumi's plain mocks answer (in a preview, an unknown). A node is known by the names of its
    resources, `<fleet>-<group>-<node>-preflight` and `-readiness`; where two of the names given
    fit one resource, the longer wins."""

    def __init__(self, failing: Mapping[str, str] | None = None, unchecked: Collection[str] = ()) -> None:
        self.failing = dict(failing or {})
        self.unchecked = frozenset(unchecked)
        # What new_resource answered, in order: (type, name, outputs).
        self.answered: list[tuple[str, str, dict[str, Any]]] = []
        problems = [
            f"failing[{node!r}]: got {check!r}; expected one of the script's checks: {', '.join(CHECKS)}"
            for node, check in self.failing.items()
            if check not in CHECKS
        ]
        problems += [f"unchecked: got {node!r}, which failing names too" for node in sorted(self.unchecked & self.failing.keys())]
        if problems:
            raise ValueError("; ".join(problems))

    # The id and the outputs, as pulumi/runtime/mocks.py (Mocks.new_resource) takes them.
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        outputs = self.outputs(args)
        self.answered.append((args.typ, args.name, outputs))
        return f"{args.name}_id", outputs

    def registered(self, typ: str) -> dict[str, dict[str, Any]]:
        """Each resource of type `typ` (`kubernetes:apps/v1:DaemonSet`, ...) registered so far, by
        name: its outputs, which are its inputs plus what these mocks add, as plain values (a secret
        input unwrapped; what the mocks answered the engine keeps it secret). A resource a program
        holds no reference to (the fleet's children) is asserted on here."""
        return {name: plain(outputs) for kind, name, outputs in self.answered if kind == typ}

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        """No function of a provider is called by the fleet: an empty result, no failures (the pair
        MockMonitor.Invoke in pulumi/runtime/mocks.py takes)."""
        return {}, None

    def outputs(self, args: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
        """The resource's inputs, with what a real run adds to gpu-nodes' own resources."""
        outputs = dict(args.inputs)
        if args.typ == COMMAND and args.name.endswith(f"-{PREFLIGHT_CHILD}"):
            outputs["stdout"] = self.preflight_stdout(args)
        elif args.typ == TAINTS:
            outputs.update(copy.deepcopy(FIRST_ROUND))
        elif args.typ == READINESS and self.passes(self.node(args.name, READINESS_CHILD)):
            outputs.update(proven(args.inputs))
        elif args.typ == DRA_FEATURES:
            outputs.update(KEPT)
        return outputs

    def preflight_stdout(self, args: pulumi.runtime.MockResourceArgs) -> str | None:
        """What the machine's preflight prints: for the GPUs its group expects (`--expect-gpus`,
        `--gpu-model` on the command line), healthy or failing; None when unchecked, which an update
        reads as None and a preview as unknown (pulumi/runtime/rpc.py, resolve_properties)."""
        node = self.node(args.name, PREFLIGHT_CHILD)
        if node in self.unchecked:
            return None
        gpus, model = expected_gpus(str(args.inputs.get("create") or ""))
        if node in self.failing:
            return json.dumps(failing_report(self.failing[node], gpus, model))
        return json.dumps(healthy_report(gpus, model))

    def node(self, name: str, role: str) -> str | None:
        """Which of the nodes this test names the resource `name` (`<...>-<node>-<role>`) belongs to."""
        named = [node for node in (*self.failing, *self.unchecked) if name.endswith(f"-{node}-{role}")]
        return max(named, key=len) if named else None

    def passes(self, node: str | None) -> bool:
        return node not in self.failing and node not in self.unchecked


def expected_gpus(create: str) -> tuple[int, str]:
    """The GPU count and model a preflight command line asks the machine for (its script arguments,
    gpu_nodes/preflight/command.py `preflight_arguments`); one GPU of HEALTHY_MODEL when it asks none."""
    words = shlex.split(create) if create else []
    asked = dict(zip(words, words[1:], strict=False))
    count = asked.get("--expect-gpus", "1")
    return (int(count) if count.isdigit() else 1), asked.get("--gpu-model", HEALTHY_MODEL)
