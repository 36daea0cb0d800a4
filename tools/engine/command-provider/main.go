// Command pulumi-resource-command is gpu-nodes' stand-in for pulumi-command's provider plugin,
// whose Go module the module proxy refuses. It is our own code, not upstream's: it serves the two
// resources gpu-nodes uses, command:remote:Command and command:remote:CopyToRemote, as
// pulumi-command 1.2.1 documents them, over real SSH (golang.org/x/crypto/ssh) and SFTP
// (github.com/pkg/sftp). A machine with the real plugin uses the real plugin (see env.sh).
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func main() {
	err := provider.Main("command", func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return plugin.NewProviderServer(&commandProvider{host: host}), nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-command (gpu-nodes stand-in): %v\n", err)
		os.Exit(1)
	}
}
