"""gpu-nodes as a Pulumi component package, for programs in any Pulumi language.

`package/` at the repository's root is the plugin (`PulumiPlugin.yaml`, `runtime: python`); it
serves `gpu-nodes:index:GpuFleet` through the Python SDK's component provider
(`provider.py`), whose schema is inferred from the typed inputs (`inputs.py`, written from the
field declarations by `generate.py`) and the typed outputs (`outputs.py`). docs/own-program.md, "From
any Pulumi language".
"""
