"""The group's `metrics` section: NVIDIA's dcgm-exporter on the group's nodes, scraped by each node's proof."""

from __future__ import annotations

from gpu_nodes.config.checks import image_setting
from gpu_nodes.config.fields import section, setting

# NVIDIA's dcgm-exporter: the release the GPU Operator v26.7.0 deploys (deployments/gpu-operator/values.yaml
# `dcgmExporter.version`, tag v26.7.0; the chart default of NVIDIA/dcgm-exporter deployment/values.yaml),
# past bulletin 5857's fix (4.8.2, gpu_nodes/advisories.py DCGM_EXPORTER_ADVISORIES). From 4.6.0-4.8.3 NVIDIA
# publishes the distroless image as its main one and no Ubuntu 22.04 variant.
DEFAULT_EXPORTER_IMAGE = "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"
# dcgm-exporter's default listen address (`DCGM_EXPORTER_LISTEN=":9400"`, NVIDIA/dcgm-exporter dcgm-exporter.yaml
# and deployment/templates/daemonset.yaml) and its paths.
EXPORTER_PORT = 9400
METRICS_PATH = "/metrics"
HEALTH_PATH = "/health"


@section
class MetricsSpec:
    enabled: bool = setting(
        "enabled",
        "run NVIDIA's dcgm-exporter on the group's nodes, with a Service, and prove each node by scraping it: GPU "
        'utilisation, memory used, temperature and power for every GPU (see "The proof")',
        default=False,
    )
    image: str = image_setting(
        "pinned dcgm-exporter image: a release past NVIDIA's bulletin 5857 (exporter 4.8.2 or later)", DEFAULT_EXPORTER_IMAGE
    )
    service_monitor: bool = setting(
        "serviceMonitor",
        "also a Prometheus Operator `ServiceMonitor` for the exporter's Service (the cluster must serve "
        "`monitoring.coreos.com/v1`)",
        default=False,
    )
