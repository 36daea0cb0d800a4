"""Preflight: run the check script on each machine over SSH before it is brought in.

The script is kept as parts (`scripts/preflight/*.sh`, one per check plus what they share)
and joined into one text, in name order. Per node, two resources:

- `<group>-<node>-preflight-script`, a `remote.CopyToRemote`, copies the parts directory over
  SFTP to `/var/lib/gpu-nodes/preflight/<first 12 hex of the script's sha256>/preflight/` (with
  `become: sudo`, to `~/.gpu-nodes/preflight/...` in the login user's home).
  Its source is a `FileArchive`, which Pulumi keeps in the state as a hash and a path, not
  as the content: the script is in no node's state.
- `<group>-<node>-preflight`, a `remote.Command` that depends on the copy. Its command line
  joins the parts as `cat DIR/*.sh` does (byte order), checks the sha256 of that text against
  the script's digest (the first trigger) and refuses, naming the path and both digests,
  when they differ: the machine runs exactly the script in this repository or nothing. Then
  it feeds the text to `bash -s` with the arguments.

The copy stays on the machine: nothing deletes it, so that deleting a node or destroying the
stack never needs its machine (a dead machine is the usual reason to remove a node). It is a
few tens of KB, one directory per script digest; `rm -rf /var/lib/gpu-nodes` removes it by hand.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
from importlib import resources
from pathlib import Path
from typing import Any

import pulumi

from gpu_nodes.advisories import DRIVER_BULLETINS, PATCHED_DRIVER_BRANCHES, TOOLKIT_ADVISORIES, driver_fix
from gpu_nodes.config.checks import SSH_HOST
from gpu_nodes.config.node_group import NRI_TOOLKIT, NodeGroupSpec, NodeSpec
from gpu_nodes.config.preflight import DRIVER_ADVISORIES_REFUSE, PreflightSpec
from gpu_nodes.errors import ConfigError
from gpu_nodes.preflight.remote import remote
from gpu_nodes.preflight.report import NOT_CHECKED, read_report

# Package data: a directory on disk in a regular or editable install (FileArchive needs a path).
SCRIPT_DIR = Path(str(resources.files("gpu_nodes") / "scripts" / "preflight"))
REQUIRE_DEFAULT_RUNTIME = "--require-default-runtime"
REQUIRE_CDI = "--require-cdi"
CDI_HOOK_PATH = "--cdi-hook-path"
TOOLKIT_ADVISORY = "--toolkit-advisory"
ACCEPTED_TOOLKIT_ADVISORY = "--accepted-toolkit-advisory"
DRIVER_ADVISORY = "--driver-advisory"
PATCHED_DRIVER_BRANCHES_FLAG = "--patched-driver-branches"
REFUSE_DRIVER_ADVISORIES = "--refuse-driver-advisories"
# NVIDIA's DRA driver hands out the group's GPUs: its prerequisites are checked (68-check-dra.sh).
ALLOCATOR = "--allocator"
# The group shares its GPUs through MPS, this many ways: what MPS needs is checked (69-check-mps.sh).
MPS_REPLICAS = "--mps-replicas"
MPS_DRIVER_ROOT = "--mps-driver-root"
# NVLink-domain machines: the clique, who runs the IMEX daemons, their peers and the device plugin's channels
# (71-check-nvlink-domain.sh, 72-check-imex.sh); the DRA driver's dynamic MIG (68-check-dra.sh); a toolkit that injects
# through NRI (73-check-nri.sh).
NVLINK_CLIQUE = "--nvlink-clique"
IMEX = "--imex"
IMEX_PEERS = "--imex-peers"
IMEX_CHANNELS = "--imex-channels"
IMEX_REQUIRED = "--imex-required"
DRA_MIG = "--dra-mig"
TOOLKIT_VIA = "--toolkit"
# Root-owned, on every machine: one directory per script digest, so a new script never mixes with an old one.
REMOTE_ROOT = "/var/lib/gpu-nodes/preflight"
# With become, the login user copies the script into its own home (SFTP and the shell start there).
BECOME_ROOT = ".gpu-nodes/preflight"
# What the command line exits with when the copy is missing or is not the script: neither the
# script's 1 (a check failed) nor its 2 (usage).
REFUSED_EXIT = 3
# How a check's detail starts when it passed but wants a human to look (00-common.sh's contract).
WARNING = "warning: "
# The check that judges the driver against NVIDIA's bulletins (30-check-driver.sh).
DRIVER_ADVISORIES_CHECK = "driver-advisories"


def script_parts() -> list[Path]:
    """The script's parts in the order they are joined: by name, 00-common.sh first, 90-main.sh last."""
    return sorted(SCRIPT_DIR.glob("*.sh"))


