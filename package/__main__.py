"""The gpu-nodes component package's plugin: Pulumi's Python host runs this folder in the virtualenv
that PulumiPlugin.yaml names, and it serves gpu-nodes' components to the engine
(gpu_nodes/package/provider.py; docs/own-program.md, "From any Pulumi language")."""

from gpu_nodes.package.provider import serve

if __name__ == "__main__":
    serve()
