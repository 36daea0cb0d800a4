"""Kubernetes syntax: names, labels, images and taints, as the API server and kubectl read them."""

from __future__ import annotations

import re
from dataclasses import dataclass

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class Taint:
    """A taint, and its identity wherever taints are compared: an empty value is no value."""

    key: str
    value: str | None
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}" if self.value is not None else f"{self.key}:{self.effect}"

    @classmethod
    def from_k8s(cls, taint: dict[str, str]) -> Taint:
        """A taint as the API returns it; an empty value is no value, as kubectl shows it."""
        return cls(key=taint["key"], value=taint.get("value") or None, effect=taint["effect"])

    @property
    def slot(self) -> tuple[str, str]:
        """What the API server keeps unique on a node: one taint per key and effect."""
        return self.key, self.effect

    def to_k8s(self) -> dict[str, str]:
        taint = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            taint["value"] = self.value
        return taint


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS_LABEL.match(value))


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS_SUBDOMAIN.match(value))


def is_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and is_dns_subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


def is_pinned_image(image: str) -> bool:
    """True when the image names a digest, or a tag other than `latest`."""
    if _DIGEST.search(image):
        return True
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.rsplit(":", 1)[1]
    return bool(_TAG.match(tag)) and tag != "latest"


def image_tag(image: str) -> str:
    """The tag of a pinned image (or `digest` when pinned by digest only)."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "digest"


def parse_taint(text: str) -> Taint | None:
    """Parse `key[=value]:Effect` as `kubectl taint` does; None when it does not parse."""
    spec, sep, effect = text.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        return None
    key, has_value, value = spec.partition("=")
    if not is_label_key(key) or (has_value and not is_label_value(value)):
        return None
    return Taint(key=key, value=value if has_value else None, effect=effect)
