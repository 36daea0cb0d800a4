"""bench/engine_bench.py's and bench/harness.py's own arithmetic: ratios, the table, memory roles, CPU time (no cluster)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from bench.engine_bench import COLUMNS, engine_settings, format_table, parse_sizes, ratio
from bench.harness import SizeResult, Step, cpu_seconds, peaks_mib, role


def test_ratio_is_engine_over_runbook_and_missing_when_either_side_is():
    assert ratio(30.0, 20.0) == 1.5
    assert ratio(None, 20.0) is None
    assert ratio(30.0, None) is None
    assert ratio(30.0, 0.0) is None


def test_table_has_one_row_per_step_with_ratio_and_state_per_node():
    result = SizeResult(10, preflight=True)
    result.steps = [
        Step(
            "up",
            engine_s=33.0,
            runbook_s=22.0,
            cli_mib=128.4,
            program_mib=80.0,
            providers_mib=300.0,
            cli_cpu_s=12.34,
            program_cpu_s=4.0,
            providers_cpu_s=6.5,
            cluster_cpu_s=20.0,
            state_bytes=1_200_000,
        ),
        Step("no-change preview", engine_s=5.5),
        Step("add one node", engine_s=9.0, runbook_s=3.0, state_bytes=1_320_000),
    ]
    lines = format_table([result]).splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    assert lines[2] == "| 10 | on | up | 33.0 | 22.0 | 1.50 | 128 | 80 | 300 | 12.3 | 4.0 | 6.5 | 20.0 | 1200 | 120.0 |"
    assert lines[3] == "| 10 | on | no-change preview | 5.5 | - | - | - | - | - | - | - | - | - | - | - |"
    # After adding one node the state holds N+1 nodes.
    assert lines[4] == "| 10 | on | add one node | 9.0 | 3.0 | 3.00 | - | - | - | - | - | - | - | 1320 | 120.0 |"


def test_a_size_run_with_a_backend_query_names_it_in_each_step():
    result = SizeResult(100, preflight=True, backend="?metadata=skip")
    result.steps = [Step("up", engine_s=250.0)]
    (line,) = format_table([result]).splitlines()[2:]
    assert line.startswith("| 100 | on | up, backend ?metadata=skip | 250.0 |"), line


def test_a_failed_size_says_so_in_a_row_as_wide_as_the_others():
    result = SizeResult(300, preflight=False, error="pulumi up exited 255")
    (line,) = format_table([result]).splitlines()[2:]
    assert "| 300 | off | FAILED: pulumi up exited 255 |" in line
    assert line.count("|") == len(COLUMNS) + 1


def test_roles_of_the_processes_of_a_pulumi_run():
    assert role("pulumi", "pulumi up --yes") == "cli"
    assert role("python", "/w/.venv/bin/python -u /c/bin/pulumi-language-python-exec --root /w") == "program"
    assert role("pulumi-resource", "/c/plugins/pulumi-resource-kubernetes 127.0.0.1:1") == "providers"
    assert role("python", "/w/.venv/bin/python -u -m pulumi.dynamic 127.0.0.1:1") == "providers"
    assert role("pulumi-language", "/c/bin/pulumi-language-python 127.0.0.1:1") is None


def test_providers_add_up_while_cli_and_program_take_the_largest_process():
    processes = {1: ("cli", 2048), 2: ("program", 1024), 3: ("program", 3072), 4: ("providers", 1024), 5: ("providers", 512)}
    peaks = peaks_mib(processes)
    assert peaks == {"cli": 2.0, "program": 3.0, "providers": 1.5}


def test_cpu_time_is_user_plus_system_from_proc_stat():
    # A real stat line's shape: the command name may hold spaces and parentheses.
    ticks = os.sysconf("SC_CLK_TCK")
    fields = ["S", "1", "1", "1", "0", "-1", "4194560", "100", "0", "0", "0", str(3 * ticks), str(ticks), "0", "0"]
    line = "4242 (python (x) y) " + " ".join(fields) + " 20 0 1 0 100"
    assert cpu_seconds(line) == 4.0


def test_cpu_time_of_this_process_is_read_from_proc():
    before = cpu_seconds(Path(f"/proc/{os.getpid()}/stat").read_text())
    sum(i * i for i in range(2_000_000))
    after = cpu_seconds(Path(f"/proc/{os.getpid()}/stat").read_text())
    assert after > before, (before, after)


def test_sizes():
    assert parse_sizes("30,100, 300") == [30, 100, 300]
    with pytest.raises(argparse.ArgumentTypeError):
        parse_sizes("0")


def test_stack_config_without_preflight_names_the_nodes_only():
    from tools.local.stack_config import node_groups, select_hosts

    hosts = select_hosts(2, preflight=False)
    assert hosts == [{"name": "gpu-node-1"}, {"name": "gpu-node-2"}]
    (group,) = node_groups(hosts, "bench-gpu", 4, 600, preflight=False)
    assert group["nodes"] == hosts
    assert group["preflight"]["enabled"] is False


def test_checkpoints_are_skipped_only_when_asked():
    assert engine_settings(skip_checkpoints=False) == {}
    assert engine_settings(skip_checkpoints=True) == {"PULUMI_SKIP_CHECKPOINTS": "true"}


def test_the_runbook_applies_the_service_account_its_daemonset_runs_as():
    from bench.runbook import Runbook
    from gpu_nodes.config.stack import parse_stack
    from tools.local.stack_config import node_groups, select_hosts

    groups = node_groups(select_hosts(1, preflight=False), "bench-gpu", 4, 600, preflight=False)
    runbook = Runbook(parse_stack(groups), {}, Path("key"), Path("known_hosts"))
    objects = {(o["kind"], o["metadata"]["name"]): o for o in runbook.plugin_objects()}
    daemonset = next(o for (kind, _), o in objects.items() if kind == "DaemonSet")
    account = daemonset["spec"]["template"]["spec"]["serviceAccountName"]
    assert ("ServiceAccount", account) in objects, f"runbook applies {sorted(objects)}, not the DaemonSet's {account}"


class RecordedRunbook:
    """The runbook with kubectl recorded, not run: each call's arguments and the objects it applied; a listing
    of the exporter's pods answers one per node."""

    def __init__(self, proof: str, nodes: int = 2) -> None:
        from bench.runbook import Runbook
        from gpu_nodes.config.stack import parse_stack
        from tools.local.stack_config import ProofItems, node_groups, select_hosts

        items = ProofItems.read(proof)
        groups = node_groups(select_hosts(nodes, preflight=False), "bench-gpu", 4, 600, preflight=False, proof=items)
        self.runbook = Runbook(parse_stack(groups), {}, Path("key"), Path("known_hosts"), log=lambda _: None)
        self.calls: list[tuple[str, ...]] = []
        self.applied: list[dict] = []
        self.runbook.kubectl = self.kubectl  # type: ignore[method-assign]

    def kubectl(self, *args: str, stdin: str | None = None, quiet: bool = False) -> str:
        import json

        self.calls.append(args)
        if args[0] == "apply":
            self.applied += json.loads(stdin or "{}")["items"]
        if args[:2] == ("get", "pods"):
            pods = [{"metadata": {"name": f"exporter-{n}"}, "spec": {"nodeName": n}} for n in ("gpu-node-1", "gpu-node-2")]
            return json.dumps({"items": pods})
        return ""


