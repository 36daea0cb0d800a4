"""The cluster's access as our provider resource holds it (`ClusterAccess.served`)."""

from __future__ import annotations

import asyncio

import pulumi
import pytest

from gpu_nodes.kube.client import given_or_empty


async def _value(value):
    return value


def absent_in_a_preview() -> pulumi.Output:
    """A provider input that was never set, as a preview hands it back: the SDK makes an output
    the engine's answer lacks unknown when dry-running (pulumi/runtime/resource.py)."""
    return pulumi.Output(set(), _value(None), _value(False), _value(False))


def resolved(output: pulumi.Output) -> tuple:
    async def read():
        return await output.future(with_unknowns=True), await output.is_known(), await output.is_secret()

    return asyncio.get_event_loop().run_until_complete(read())


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, ""),
        ("ci", "ci"),
    ],
)
def test_a_plain_value_or_none(value, expected):
    assert given_or_empty(value) == expected


def test_an_input_never_set_is_known_and_empty_in_a_preview():
    # Unknown, it would leave our provider unconfigured in every preview: no diff of any resource of ours.
    assert resolved(given_or_empty(absent_in_a_preview())) == ("", True, False)


def test_a_secret_stays_secret():
    secret = pulumi.Output(set(), _value("apiVersion: v1\n"), _value(True), _value(True))
    assert resolved(given_or_empty(secret)) == ("apiVersion: v1\n", True, True)
