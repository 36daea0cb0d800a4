"""What the secret settings must be: an SSH private key, a registry login. Checked before anything
is registered, and named in a message by their length only: a secret stays secret.

pulumi-command logs in with golang.org/x/crypto/ssh's ParsePrivateKey, whose ParseRawPrivateKey
(ssh/keys.go) reads one PEM block of type OPENSSH PRIVATE KEY (its body starts with the
`openssh-key-v1` magic), RSA PRIVATE KEY, PRIVATE KEY (PKCS#8), EC PRIVATE KEY or DSA PRIVATE KEY.
A registry login is what `docker login` writes: a Secret of type kubernetes.io/dockerconfigjson
holds it under `.dockerconfigjson`, which the API server requires to be JSON (kubernetes/kubernetes,
pkg/apis/core/validation/validation.go, ValidateSecret), and the kubelet reads the logins from its
`auths` object (pkg/credentialprovider/config.go, DockerConfigJSON).
"""

from __future__ import annotations

import base64
import binascii
import json
import re

_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\n([A-Za-z0-9+/=\n]+?)\n?-----END \1-----\n?")
_PRIVATE_KEY_TYPES = ("OPENSSH PRIVATE KEY", "RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY")
_OPENSSH_MAGIC = b"openssh-key-v1\x00"
# A public key line (`ssh-ed25519 AAAA...`), given where the private key belongs.
_PUBLIC_KEY = re.compile(r"(ssh-|ecdsa-|sk-)[a-z0-9@.-]+ AAAA")

PRIVATE_KEY_ALLOWED = (
    "expected an SSH private key, the whole file (-----BEGIN OPENSSH PRIVATE KEY----- ... or a PEM RSA, EC or "
    "PKCS#8 key), without a passphrase"
)
PULL_SECRET_ALLOWED = 'expected a .dockerconfigjson: the JSON `docker login` writes to ~/.docker/config.json, {"auths": {...}}'


def private_key_problem(text: object) -> str | None:
    """What is wrong with an SSH private key, or None."""
    if not isinstance(text, str):
        return PRIVATE_KEY_ALLOWED
    if _PUBLIC_KEY.match(text.strip()):
        return f"this is a public key; {PRIVATE_KEY_ALLOWED}"
    found = _PEM.fullmatch(text.strip() + "\n")
    if found is None or found[1] not in _PRIVATE_KEY_TYPES:
        return PRIVATE_KEY_ALLOWED
    try:
        body = base64.b64decode(found[2].replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return PRIVATE_KEY_ALLOWED
    if found[1] == "OPENSSH PRIVATE KEY" and not body.startswith(_OPENSSH_MAGIC):
        return PRIVATE_KEY_ALLOWED
    if found[1] != "OPENSSH PRIVATE KEY" and not body.startswith(b"\x30"):  # a DER SEQUENCE
        return PRIVATE_KEY_ALLOWED
    if found[1] == "OPENSSH PRIVATE KEY" and _openssh_cipher(body) != b"none":
        return f"the key is encrypted (pulumi-command is given no passphrase); {PRIVATE_KEY_ALLOWED}"
    return None


def _openssh_cipher(body: bytes) -> bytes:
    """The cipher name after the magic (PROTOCOL.key in OpenSSH: a length-prefixed string)."""
    start = len(_OPENSSH_MAGIC)
    length = int.from_bytes(body[start : start + 4], "big")
    return body[start + 4 : start + 4 + length]


def pull_secret_problem(text: object) -> str | None:
    """What is wrong with a registry login, or None."""
    try:
        login = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        login = None
    if not isinstance(login, dict) or not isinstance(login.get("auths"), dict):
        return PULL_SECRET_ALLOWED
    return None