def test_the_runbook_creates_waits_for_and_reads_every_job_and_exporter_the_program_runs():
    from gpu_nodes.manifests.verification import verification_jobs

    recorded = RecordedRunbook("full")
    runbook = recorded.runbook
    runbook.apply(["gpu-node-1", "gpu-node-2"])
    jobs = {job.name for job in verification_jobs(runbook.group)}
    # Two workload Jobs, the access check, DCGM's and NCCL's, per node.
    assert len(jobs) == 10, jobs
    assert {o["metadata"]["name"] for o in recorded.applied if o["kind"] == "Job"} == jobs
    (wait,) = [c for c in recorded.calls if c[0] == "wait"]
    assert {arg.removeprefix("job/") for arg in wait if arg.startswith("job/")} == jobs
    kinds = {(o["kind"], o["metadata"]["name"]) for o in recorded.applied}
    assert ("DaemonSet", "dcgm-exporter-bench-gpu") in kinds and ("Service", "dcgm-exporter-bench-gpu") in kinds, kinds
    rollouts = [c[-2] for c in recorded.calls if c[:2] == ("rollout", "status")]
    assert rollouts == ["daemonset/nvidia-device-plugin-bench-gpu", "daemonset/dcgm-exporter-bench-gpu"], rollouts
    logged = [c[4] for c in recorded.calls if c[0] == "logs"]
    assert [s.rsplit("=", 1)[1] for s in logged] == ["diagnostics", "performance"], logged
    scraped = sorted(c[2] for c in recorded.calls if c[:2] == ("get", "--raw"))
    assert scraped == [f"/api/v1/namespaces/nvidia-device-plugin/pods/exporter-gpu-node-{n}:9400/proxy/metrics" for n in (1, 2)]

    recorded.calls.clear()
    runbook.teardown(["gpu-node-1", "gpu-node-2"])
    deleted = [c for c in recorded.calls if c[0] == "delete"]
    assert deleted[0][:2] == ("delete", "job") and "app.kubernetes.io/instance=bench-gpu" in deleted[0], deleted
    assert "daemonset/dcgm-exporter-bench-gpu" in deleted[1] and "service/dcgm-exporter-bench-gpu" in deleted[1], deleted


