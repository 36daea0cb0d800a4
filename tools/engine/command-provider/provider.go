package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/blang/semver"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
)

// The version the pulumi-command==1.2.1 Python SDK asks for; what it stands in for.
const version = "1.2.1"

const (
	commandType = "command:remote:Command"
	copyType    = "command:remote:CopyToRemote"
)

// Outputs the provider adds to a Command's inputs.
const (
	stdoutKey = resource.PropertyKey("stdout")
	stderrKey = resource.PropertyKey("stderr")
)

type commandProvider struct {
	plugin.UnimplementedProvider
	host *provider.HostClient
}

func (p *commandProvider) Handshake(context.Context, plugin.ProviderHandshakeRequest) (*plugin.ProviderHandshakeResponse, error) {
	return &plugin.ProviderHandshakeResponse{AcceptSecrets: true, AcceptResources: true}, nil
}

func (p *commandProvider) GetPluginInfo(context.Context) (plugin.PluginInfo, error) {
	v := semver.MustParse(version)
	return plugin.PluginInfo{Version: &v}, nil
}

func (p *commandProvider) GetSchema(context.Context, plugin.GetSchemaRequest) (plugin.GetSchemaResponse, error) {
	// The SDKs are generated from the real schema; the engine asks for none while running them.
	return plugin.GetSchemaResponse{Schema: []byte(`{"name":"command","version":"` + version + `"}`)}, nil
}

func (p *commandProvider) CheckConfig(_ context.Context, req plugin.CheckConfigRequest) (plugin.CheckConfigResponse, error) {
	return plugin.CheckConfigResponse{Properties: req.News}, nil
}

func (p *commandProvider) DiffConfig(context.Context, plugin.DiffConfigRequest) (plugin.DiffConfigResponse, error) {
	return plugin.DiffResult{Changes: plugin.DiffNone}, nil
}

func (p *commandProvider) Configure(context.Context, plugin.ConfigureRequest) (plugin.ConfigureResponse, error) {
	return plugin.ConfigureResponse{}, nil
}

func (p *commandProvider) SignalCancellation(context.Context) error { return nil }

func (p *commandProvider) Close() error { return nil }

// Check validates the inputs and fills in the defaults pulumi-command 1.2.1 declares, so that
// the state holds what the real plugin's would.
func (p *commandProvider) Check(_ context.Context, req plugin.CheckRequest) (plugin.CheckResponse, error) {
	news := req.News.Copy()
	var failures []plugin.CheckFailure
	fail := func(property, reason string) {
		failures = append(failures, plugin.CheckFailure{Property: resource.PropertyKey(property), Reason: reason})
	}
	conn, ok := news["connection"]
	switch {
	case !ok || conn.IsNull():
		fail("connection", "missing required property 'connection'")
	case conn.ContainsUnknowns():
	default:
		news["connection"] = withConnectionDefaults(conn, true)
	}
	switch string(req.Type) {
	case commandType:
		if _, set := news["addPreviousOutputInEnv"]; !set {
			news["addPreviousOutputInEnv"] = resource.NewBoolProperty(true)
		}
		if v, set := news["logging"]; set && v.IsString() {
			if _, known := loggingModes[v.StringValue()]; !known {
				fail("logging", fmt.Sprintf("logging must be one of stdout, stderr, stdoutAndStderr, none; got %q", v.StringValue()))
			}
		}
	case copyType:
		if _, set := news["remotePath"]; !set {
			fail("remotePath", "missing required property 'remotePath'")
		}
		source, set := news["source"]
		switch {
		case !set || source.IsNull():
			fail("source", "missing required property 'source'")
		case source.IsArchive() && !source.ArchiveValue().IsPath():
			fail("archive", "archive must be a path to a file or directory")
		case source.IsAsset() && !source.AssetValue().IsPath() && !source.AssetValue().IsText():
			fail("asset", "asset must be a path-based file asset or a text asset")
		}
	default:
		return plugin.CheckResponse{}, fmt.Errorf("unknown resource type %s (the gpu-nodes stand-in serves %s and %s)", req.Type, commandType, copyType)
	}
	return plugin.CheckResponse{Properties: news, Failures: failures}, nil
}

