"""The scripted kubectl runbook the engine is measured against: the same work, by hand.

Every object is rendered by the package's own builders (gpu_nodes/), from the same stack
config, so both sides create the same namespaces, RuntimeClass, PriorityClasses, DaemonSets,
Service and Jobs. The runbook does what an operator's script would:

    apply     preflight over SSH (when on), the cluster-wide objects, label and taint every
              node, the device plugin DaemonSet (and dcgm-exporter's, with its Service, where
              `metrics` is on), wait for their rollout, every Job the program runs (one per node
              and GPU count, and each node's proof Jobs: the access check, DCGM's diagnostics,
              NCCL's all-reduce where on), wait for all to complete, then read what the proof
              judges: the DCGM and NCCL Jobs' logs and each node's exporter metrics
    add_node  the same for one more node
    teardown  delete the Jobs, the DaemonSets and the Service, untaint, unlabel, delete the
              PriorityClasses, the RuntimeClass and the namespaces (as `pulumi destroy` does),
              waiting for each
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gpu_nodes.config.metrics import EXPORTER_PORT, METRICS_PATH
from gpu_nodes.config.node_group import NodeGroupSpec
from gpu_nodes.config.stack import StackSpec
from gpu_nodes.manifests import dcgm_exporter
from gpu_nodes.manifests.device_plugin import config_map_manifest, daemonset_manifest, service_account_manifest
from gpu_nodes.manifests.namespaces import namespace_levels, namespace_manifest
from gpu_nodes.manifests.naming import selector_labels
from gpu_nodes.manifests.priority_class import priority_class_manifest, verification_priority_class_manifest
from gpu_nodes.manifests.runtime_class import runtime_class_manifest
from gpu_nodes.manifests.verification import APP_NAME as VERIFICATION_APP
from gpu_nodes.manifests.verification import Role, VerificationJob, check_config_map_manifest, verification_jobs
from gpu_nodes.preflight.command import preflight_arguments, preflight_script
from gpu_nodes.vocabulary import COMPONENT_LABEL

# SSH sessions at once for the runbook's preflight: what `xargs -P` in a script would use; the same for its scrapes.
SSH_PARALLEL = 16
WAIT = "1800s"
# The proof Jobs whose logs the proof judges (DCGM's JSON result, NCCL's table), by their pods' component label.
LOGGED_ROLES = (Role.DIAGNOSTICS, Role.PERFORMANCE)


def operator_preflight(group: NodeGroupSpec) -> tuple[str, bytes]:
    """The remote command line and stdin an operator would type: the plain script into `bash -s`,
    with the component's arguments (the component copies the same script by SFTP and runs it from there)."""
    command = shlex.join(["bash", "-s", "--", *preflight_arguments(group)])
    return command, preflight_script().encode()