def test_the_runbook_with_the_default_proof_reads_dcgm_s_logs_and_runs_no_exporter():
    recorded = RecordedRunbook("default")
    recorded.runbook.apply(["gpu-node-1", "gpu-node-2"])
    assert not [o for o in recorded.applied if o["metadata"]["name"].startswith("dcgm-exporter")], recorded.applied
    assert [c[4].rsplit("=", 1)[1] for c in recorded.calls if c[0] == "logs"] == ["diagnostics"]
    assert not [c for c in recorded.calls if c[:2] in (("get", "pods"), ("get", "--raw"))], recorded.calls


def test_a_proof_item_in_the_defaults_costs_the_defaults_time_less_the_run_without_it():
    from bench.harness import item_cost

    # 100 nodes: the defaults' up took 120 s, without DCGM 100 s: DCGM adds 0.2 s a node.
    assert item_cost(100.0, 120.0, nodes=100, base_nodes=100, in_defaults=True) == pytest.approx(0.2)
    # An item asked for costs the run with it less the defaults'; the defaults' destroy removed 101 nodes.
    assert item_cost(131.0, 101.0, nodes=100, base_nodes=101, in_defaults=False) == pytest.approx(0.31)
    assert item_cost(None, 101.0, nodes=100, base_nodes=101, in_defaults=False) is None


def test_each_proof_item_measured_is_a_column_of_engine_and_runbook_seconds_per_node():
    result = SizeResult(100, preflight=False)
    up = Step("up", engine_s=100.0, runbook_s=120.0)
    up.item_costs = {"DCGM": (0.21, 0.18), "access": (None, 0.05)}
    result.steps = [up, Step("refresh", engine_s=10.0)]
    lines = format_table([result]).splitlines()
    assert lines[0].endswith("| KB/node | access s/node | DCGM s/node |"), lines[0]
    assert lines[2].endswith("| - | - | - / +0.05 | +0.21 / +0.18 |"), lines[2]
    assert lines[3].endswith("| - | - |"), lines[3]


def test_proof_items_are_read_by_name_and_written_back_as_read():
    from tools.local.stack_config import ProofItems, node_groups, select_hosts

    assert ProofItems.read("default") == ProofItems() and ProofItems().text == "dcgm"
    assert ProofItems.read("full").text == "dcgm,nccl,metrics" and ProofItems.read("none").text == "none"
    assert ProofItems.read("nccl,dcgm") == ProofItems(dcgm=True, nccl=True)
    with pytest.raises(argparse.ArgumentTypeError):
        ProofItems.read("dcgm,bandwidth")
    (group,) = node_groups(select_hosts(1, preflight=False), "g", 4, 600, preflight=False, proof=ProofItems.read("none"))
    assert group["verification"]["diagnostics"] == "off" and "performance" not in group["verification"], group
    assert "metrics" not in group


def test_the_items_to_cost_are_named_or_none():
    from bench.engine_bench import parse_items

    assert parse_items("DCGM,metrics") == ["DCGM", "metrics"] and parse_items("none") == []
    with pytest.raises(argparse.ArgumentTypeError):
        parse_items("dcgm")


def test_the_runbook_leaves_out_a_skipped_proof_job():
    from gpu_nodes.manifests.verification import Role

    recorded = RecordedRunbook("default")
    recorded.runbook.skips = (Role.ACCESS,)
    recorded.runbook.apply(["gpu-node-1", "gpu-node-2"])
    jobs = [o["metadata"]["name"] for o in recorded.applied if o["kind"] == "Job"]
    assert len(jobs) == 6 and not [j for j in jobs if "-access-" in j], jobs
