"""bench/split.py's own arithmetic: which nodes each stack gets, what it owns, in which order stacks run."""

from __future__ import annotations

from bench.split import rounds, slices, split_config


def test_the_nodes_split_into_consecutive_even_slices():
    nodes = [f"n{i}" for i in range(10)]
    parts = slices(nodes, 3)
    assert [len(p) for p in parts] == [4, 3, 3], parts
    assert sum(parts, []) == nodes, parts


def test_only_the_first_stack_owns_the_shared_objects():
    owner, other = split_config(0, ["n1"]), split_config(1, ["n2"])
    assert "gpu-nodes:existingNamespaces" not in owner and "gpu-nodes:createRuntimeClass" not in owner, owner
    assert other["gpu-nodes:existingNamespaces"] == ["nvidia-device-plugin", "gpu-verification"], other
    assert other["gpu-nodes:createRuntimeClass"] == "false", other
    assert [g["name"] for g in owner["gpu-nodes:nodeGroups"] + other["gpu-nodes:nodeGroups"]] == ["bench-gpu-1", "bench-gpu-2"]


def test_the_owner_runs_alone_first_on_up_and_last_on_destroy():
    stacks = [f"s{k}" for k in range(1, 6)]
    assert rounds(stacks, 2, owner_first=True) == [["s1"], ["s2", "s3"], ["s4", "s5"]]
    assert rounds(stacks, 2, owner_first=False) == [["s5", "s4"], ["s3", "s2"], ["s1"]]
    assert rounds(stacks, 1, owner_first=True) == [["s1"], ["s2"], ["s3"], ["s4"], ["s5"]]