class Runbook:
    """skips: proof Jobs the runbook leaves out (the benchmarks' cost of a proof item the program cannot turn off)."""

    def __init__(
        self,
        stack: StackSpec,
        env: dict[str, str],
        ssh_key: Path,
        known_hosts: Path,
        log: Callable[[str], None] = print,
        skips: Sequence[Role] = (),
    ) -> None:
        (self.group,) = stack.node_groups
        self.skips = tuple(skips)
        self.log = log
        self.stack = stack
        self.env = env
        self.ssh_key = ssh_key
        self.known_hosts = known_hosts

    # -- the three steps ------------------------------------------------------------------

    def apply(self, nodes: Sequence[str]) -> None:
        self.preflight(nodes)
        self.kubectl_apply(self.cluster_objects())
        self.label_and_taint(nodes)
        self.kubectl_apply(self.plugin_objects() + self.exporter_objects())
        self.rollout()
        self.run_jobs(nodes)
        self.read_proof(nodes)

    def add_node(self, node: str) -> None:
        self.preflight([node])
        self.label_and_taint([node])
        self.rollout()
        self.run_jobs([node])
        self.read_proof([node])

    def teardown(self, nodes: Sequence[str]) -> None:
        group = self.group
        self.kubectl("delete", "job", "-n", group.verification.namespace, "-l", f"app.kubernetes.io/instance={group.name}")
        self.kubectl("delete", *refs(self.plugin_objects() + self.exporter_objects()), "-n", group.device_plugin.namespace)
        self.kubectl("taint", "nodes", *nodes, *[f"{taint}-" for taint in self.taints()])
        self.kubectl("label", "nodes", *nodes, *[f"{key}-" for key in group.node_labels])
        self.kubectl("delete", *refs(self.cluster_objects()))

    # -- what they are made of ------------------------------------------------------------

    @property
    def daemonset(self) -> str:
        return daemonset_manifest(self.group)["metadata"]["name"]

    def cluster_objects(self) -> list[dict[str, Any]]:
        objects = [namespace_manifest(name, level, "runbook") for name, level in namespace_levels(self.stack).items()]
        runtime_class = runtime_class_manifest(self.stack.runtime_class, "runbook")
        if runtime_class is not None:
            objects.append(runtime_class)
        return [
            *objects,
            priority_class_manifest(self.group, "runbook"),
            verification_priority_class_manifest(self.group, "runbook"),
        ]

    def plugin_objects(self) -> list[dict[str, Any]]:
        # The ServiceAccount the plugin's pods run as: without it the DaemonSet makes no pod.
        config_map = config_map_manifest(self.group)
        return [service_account_manifest(self.group), *([config_map] if config_map else []), daemonset_manifest(self.group)]

    def exporter_objects(self) -> list[dict[str, Any]]:
        """dcgm-exporter's DaemonSet and Service where the group turns `metrics` on (none otherwise)."""
        if not self.group.metrics.enabled:
            return []
        return [dcgm_exporter.daemonset_manifest(self.group), dcgm_exporter.service_manifest(self.group)]

    def preflight(self, nodes: Sequence[str]) -> None:
        group: NodeGroupSpec = self.group
        if not group.preflight.enabled:
            return
        by_name = {node.name: node for node in group.nodes}
        command, script = operator_preflight(group)

        def check(name: str) -> None:
            node = by_name[name]
            ssh = ["ssh", "-p", str(node.ssh_port), "-i", str(self.ssh_key), "-o", "BatchMode=yes"]
            ssh += ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={self.known_hosts}"]
            subprocess.run([*ssh, f"{node.ssh_user}@{node.ssh_host}", command], input=script, capture_output=True, check=True)

        started = time.perf_counter()
        with ThreadPoolExecutor(SSH_PARALLEL) as pool:
            list(pool.map(check, nodes))
        self.log(f"  runbook: preflight of {len(nodes)} node(s) over SSH {time.perf_counter() - started:.1f} s")

    def label_and_taint(self, nodes: Sequence[str]) -> None:
        group = self.group
        self.kubectl("label", "nodes", *nodes, *[f"{k}={v}" for k, v in group.node_labels.items()])
        self.kubectl("taint", "nodes", *nodes, *self.taints())

    def taints(self) -> list[str]:
        """`kubectl taint` syntax, key[=value]:Effect."""
        return [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in self.group.taints]

    def rollout(self) -> None:
        namespace = self.group.device_plugin.namespace
        for daemonset in [self.daemonset, *(o["metadata"]["name"] for o in self.exporter_objects() if o["kind"] == "DaemonSet")]:
            self.kubectl("rollout", "status", "-n", namespace, f"daemonset/{daemonset}", f"--timeout={WAIT}")

    def jobs(self, nodes: Sequence[str]) -> list[VerificationJob]:
        """The Jobs the program runs on `nodes`, less those the runbook skips."""
        return [job for job in verification_jobs(self.group) if job.node in set(nodes) and job.role not in self.skips]

    def run_jobs(self, nodes: Sequence[str]) -> None:
        jobs = self.jobs(nodes)
        # The Jobs run the group's check script from its ConfigMap (gone with the namespace).
        self.kubectl_apply([check_config_map_manifest(self.group), *(job.manifest for job in jobs)])
        names = [f"job/{job.name}" for job in jobs]
        self.kubectl("wait", "-n", self.group.verification.namespace, "--for=condition=complete", *names, f"--timeout={WAIT}")

    def read_proof(self, nodes: Sequence[str]) -> None:
        """What the proof judges beyond a Job's completion: the DCGM and NCCL Jobs' logs (all of a kind in one
        `kubectl logs`), and each node's exporter metrics through the API server, SSH_PARALLEL at a time."""
        group, namespace = self.group, self.group.verification.namespace
        planned = {job.role for job in self.jobs(nodes)}
        for role in (r for r in LOGGED_ROLES if r in planned):
            selector = ",".join(f"{k}={v}" for k, v in self.job_pod_labels(role).items())
            self.kubectl("logs", "-n", namespace, "-l", selector, "--tail=-1", "--prefix")
        if not group.metrics.enabled:
            return
        pods = self.exporter_pods(nodes)
        started = time.perf_counter()
        with ThreadPoolExecutor(SSH_PARALLEL) as pool:
            list(pool.map(self.scrape, pods))
        self.log(f"  runbook: {len(pods)} exporter scrapes {time.perf_counter() - started:.1f} s")

    def job_pod_labels(self, role: Role) -> dict[str, str]:
        """The labels of a proof item's pods (the Job's template carries the component)."""
        return {**selector_labels(VERIFICATION_APP, self.group.name), COMPONENT_LABEL: role.value}

    def exporter_pods(self, nodes: Sequence[str]) -> list[str]:
        namespace = self.group.device_plugin.namespace
        selector = ",".join(f"{k}={v}" for k, v in dcgm_exporter.exporter_selector(self.group).items())
        listed = self.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json")
        on = set(nodes)
        return [p["metadata"]["name"] for p in json.loads(listed)["items"] if p["spec"].get("nodeName") in on]

    def scrape(self, pod: str) -> None:
        namespace = self.group.device_plugin.namespace
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}:{EXPORTER_PORT}/proxy{METRICS_PATH}"
        self.kubectl("get", "--raw", path, quiet=True)

    # -- kubectl --------------------------------------------------------------------------

    def kubectl_apply(self, objects: list[dict[str, Any]]) -> None:
        document = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        self.kubectl("apply", "-f", "-", stdin=document)

    def kubectl(self, *args: str, stdin: str | None = None, quiet: bool = False) -> str:
        """Run kubectl, logging its time (quiet: one of many at once, logged together); its stdout."""
        started = time.perf_counter()
        result = subprocess.run(["kubectl", *args], env=self.env, input=stdin, capture_output=True, text=True)
        if not quiet:
            self.log(f"  runbook: kubectl {' '.join(args[:2])} {time.perf_counter() - started:.1f} s")
        if result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args[:4])} ... exited {result.returncode}: {result.stderr[-2000:]}")
        return result.stdout


def refs(objects: list[dict[str, Any]]) -> list[str]:
    """`kind/name` for kubectl delete."""
    return [f"{o['kind'].lower()}/{o['metadata']['name']}" for o in objects]