# Read once per program run, not once per node.
@functools.cache
def preflight_script() -> str:
    """The one script every machine runs (and the tests run): its parts, joined in order.

    Joined as `cat gpu_nodes/scripts/preflight/*.sh` joins them, so that a script run by hand
    is byte for byte the one the component sends."""
    return "".join(part.read_text() for part in script_parts())


def script_digest() -> str:
    return hashlib.sha256(preflight_script().encode()).hexdigest()


def preflight_arguments(group: NodeGroupSpec) -> list[str]:
    """The script's arguments (20-arguments.sh reads them)."""
    spec = group.preflight
    args = ["--runtime", spec.container_runtime, "--expect-gpus", str(group.gpus_per_node)]
    if spec.min_driver:
        args += ["--min-driver", spec.min_driver]
    for arguments, _ in _requirements(group):
        args += arguments
    return args


def _driver_advisories(spec: PreflightSpec) -> tuple[list[str], list[str]]:
    """NVIDIA's driver bulletins and the branches it patches, as arguments and as one trigger: a new
    bulletin or a branch past its end re-checks each machine."""
    rows = [bulletin.script_argument() for bulletin in DRIVER_BULLETINS]
    branches = ",".join(str(branch) for branch in PATCHED_DRIVER_BRANCHES)
    arguments = [word for row in rows for word in (DRIVER_ADVISORY, row)] + [PATCHED_DRIVER_BRANCHES_FLAG, branches]
    trigger = f"driver-advisories={' '.join(row.split(':')[0] + '=' + row.split('=')[1] for row in rows)} patched={branches}"
    if spec.driver_advisories == DRIVER_ADVISORIES_REFUSE:
        return [*arguments, REFUSE_DRIVER_ADVISORIES], [trigger, REFUSE_DRIVER_ADVISORIES]
    return arguments, [trigger]


