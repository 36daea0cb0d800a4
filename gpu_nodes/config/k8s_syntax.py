"""Kubernetes syntax: names, labels, images and taints, as the API server and kubectl read them."""

from __future__ import annotations

import re

from gpu_nodes.vocabulary import OWN_KEY_DOMAIN, Taint

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
# An image reference as distribution/reference's regexp.go (referencePat) reads it: an optional
# domain (with a port) and `/`, lowercase path components, then `:tag` and/or `@digest`. Its
# `\w` is ASCII, and Go's `$` (unlike Python's) matches no final newline: fullmatch here. The
# digest is narrowed to what the registries we pull from publish: sha256 and 64 hex digits.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_IMAGE_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)

# reference.go: NameTotalLengthMax.
_MAX_IMAGE_NAME = 255


def is_dns_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS_LABEL.fullmatch(value))


def is_dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(value))


def is_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (prefix and is_dns_subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.fullmatch(name))


# Label and taint key prefixes that belong to someone else: "The kubernetes.io/ and k8s.io/
# prefixes are reserved for Kubernetes core components" (kubernetes/website,
# content/en/docs/concepts/overview/working-with-objects/labels.md), and the kubelet and the node
# lifecycle controller write under their subdomains too (node.kubernetes.io/unschedulable,
# node-role.kubernetes.io/...); gpu-nodes.dev is ours (the group label, the stack label, the gate).
_RESERVED_DOMAINS = (
    ("kubernetes.io", "Kubernetes"),
    ("k8s.io", "Kubernetes"),
    (OWN_KEY_DOMAIN, "gpu-nodes itself"),
)


def reserved_key_owner(key: str) -> str | None:
    """Who owns a label or taint key's prefix, when it is not the user's to set; else None."""
    prefix = key.rpartition("/")[0].lower()
    for domain, owner in _RESERVED_DOMAINS:
        if prefix == domain or prefix.endswith("." + domain):
            return owner
    return None


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.fullmatch(value))


def is_pinned_image(image: str) -> bool:
    """True when the image is a reference that names a digest, or a tag other than `latest`."""
    found = _IMAGE_REFERENCE.fullmatch(image)
    if found is None or len(found["name"]) > _MAX_IMAGE_NAME:
        return False
    return found["digest"] is not None or found["tag"] not in (None, "latest")


def image_tag(image: str) -> str:
    """The tag of a pinned image (or `digest` when pinned by digest only)."""
    found = _IMAGE_REFERENCE.fullmatch(image)
    return found["tag"] if found is not None and found["tag"] else "digest"


def parse_taint(text: str) -> Taint | None:
    """Parse `key[=value]:Effect` as `kubectl taint` does; None when it does not parse."""
    spec, sep, effect = text.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        return None
    key, has_value, value = spec.partition("=")
    if not is_label_key(key) or (has_value and not is_label_value(value)):
        return None
    return Taint(key=key, value=value if has_value else None, effect=effect)
