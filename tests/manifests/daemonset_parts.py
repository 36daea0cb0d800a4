"""The parts of a DaemonSet manifest the device plugin's tests read."""

from __future__ import annotations


def pod_spec(manifest: dict) -> dict:
    return manifest["spec"]["template"]["spec"]


def container(manifest: dict) -> dict:
    return pod_spec(manifest)["containers"][0]


def env(manifest: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container(manifest)["env"]}