def _requirements(group: NodeGroupSpec) -> list[tuple[list[str], list[str]]]:
    """What else the group asks of a machine, each as its script arguments and its triggers, only
    where set: a setting a stack leaves unset is not in its triggers, so a new setting re-checks no
    machine (the triggers are pinned by tests/golden/*.json)."""
    spec = group.preflight
    found: list[tuple[list[str], list[str]]] = [_driver_advisories(spec)]
    # The rows travel with every run, so a moved fix or a new advisory re-checks each machine.
    advisories = _toolkit_advisories(spec)
    shown = " ".join(arg if flag == TOOLKIT_ADVISORY else f"accepted:{arg}" for flag, arg in advisories)
    found.append(([word for pair in advisories for word in pair], [f"toolkit-advisories={shown}"]))
    if spec.min_toolkit:
        found.append((["--min-toolkit", spec.min_toolkit], [f"min-toolkit={spec.min_toolkit}"]))
    if group.gpu_access == "defaultRuntime":
        # Tenants' pods name no RuntimeClass: the machine passes only when nvidia is the default.
        found.append(([REQUIRE_DEFAULT_RUNTIME], [REQUIRE_DEFAULT_RUNTIME]))
    if group.gpu_access == "cdi":
        # The program the plugin's CDI specs run as hooks, on the machine.
        hook = group.device_plugin.cdi_hook_path
        found.append(([REQUIRE_CDI, CDI_HOOK_PATH, hook], [REQUIRE_CDI, f"cdi-hook-path={hook}"]))
    if group.isolation != "default":
        # Strict: the machine passes only with the container toolkit hardened.
        found.append((["--isolation", group.isolation], [f"isolation={group.isolation}"]))
    cuda = group.verification.cuda_version
    if cuda:
        # The verification's CUDA kernel needs a driver that supports its CUDA version.
        found.append((["--min-cuda", cuda], [f"min-cuda={cuda}"]))
    mig = group.device_plugin.mig_strategy
    if mig != "none":
        found.append((["--mig-strategy", mig], [f"mig={mig}"]))
    layout = group.device_plugin.mig_layout
    if layout:
        # The MIG devices each GPU must have (nvidia-smi -L), so a new layout checks them again.
        found.append((["--mig-devices", layout], [f"mig-devices={layout}"]))
    if group.gpu_model:
        found.append((["--gpu-model", group.gpu_model], [f"gpu-model={group.gpu_model}"]))
    if group.uses_dra:
        # Only a DRA group says so: a device-plugin group's command line stays as it was.
        found.append(([ALLOCATOR, group.allocator], [f"allocator={group.allocator}"]))
    if group.uses_dra and group.dra.mig_profiles:
        # The DRA driver splits the GPUs by MIG on demand (68-check-dra.sh, dra-mig).
        found.append(([DRA_MIG], [DRA_MIG]))
    found += _mps_requirements(group)
    found += _nvlink_requirements(group)
    if group.container_toolkit == NRI_TOOLKIT:
        # The toolkit injects through its NRI plugin, and no nvidia runtime is expected (73-check-nri.sh).
        found.append(([TOOLKIT_VIA, NRI_TOOLKIT], [f"toolkit={NRI_TOOLKIT}"]))
    return found


def _nvlink_requirements(group: NodeGroupSpec) -> list[tuple[list[str], list[str]]]:
    """On NVLink-domain machines (nvlinkDomain): the clique each must be in (71-check-nvlink-domain.sh), and who runs
    the IMEX daemons (72-check-imex.sh): the machine's own service, listing the domain's peers and serving the
    channels the device plugin injects, or NVIDIA's DRA driver (its ComputeDomains), which wants that service off."""
    domain = group.nvlink_domain
    if domain is None:
        return []
    found = [([NVLINK_CLIQUE, domain.clique], [f"nvlink-clique={domain.clique}"])]
    if group.uses_dra and group.dra.compute_domains:
        found.append(([IMEX, "driver"], ["imex=driver"]))
    elif not group.uses_dra and domain.imex_peers:
        peers = ",".join(domain.imex_peers)
        found.append(([IMEX, "host", IMEX_PEERS, peers], ["imex=host", f"imex-peers={peers}"]))
        imex = group.device_plugin.imex
        if imex.channel_ids:
            channels = ",".join(str(c) for c in imex.channel_ids)
            required = [IMEX_REQUIRED] if imex.required else []
            found.append(([IMEX_CHANNELS, channels, *required], [f"imex-channels={channels}", *required]))
    return found


def _mps_requirements(group: NodeGroupSpec) -> list[tuple[list[str], list[str]]]:
    """Under MPS, what the machine must offer its MPS control daemon (69-check-mps.sh): GPUs out of MIG
    mode in a compute mode the daemon may take over, able to serve the replicas, and the driver's MPS
    programs where the container toolkit looks for them (under the driver root, when it is not `/`)."""
    if not group.shares_through_mps:
        return []
    sharing = group.device_plugin.sharing
    arguments = [MPS_REPLICAS, str(sharing.replicas)]
    root = group.device_plugin.driver_root
    if root != "/":
        arguments += [MPS_DRIVER_ROOT, root]
    return [(arguments, [f"mps-replicas={sharing.replicas}", *([f"mps-driver-root={root}"] if root != "/" else [])])]


def _toolkit_advisories(spec: PreflightSpec) -> list[tuple[str, str]]:
    """NVIDIA's toolkit advisories as the script takes them (40-check-toolkit.sh), a flag and a row
    each: those the group accepts as a risk are marked so, to be named in the report, not refused."""
    return [
        (ACCEPTED_TOOLKIT_ADVISORY if a.cve in spec.accept_toolkit_advisories else TOOLKIT_ADVISORY, a.script_argument())
        for a in TOOLKIT_ADVISORIES
    ]


