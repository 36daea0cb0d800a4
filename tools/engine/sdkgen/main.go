// Command gpu-nodes-sdkgen writes a Node.js (TypeScript) or Go SDK for a Pulumi package schema.
//
// It is our own small tool over Pulumi's own code generators, codegen/nodejs.GeneratePackage and
// codegen/go.GeneratePackage of github.com/pulumi/pulumi/pkg/v3. `pulumi package gen-sdk` and
// `pulumi package add` hand code generation to the language host (its GeneratePackage RPC), and
// the Go module proxy refuses Pulumi's Node.js and Go hosts, so the CLI built here cannot
// generate those two SDKs itself. This tool does what those hosts do with the request, the way
// `pulumi package add` asks for a local SDK: the package is marked SupportPack (the Go SDK gets
// its own go.mod, the version comes from the schema), and the Node.js SDK is a local one (a
// postinstall script compiles it with tsc when npm installs it).
//
//	gpu-nodes-sdkgen -schema schema.json -language nodejs -out sdks/gpu-nodes
//	gpu-nodes-sdkgen -schema - -language go -out sdks/gpu-nodes -dep kubernetes.json
//
// A schema that refers to another package's types (its "dependencies") needs that package's
// schema, given with -dep; nothing is downloaded. The output folder is emptied first.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver"
	"github.com/hashicorp/hcl/v2"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// tool names the generator in the header of every generated file.
const tool = "gpu-nodes-sdkgen"

type depFlags []string

func (d *depFlags) String() string     { return strings.Join(*d, ",") }
func (d *depFlags) Set(v string) error { *d = append(*d, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", tool, err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stderr io.Writer) error {
	flags := flag.NewFlagSet(tool, flag.ContinueOnError)
	flags.SetOutput(stderr)
	schemaPath := flags.String("schema", "", "the package schema, a JSON file ('-' reads standard input)")
	language := flags.String("language", "", "the SDK to write: nodejs or go")
	out := flags.String("out", "", "the folder to write the SDK to (emptied first)")
	var deps depFlags
	flags.Var(&deps, "dep", "the JSON schema of a package the schema refers to (repeatable)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *schemaPath == "" || *out == "" || (*language != "nodejs" && *language != "go") {
		flags.Usage()
		return errors.New("-schema, -out and -language (nodejs or go) are required")
	}

	spec, err := readSpec(*schemaPath, stdin)
	if err != nil {
		return err
	}
	loader, err := newFileLoader(deps)
	if err != nil {
		return err
	}
	pkg, diags, err := schema.BindSpec(*spec, loader, schema.ValidationOptions{})
	if err != nil {
		return fmt.Errorf("binding the schema: %w", err)
	}
	if len(diags) > 0 {
		writeDiagnostics(stderr, diags)
	}
	if diags.HasErrors() {
		return fmt.Errorf("the schema of %q has %d error(s)", spec.Name, len(diagErrors(diags)))
	}
	// As `pulumi package add` does for a local SDK.
	pkg.SupportPack = true

	var files map[string][]byte
	switch *language {
	case "nodejs":
		files, err = nodejs.GeneratePackage(tool, pkg, nil, nil, true /* localSDK */, loader)
	case "go":
		files, err = gogen.GeneratePackage(tool, pkg, nil)
	}
	if err != nil {
		return fmt.Errorf("generating the %s SDK: %w", *language, err)
	}
	if err := writeFiles(*out, files); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: wrote the %s SDK of %s %s (%d files) to %s\n",
		tool, *language, pkg.Name, versionOf(pkg), len(files), *out)
	return nil
}

func readSpec(path string, stdin io.Reader) (*schema.PackageSpec, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the schema: %w", err)
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("reading the schema %s: %w", path, err)
	}
	return &spec, nil
}

func versionOf(pkg *schema.Package) string {
	if pkg.Version == nil {
		return "(no version)"
	}
	return pkg.Version.String()
}

func diagErrors(diags hcl.Diagnostics) hcl.Diagnostics {
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	return errs
}

func writeDiagnostics(w io.Writer, diags hcl.Diagnostics) {
	for _, d := range diags {
		kind := "warning"
		if d.Severity == hcl.DiagError {
			kind = "error"
		}
		where := ""
		if d.Subject != nil {
			where = d.Subject.String() + ": "
		}
		fmt.Fprintf(w, "%s: %s%s", kind, where, d.Summary)
		if d.Detail != "" {
			fmt.Fprintf(w, "; %s", d.Detail)
		}
		fmt.Fprintln(w)
	}
}

// writeFiles empties dir and writes files (paths relative to dir, slash-separated) into it.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fileLoader serves the packages a schema refers to from schema files given on the command
// line, and refuses any other: the generator never downloads a plugin or a schema.
type fileLoader struct {
	specs map[string]schema.PackageSpec
	refs  map[string]schema.PackageReference
}

func newFileLoader(paths []string) (*fileLoader, error) {
	l := &fileLoader{specs: map[string]schema.PackageSpec{}, refs: map[string]schema.PackageReference{}}
	for _, path := range paths {
		spec, err := readSpec(path, nil)
		if err != nil {
			return nil, err
		}
		l.specs[spec.Name] = *spec
	}
	return l, nil
}

func (l *fileLoader) LoadPackage(name string, version *semver.Version) (*schema.Package, error) {
	return l.LoadPackageV2(context.Background(), &schema.PackageDescriptor{Name: name, Version: version})
}

func (l *fileLoader) LoadPackageV2(ctx context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	ref, err := l.LoadPackageReferenceV2(ctx, d)
	if err != nil {
		return nil, err
	}
	return ref.Definition()
}

func (l *fileLoader) LoadPackageReference(name string, version *semver.Version) (schema.PackageReference, error) {
	return l.LoadPackageReferenceV2(context.Background(), &schema.PackageDescriptor{Name: name, Version: version})
}

func (l *fileLoader) LoadPackageReferenceV2(
	_ context.Context, d *schema.PackageDescriptor,
) (schema.PackageReference, error) {
	if ref, ok := l.refs[d.Name]; ok {
		return checkVersion(ref, d)
	}
	spec, ok := l.specs[d.Name]
	if !ok {
		return nil, fmt.Errorf("the schema refers to package %s %s: give its schema with -dep <file>",
			d.Name, describeVersion(d.Version))
	}
	pkg, err := schema.ImportSpec(spec, nil, l, schema.ValidationOptions{})
	if err != nil {
		return nil, fmt.Errorf("binding the schema of %s: %w", d.Name, err)
	}
	ref := pkg.Reference()
	l.refs[d.Name] = ref
	return checkVersion(ref, d)
}

func checkVersion(ref schema.PackageReference, d *schema.PackageDescriptor) (schema.PackageReference, error) {
	if d.Version != nil && ref.Version() != nil && !d.Version.Equals(*ref.Version()) {
		return nil, fmt.Errorf("the schema refers to package %s %s; the schema given with -dep is %s",
			d.Name, describeVersion(d.Version), describeVersion(ref.Version()))
	}
	return ref, nil
}

func describeVersion(v *semver.Version) string {
	if v == nil {
		return "(any version)"
	}
	return "v" + v.String()
}
