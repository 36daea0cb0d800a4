// Command pulumi-resource-kubernetes is our own entry point for the
// pulumi-kubernetes provider. The upstream cmd/pulumi-resource-kubernetes
// embeds schema-embed.json and terraform-mapping-embed.json, which `go
// generate` writes and git ignores, so they are not in the module zip.
// build.sh copies this folder to a scratch directory, writes those two files
// there with ./genschema (from the module's committed schema.json and
// terraform-mapping.json), and builds the copy.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	// version.Version is set with -ldflags -X ...pkg/version.Version=4.25.0.
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
