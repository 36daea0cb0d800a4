"""The stack config as the program reads it (`__main__.py` under mocks): typos in `gpu-nodes:*`
keys, wrong shapes and secrets given in plain config. Each stops the run with its key named,
before anything (the provider included) is registered, and without a traceback."""

from __future__ import annotations

import logging
from typing import Any

import pulumi
import pytest

from tests.factories import SECRET_KEYS, group, stack_config
from tests.pulumi_mocks import Recorder, run_program


def refused(config: dict[str, Any], secret_keys: list[str] | None = None) -> str:
    """The run's message; asserts that nothing was registered and no traceback was shown."""
    recorder = Recorder()
    with pytest.raises(pulumi.RunError) as caught:
        run_program(config, SECRET_KEYS if secret_keys is None else secret_keys, recorder=recorder)
    registered = [r.urn for r in recorder.resources.values() if r.type != "pulumi:pulumi:Stack"]
    assert registered == [], registered
    message = str(caught.value)
    assert "Traceback" not in message, message
    return message


# --- 4. unknown keys under gpu-nodes: --------------------------------------------------------

TYPOS = [
    ("imagePullSecrets", "gpu-nodes:imagePullSecrets", "did you mean gpu-nodes:imagePullSecret?"),
    ("existingNamespace", "gpu-nodes:existingNamespace", "did you mean gpu-nodes:existingNamespaces?"),
    ("runtimeclass", "gpu-nodes:runtimeclass", "did you mean gpu-nodes:runtimeClass?"),
    ("nothing close", "gpu-nodes:zzz", "allowed keys: gpu-nodes:nodeGroups"),
]


@pytest.mark.parametrize(("key", "fragment"), [r[1:] for r in TYPOS], ids=[r[0] for r in TYPOS])
def test_an_unknown_stack_key_is_refused_with_the_closest_known_one(key, fragment):
    message = refused({**stack_config(), key: "x"})
    assert f"{key}: got 'x'; unknown key; {fragment}" in message, message


def test_a_typo_of_a_secrets_key_does_not_show_the_secret():
    config = {**stack_config(), "gpu-nodes:sshPrivateKeys": "hunter2"}
    message = refused(config, [*SECRET_KEYS, "gpu-nodes:sshPrivateKeys"])
    assert "gpu-nodes:sshPrivateKeys: got a value of 7 characters; unknown key; did you mean gpu-nodes:sshPrivateKey?" in message
    assert "hunter2" not in message, message


def test_other_namespaces_are_not_ours_to_judge():
    config = {**stack_config(), "kubernetes:kubeconfig": "apiVersion: v1\n", "aws:region": "x", "gpu-nodesx:y": "z"}
    run = run_program(config, [*SECRET_KEYS, "kubernetes:kubeconfig"])
    assert run.of_type("kubernetes:core/v1:NodePatch"), [r.urn for r in run.resources]


def test_a_group_key_typo_names_the_closest_key():
    message = refused(stack_config(group(gpuModle="NVIDIA H100 80GB HBM3")))
    assert "gpu-nodes:nodeGroups[0].gpuModle: got 'NVIDIA H100 80GB HBM3'; unknown key; did you mean gpuModel?" in message


# --- 2. shapes that crashed or were read as something else -----------------------------------

SHAPES = [
    ("existingNamespaces true", {"existingNamespaces": True}, "gpu-nodes:existingNamespaces: got True; expected a list"),
    ("existingNamespaces a number", {"existingNamespaces": 3}, "gpu-nodes:existingNamespaces: got 3; expected a list"),
    ("existingNamespaces a word", {"existingNamespaces": "gpu-verification"}, "gpu-nodes:existingNamespaces: got 'gpu-ver"),
    ("existingNamespaces {}", {"existingNamespaces": {}}, "gpu-nodes:existingNamespaces: got {}; expected a list"),
    ("existingNamespaces false", {"existingNamespaces": False}, "gpu-nodes:existingNamespaces: got False; expected a list"),
    ("handOver 3.5", {"handOver": 3.5}, "gpu-nodes:handOver: got 3.5; expected a list"),
    ("handOver a word", {"handOver": "kube-system/nvdp"}, "gpu-nodes:handOver: got 'kube-system/nvdp'; expected a list"),
    ("insecure yes", {"insecureSkipHostKeyCheck": "yes"}, "gpu-nodes:insecureSkipHostKeyCheck: got 'yes'; expected true"),
    ("nodeGroups a map", {"nodeGroups": {"a100": group()}}, "gpu-nodes:nodeGroups: got {'a100'"),
]


@pytest.mark.parametrize(("extra", "fragment"), [r[1:] for r in SHAPES], ids=[r[0] for r in SHAPES])
def test_a_wrong_shape_in_stack_config_is_one_line(extra, fragment):
    message = refused(stack_config(**extra))
    assert fragment in message, message
    assert message.count("\n  - ") == 1, message


# --- 7. secrets: what they must be, and kept secret -------------------------------------------

SECRETS = [
    ("empty key", {"sshPrivateKey": ""}, "gpu-nodes:sshPrivateKey: got a value of 0 characters"),
    ("not a key", {"sshPrivateKey": "hunter2"}, "gpu-nodes:sshPrivateKey: got a value of 7 characters"),
    ("a public key", {"sshPrivateKey": "ssh-ed25519 AAAAC3Nz"}, "a public key"),
    ("pull secret empty", {"imagePullSecret": ""}, "gpu-nodes:imagePullSecret: got a value of 0 characters"),
    ("pull secret not JSON", {"imagePullSecret": "user:pass"}, "gpu-nodes:imagePullSecret: got a value of 9 characters"),
    ("pull secret no auths", {"imagePullSecret": '{"credsStore": "x"}'}, "expected a .dockerconfigjson"),
]


@pytest.mark.parametrize(("extra", "fragment"), [r[1:] for r in SECRETS], ids=[r[0] for r in SECRETS])
def test_a_secret_that_is_not_what_it_should_be_is_refused_without_showing_it(extra, fragment):
    secret_keys = [*SECRET_KEYS, "gpu-nodes:imagePullSecret"]
    message = refused({**stack_config(), **{f"gpu-nodes:{k}": v for k, v in extra.items()}}, secret_keys)
    assert fragment in message, message
    for value in extra.values():
        assert not value or f"{value!r}" not in message, message


@pytest.mark.parametrize("key", ["gpu-nodes:sshPrivateKey", "kubernetes:kubeconfig"])
def test_a_secret_in_plain_config_is_warned_about(key, caplog):
    config = {**stack_config(), "kubernetes:kubeconfig": "apiVersion: v1\nkind: Config\n"}
    secret_keys = [k for k in [*SECRET_KEYS, "kubernetes:kubeconfig"] if k != key]
    with caplog.at_level(logging.WARNING):
        run_program(config, secret_keys)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and key in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert f"pulumi config set --secret {key}" in warnings[0], warnings[0]


def test_secrets_set_as_secrets_give_no_warning(caplog):
    with caplog.at_level(logging.WARNING):
        run_program(stack_config(), SECRET_KEYS)
    assert not [r.getMessage() for r in caplog.records if "--secret" in r.getMessage()]


def test_a_setting_with_no_effect_is_warned_about_by_its_key(caplog):
    raw = group(nodes=[{"name": "n1"}], preflight={"enabled": False, "minDriver": "550"})
    with caplog.at_level(logging.WARNING):
        run_program(stack_config(raw), SECRET_KEYS)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    expected = "gpu-nodes:nodeGroups[0].preflight.minDriver: '550' has no effect: preflight.enabled is false"
    assert expected in warnings, warnings