def remote_dir(root: str = REMOTE_ROOT) -> str:
    """Where the copy goes on the machine; the parts land in its `preflight/` (SFTP copies a
    directory into the remote path under its own name). root: only tests change it."""
    return f"{root}/{script_digest()[:12]}"


# The bash body of the remote command line, run as `bash -c BODY preflight ARGS...` (so that
# the login shell, whatever it is, only splits words) with d and want set in front.
# The parts are read once into $script, which is checked and then run: what runs is what was
# checked. $(...) drops the final newline, printf puts it back (each part ends with one). The
# glob sorts bytewise under LC_ALL=C, as preflight_script() sorts. The script reaches `bash -s`
# through a pipe, not as an argument, which Linux caps at 128 KiB.
_CHECK_THEN_RUN = (
    'script=$(LC_ALL=C; cat -- "$d"/preflight/*.sh) || { echo "preflight: no script to read at $d/preflight:'
    f' replace the -preflight-script copy of this node too" >&2; exit {REFUSED_EXIT}; }}; '
    f'got=$(printf "%s\\n" "$script" | sha256sum) || exit {REFUSED_EXIT}; got=${{got%% *}}; '
    'if [ "$got" != "$want" ]; then echo "preflight: refusing to run $d/preflight/*.sh: its sha256 is $got,'
    f' expected $want" >&2; exit {REFUSED_EXIT}; fi; '
    'printf "%s\\n" "$script" | bash -s -- "$@"'
)


# With become: sudo, the same, but the checked script runs as root through `sudo -n` (never a
# password prompt, which would hang the run), after a first `sudo -n true` that says clearly
# when the user may not.
_SUDO_FIRST = (
    'sudo -n true 2>/dev/null || { echo "preflight: $(id -un) may not run sudo without a password here '
    '(preflight.become: sudo runs sudo -n): allow it (NOPASSWD) in sudoers, or log in as root" >&2; '
    f"exit {REFUSED_EXIT}; }}; "
)


def preflight_command(group: NodeGroupSpec, root: str | None = None) -> str:
    """The remote command line (create, and update, for which pulumi-command runs create again):
    it checks the copied script against its digest, then runs it with its arguments."""
    spec = group.preflight
    preamble = f"d={shlex.quote(remote_dir(root or script_root(spec)))} want={script_digest()}; "
    body = _CHECK_THEN_RUN
    if spec.become == "sudo":
        body = _SUDO_FIRST + body.replace('| bash -s -- "$@"', '| sudo -n bash -s -- "$@"')
    return shlex.join(["bash", "-c", preamble + body, "preflight", *preflight_arguments(group)])


def script_root(spec: PreflightSpec) -> str:
    """Where the script's copies live on the machine: root's, or the login user's home with become."""
    return BECOME_ROOT if spec.become else REMOTE_ROOT


def triggers(group: NodeGroupSpec) -> list[str]:
    """What re-runs the checks: a new script, GPU count, runtime or minimum driver, any of the
    group's other requirements of a machine, `become`, or a new recheck value."""
    spec = group.preflight
    optional = [trigger for _, entries in _requirements(group) for trigger in entries]
    if spec.become:
        optional.append(f"become={spec.become}")
    if spec.recheck is not None:
        optional.append(f"recheck={spec.recheck}")
    return [script_digest(), str(group.gpus_per_node), spec.container_runtime, spec.min_driver or "", *optional]


def ssh_host_problem(key: str) -> str:
    """What to say of a machine with no address where preflight runs."""
    return f"{key}: got None; preflight logs in to the machine there: {SSH_HOST.allowed}"


