"""The group's `preflight` section: what preflight checks on a group's machines, how it reaches them
(the bastion, the host keys), and its reader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_nodes.advisories import TOOLKIT_ADVISORIES, TOOLKIT_CVES, TOOLKIT_FLOOR, open_advisories
from gpu_nodes.config.checks import DRIVER_VERSION, HOST_KEY, PORT, RECHECK, SSH_HOST, SSH_USER, TOOLKIT_VERSION
from gpu_nodes.config.fields import BOOLEAN, INTEGER, LIST, MISSING, OBJECT, STRING, Setting, between, one_of, setting
from gpu_nodes.config.reading import Problems, Section
from gpu_nodes.constants import NAMESPACE

# Machines of a group checked at once: OpenSSH's MaxStartups (default 10:30:100) starts refusing
# new connections beyond 10 still logging in, so a stock bastion refuses none of ours.
DEFAULT_PREFLIGHT_SESSIONS = 10
CONTAINER_RUNTIMES = ("containerd", "docker", "cri-o", "k3s", "rke2", "auto")
DRIVER_ADVISORIES_WARN = "warn"
DRIVER_ADVISORIES_REFUSE = "refuse"


# The stack setting that lets a machine go without a pinned host key (declared in config/stack.py).
SKIP_HOST_KEY_CHECK = f"{NAMESPACE}:insecureSkipHostKeyCheck"


@dataclass(frozen=True)
class SshProxySpec:
    host: str = setting("host", STRING, "string", "the bastion's address", row=False, check=SSH_HOST)
    port: int = setting("port", INTEGER, "int", "its SSH port", default=22, row=False, check=PORT)
    user: str = setting("user", STRING, "string", "its SSH user", row=False, check=SSH_USER)
    host_key: str | None = setting("hostKey", STRING, "string", "its public host key", default=None, row=False, check=HOST_KEY)


@dataclass(frozen=True)
class PreflightSpec:
    enabled: bool = setting("enabled", BOOLEAN, "bool", "run the SSH checks before bringing a node in", default=True)
    container_runtime: str = setting(
        "containerRuntime",
        STRING,
        "`containerd`/`docker`/`cri-o`/`k3s`/`rke2`/`auto`",
        "which runtime's nvidia configuration to check; `docker` is Docker behind cri-dockerd; `k3s`/`rke2` read "
        "their own containerd config under `/var/lib/rancher/<name>/agent/etc/containerd`; `auto` follows "
        "kubelet's `--container-runtime-endpoint` (or `containerRuntimeEndpoint`), then the CRI socket that listens",
        default="containerd",
        check=one_of(CONTAINER_RUNTIMES),
    )
    max_sessions: int = setting(
        "maxSessions",
        INTEGER,
        "int 1-1000",
        "machines of the group checked at once, each over one SSH connection at a time (the copy, then the "
        "command); the default stays within a stock sshd's `MaxStartups`, also on a bastion",
        default=DEFAULT_PREFLIGHT_SESSIONS,
        check=between(1, 1000, "expected 1 to 1000 machines"),
    )
    min_driver: str | None = setting(
        "minDriver",
        STRING,
        "string",
        'minimum driver version, e.g. `"550.54"`',
        default=None,
        check=DRIVER_VERSION,
    )
    driver_advisories: str = setting(
        "driverAdvisories",
        STRING,
        "`warn`/`refuse`",
        "a driver open to one of NVIDIA's display-driver security bulletins, or on a branch NVIDIA no longer "
        "patches, is named per node as a warning; `refuse` keeps such machines out (see \"Driver advisories\")",
        default=DRIVER_ADVISORIES_WARN,
        check=one_of((DRIVER_ADVISORIES_WARN, DRIVER_ADVISORIES_REFUSE)),
    )
    min_toolkit: str | None = setting(
        "minToolkit",
        STRING,
        "string",
        "a minimum NVIDIA Container Toolkit (`nvidia-ctk --version`) above the floor NVIDIA's advisories set; one "
        "below it is refused unless `acceptToolkitAdvisories` names every CVE it lets in (see \"Toolkit advisories\")",
        default=None,
        default_text=f"`{TOOLKIT_FLOOR}`, the advisories' floor",
        check=TOOLKIT_VERSION,
    )
    accept_toolkit_advisories: tuple[str, ...] = setting(
        "acceptToolkitAdvisories",
        LIST,
        "list of CVE ids",
        "NVIDIA Container Toolkit advisories accepted as a risk on these machines, e.g. `[CVE-2026-24260]`: a toolkit "
        "open only to these passes, and its report names them",
        default=None,
        default_text="none",
        annotation="list[str]",
    )
    proxy: SshProxySpec | None = setting(
        "proxy",
        OBJECT,
        "object",
        "bastion `{host, port (22), user, hostKey}`, reached with the same key",
        default=None,
        section=SshProxySpec,
    )
    become: str | None = setting(
        "become",
        STRING,
        "`sudo`",
        "run the checks as root through `sudo -n` when `sshUser` is not root; the script is then copied to the "
        'user\'s home (see "Privileges")',
        default=None,
        default_text="none (log in as root)",
        check=one_of(("sudo",)),
    )
    # Any text; a new value runs preflight again on every node of the group.
    recheck: str | None = setting(
        "recheck",
        STRING,
        "string",
        '1-64 printable characters; a new value runs preflight again on every node of the group (see "Re-check the machines")',
        default=None,
        check=RECHECK,
    )
    ssh_timeout_seconds: int | None = setting(
        "sshTimeoutSeconds",
        INTEGER,
        "int 1-600",
        "seconds each SSH connection attempt may take, to the machine and to the bastion (pulumi-command's "
        "`perDialTimeout`; it tries up to 10 times); raise it for slow links",
        default=None,
        default_text="`15` (pulumi-command's)",
        check=between(1, 600, "expected 1 to 600 seconds"),
    )


def warn_unused_preflight(problems: Problems, key: str, preflight: Section[PreflightSpec]) -> None:
    """Preflight settings given while preflight is off do nothing: say so, rather than ignore them."""
    if not preflight.clean or preflight["enabled"] is not False:
        return
    for name in sorted(k for k in preflight.fields.raw if k != "enabled" and preflight.fields.raw[k] is not None):
        problems.warn(f"{key}.{name}", preflight.fields.raw[name], "preflight.enabled is false")


def read_preflight(
    problems: Problems, key: str, raw: dict[str, Any] | None, insecure_skip_host_key_check: bool
) -> Section[PreflightSpec]:
    section = Section(
        problems,
        key,
        raw or {},
        PreflightSpec,
        hooks={
            "proxy": lambda p, s: _read_proxy(problems, f"{key}.{s.key}", p.fields.read(s), insecure_skip_host_key_check),
            "accept_toolkit_advisories": _read_accepted_advisories,
            "min_toolkit": _read_min_toolkit,
        },
    )
    section.read_all()
    return section


def _read_accepted_advisories(section: Section[PreflightSpec], s: Setting) -> tuple[str, ...]:
    """CVE ids of TOOLKIT_ADVISORIES, each once, in the table's order."""
    key, raw = f"{section.key}.{s.key}", section.fields.read(s)
    if not raw:
        return ()
    for index, cve in enumerate(raw):
        if cve not in TOOLKIT_CVES:
            known = ", ".join(TOOLKIT_CVES)
            section.problems.add(f"{key}[{index}]", cve, f"expected a CVE id of NVIDIA's toolkit advisories: {known}")
    return tuple(cve for cve in TOOLKIT_CVES if cve in raw)


