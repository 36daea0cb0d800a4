"""Tests of tools/fakehost's stand-ins for the programs NVIDIA's images run (tools/fakehost/standins.py)."""
