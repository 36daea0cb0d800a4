"""bench/mocked_program.py, the program_bench's own mock run, against the tests' one: for the same
stack config the bench registers as many resources as tests/pulumi_mocks.py records."""

from __future__ import annotations

from bench.mocked_program import SECRET_KEYS, evaluate, fleet_config
from tests.pulumi_mocks import run_program


def test_the_fleet_config_has_the_nodes_in_groups_of_the_size_asked():
    groups = fleet_config(5, 2)["gpu-nodes:nodeGroups"]
    assert [g["name"] for g in groups] == ["group-0", "group-1", "group-2"], groups
    assert [len(g["nodes"]) for g in groups] == [2, 2, 1], groups


def test_the_bench_registers_what_the_tests_mock_run_records():
    config = fleet_config(3, 2)
    registered = evaluate(config)
    recorded = run_program(config, SECRET_KEYS)
    assert registered == len(recorded.resources), (registered, sorted(r.urn for r in recorded.resources))
    # Each node: its labels, script copy, preflight, taints, readiness and a verification Job per gpusPerPod.
    assert registered > 3 * 7, registered
