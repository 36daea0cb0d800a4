"""The fake API server's label selectors and watch events behave as the API server's (tests/fake_watches.py)."""

from __future__ import annotations

import pytest

from tests.fake_watches import FakeKind, selects

LABELS = {"app.kubernetes.io/part-of": "gpu-nodes", "app.kubernetes.io/instance": "a100"}


@pytest.mark.parametrize(
    "selector, selected",
    [
        ("app.kubernetes.io/instance=a100", True),
        ("app.kubernetes.io/instance==a100", True),
        ("app.kubernetes.io/instance=h100", False),
        ("app.kubernetes.io/part-of=gpu-nodes,app.kubernetes.io/instance=a100", True),
        ("app.kubernetes.io/part-of=gpu-nodes,app.kubernetes.io/instance=h100", False),
        ("app.kubernetes.io/instance in (h100,a100)", True),
        ("app.kubernetes.io/instance in (h100, b200)", False),
        ("app.kubernetes.io/part-of=gpu-nodes,app.kubernetes.io/instance in (a100,h100)", True),
        # A key the object lacks: `in` and `=` both require it (labels.Requirement.Matches).
        ("example.com/rack in (r1)", False),
        ("example.com/rack=", False),
        ("", True),
    ],
)
def test_a_selector_selects_as_the_api_server_does(selector, selected):
    assert selects(selector, {"metadata": {"labels": LABELS}}) is selected, selector


def test_the_fake_refuses_what_it_does_not_read():
    with pytest.raises(ValueError, match="notin"):
        selects("app.kubernetes.io/instance notin (a100)", {"metadata": {"labels": LABELS}})


def test_an_object_that_stops_matching_is_deleted_from_the_watch():
    kind = FakeKind()
    watch = kind.source("app.kubernetes.io/instance=a100")
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": dict(LABELS)}}
    kind.put(pod)
    kind.put({**pod, "metadata": {**pod["metadata"], "labels": {**LABELS, "extra": "x"}}})
    kind.put({**pod, "metadata": {**pod["metadata"], "labels": {"app.kubernetes.io/instance": "h100"}}})
    kind.put({**pod, "metadata": {**pod["metadata"], "labels": {"app.kubernetes.io/instance": "b200"}}})
    watch.close()

    assert [event["type"] for event in watch.watch("10")] == ["ADDED", "MODIFIED", "DELETED"]
