"""gpu_nodes/config/fields.py: a setting is declared once, its annotation its type. What the reader checks, the
docs' type column and the words of a setting of fixed words follow from the annotation, and a section cannot be
built with a value of another type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest

from gpu_nodes.config.device_plugin import DevicePluginSpec, SharingSpec
from gpu_nodes.config.fields import BOOLEAN, INTEGER, LIST, OBJECT, STRING, VALUE, conforms, section, setting, settings
from gpu_nodes.config.node_group import NodeGroupSpec, NodeSpec, PriorityClassSpec
from gpu_nodes.config.problems import MISSING, Problems
from gpu_nodes.config.reading import read_section
from gpu_nodes.config.verification import VerificationSpec


def declared(spec: type, key: str):
    (s,) = [s for _, s in settings(spec) if s.key == key]
    return s


def test_a_section_cannot_be_built_with_a_value_of_another_type():
    with pytest.raises(TypeError, match=r"SharingSpec\.replicas: got '4', not of the declared type int"):
        SharingSpec("timeSlicing", "4", False, None)  # type: ignore[arg-type]


def test_a_word_its_annotation_does_not_have_is_no_value_of_it():
    with pytest.raises(TypeError, match=r"SharingSpec\.strategy"):
        SharingSpec("spatial", 4, False, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "key", "kind", "type_text"),
    [
        (NodeGroupSpec, "gpusPerNode", INTEGER, "int ≥ 1"),
        (NodeGroupSpec, "gpuAccess", STRING, "`defaultRuntime`/`runtimeClass`/`cdi`"),
        (NodeGroupSpec, "labels", OBJECT, "map"),
        (NodeGroupSpec, "taints", LIST, "list of strings"),
        (NodeGroupSpec, "gpuFeatureLabels", BOOLEAN, "bool"),
        (DevicePluginSpec, "enabledXids", VALUE, "list of ints, or `all`"),
        (DevicePluginSpec, "maxUnavailable", VALUE, "int ≥ 1, or `N%`"),
        (DevicePluginSpec, "driverRoot", STRING, "absolute path"),
        (VerificationSpec, "diagnostics", VALUE, "`off`/`1`/`2`/`3`"),
        (VerificationSpec, "timeoutSeconds", INTEGER, "int 30-86400"),
    ],
)
def test_the_kind_and_the_type_column_follow_the_annotation_and_the_check(spec, key, kind, type_text):
    s = declared(spec, key)
    assert (s.kind, s.type_text) == (kind, type_text), key


def test_a_setting_of_fixed_words_is_checked_against_its_annotations_words():
    s = declared(DevicePluginSpec, "migStrategy")
    assert s.words == ("none", "single", "mixed"), s.words
    assert s.value_check is not None and s.value_check.ok("mixed") and not s.value_check.ok("dual")
    assert s.value_check.allowed == "expected one of none, single, mixed"


def test_a_section_is_read_by_its_own_declarations_and_from_its_defaults_when_left_out():
    s = declared(NodeGroupSpec, "devicePlugin")
    assert (s.section, s.default, s.row) == (DevicePluginSpec, {}, False), s
    nodes = declared(NodeGroupSpec, "nodes")
    assert (nodes.section, nodes.is_list, nodes.default) == (NodeSpec, True, MISSING), nodes


def test_what_follows_from_other_settings_is_no_field_filled_in_later():
    """A priority class's name is what the config says (None: not said); the group says what it is."""
    spec = read_section(Problems(), "", {}, PriorityClassSpec)
    assert spec is not None and spec.name is None, spec


@section
class Example:
    """A section of this test's own: a new setting is its annotated field and its `setting(...)`."""

    count: int = setting("count", "how many", default=1)
    word: Literal["a", "b"] | None = setting("word", "which", default=None)
    texts: tuple[str, ...] = setting(
        "texts", "which texts", default=None, written=Sequence[str], parse=lambda problems, key, raw: tuple(raw or ())
    )


@pytest.mark.parametrize(
    ("raw", "problems"),
    [
        ({"count": "2"}, ["count: got '2'; expected a whole number"]),
        ({"word": "c"}, ["word: got 'c'; expected one of a, b"]),
        ({"texts": "x"}, ["texts: got 'x'; expected a list"]),
        ({"cont": 2}, ["cont: got 2; unknown key; did you mean count?"]),
    ],
)
def test_a_new_setting_is_read_and_refused_by_its_declaration_alone(raw, problems):
    found = Problems()
    read_section(found, "", raw, Example)
    assert found.problems == problems


def test_a_new_setting_reads_into_its_annotations_type():
    found = Problems()
    assert read_section(found, "", {"count": 2, "word": "b", "texts": ["x"]}, Example) == Example(2, "b", ("x",))
    assert found.problems == []


@pytest.mark.parametrize(
    ("value", "declared_type", "conforms_to"),
    [
        (True, int, False),
        (3, float, True),
        ((1, 2), tuple[int, ...], True),
        ([1, 2], tuple[int, ...], False),
        ("all", tuple[int, ...] | Literal["all"], True),
        ({"a": 1}, dict[str, int], True),
        ({"a": "1"}, dict[str, int], False),
    ],
)
def test_a_value_conforms_to_its_type_as_mypy_would_have_it(value, declared_type, conforms_to):
    assert conforms(value, declared_type) is conforms_to, (value, declared_type)
