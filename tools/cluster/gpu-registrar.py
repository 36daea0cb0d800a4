#!/usr/bin/env python3
"""Simulated NVIDIA device-plugin registration for the local kwok cluster.

On a real GPU node, the NVIDIA device plugin (a DaemonSet pod) registers `nvidia.com/gpu`
with kubelet, and kubelet then reports it in the node's status.capacity/allocatable. kwok
simulates nodes without a kubelet, so this loop plays that part:

  for each node annotated `gpu-nodes.dev/simulated-gpus: "<N>"`:
    a Running pod of a DaemonSet, labelled app.kubernetes.io/name=nvidia-device-plugin,
    sits on the node   -> capacity and allocatable include nvidia.com/gpu: N
    otherwise          -> nvidia.com/gpu is removed from both

A plugin pod that hands out GPUs as CDI devices (env DEVICE_LIST_STRATEGY naming a `cdi-*`
strategy) registers nothing unless it mounts a hostPath at `/driver-root`: the real plugin
writes its CDI spec from the driver files it sees there and exits when it cannot ("unable to
create cdi spec file", k8s-device-plugin cmd/nvidia-device-plugin/plugin-manager.go; the
root is api/config/v1/consts.go DefaultContainerDriverRoot).

`gpu-nodes.dev/simulated-unhealthy-gpus: "<K>"` marks K of those GPUs unhealthy, as the
device plugin does for a GPU with an XID error: capacity stays N, allocatable becomes N-K.
The annotation stands for a GPU that stays broken.

`gpu-nodes.dev/simulated-xid-gpus: "<K>"` plays an XID on a GPU that is fine again: like the
real plugin (v0.20.0 ListAndWatch: "there is no way to recover from the Unhealthy state"), the
plugin pod running when it happened keeps K GPUs unhealthy; the registrar pins the XID to that
pod (`gpu-nodes.dev/simulated-xid-pod: <uid>`), and once another plugin pod runs on the node it
re-advertises them all and removes both annotations.

Stdlib only. Credentials come from a kubeconfig through `kubectl config view --raw --flatten`
(our kubectl is on PATH after `source tools/cluster/env.sh`). The node status is changed with a
JSON merge patch on the `status` subresource under its own field manager.

Usage: gpu-registrar.py [--kubeconfig PATH] [--interval 1.0] [--once] [-v]
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
GPUS_ANNOTATION = "gpu-nodes.dev/simulated-gpus"
UNHEALTHY_ANNOTATION = "gpu-nodes.dev/simulated-unhealthy-gpus"
XID_ANNOTATION = "gpu-nodes.dev/simulated-xid-gpus"
XID_POD_ANNOTATION = "gpu-nodes.dev/simulated-xid-pod"
PLUGIN_LABEL = "app.kubernetes.io/name"
PLUGIN_LABEL_VALUE = "nvidia-device-plugin"
CONTAINER_DRIVER_ROOT = "/driver-root"
FIELD_MANAGER = "gpu-nodes-registrar"

log = logging.getLogger("gpu-registrar")

Obj = Mapping[str, Any]


# --------------------------------------------------------------------------- pure functions


def parse_count(value: Any) -> int | None:
    """A non-negative integer from an annotation value, or None when it is not one."""
    if value is None:
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n >= 0 else None


def simulated_gpus(node: Obj) -> int | None:
    """GPUs the node has (its annotation), or None when the node is not a simulated GPU node."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    return parse_count(annotations.get(GPUS_ANNOTATION))


def unhealthy_gpus(node: Obj) -> int:
    annotations = node.get("metadata", {}).get("annotations") or {}
    return parse_count(annotations.get(UNHEALTHY_ANNOTATION)) or 0


def is_device_plugin_pod(pod: Obj) -> bool:
    """A pod of a DaemonSet whose pods carry app.kubernetes.io/name=nvidia-device-plugin."""
    meta = pod.get("metadata", {})
    labels = meta.get("labels") or {}
    if labels.get(PLUGIN_LABEL) != PLUGIN_LABEL_VALUE:
        return False
    owners = meta.get("ownerReferences") or []
    return any(o.get("kind") == "DaemonSet" and o.get("controller", True) for o in owners)


def is_running(pod: Obj) -> bool:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False  # terminating: the plugin is going away
    return pod.get("status", {}).get("phase") == "Running"


