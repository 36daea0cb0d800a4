"""Kubernetes objects as manifests (plain dicts): pure functions of the specs."""