// Diff: a change of triggers replaces the resource, any other input change updates it.
func (p *commandProvider) Diff(_ context.Context, req plugin.DiffRequest) (plugin.DiffResponse, error) {
	diff := req.OldInputs.Diff(req.NewInputs)
	if diff == nil || !diff.AnyChanges() {
		return plugin.DiffResult{Changes: plugin.DiffNone}, nil
	}
	detailed := plugin.NewDetailedDiffFromObjectDiff(diff, true)
	var replace []resource.PropertyKey
	for path, change := range detailed {
		if path == "triggers" || strings.HasPrefix(path, "triggers[") {
			change.Kind = change.Kind.AsReplace()
			detailed[path] = change
			replace = []resource.PropertyKey{"triggers"}
		}
	}
	return plugin.DiffResult{
		Changes:      plugin.DiffSome,
		ChangedKeys:  diff.ChangedKeys(),
		ReplaceKeys:  replace,
		DetailedDiff: detailed,
	}, nil
}

func (p *commandProvider) Create(ctx context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
	outputs := req.Properties.Copy()
	if req.Preview {
		if string(req.Type) == commandType {
			outputs[stdoutKey] = resource.MakeComputed(resource.NewStringProperty(""))
			outputs[stderrKey] = resource.MakeComputed(resource.NewStringProperty(""))
		}
		return plugin.CreateResponse{Properties: outputs}, nil
	}
	var err error
	switch string(req.Type) {
	case commandType:
		err = p.runCommand(ctx, req.URN, req.Properties, "create", nil, outputs)
	case copyType:
		err = copyToRemote(ctx, req.Properties)
	}
	if err != nil {
		// As pulumi-command's: a failed create keeps nothing in the state, so the next run creates again.
		return plugin.CreateResponse{}, err
	}
	id, err := uniqueID(req.Name)
	if err != nil {
		return plugin.CreateResponse{}, err
	}
	return plugin.CreateResponse{ID: resource.ID(id), Properties: outputs, Status: resource.StatusOK}, nil
}

func (p *commandProvider) Update(ctx context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
	outputs := req.NewInputs.Copy()
	switch string(req.Type) {
	case commandType:
		// Until a command runs again, its outputs are the previous run's.
		for _, key := range []resource.PropertyKey{stdoutKey, stderrKey} {
			if v, ok := req.OldOutputs[key]; ok {
				outputs[key] = v
			}
		}
		if req.Preview {
			return plugin.UpdateResponse{Properties: outputs}, nil
		}
		line := "update"
		if !present(req.NewInputs, "update") {
			line = "create" // pulumi-command runs create again when there is no update
		}
		if err := p.runCommand(ctx, req.URN, req.NewInputs, line, req.OldOutputs, outputs); err != nil {
			return plugin.UpdateResponse{}, err
		}
	case copyType:
		if req.Preview {
			return plugin.UpdateResponse{Properties: outputs}, nil
		}
		if !req.OldInputs["source"].DeepEquals(req.NewInputs["source"]) || !req.OldInputs["remotePath"].DeepEquals(req.NewInputs["remotePath"]) {
			if err := copyToRemote(ctx, req.NewInputs); err != nil {
				return plugin.UpdateResponse{}, err
			}
		}
	}
	return plugin.UpdateResponse{Properties: outputs, Status: resource.StatusOK}, nil
}

func (p *commandProvider) Delete(ctx context.Context, req plugin.DeleteRequest) (plugin.DeleteResponse, error) {
	// CopyToRemote leaves its copy on the machine; a Command runs its delete line, if it has one.
	if string(req.Type) == commandType && present(req.Outputs, "delete") {
		if err := p.runCommand(ctx, req.URN, req.Outputs, "delete", req.Outputs, nil); err != nil {
			return plugin.DeleteResponse{Status: resource.StatusUnknown}, err
		}
	}
	return plugin.DeleteResponse{Status: resource.StatusOK}, nil
}

// Read (refresh) keeps what is in the state: a command's effect cannot be read back.
func (p *commandProvider) Read(_ context.Context, req plugin.ReadRequest) (plugin.ReadResponse, error) {
	return plugin.ReadResponse{
		ReadResult: plugin.ReadResult{ID: req.ID, Inputs: req.Inputs, Outputs: req.State},
		Status:     resource.StatusOK,
	}, nil
}

// uniqueID is a resource ID in pulumi-command's shape: the name and 8 random hex digits.
func uniqueID(name string) (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return name + hex.EncodeToString(b), nil
}
