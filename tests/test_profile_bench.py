"""bench/profile.py's reading of what it measures: py-spy's raw samples by package and function, and
which process is which part of a run."""

from __future__ import annotations

from bench.harness import part
from bench.profile import Profiled, cli_profile, cluster_part, package_of, read_spy
from bench.timeline import Stamped, StepSpan, busy_seconds, idle_seconds, kind_of, step_spans, waits_table

# Two stacks as `py-spy record --format raw --full-filenames` writes them: frames outermost first, then the count.
EXEC = "<module> (/venv/bin/pulumi-language-python-exec:9)"
STACK_PY = "run (/venv/lib/python3.11/site-packages/pulumi/runtime/stack.py:40)"
RAW = "\n".join(
    [
        f"{EXEC};{STACK_PY};_wait (/py/lib/python3.11/asyncio/tasks.py:512) 30",
        f"{EXEC};read (/work/gpu_nodes/providers/taints.py:120);raw_decode (/py/lib/python3.11/json/decoder.py:353) 10",
    ]
)


def test_a_frame_belongs_to_a_package_of_the_virtualenv_to_gpu_nodes_or_to_the_standard_library():
    assert package_of("/venv/lib/python3.11/site-packages/pulumi/runtime/stack.py") == "pulumi"
    assert package_of("/work/gpu_nodes/providers/taints.py") == "gpu_nodes"
    assert package_of("/py/lib/python3.11/asyncio/tasks.py") == "stdlib: asyncio"
    assert package_of("<frozen importlib._bootstrap>") == "stdlib: importlib"


def test_samples_count_once_per_package_on_the_stack_and_for_the_innermost_function():
    result = Profiled("preview")
    read_spy(RAW, "program", result)
    assert result.samples["program"] == 40, result.samples
    assert result.packages["program"]["pulumi"] == 30 and result.packages["program"]["gpu_nodes"] == 10, result.packages
    assert result.own["program"]["_wait (stdlib: asyncio)"] == 30, result.own
    assert result.ours["program"] == {"read (taints.py)": 10}, result.ours


def test_each_process_of_a_run_is_named_by_its_part():
    assert part("pulumi", "pulumi preview --stack bench") == "CLI"
    assert part("python", "/venv/bin/python -u /c/bin/pulumi-language-python-exec --root /w") == "program"
    assert part("pulumi-resource", "/c/plugins/pulumi-resource-kubernetes 127.0.0.1:1") == "kubernetes provider"
    assert part("python", "/venv/bin/python -u -m pulumi.dynamic 127.0.0.1:1") == "dynamic providers"
    assert part("bash", "bash -c true") is None
    assert cluster_part("kube-apiserver") == "cluster: kube-apiserver" and cluster_part("sshd") is None


# Engine events as `pulumi destroy --event-log` writes them (apitype.EngineEvent: one JSON object a line), stamped
# as bench/timeline.py reads them.
NS = "urn:pulumi:bench::gpu-nodes::gpu-nodes:index:GpuFleet$kubernetes:core/v1:Namespace::gpu-nodes-ns-gpu-verification"
JOB = "urn:pulumi:bench::gpu-nodes::gpu-nodes:index:GpuNodeGroup$kubernetes:batch/v1:Job::bench-gpu-verify-gpu-node-1-dcgm"


def _event(key: str, urn: str, op: str, type_: str) -> dict:
    return {"sequence": 1, "timestamp": 1, key: {"metadata": {"op": op, "urn": urn, "type": type_}}}


EVENTS = [
    Stamped(1.0, {"sequence": 0, "timestamp": 1, "preludeEvent": {"config": {}}}),
    Stamped(2.0, _event("resourcePreEvent", JOB, "delete", "kubernetes:batch/v1:Job")),
    Stamped(2.5, _event("resOutputsEvent", JOB, "delete", "kubernetes:batch/v1:Job")),
    Stamped(4.0, _event("resourcePreEvent", NS, "delete", "kubernetes:core/v1:Namespace")),
    Stamped(9.0, _event("resOutputsEvent", NS, "delete", "kubernetes:core/v1:Namespace")),
]


def test_a_step_spans_its_pre_event_to_its_outputs_event_and_a_job_is_named_by_its_proof_item():
    spans = step_spans(EVENTS)
    assert [(s.kind, s.op, s.start, s.end) for s in spans] == [
        ("Job (dcgm)", "delete", 2.0, 2.5),
        ("Namespace", "delete", 4.0, 9.0),
    ]
    assert kind_of(NS, "kubernetes:core/v1:Namespace") == "Namespace"


def test_a_failed_step_ends_at_its_failure_and_a_planned_one_is_no_step():
    failed = [
        Stamped(1.0, _event("resourcePreEvent", JOB, "create", "kubernetes:batch/v1:Job")),
        Stamped(3.0, _event("resOpFailedEvent", JOB, "create", "kubernetes:batch/v1:Job")),
        Stamped(3.5, {"resourcePreEvent": {"planning": True, "metadata": {"op": "same", "urn": NS, "type": "x"}}}),
    ]
    assert [(s.op, s.seconds) for s in step_spans(failed)] == [("create", 2.0)]


def test_time_with_no_step_in_flight_is_before_the_first_between_and_after_the_last():
    spans = step_spans(EVENTS)
    assert idle_seconds(spans, wall=10.0) == (2.0, 1.5, 1.0)
    assert idle_seconds([], wall=10.0) == (10.0, 0.0, 0.0)


def test_overlapping_steps_count_once_in_flight():
    spans = [StepSpan("a", "Job", "delete", 0.0, 2.0), StepSpan("b", "Job", "delete", 1.0, 3.0)]
    spans.append(StepSpan("c", "Job", "delete", 5.0, 6.0))
    assert busy_seconds(spans) == 4.0


def test_the_waits_table_has_a_row_per_resource_kind_and_operation_in_the_order_they_began():
    table = waits_table(step_spans(EVENTS), wall=10.0).splitlines()
    assert table[2] == "| Job (dcgm) | delete | 1 | 2.0 | 2.5 | 0.5 | 0.50 | 0.50 |", table
    assert table[3] == "| Namespace | delete | 1 | 4.0 | 9.0 | 5.0 | 5.00 | 5.00 |", table
    assert table[-1].startswith("2 steps in 10.0 s; no step in flight 2.0 s before the first, 1.5 s between"), table


def test_the_clis_profile_is_read_with_the_pulumi_on_the_benchs_path(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("go", "pulumi"):
        (tools / name).write_text('#!/bin/sh\necho "$@"\n')
        (tools / name).chmod(0o755)
    (tmp_path / "cli.7.cpu").write_text("")
    assert cli_profile(tmp_path, str(tools)) == f"tool pprof -top -cum {tools / 'pulumi'} {tmp_path / 'cli.7.cpu'}"
    assert cli_profile(tmp_path, str(tmp_path / "nowhere")) == "no CLI profile (`go` or the profile is missing)"
