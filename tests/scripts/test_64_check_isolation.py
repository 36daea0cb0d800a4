"""The isolation check (64-check-isolation.sh): whether a pod can see GPUs it was not given.

Under --require-cdi (gpuAccess: cdi) nvidia must not be the default runtime. With
--isolation strict the container toolkit must be hardened; without it, a toolkit hardened
already leaves the device plugin's envvar list unread. The toolkit's config.toml is the
package's own (fakehost.TOOLKIT_CONFIG, fixtures/README.md names its source); the hardened
one is what nvidia-ctk writes for the two settings (fakehost.TOOLKIT_CONFIG_HARDENED)."""

from __future__ import annotations

import pytest

from tests.sshd import fakehost

from .check_cases import CheckCase, run_case
from .machines import runc_default
from .preflight_node import FAILED_EXIT, PASSED_EXIT, FakeNode

CONFIG = "etc/nvidia-container-runtime/config.toml"
ENVVAR_KEY = "accept-nvidia-visible-devices-envvar-when-unprivileged"
MOUNTS_KEY = "accept-nvidia-visible-devices-as-volume-mounts"
ONLY_ENVVAR_OFF = fakehost.TOOLKIT_CONFIG.replace(f"#{ENVVAR_KEY} = true", f"{ENVVAR_KEY} = false")
# The keys are top-level: under a table they are other keys, and the toolkit's defaults stand.
UNDER_A_TABLE = fakehost.TOOLKIT_CONFIG + f"\n[nvidia-container-cli.extra]\n{ENVVAR_KEY} = false\n{MOUNTS_KEY} = true\n"


STRICT = ("--isolation", "strict")
IN_THE_CONFIG = "in /etc/nvidia-container-runtime/config.toml, at the top level"
ENVVAR_ON = f"{ENVVAR_KEY} = false (it is true)"
MOUNTS_OFF = f"{MOUNTS_KEY} = true (it is false)"


def toolkit_config(text: str | None):
    """The toolkit's config.toml with text (None: no config.toml)."""
    return lambda node: node.remove(CONFIG) if text is None else node.file(CONFIG, text)


def hardened_under_cdi(node: FakeNode) -> None:
    runc_default(node)
    node.file(CONFIG, fakehost.TOOLKIT_CONFIG_HARDENED)


CASES = [
    # default isolation
    CheckCase(
        "default isolation on a stock toolkit passes and says what pods can see",
        exit=PASSED_EXIT,
        ok=True,
        says=(
            f"{ENVVAR_KEY} is true (the toolkit's default; read /etc/nvidia-container-runtime/config.toml)",
            "sees every GPU",
            "isolation: strict",
        ),
    ),
    CheckCase(
        "default isolation says when the config sets the default itself",
        toolkit_config(fakehost.TOOLKIT_CONFIG.replace(f"#{ENVVAR_KEY} = true", f"{ENVVAR_KEY} = true")),
        ok=True,
        says=(f"{ENVVAR_KEY} is true (set in /etc/nvidia-container-runtime/config.toml)",),
    ),
    CheckCase(
        "a missing toolkit config is the toolkit's defaults",
        toolkit_config(None),
        exit=PASSED_EXIT,
        ok=True,
        says=("no /etc/nvidia-container-runtime/config.toml: the toolkit's defaults",),
    ),
    *(
        CheckCase(
            f"a hardened toolkit ({which}) fails default isolation naming the setting",
            toolkit_config(config),
            exit=FAILED_EXIT,
            ok=False,
            says=(
                f"{ENVVAR_KEY} = false in /etc/nvidia-container-runtime/config.toml",
                "the device plugin's envvar list",
                "set the group's isolation: strict",
            ),
        )
        for config, which in [(fakehost.TOOLKIT_CONFIG_HARDENED, "both settings"), (ONLY_ENVVAR_OFF, "the envvar setting only")]
    ),
    CheckCase(
        "a hardened toolkit under CDI says the plugin itself gets no GPU",
        hardened_under_cdi,
        ("--require-cdi",),
        ok=False,
        says=("the device plugin itself", "set the group's isolation: strict"),
    ),
    CheckCase("the settings count only at the top level: default isolation", toolkit_config(UNDER_A_TABLE), ok=True),
    CheckCase("the settings count only at the top level: strict isolation", toolkit_config(UNDER_A_TABLE), STRICT, ok=False),
    # strict isolation
    CheckCase(
        "strict isolation on a hardened toolkit passes",
        toolkit_config(fakehost.TOOLKIT_CONFIG_HARDENED),
        STRICT,
        exit=PASSED_EXIT,
        ok=True,
        says=(f"strict: {ENVVAR_KEY} = false, {MOUNTS_KEY} = true",),
    ),
    *(
        CheckCase(
            f"strict isolation on {which} fails naming what to set",
            toolkit_config(config),
            STRICT,
            exit=FAILED_EXIT,
            ok=False,
            says=(*missing, IN_THE_CONFIG),
        )
        for config, which, missing in [
            (fakehost.TOOLKIT_CONFIG, "a stock toolkit", (ENVVAR_ON, MOUNTS_OFF)),
            (ONLY_ENVVAR_OFF, "a toolkit with the envvar setting only", (MOUNTS_OFF,)),
            (None, "a toolkit without config.toml", (ENVVAR_ON, MOUNTS_OFF)),
        ]
    ),
    CheckCase(
        "strict isolation fails when the toolkit config cannot be parsed as a value",
        toolkit_config(fakehost.TOOLKIT_CONFIG_HARDENED.replace(f"{ENVVAR_KEY} = false", f'{ENVVAR_KEY} = "false"')),
        STRICT,
        ok=False,
        says=(f'{ENVVAR_KEY} = "false"', "not true or false"),
    ),
    # CDI: nvidia must not be the default runtime
    CheckCase(
        # The healthy node's drop-in makes nvidia containerd's default.
        "CDI with nvidia as the default runtime fails naming it and the fix",
        args=("--require-cdi",),
        exit=FAILED_EXIT,
        ok=False,
        says=(
            "nvidia is containerd's default runtime (read containerd config dump)",
            "docs/cdi.md",
            "nvidia-ctk runtime configure --runtime=containerd without --set-as-default",
            "restart containerd",
        ),
    ),
    CheckCase(
        "CDI with runc as the default runtime passes",
        runc_default,
        ("--require-cdi",),
        ok=True,
        says=("nvidia is not containerd's default runtime (runc is)",),
    ),
    CheckCase("nvidia as the default is what default-runtime access wants", args=("--require-default-runtime",), ok=True),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_isolation_check(node: FakeNode, case: CheckCase) -> None:
    run_case(node, case, "isolation")
