"""Cluster access for our own resources: the API client, the shared watches and what they read."""
