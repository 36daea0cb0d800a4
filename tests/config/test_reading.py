"""How a config object is read by its declarations (gpu_nodes/config/reading.py), as it shows on any
section's keys: a required key, a wrong type, a null, an unknown key."""

from __future__ import annotations

from gpu_nodes.config.stack import parse_stack
from tests.config.problems import KEY, assert_one_problem, problems_of, refused
from tests.factories import group


def test_missing_required_field():
    raw = group()
    del raw["gpusPerNode"]
    assert_one_problem(problems_of(raw), f"{KEY}.gpusPerNode", "required", "whole number")


def test_boolean_is_not_a_number():
    raw = group()
    raw["nodes"][0]["sshPort"] = True
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshPort", "True", "whole number")


def test_null_is_not_set_where_a_value_is_needed():
    """`enabled:` with nothing after it is null: not set, so the default; a required key stays required."""
    assert parse_stack([group(preflight={"enabled": None})]).node_groups[0].preflight.enabled is True
    assert_one_problem(problems_of(group(name=None)), f"{KEY}.name", "the key is required", "a string")
    raw = group()
    raw["nodes"][0]["sshHost"] = None
    assert_one_problem(problems_of(raw), f"{KEY}.nodes[0].sshHost", "the key is required", "a string")


def test_null_list_or_object_is_the_default_not_empty():
    spec = parse_stack([group(taints=None, labels=None)]).node_groups[0]
    assert [str(t) for t in spec.taints] == ["nvidia.com/gpu=present:NoSchedule"], spec
    assert dict(spec.labels) == {"accelerator": "nvidia", "nvidia.com/gpu.present": "true"}, spec
    # Optional fields take null as unset.
    assert parse_stack([group(preflight={"minDriver": None})]).node_groups[0].preflight.min_driver is None


REFUSED = [
    ("wrong_type", group(gpusPerNode="8"), f"{KEY}.gpusPerNode", ("'8'", "whole number")),
    ("unknown_key_is_a_typo", group(gpusPerPod=[1]), f"{KEY}.gpusPerPod", ("unknown key", "gpusPerNode")),
]


@refused(REFUSED)
def test_a_setting_read_against_its_declaration_is_named(raw, key, fragments):
    assert_one_problem(problems_of(raw), key, *fragments)
