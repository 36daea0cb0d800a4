"""The group's `preflight` section: what preflight checks on a group's machines, how it reaches them
(the bastion, the host keys), how its values are read, and the checks between them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final, Literal, get_args

import pulumi

from gpu_nodes.advisories import TOOLKIT_ADVISORIES, TOOLKIT_CVES, TOOLKIT_FLOOR, open_advisories
from gpu_nodes.config.checks import DRIVER_VERSION, HOST_KEY, PORT, RECHECK, SSH_HOST, SSH_USER, TOOLKIT_VERSION
from gpu_nodes.config.fields import as_written, between, section, setting, settings
from gpu_nodes.config.problems import Problem, Problems, Severity
from gpu_nodes.constants import NAMESPACE

# Machines of a group checked at once: OpenSSH's MaxStartups (default 10:30:100) starts refusing
# new connections beyond 10 still logging in, so a stock bastion refuses none of ours.
DEFAULT_PREFLIGHT_SESSIONS = 10
ContainerRuntime = Literal["containerd", "docker", "cri-o", "k3s", "rke2", "auto"]
CONTAINER_RUNTIMES: tuple[ContainerRuntime, ...] = get_args(ContainerRuntime)
DriverAdvisories = Literal["warn", "refuse"]
DRIVER_ADVISORIES_WARN: Final = "warn"
DRIVER_ADVISORIES_REFUSE: Final = "refuse"


# The stack setting that lets a machine go without a pinned host key (declared in config/stack.py).
SKIP_HOST_KEY_CHECK = f"{NAMESPACE}:insecureSkipHostKeyCheck"


def read_accepted_advisories(problems: Problems, key: str, raw: list[object] | None) -> tuple[str, ...]:
    """CVE ids of TOOLKIT_ADVISORIES, each once, in the table's order."""
    for index, cve in enumerate(raw or ()):
        if cve not in TOOLKIT_CVES:
            problems.add(f"{key}[{index}]", cve, f"expected a CVE id of NVIDIA's toolkit advisories: {', '.join(TOOLKIT_CVES)}")
    return tuple(cve for cve in TOOLKIT_CVES if cve in (raw or ()))


def read_host_key(problems: Problems, key: str, host_key: str | None) -> str | None:
    """A pinned host key, of a type pulumi-command can verify; whether one is required is the
    stack's to say (gpu-nodes:insecureSkipHostKeyCheck, gpu_nodes/config/stack.py)."""
    if host_key and host_key.split()[0] == "ssh-rsa":
        # pulumi-command pins HostKeyAlgorithms to the key's type, and for RSA that is the SHA-1
        # `ssh-rsa` signature, which OpenSSH 8.8 and later no longer offer: the session would fail.
        problems.add(
            key,
            host_key.split()[0],
            "an ed25519 or ecdsa host key (`ssh-keyscan -t ed25519 HOST`): pulumi-command verifies an RSA host key "
            "only with the SHA-1 ssh-rsa algorithm, which OpenSSH 8.8 and later refuse",
        )
        return None
    return host_key.strip() if host_key else None


def read_min_toolkit(problems: Problems, key: str, minimum: str | None) -> str | None:
    """A toolkit version; "" is none."""
    return minimum or None


def host_key_missing(skip_check: str = SKIP_HOST_KEY_CHECK) -> str:
    """What is allowed where a machine's (or a bastion's) host key is missing; `skip_check`: the stack setting that
    accepts any, as the program names it."""
    return f"pin the machine's SSH host key (ssh-keyscan), or set {skip_check} to true to accept any host key"


@section
class SshProxySpec:
    # As a node's: each may be another resource's output (a bastion the same program creates).
    host: str | pulumi.Output[str] = setting("host", "the bastion's address", row=False, check=SSH_HOST, from_resource=True)
    port: int | pulumi.Output[int] = setting("port", "its SSH port", default=22, row=False, check=PORT, from_resource=True)
    user: str | pulumi.Output[str] = setting("user", "its SSH user", row=False, check=SSH_USER, from_resource=True)
    host_key: str | pulumi.Output[str] | None = setting(
        "hostKey",
        "its public host key",
        default=None,
        row=False,
        check=HOST_KEY,
        parse=read_host_key,
        from_resource=True,
    )


