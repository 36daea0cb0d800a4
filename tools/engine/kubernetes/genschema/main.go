// Command genschema writes the two files the provider's main embeds, the way
// the upstream generate.go does: the package schema with its top-level
// "version" set, and the terraform mapping re-serialised compactly.
//
//	go run ./genschema -version 4.25.0 -src <module>/cmd/pulumi-resource-kubernetes -out <dir>
package main

import (
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

func main() {
	version := flag.String("version", "", "provider version to stamp into the schema")
	src := flag.String("src", "", "folder holding schema.json and terraform-mapping.json")
	out := flag.String("out", ".", "folder to write schema-embed.json and terraform-mapping-embed.json to")
	flag.Parse()
	if *version == "" || *src == "" {
		log.Fatal("usage: genschema -version X.Y.Z -src DIR [-out DIR]")
	}

	raw, err := os.ReadFile(filepath.Join(*src, "schema.json"))
	if err != nil {
		log.Fatal(err)
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		log.Fatalf("cannot deserialize schema: %v", err)
	}
	spec.Version = *version
	versioned, err := json.Marshal(spec)
	if err != nil {
		log.Fatalf("cannot reserialize schema: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "schema-embed.json"), versioned, 0o644); err != nil {
		log.Fatal(err)
	}

	raw, err = os.ReadFile(filepath.Join(*src, "terraform-mapping.json"))
	if err != nil {
		log.Fatal(err)
	}
	var mapping any
	if err := json.Unmarshal(raw, &mapping); err != nil {
		log.Fatalf("cannot deserialize terraform mapping: %v", err)
	}
	compact, err := json.Marshal(mapping)
	if err != nil {
		log.Fatalf("cannot reserialize terraform mapping: %v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, "terraform-mapping-embed.json"), compact, 0o644); err != nil {
		log.Fatal(err)
	}
}