def connection(node: NodeSpec, spec: PreflightSpec, private_key: pulumi.Input[str]) -> remote.ConnectionArgs:
    """How the copy and the command reach the machine, through its bastion if any. A value another
    resource gives (the machine's address, say) is an Output the reader checks when it resolves
    (gpu_nodes/config/reading.py): a mistake then fails this connection's resources, and only theirs."""
    if node.ssh_host is None:
        # parse_stack requires sshHost wherever preflight runs; a spec built another way may lack it.
        raise ConfigError([ssh_host_problem(f"node {node.name}: sshHost")], "node")

    def endpoint(
        host: pulumi.Input[str], port: pulumi.Input[int], user: pulumi.Input[str] | None, host_key: pulumi.Input[str] | None
    ) -> dict[str, Any]:
        """The same key and dial timeout for the machine and its bastion."""
        # ssh_timeout_seconds unset (None): no perDialTimeout, so pulumi-command's own default (15 s). Not
        # an explicit 15: that would be a new connection input, and so a re-check of every machine.
        return dict(
            host=host, port=port, user=user, host_key=host_key, private_key=private_key, per_dial_timeout=spec.ssh_timeout_seconds
        )

    bastion = spec.proxy
    proxy = (
        remote.ProxyConnectionArgs(**endpoint(bastion.host, bastion.port, bastion.user, bastion.host_key)) if bastion else None
    )
    return remote.ConnectionArgs(**endpoint(node.ssh_host, node.ssh_port, node.ssh_user, node.host_key), proxy=proxy)


def parse_report(stdout: object) -> dict[str, Any]:
    """The per-node summary kept in outputs, from the script's JSON report; `NOT_CHECKED` when
    stdout holds no report (report.py: Pulumi's mocks answer none)."""
    report = read_report(stdout)
    if report is None:
        return dict(NOT_CHECKED)
    gpus = report.get("gpus") or []
    checks = report.get("checks") or []
    return {
        "passed": bool(report.get("ok")),
        "hostname": report.get("hostname"),
        "driverVersion": report.get("driverVersion"),
        # The driver's branch, whether NVIDIA still patches it, and the bulletins it is open to
        # (docs/machines.md, "Driver advisories"; the driver-advisories check).
        "driverAdvisories": report.get("driverAdvisories"),
        "cudaVersion": report.get("cudaVersion"),
        "gpuCount": len(gpus),
        "gpuModels": sorted({gpu.get("name", "") for gpu in gpus}),
        "runtime": report.get("runtime"),
        # The settings under which running pods can lose their GPUs (docs/tenants.md, "The three paths").
        "kubelet": report.get("kubelet"),
        # The toolkit's version, the advisories it is open to, its mode and whether a CDI spec could be built
        # there (docs/machines.md, "Toolkit advisories"; the cdi-generation check).
        "toolkit": report.get("toolkit"),
        # With a MIG strategy, per GPU index the MIG devices nvidia-smi -L lists, by profile.
        "migDevices": report.get("mig"),
        "passedChecks": [c["name"] for c in checks if c.get("ok")],
        # Passed, but with a warning that `pulumi up` also prints (preflight_warnings).
        "warnedChecks": [c["name"] for c in checks if _warned(c)],
        "failedChecks": [c["name"] for c in checks if not c.get("ok")],
    }


def script_source() -> pulumi.FileArchive:
    """The parts directory. Relative to the program's directory (where Pulumi runs the program
    and its providers) when the package is inside it, as in this repository: the state then holds
    the same path from any checkout. Installed elsewhere, its absolute path. The state keeps a
    hash beside the path, and the hash decides a change."""
    script_dir = SCRIPT_DIR.resolve()
    here = Path(os.getcwd()).resolve()
    if script_dir.is_relative_to(here):
        return pulumi.FileArchive(script_dir.relative_to(here).as_posix())
    return pulumi.FileArchive(script_dir.as_posix())


def waits_for(index: int, max_sessions: int) -> int | None:
    """Which earlier machine of the group (by position) must be checked before this one starts.

    The machines form `max_sessions` lanes in the order the group lists them, each checked one
    after the other: at most `max_sessions` SSH connections at once, whatever `--parallel` is."""
    return index - max_sessions if index >= max_sessions else None


