// Command pulumi-language-python is gpu-nodes' own stand-in for Pulumi's Python language
// host, whose Go module the module proxy refuses; a user's Pulumi install brings the real one.
// It is not upstream code. It serves what the CLI asks of a Python program, a Python policy
// pack and a source-based Python plugin (a component provider: a folder with PulumiPlugin.yaml
// `runtime: python`), behaving as Pulumi's host does (sdk/python/cmd/pulumi-language-python/
// main.go in pulumi/pulumi: Run, RunPlugin, InstallDependencies, GetRequiredPackages):
//
//   - Run: starts `python -u pulumi-language-python-exec ...` (the script from sdk/v3,
//     installed next to this binary) in the project's virtualenv, resolved with sdk/v3's
//     python/toolchain package from the runtime options in Pulumi.yaml (virtualenv, toolchain);
//   - RunPlugin: runs a plugin folder (a policy pack, a component provider) as `python <its
//     directory> ARGS...` in the virtualenv its PulumiPlugin.yaml / PulumiPolicy.yaml names
//     (`venv` beside it when none is named and the toolchain is pip), in the engine's working
//     directory and environment, streaming its output back (the first line of a provider's
//     stdout is its port) and reporting its exit code; a folder with no __main__.py but a
//     buildable pyproject.toml runs as `python -m pulumi.run.plugin <project name> ARGS...`;
//   - InstallDependencies: creates the virtualenv and installs requirements.txt into it
//     (sdk/v3's toolchain), as `pulumi install`, `pulumi package add <dir>` and `pulumi package
//     get-schema <dir>` ask before running a plugin;
//   - GetRequiredPackages: the resource plugins of the Pulumi packages installed in the
//     virtualenv (pulumi-plugin.json, else the package's name and version);
//   - GetPluginInfo, Handshake, About, GetProgramDependencies, RuntimeOptionsPrompts.
//
// Dynamic providers do not pass through it: the engine starts pulumi-resource-pulumi-python
// itself, with the *program's* runtime options as PULUMI_RUNTIME_* variables (see README.md).
// pulumi new/convert/package code generation answer Unimplemented.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// The Python SDK's exec script exits with this code after it has shown the
// user an actionable error; the engine must then not add its own.
const execExitedAfterUserMessage = 32

func main() {
	flags := flag.NewFlagSet("pulumi-language-python", flag.ContinueOnError)
	tracing := flags.String("tracing", "", "Zipkin-compatible tracing endpoint")
	executor := flags.String("use-executor", "", "path of pulumi-language-python-exec (default: beside this binary, else PATH)")
	// Flags the CLI or older engines may pass; accepted and ignored.
	flags.Bool("logtostderr", false, "")
	flags.Bool("logflow", false, "")
	flags.Int("v", 0, "")
	flags.String("root", "", "")
	flags.String("virtualenv", "", "")
	flags.String("toolchain", "", "")
	flags.String("typechecker", "", "")
	if err := flags.Parse(os.Args[1:]); err != nil {
		cmdutil.Exit(err)
	}
	logging.InitLogging(false, 0, false)

	execPath, err := findExecutor(*executor)
	if err != nil {
		cmdutil.Exit(err)
	}
	engineAddress := ""
	if args := flags.Args(); len(args) > 0 {
		engineAddress = args[len(args)-1]
	}

	host := &pythonHost{exec: execPath, engineAddress: engineAddress, tracing: *tracing}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
		Options: rpcutil.OpenTracingServerInterceptorOptions(nil),
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("could not start language host RPC server: %w", err))
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host RPC stopped serving: %w", err))
	}
}

// findExecutor locates pulumi-language-python-exec: given path, else next to
// this binary, else on PATH.
func findExecutor(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	const name = "pulumi-language-python-exec"
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			candidate := filepath.Join(filepath.Dir(self), name)
			if st, err := os.Stat(candidate); err == nil && !st.IsDir() {
				return candidate, nil
			}
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("could not find %s next to the language host or on $PATH: %w", name, err)
	}
	return p, nil
}

type pythonHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	exec          string
	engineAddress string
	tracing       string
}

func (h *pythonHost) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if req.GetEngineAddress() != "" {
		h.engineAddress = req.GetEngineAddress()
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *pythonHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *pythonHost) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *pythonHost) RuntimeOptionsPrompts(context.Context, *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

// pythonOptions maps Pulumi.yaml's runtime options to sdk/v3's toolchain options.
func pythonOptions(info *pulumirpc.ProgramInfo) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{
		Root:       info.GetRootDirectory(),
		ProgramDir: info.GetProgramDirectory(),
		Toolchain:  toolchain.Auto,
	}
	m := info.GetOptions().AsMap()
	if raw, ok := m["virtualenv"]; ok {
		v, isString := raw.(string)
		if !isString {
			return opts, errors.New("virtualenv option must be a string")
		}
		opts.Virtualenv = v
	}
	if raw, ok := m["toolchain"]; ok {
		v, isString := raw.(string)
		if !isString {
			return opts, errors.New("toolchain option must be a string")
		}
		switch strings.ToLower(v) {
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		case "uv":
			opts.Toolchain = toolchain.Uv
		default:
			return opts, fmt.Errorf("unsupported toolchain option: %s", v)
		}
	}
	return opts, nil
}

func (h *pythonHost) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	tc, err := resolveToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: info.PythonExecutable,
		Version:    info.PythonVersion.String(),
	}, nil
}

func (h *pythonHost) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, err := resolveToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	packages, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, fmt.Errorf("listing the virtualenv's packages: %w", err)
	}
	deps := make([]*pulumirpc.DependencyInfo, 0, len(packages))
	for _, p := range packages {
		deps = append(deps, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

// resolveToolchain: the Python (pip, poetry or uv, with its virtualenv) that the runtime
// options of a Pulumi.yaml or PulumiPolicy.yaml name.
func resolveToolchain(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, error) {
	opts, err := pythonOptions(info)
	if err != nil {
		return nil, err
	}
	return toolchain.ResolveToolchain(opts)
}

func (h *pythonHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	tc, err := resolveToolchain(req.GetInfo())
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}

	args := []string{"-u", h.exec}
	add := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", h.engineAddress)
	add("project", req.GetProject())
	add("stack", req.GetStack())
	add("pwd", req.GetPwd())
	add("dry_run", strconv.FormatBool(req.GetDryRun()))
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("tracing", h.tracing)
	add("organization", req.GetOrganization())
	add("root_directory", req.GetInfo().GetRootDirectory())
	program := req.GetProgram()
	if program == "" {
		program = "."
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// The SDK iterates over both: send {} and [] rather than null.
	configMap := req.GetConfig()
	if configMap == nil {
		configMap = map[string]string{}
	}
	config, err := json.Marshal(configMap)
	if err != nil {
		return nil, fmt.Errorf("serializing configuration: %w", err)
	}
	keys := req.GetConfigSecretKeys()
	if keys == nil {
		keys = []string{}
	}
	secretKeys, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("serializing secret keys: %w", err)
	}
	// No PULUMI_RUNTIME_VIRTUALENV here: the program's dynamic providers run in
	// pulumi-resource-pulumi-python, which the engine starts with the project's runtime options
	// as PULUMI_RUNTIME_* (pkg/v3 resource/plugin/provider_plugin.go, NewProvider).
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	if req.GetPwd() != "" {
		cmd.Dir = req.GetPwd()
	}
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr

	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == execExitedAfterUserMessage {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{
				Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode()),
			}, nil
		}
		return &pulumirpc.RunResponse{
			Error: fmt.Sprintf("Problem executing program (could not run language executor): %v", err),
		}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}
