"""NVIDIA's dcgm-exporter on a group's nodes: as the chart lays it out, privileged as the GPU Operator runs it."""

from __future__ import annotations

from gpu_nodes.config.metrics import DEFAULT_EXPORTER_IMAGE
from gpu_nodes.manifests.dcgm_exporter import daemonset_manifest, service_manifest, service_monitor_manifest
from gpu_nodes.vocabulary import GROUP_LABEL
from tests.specs import group_spec

METRICS = {"enabled": True}


def exporter_pod(**config) -> dict:
    return daemonset_manifest(group_spec(metrics=METRICS, **config))["spec"]["template"]["spec"]


def test_the_exporter_runs_on_the_groups_nodes_past_its_taints_and_the_gate():
    spec = exporter_pod()
    assert spec["nodeSelector"] == {GROUP_LABEL: "a100"}, spec
    keys = {t["key"] for t in spec["tolerations"]}
    assert {"nvidia.com/gpu", "gpu-nodes.dev/unverified"} <= keys, spec["tolerations"]


def test_the_exporter_serves_port_9400_with_the_charts_probes():
    (container,) = exporter_pod()["containers"]
    assert container["image"] == DEFAULT_EXPORTER_IMAGE, container["image"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 9400}], container["ports"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": 9400}, container


def test_the_exporter_is_privileged_and_names_the_stacks_runtime_class():
    spec = exporter_pod()
    assert spec["containers"][0]["securityContext"] == {"privileged": True}, spec["containers"][0]
    assert spec["runtimeClassName"] == "nvidia", spec


def test_the_exporter_reads_the_kubelets_pod_resources_to_name_a_gpus_pod():
    spec = exporter_pod()
    (container,) = spec["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DCGM_EXPORTER_KUBERNETES"] == "true", env
    assert {"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources", "readOnly": True} in container[
        "volumeMounts"
    ], container
    assert spec["volumes"][0]["hostPath"]["path"] == "/var/lib/kubelet/pod-resources", spec["volumes"]


def test_the_engine_does_not_wait_for_the_whole_rollout():
    """Each node's readiness waits for its own exporter pod, so one broken node gates only itself."""
    manifest = daemonset_manifest(group_spec(metrics=METRICS))
    assert manifest["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}, manifest["metadata"]


def test_the_service_and_its_monitor_select_the_exporter_pods():
    group = group_spec(metrics={**METRICS, "serviceMonitor": True})
    selector = daemonset_manifest(group)["spec"]["selector"]["matchLabels"]
    service = service_manifest(group)
    assert service["spec"]["selector"] == selector, service
    assert service["spec"]["ports"][0]["name"] == "metrics", service
    monitor = service_monitor_manifest(group)
    assert selector.items() <= service["metadata"]["labels"].items(), "the monitor selects the Service by its labels"
    assert monitor["spec"]["selector"]["matchLabels"] == selector, monitor
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics", monitor
