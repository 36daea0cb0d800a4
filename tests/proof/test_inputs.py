"""How a record travels as a dynamic resource's inputs, and what a change of each input does: every
input says so, and no record holds a field that does not."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

import gpu_nodes
from gpu_nodes.proof.inputs import (
    Change,
    DeclaredInputs,
    Input,
    as_dict,
    as_list,
    carried,
    declarations,
    declared,
    inputs,
    keys,
    whole_number,
)


@dataclass(frozen=True)
class Inner(DeclaredInputs):
    """A record carried by `Outer`, as a node's target is by its resources' inputs."""

    node: str = field(metadata=declared("node", Change.REPLACE, required=True))
    gpus: int | None = field(default=None, metadata=declared("gpus", Change.RERUN, read=whole_number))


@dataclass(frozen=True)
class Outer(DeclaredInputs):
    inner: Inner = field(metadata=carried(Inner))
    jobs: Sequence[str] = field(metadata=declared("jobs", Change.RERUN, read=as_list))
    hint: str | None = field(default=None, metadata=declared("hint", Change.STATE_ONLY))
    labels: Mapping[str, str] = field(
        default_factory=dict, metadata=declared("labels", Change.RERUN, as_dict, as_dict, only_when_set=True)
    )


@dataclass(frozen=True)
class Undeclared(DeclaredInputs):
    node: str = field(metadata=declared("node", Change.RERUN))
    forgotten: int = 0


def test_no_input_is_declared_without_what_a_change_of_it_does():
    change = inspect.signature(declared).parameters["change"]
    assert change.default is inspect.Parameter.empty, "declared(...) must require `change`"
    with pytest.raises(TypeError):
        declared("jobs")  # type: ignore[call-arg]


def test_a_field_that_declares_no_input_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"Undeclared\.forgotten declares no input"):
        keys(Undeclared)
    with pytest.raises(TypeError, match=r"Undeclared\.forgotten declares no input"):
        Undeclared("n1").to_props()


def test_a_carried_records_inputs_are_among_the_records_own_in_field_order():
    assert keys(Outer) == ("node", "gpus", "jobs", "hint", "labels"), keys(Outer)


def test_the_keys_of_one_change_are_those_declared_so():
    assert keys(Outer, Change.RERUN) == ("gpus", "jobs", "labels"), keys(Outer, Change.RERUN)
    assert keys(Outer, Change.STATE_ONLY) == ("hint",), keys(Outer, Change.STATE_ONLY)
    assert keys(Outer, Change.REPLACE) == ("node",), keys(Outer, Change.REPLACE)


def test_a_record_reads_back_from_its_inputs_as_it_was_written():
    written = Outer(Inner("n1", 4), ["job-a"], "a hint", {"team": "ml"})
    props = written.to_props()
    assert props == {"node": "n1", "gpus": 4, "jobs": ["job-a"], "hint": "a hint", "labels": {"team": "ml"}}, props
    assert Outer.from_props(props) == written, props


def test_an_input_only_when_set_is_left_out_when_empty_and_reads_back_empty():
    props = Outer(Inner("n1"), []).to_props()
    assert "labels" not in props, props
    assert Outer.from_props(props).labels == {}, props


def test_an_absent_optional_input_reads_as_none_and_an_absent_required_one_is_an_error():
    assert Outer.from_props({"node": "n1"}) == Outer(Inner("n1"), []), "n1: absent optional inputs"
    with pytest.raises(KeyError, match="node"):
        Outer.from_props({"jobs": []})


def test_numbers_from_the_engine_read_as_whole_numbers():
    read_back = Outer.from_props({"node": "n1", "gpus": 4.0}).inner.gpus
    assert read_back == 4 and isinstance(read_back, int), f"n1: {read_back!r}"


# Where the records of our dynamic resources live: the proof (a node's target) and the providers.
RECORD_PACKAGES = (gpu_nodes.proof, gpu_nodes.providers)


def records_of_the_package() -> list[type]:
    """Every record of the package that travels as a dynamic resource's inputs."""
    for package in RECORD_PACKAGES:
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    found, todo = [], list(DeclaredInputs.__subclasses__())
    while todo:
        record = todo.pop()
        found += [record] if record.__module__.startswith("gpu_nodes.") else []
        todo += record.__subclasses__()
    return sorted(found, key=lambda r: f"{r.__module__}.{r.__qualname__}")


RECORDS = records_of_the_package()


def test_the_package_has_its_records():
    names = {record.__name__ for record in RECORDS}
    assert {"NodeTarget", "ReadinessInputs", "TaintsInputs", "Claim", "CoexistenceInputs"} <= names, names


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.__name__)
def test_every_field_of_every_record_declares_its_input_and_what_a_change_of_it_does(record):
    for name, how in declarations(record):
        assert isinstance(how, Input) or issubclass(how, DeclaredInputs), f"{record.__name__}.{name}: {how!r}"
    for declared_input in inputs(record):
        assert isinstance(declared_input.change, Change), f"{record.__name__} input {declared_input.key}"


@pytest.mark.parametrize("record", RECORDS, ids=lambda record: record.__name__)
def test_no_two_inputs_of_a_record_share_a_key(record):
    found = keys(record)
    assert len(found) == len(set(found)), f"{record.__name__}: {found}"
