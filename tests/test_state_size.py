"""bench/state_size.py: a stack export's bytes by resource type, the largest first."""

from __future__ import annotations

import json

from bench.state_size import format_sizes, sizes_by_type, stored_bytes

EXPORT = {
    "deployment": {
        "resources": [
            {"type": "kubernetes:batch/v1:Job", "inputs": {"a": "x" * 100}, "outputs": {"a": "x" * 300}},
            {"type": "kubernetes:batch/v1:Job", "inputs": {"a": "x" * 100}, "outputs": {"a": "x" * 300}},
            {"type": "pulumi:pulumi:Stack", "outputs": {}},
        ]
    }
}


def test_each_type_is_counted_and_the_largest_comes_first():
    sizes = sizes_by_type(EXPORT)
    assert [(s.type, s.count) for s in sizes] == [("kubernetes:batch/v1:Job", 2), ("pulumi:pulumi:Stack", 1)], sizes
    job = sizes[0]
    assert job.inputs == 2 * len('{"a":"' + "x" * 100 + '"}') and job.outputs > job.inputs, job


def test_the_state_is_measured_as_stored_not_as_the_export_indents_it():
    indented = json.dumps(EXPORT, indent=4)
    assert stored_bytes(indented) == len(json.dumps(EXPORT, separators=(",", ":"))) < len(indented), indented


def test_the_table_ends_with_the_whole_state_per_node():
    table = format_sizes(sizes_by_type(EXPORT), nodes=2)
    whole = sum(s.whole for s in sizes_by_type(EXPORT))
    assert table.splitlines()[-1] == f"| all | 3 | | | {whole / 1024:.1f} | {whole / 2 / 1024:.1f} |", table
