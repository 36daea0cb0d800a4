"""Preflight: the check script, run on each machine over SSH, and what its report says."""