def uses_cdi(container: Obj) -> bool:
    """The container's DEVICE_LIST_STRATEGY (one strategy or a comma-separated list) names a CDI one."""
    for env in container.get("env") or []:
        if env.get("name") == "DEVICE_LIST_STRATEGY":
            return any(s.strip().startswith("cdi-") for s in str(env.get("value") or "").split(","))
    return False


def mounts_driver_root(pod: Obj, container: Obj) -> bool:
    """The container mounts a hostPath volume at /driver-root."""
    host_paths = {v.get("name") for v in pod.get("spec", {}).get("volumes") or [] if "hostPath" in v}
    return any(
        m.get("mountPath", "").rstrip("/") == CONTAINER_DRIVER_ROOT and m.get("name") in host_paths
        for m in container.get("volumeMounts") or []
    )


def writes_its_cdi_spec(pod: Obj) -> bool:
    """False for a plugin that would exit at start: it uses CDI and sees no driver root."""
    containers = pod.get("spec", {}).get("containers") or []
    return all(mounts_driver_root(pod, c) for c in containers if uses_cdi(c))


def nodes_with_running_plugin(pods: Iterable[Obj]) -> set[str]:
    """Names of the nodes on which a device-plugin pod is Running."""
    return set(running_plugin_pods(pods))


def running_plugin_pods(pods: Iterable[Obj]) -> dict[str, str]:
    """Node name -> uid of the device-plugin pod Running on it."""
    return {
        p["spec"]["nodeName"]: p["metadata"].get("uid", "")
        for p in pods
        if is_device_plugin_pod(p) and is_running(p) and writes_its_cdi_spec(p) and p.get("spec", {}).get("nodeName")
    }


def xid_state(node: Obj, plugin_uid: str | None) -> tuple[int, dict | None]:
    """GPUs an XID keeps unhealthy under the running plugin pod, and the annotation patch that
    pins the XID to that pod, or clears it once another pod runs (None: no patch)."""
    annotations = node.get("metadata", {}).get("annotations") or {}
    count = parse_count(annotations.get(XID_ANNOTATION)) or 0
    if not count or plugin_uid is None:
        return 0, None  # no XID, or no plugin to hold it
    pinned = annotations.get(XID_POD_ANNOTATION)
    if pinned is None:
        return count, {"metadata": {"annotations": {XID_POD_ANNOTATION: plugin_uid}}}
    if pinned == plugin_uid:
        return count, None
    return 0, {"metadata": {"annotations": {XID_ANNOTATION: None, XID_POD_ANNOTATION: None}}}


@dataclass(frozen=True)
class Desired:
    """nvidia.com/gpu quantities a node should report; None means the key is absent."""

    capacity: int | None
    allocatable: int | None


def desired_gpus(node: Obj, plugin_nodes: set[str] | Mapping[str, str]) -> Desired | None:
    """What the node should report, or None when the node is not ours to manage."""
    total = simulated_gpus(node)
    if total is None:
        return None
    name = node["metadata"]["name"]
    if name not in plugin_nodes:
        return Desired(None, None)
    uid = plugin_nodes.get(name, "") if isinstance(plugin_nodes, Mapping) else ""
    xid, _ = xid_state(node, uid)
    return Desired(total, max(total - unhealthy_gpus(node) - xid, 0))


def _quantity(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value))
    except ValueError:
        return None  # not an integer quantity: rewrite it


def current_gpus(node: Obj) -> Desired:
    status = node.get("status") or {}
    cap = (status.get("capacity") or {}).get(GPU_RESOURCE)
    alloc = (status.get("allocatable") or {}).get(GPU_RESOURCE)
    return Desired(_quantity(cap), _quantity(alloc))


def status_patch(node: Obj, desired: Desired | None) -> dict | None:
    """JSON merge patch for the node's status subresource, or None when nothing changes."""
    if desired is None:
        return None
    status = node.get("status") or {}
    patch: dict[str, dict[str, str | None]] = {}
    for field, want in (("capacity", desired.capacity), ("allocatable", desired.allocatable)):
        have = (status.get(field) or {}).get(GPU_RESOURCE)
        if want is None:
            if have is not None:
                patch[field] = {GPU_RESOURCE: None}  # merge patch: null removes the key
        elif have is None or _quantity(have) != want:
            patch[field] = {GPU_RESOURCE: str(want)}
    return {"status": patch} if patch else None


def reconcile(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, dict]:
    """Node name -> status patch, for every managed node whose GPUs are not what they should be."""
    plugins = running_plugin_pods(pods)
    patches = {}
    for node in nodes:
        patch = status_patch(node, desired_gpus(node, plugins))
        if patch is not None:
            patches[node["metadata"]["name"]] = patch
    return patches


