// A team's own Go program with a GPU fleet in it (docs/own-program.md, "From any Pulumi language").
// The gpunodes package is the SDK generated from the gpu-nodes package's schema into
// sdks/gpu-nodes, a module of its own that go.work adds to this program's workspace.
package main

import (
	"example.com/gpu-nodes/sdk/go/gpunodes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		// The team's own provider: the fleet reaches the cluster through it and nothing else.
		cluster, err := kubernetes.NewProvider(ctx, "cluster", &kubernetes.ProviderArgs{
			Kubeconfig: cfg.RequireSecret("kubeconfig"),
		})
		if err != nil {
			return err
		}
		// The fleet's settings are plain values (the schema marks them plain: the component reads
		// them before it registers anything); only the secrets and a node's connection are inputs:
		// SshHost may be another resource's output (a machine this program creates), read when it resolves.
		fleet, err := gpunodes.NewGpuFleet(ctx, "gpus", &gpunodes.GpuFleetArgs{
			NodeGroups: []gpunodes.NodeGroupArgs{
				{
					Name:        "a100",
					GpusPerNode: 8,
					Nodes: []gpunodes.NodeArgs{
						{
							Name:    "gpu-a-01",
							SshHost: pulumi.String("10.0.0.11"),
							SshUser: pulumi.String("root"),
							// ssh-keyscan -t ed25519 10.0.0.11
							HostKey: pulumi.String("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgOWx8GZAYwVo1DljYmxSdegqKZ4tjslNMpHdImvYML"),
						},
					},
				},
			},
			SshPrivateKey: cfg.RequireSecret("sshPrivateKey"),
		}, pulumi.Providers(cluster))
		if err != nil {
			return err
		}
		ctx.Export("gpuNodes", fleet.NodeGroups)
		return nil
	})
}
