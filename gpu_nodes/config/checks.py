"""What a setting's value must look like: Kubernetes' syntax (names, labels, images, taints) as the
API server and kubectl read it, SSH's as OpenSSH reads it, and the checks and declarations more
than one section shares."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from typing import Literal, get_args

from gpu_nodes.config.fields import Check, between, matching, setting
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


# k8s.io/apimachinery pkg/util/validation/validation.go: IsEnvVarName (a container's variable)
# and IsConfigMapKey (a key of a Secret's data, at most 253 characters).
_ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")
# A variable of the shell that runs the command: POSIX's "name" (Base Definitions, 3.235).
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_env_var_name(value: str) -> bool:
    """A name Kubernetes takes for a container's environment variable."""
    return bool(_ENV_VAR_NAME.fullmatch(value))


def is_secret_key(value: str) -> bool:
    """A key of a Secret's data, as the API server takes it."""
    return len(value) <= 253 and bool(_CONFIG_MAP_KEY.fullmatch(value))


def is_shell_name(value: str) -> bool:
    """A name a shell takes for a variable (`export NAME=...`)."""
    return bool(_SHELL_NAME.fullmatch(value))


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


DRIVER_VERSION = matching(re.compile(r"[0-9]+(\.[0-9]+){0,2}"), "expected a driver version such as '535' or '550.54'")
TOOLKIT_VERSION = matching(
    re.compile(r"([0-9]+(\.[0-9]+){1,2})?"), "expected a toolkit version such as '1.19.1', or \"\" for none"
)
RECHECK = matching(re.compile(r"[!-~][ -~]{0,63}"), "expected 1-64 printable characters, such as a date: '2026-11-30'")
_HOST_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


def is_host_key(value: str) -> bool:
    """`<type> <base64> [comment]`, the base64 an SSH wire-format public key (RFC 4253 6.6: a
    length-prefixed string, the key's own type, comes first) of the type the line says."""
    parts = value.strip().split(" ", 2)
    if len(parts) < 2 or parts[0] not in _HOST_KEY_TYPES or "\n" in value.strip():
        return False
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return False
    length = int.from_bytes(blob[:4], "big")
    return len(blob) > 4 + length and blob[4 : 4 + length] == parts[0].encode()


def is_ssh_host(value: str) -> bool:
    """A host name or an IP address, as OpenSSH's valid_domain (misc.c) takes a host name: no
    port (that is sshPort), no user, no space."""
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*\.?", value)) and len(value) <= 253


def is_ssh_user(value: str) -> bool:
    """A user name as OpenSSH's ssh.c valid_ruser takes one: not empty, not an option (`-`),
    no control character, none of the shell's ' ` " ; & < > | ( ) { }; and no space."""
    return bool(value) and not value.startswith("-") and not re.search(r"[\x00-\x20\x7f'`\";&<>|(){}]", value)


# Checks and messages more than one field uses.
PORT = between(1, 65535, "expected a port from 1 to 65535", words="")
PINNED = Check(
    is_pinned_image,
    "expected an image pinned by tag (not 'latest') or digest (sha256: and 64 hex digits), an image reference such as "
    "registry/name:v1.2.3 (lowercase repository, no spaces)",
)
CUDA_IN_TAG = re.compile(r"cuda([0-9]+)\.([0-9]+)")
# One model, as nvidia-smi names it: preflight compares the machine's comma-joined models with it,
# so a comma would let a machine of mixed GPUs pass.
GPU_MODEL = Check(
    lambda model: bool(re.fullmatch(r"[!-~]([ -+\--~]*[!-+\--~])?", model)),
    "expected one GPU model as nvidia-smi names it, e.g. 'NVIDIA H100 80GB HBM3' (printable, no comma, not empty)",
)
NAMESPACE_NAME = Check(is_dns_label, "expected a namespace name (DNS-1123 label)")
HOST_KEY = Check(
    is_host_key,
    "expected an OpenSSH public host key line such as 'ssh-ed25519 AAAA...' (ssh-keyscan), whose key is of the type it names",
)
SSH_HOST = Check(is_ssh_host, "expected a host name or an IP address, without a port (that is sshPort) or a user")
SSH_USER = Check(
    is_ssh_user, "expected a user name as ssh takes it: not empty, no spaces, not starting with '-', no shell characters"
)
_ABSOLUTE_PATH = re.compile(r"/([A-Za-z0-9._+@-]+/?)*")


def is_absolute_path(value: str) -> bool:
    """An absolute path on the machine, of plain names, without `.` or `..` parts."""
    return bool(_ABSOLUTE_PATH.fullmatch(value)) and not {".", ".."} & set(value.split("/"))


# The two programs the toolkit's CDI hooks run as (nvidia-container-toolkit internal/discover/hooks.go,
# getFixedArgsForCDIHookCLI: `nvidia-ctk hook <name>`, else `<basename> <name>`).
CDI_HOOK_PROGRAMS = ("nvidia-ctk", "nvidia-cdi-hook")
DIRECTORY = Check(is_absolute_path, "expected an absolute directory path such as /run/nvidia/driver", noun="absolute path")
CDI_HOOK = Check(
    lambda path: is_absolute_path(path) and path.rsplit("/", 1)[-1] in CDI_HOOK_PROGRAMS,
    f"expected the absolute path of {' or '.join(CDI_HOOK_PROGRAMS)} on the machines, such as /usr/bin/nvidia-ctk",
    noun="absolute path",
)


# A container's imagePullPolicy, as the pod spec takes it.
PullPolicy = Literal["Always", "IfNotPresent", "Never"]
PULL_POLICIES: tuple[PullPolicy, ...] = get_args(PullPolicy)


def image_setting(help: str, default: str, key: str = "image") -> str:
    """A pinned image, for the device plugin and the verification pods."""
    return setting(key, help, default=default, check=PINNED)


def count_or_percent(value: object) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 1
    return isinstance(value, str) and bool(re.fullmatch(r"[0-9]{1,3}%", value)) and 1 <= int(value[:-1]) <= 100


COUNT_OR_PERCENT = Check(
    count_or_percent, "expected a whole number of at least 1, or a percentage from 1% to 100%", noun="int ≥ 1, or `N%`"
)


def pull_policy_setting(whose: str) -> PullPolicy | None:
    """A container's imagePullPolicy, or Kubernetes' own default."""
    return setting(
        "imagePullPolicy",
        f"{whose} `imagePullPolicy`; `Never` or `IfNotPresent` where images are loaded onto the machines (air-gapped)",
        default=None,
        default_text="Kubernetes' (`IfNotPresent` for a tag)",
    )


def namespace_setting(help: str, default: str) -> str:
    """A namespace shared by the groups."""
    return setting("namespace", help, default=default, check=NAMESPACE_NAME)