def node_preflight(
    name: str,
    group: NodeGroupSpec,
    node: NodeSpec,
    private_key: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    after: remote.Command | None = None,
) -> remote.Command:
    """One copy of the script and one remote command per node; the command fails (exit 1) when a
    required check fails, and refuses (exit 3) a copy that is missing or is not the script.
    after: the preflight of the machine before this one in its lane (see waits_for)."""
    spec = group.preflight
    conn = connection(node, spec, private_key)
    rerun = triggers(group)
    # The copy shares the command's triggers: a re-check copies the script again first, so that a
    # machine reinstalled since (its /var/lib/gpu-nodes gone) is checked rather than refused.
    copy = remote.CopyToRemote(
        f"{name}-script",
        connection=conn,
        source=script_source(),
        remote_path=remote_dir(script_root(spec)),
        triggers=rerun,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[after] if after else [])),
    )
    command = remote.Command(
        name,
        connection=conn,
        # No update line (pulumi-command runs create again) and no delete line: deleting a node or
        # destroying the stack does not contact its machine, and the copy stays there.
        create=preflight_command(group),
        # Else an update (a new connection, say) asks sshd to set PULUMI_COMMAND_STDOUT (the report)
        # and warns when, as by default, sshd does not AcceptEnv it; nothing here reads it.
        add_previous_output_in_env=False,
        # Echo nothing into Pulumi's progress display while the script runs. pulumi-command sends each
        # line of the streams `logging` names to the engine as the resource's status (1.2.1,
        # provider/pkg/provider/remote/commandOutputs.go `run` and util.go `LogOutput`; the default is
        # both), which a non-interactive `pulumi up` prints as a line each: the JSON report, thousands of
        # characters, and a line per check. stdout is captured whatever `logging` says (the report, for
        # the state and the per-node report), and a failed command's error carries stdout and stderr both.
        logging=remote.Logging.NONE,
        triggers=rerun,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[copy])),
    )
    # A check that passed with a warning (an open driver advisory, say) is said at `pulumi up`, on
    # the node's own resource, not only kept in its report.
    command.stdout.apply(lambda stdout: _warn(command, stdout))
    return command


def preflight_warnings(stdout: object) -> list[str]:
    """The checks that passed with a warning (the script's "warning:" details), as `name: detail`,
    one line each; none when stdout holds no report. A driver open to NVIDIA's bulletins is said in a
    line of its own (driver_advisories_warning): the script's detail lists every CVE of every bulletin,
    which stays in the report."""
    report = read_report(stdout) or {}
    checks = report.get("checks") or []
    return [f"{c['name']}: {_warning_of(c, report)}" for c in checks if _warned(c)]


def _warning_of(check: dict[str, Any], report: dict[str, Any]) -> str:
    detail = str(check["detail"])[len(WARNING) :]
    if check["name"] == DRIVER_ADVISORIES_CHECK:
        return driver_advisories_warning(report) or detail
    return detail


def driver_advisories_warning(report: dict[str, Any]) -> str | None:
    """One line for a driver open to NVIDIA's bulletins or on a branch past its end of life: the
    bulletins, the branch, and the fix (advisories.driver_fix). None when the report names neither (the
    driver's version unknown, say): the check's own words say why then."""
    version = str(report.get("driverVersion") or "")
    found = report.get("driverAdvisories") or {}
    bulletins = [str(b) for b in found.get("openBulletins") or []]
    problems = []
    if bulletins:
        problems.append(f"is open to NVIDIA's bulletin{'s' if len(bulletins) > 1 else ''} {', '.join(bulletins)}")
    if found.get("branchPatched") is False:
        problems.append(f"is on {found.get('branch')}, past its end of life")
    if not version or not problems:
        return None
    return (
        f"driver {version} {' and '.join(problems)}: {driver_fix(version)} "
        f"(the CVEs: this machine's preflight report; preflight.driverAdvisories: refuse keeps such machines out)"
    )


def _warned(check: dict[str, Any]) -> bool:
    return bool(check.get("ok")) and str(check.get("detail", "")).startswith(WARNING)


def _warn(command: remote.Command, stdout: object) -> None:
    for warning in preflight_warnings(stdout):
        pulumi.log.warn(f"preflight {warning}", resource=command)