@section
class PreflightSpec:
    enabled: bool = setting("enabled", "run the SSH checks before bringing a node in", default=True)
    container_runtime: ContainerRuntime = setting(
        "containerRuntime",
        "which runtime's nvidia configuration to check; `docker` is Docker behind cri-dockerd; `k3s`/`rke2` read "
        "their own containerd config under `/var/lib/rancher/<name>/agent/etc/containerd`; `auto` follows "
        "kubelet's `--container-runtime-endpoint` (or `containerRuntimeEndpoint`), then the CRI socket that listens",
        default="containerd",
    )
    max_sessions: int = setting(
        "maxSessions",
        "machines of the group checked at once, each over one SSH connection at a time (the copy, then the "
        "command); the default stays within a stock sshd's `MaxStartups`, also on a bastion",
        default=DEFAULT_PREFLIGHT_SESSIONS,
        check=between(1, 1000, "expected 1 to 1000 machines"),
    )
    min_driver: str | None = setting(
        "minDriver",
        'minimum driver version, e.g. `"550.54"`',
        default=None,
        check=DRIVER_VERSION,
    )
    driver_advisories: DriverAdvisories = setting(
        "driverAdvisories",
        "a driver open to one of NVIDIA's display-driver security bulletins, or on a branch NVIDIA no longer "
        'patches, is named per node as a warning; `refuse` keeps such machines out (see "Driver advisories")',
        default=DRIVER_ADVISORIES_WARN,
    )
    min_toolkit: str | None = setting(
        "minToolkit",
        "a minimum NVIDIA Container Toolkit (`nvidia-ctk --version`) above the floor NVIDIA's advisories set; one "
        'below it is refused unless `acceptToolkitAdvisories` names every CVE it lets in (see "Toolkit advisories")',
        default=None,
        default_text=f"`{TOOLKIT_FLOOR}`, the advisories' floor",
        check=TOOLKIT_VERSION,
        parse=read_min_toolkit,
    )
    accept_toolkit_advisories: tuple[str, ...] = setting(
        "acceptToolkitAdvisories",
        "NVIDIA Container Toolkit advisories accepted as a risk on these machines, e.g. `[CVE-2026-24260]`: a toolkit "
        "open only to these passes, and its report names them",
        default=None,
        default_text="none",
        written=Sequence[str],
        parse=read_accepted_advisories,
    )
    proxy: SshProxySpec | None = setting(
        "proxy",
        "bastion `{host, port (22), user, hostKey}`, reached with the same key; from a program, each of the four may be "
        "another resource's output, checked when it resolves",
        default=None,
    )
    become: Literal["sudo"] | None = setting(
        "become",
        "run the checks as root through `sudo -n` when `sshUser` is not root; the script is then copied to the "
        'user\'s home (see "Privileges")',
        default=None,
        default_text="none (log in as root)",
    )
    # Any text; a new value runs preflight again on every node of the group.
    recheck: str | None = setting(
        "recheck",
        '1-64 printable characters; a new value runs preflight again on every node of the group (see "Re-check the machines")',
        default=None,
        check=RECHECK,
    )
    ssh_timeout_seconds: int | None = setting(
        "sshTimeoutSeconds",
        "seconds each SSH connection attempt may take, to the machine and to the bastion (pulumi-command's "
        "`perDialTimeout`; it tries up to 10 times); raise it for slow links",
        default=None,
        default_text="`15` (pulumi-command's)",
        check=between(1, 600, "expected 1 to 600 seconds"),
    )

    def cross_checks(self) -> Iterator[Problem]:
        yield from _toolkit_floor_problems(self)
        if not self.enabled:
            yield from _unused_settings(self)


def _toolkit_floor_problems(preflight: PreflightSpec) -> Iterator[Problem]:
    """A minimum of the group's own below the advisories' floor only with every CVE it lets in
    accepted by name: a lower number alone would let them in silently."""
    if not preflight.min_toolkit:
        return
    accepted = preflight.accept_toolkit_advisories
    let_in = [a for a in open_advisories(preflight.min_toolkit, TOOLKIT_ADVISORIES) if a.cve not in accepted]
    if let_in:
        cves = ", ".join(f"{a.cve} (fixed in {' / '.join(a.fixed)})" for a in let_in)
        yield Problem(
            "minToolkit",
            preflight.min_toolkit,
            f"at least {TOOLKIT_FLOOR}, the floor NVIDIA's advisories set: {preflight.min_toolkit} is open to {cves}; to run "
            "such toolkits anyway, name each CVE in preflight.acceptToolkitAdvisories",
        )


def _unused_settings(preflight: PreflightSpec) -> Iterator[Problem]:
    """Preflight settings set while preflight is off do nothing: say so, rather than ignore them."""
    for attr, s in settings(PreflightSpec):
        value = getattr(preflight, attr)
        if attr != "enabled" and value not in (s.default, None, ()):
            yield Problem(s.key, as_written(value), "preflight.enabled is false", severity=Severity.NO_EFFECT)
