"""gpu-nodes: bring GPU machines, already joined to a Kubernetes cluster, into service, and prove they work."""
