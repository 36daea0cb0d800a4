// A team's own TypeScript program with a GPU fleet in it (docs/own-program.md, "From any Pulumi language").
// `@gpu-nodes/gpu-nodes` is the SDK generated from the gpu-nodes package's schema into sdks/gpu-nodes.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as gpunodes from "@gpu-nodes/gpu-nodes";

const config = new pulumi.Config();
// The team's own provider: the fleet reaches the cluster through it and nothing else.
const cluster = new k8s.Provider("cluster", { kubeconfig: config.requireSecret("kubeconfig") });

const fleet = new gpunodes.GpuFleet(
    "gpus",
    {
        nodeGroups: [
            {
                name: "a100",
                gpusPerNode: 8,
                nodes: [
                    {
                        name: "gpu-a-01",
                        sshHost: "10.0.0.11",
                        sshUser: "root",
                        // ssh-keyscan -t ed25519 10.0.0.11
                        hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgOWx8GZAYwVo1DljYmxSdegqKZ4tjslNMpHdImvYML",
                    },
                ],
            },
        ],
        sshPrivateKey: config.requireSecret("sshPrivateKey"),
    },
    { providers: [cluster] },
);

export const gpuNodes = fleet.nodeGroups;