def xid_patches(nodes: Iterable[Obj], pods: Iterable[Obj]) -> dict[str, dict]:
    """Node name -> metadata patch pinning or clearing a simulated XID."""
    plugins = running_plugin_pods(pods)
    patches = {}
    for node in nodes:
        name = node["metadata"]["name"]
        _, patch = xid_state(node, plugins.get(name))
        if patch is not None:
            patches[name] = patch
    return patches


# --------------------------------------------------------------------------- API access


class Client:
    """The few API calls the loop needs, authenticated as the kubeconfig's user."""

    def __init__(self, kubeconfig: str | None, context: str | None = None):
        cmd = ["kubectl", "config", "view", "--raw", "--flatten", "--minify", "-o", "json"]
        if kubeconfig:
            cmd += ["--kubeconfig", kubeconfig]
        if context:
            cmd += ["--context", context]
        cfg = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        self.server = cluster["server"].rstrip("/")
        self._tmp = tempfile.TemporaryDirectory(prefix="gpu-registrar-")
        ctx = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            ctx.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        if user.get("client-certificate-data"):
            cert = self._write("client.crt", user["client-certificate-data"])
            key = self._write("client.key", user["client-key-data"])
            ctx.load_cert_chain(cert, key)
        self.headers = {"Accept": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self.ssl = ctx

    def _write(self, name: str, b64: str) -> str:
        path = os.path.join(self._tmp.name, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(base64.b64decode(b64))
        return path

    def _request(self, method: str, path: str, body: dict | None = None, ctype: str | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method, headers=dict(self.headers))
        if ctype:
            req.add_header("Content-Type", ctype)
        with urllib.request.urlopen(req, context=self.ssl, timeout=10) as resp:
            return json.loads(resp.read())

    def list_nodes(self) -> list[dict]:
        return self._request("GET", "/api/v1/nodes")["items"]

    def list_plugin_pods(self) -> list[dict]:
        q = urllib.parse.urlencode({"labelSelector": f"{PLUGIN_LABEL}={PLUGIN_LABEL_VALUE}"})
        return self._request("GET", f"/api/v1/pods?{q}")["items"]

    def patch_node(self, name: str, patch: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        return self._request("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}?{q}", patch, "application/merge-patch+json")

    def patch_node_status(self, name: str, patch: dict) -> dict:
        q = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER})
        path = f"/api/v1/nodes/{urllib.parse.quote(name)}/status?{q}"
        return self._request("PATCH", path, patch, "application/merge-patch+json")


# --------------------------------------------------------------------------- loop


# Plugin pods already logged as exiting for want of a driver root: once each.
_NO_CDI_SPEC: set[str] = set()


def run_once(client: Client) -> dict[str, dict]:
    nodes, pods = client.list_nodes(), client.list_plugin_pods()
    for pod in pods:
        uid = pod.get("metadata", {}).get("uid", "")
        if is_device_plugin_pod(pod) and not writes_its_cdi_spec(pod) and uid not in _NO_CDI_SPEC:
            _NO_CDI_SPEC.add(uid)
            log.warning("pod %s: unable to create cdi spec file: no hostPath at %s", pod["metadata"].get("name"), CONTAINER_DRIVER_ROOT)
    for name, patch in sorted(xid_patches(nodes, pods).items()):
        client.patch_node(name, patch)
        log.info("node %s: %s", name, json.dumps(patch["metadata"], sort_keys=True))
    patches = reconcile(nodes, pods)
    for name, patch in sorted(patches.items()):
        client.patch_node_status(name, patch)
        log.info("node %s: %s", name, json.dumps(patch["status"], sort_keys=True))
    return patches


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ap.add_argument("--context")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between passes (default 1)")
    ap.add_argument("--once", action="store_true", help="one pass, then exit (for tests)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    client = Client(args.kubeconfig, args.context)
    if args.once:
        run_once(client)
        return 0

    stop = False

    def _stop(signum, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("watching %s every %.1fs", client.server, args.interval)
    failing = False
    while not stop:
        try:
            run_once(client)
            if failing:
                log.info("API reachable again")
            failing = False
        except (urllib.error.URLError, OSError, ValueError) as e:
            if not failing:  # log the first failure of a streak, not one a second
                log.warning("pass failed: %s", e)
            failing = True
        time.sleep(args.interval)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
