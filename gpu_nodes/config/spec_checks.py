"""What the specs' settings check, and the settings more than one spec declares alike.

Validators and declaration helpers for gpu_nodes/config/specs.py and gpu_nodes/config/stack_settings.py.
"""

from __future__ import annotations

import re
from typing import Any

from gpu_nodes.config.fields import STRING, Check, between, matching, one_of, setting
from gpu_nodes.config.k8s_syntax import is_dns_label, is_pinned_image
from gpu_nodes.constants import PULL_POLICIES

DRIVER_VERSION = matching(re.compile(r"^\d+(\.\d+){0,2}$"), "expected a driver version such as '535' or '550.54'")
TOOLKIT_VERSION = matching(re.compile(r"^(\d+(\.\d+){1,2})?$"), "expected a toolkit version such as '1.17.8', or \"\" for none")
RECHECK = matching(re.compile(r"^[!-~][ -~]{0,63}$"), "expected 1-64 printable characters, such as a date: '2026-11-30'")
_HOST_KEY_LINE = re.compile(
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com"
    r"|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$"
)


def is_host_key(value: str) -> bool:
    return bool(_HOST_KEY_LINE.match(value.strip()))


# Checks and messages more than one field uses.
PORT = between(1, 65535, "expected a port from 1 to 65535")
PINNED = Check(is_pinned_image, "expected an image pinned by tag (not 'latest') or digest, e.g. registry/name:v1.2.3")
CUDA_IN_TAG = re.compile(r"cuda(\d+)\.(\d+)")
NAMESPACE_NAME = Check(is_dns_label, "expected a namespace name (DNS-1123 label)")
HOST_KEY = Check(is_host_key, "expected an OpenSSH public host key line such as 'ssh-ed25519 AAAA...'")
_ABSOLUTE_PATH = re.compile(r"^/([A-Za-z0-9._+@-]+/?)*$")


def is_absolute_path(value: str) -> bool:
    """An absolute path on the machine, of plain names, without `.` or `..` parts."""
    return bool(_ABSOLUTE_PATH.match(value)) and not {".", ".."} & set(value.split("/"))


# The two programs the toolkit's CDI hooks run as (nvidia-container-toolkit internal/discover/hooks.go,
# getFixedArgsForCDIHookCLI: `nvidia-ctk hook <name>`, else `<basename> <name>`).
CDI_HOOK_PROGRAMS = ("nvidia-ctk", "nvidia-cdi-hook")
DIRECTORY = Check(is_absolute_path, "expected an absolute directory path such as /run/nvidia/driver")
CDI_HOOK = Check(
    lambda path: is_absolute_path(path) and path.rsplit("/", 1)[-1] in CDI_HOOK_PROGRAMS,
    f"expected the absolute path of {' or '.join(CDI_HOOK_PROGRAMS)} on the machines, such as /usr/bin/nvidia-ctk",
)


def image_setting(help: str, default: str, key: str = "image") -> Any:
    """A pinned image, for the device plugin and the verification pods."""
    return setting(key, STRING, "string", help, default=default, check=PINNED)


def count_or_percent(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return value >= 1
    return isinstance(value, str) and bool(re.fullmatch(r"\d{1,3}%", value)) and 1 <= int(value[:-1]) <= 100


def pull_policy_setting(whose: str) -> Any:
    """A container's imagePullPolicy, or Kubernetes' own default."""
    return setting(
        "imagePullPolicy",
        STRING,
        "`Always`/`IfNotPresent`/`Never`",
        f"{whose} `imagePullPolicy`; `Never` or `IfNotPresent` where images are loaded onto the machines (air-gapped)",
        default=None,
        default_text="Kubernetes' (`IfNotPresent` for a tag)",
        check=one_of(PULL_POLICIES),
    )


def namespace_setting(help: str, default: str) -> Any:
    """A namespace shared by the groups."""
    return setting("namespace", STRING, "string", help, default=default, check=NAMESPACE_NAME)