def _read_min_toolkit(section: Section[PreflightSpec], s: Setting) -> str | None:
    """A minimum of the group's own; `""` is none. Below the advisories' floor only with every CVE
    it lets in accepted by name: a lower number alone would let them in silently."""
    minimum: str | None = section.fields.read(s) or None
    if minimum is None:
        return None
    accepted = section["accept_toolkit_advisories"] or ()
    let_in = [a for a in open_advisories(minimum, TOOLKIT_ADVISORIES) if a.cve not in accepted]
    if let_in:
        cves = ", ".join(f"{a.cve} (fixed in {' / '.join(a.fixed)})" for a in let_in)
        section.problems.add(
            f"{section.key}.{s.key}",
            minimum,
            f"at least {TOOLKIT_FLOOR}, the floor NVIDIA's advisories set: {minimum} is open to {cves}; to run such "
            f"toolkits anyway, name each CVE in {section.key}.acceptToolkitAdvisories",
        )
    return minimum


def _read_proxy(
    problems: Problems, key: str, raw: dict[str, Any] | None, insecure_skip_host_key_check: bool
) -> SshProxySpec | None:
    if raw is None:
        return None
    section = Section(
        problems,
        key,
        raw,
        SshProxySpec,
        hooks={"host_key": lambda p, s: read_host_key(p, s, required=not insecure_skip_host_key_check)},
    )
    return section.build()


def read_host_key(section: Section[Any], s: Setting, required: bool) -> str | None:
    """A pinned host key; required unless the stack opted out of host key checking."""
    if s.key not in section.fields.raw:
        if required:
            section.problems.add(
                f"{section.key}.{s.key}",
                MISSING,
                f"pin the machine's SSH host key (ssh-keyscan), or set {SKIP_HOST_KEY_CHECK} to true "
                "to accept any host key",
            )
        return None
    host_key = section.fields.read(s)
    if host_key and host_key.split()[0] == "ssh-rsa":
        # pulumi-command pins HostKeyAlgorithms to the key's type, and for RSA that is the SHA-1
        # `ssh-rsa` signature, which OpenSSH 8.8 and later no longer offer: the session would fail.
        section.problems.add(
            f"{section.key}.{s.key}",
            host_key.split()[0],
            "an ed25519 or ecdsa host key (`ssh-keyscan -t ed25519 HOST`): pulumi-command verifies an RSA host key "
            "only with the SHA-1 ssh-rsa algorithm, which OpenSSH 8.8 and later refuse",
        )
        return None
    return host_key.strip() if host_key else None
