"""The gpu-nodes component package's plugin: Pulumi's Python host runs this folder in the virtualenv
that PulumiPlugin.yaml names, and it serves gpu-nodes' components to the engine
(gpu_nodes/package/provider.py; README, "Use it in your own program")."""

from gpu_nodes.package.provider import serve

if __name__ == "__main__":
    serve()
