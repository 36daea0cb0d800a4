"""What the package's schema says of the package itself, for a registry and for the SDKs generated
from it: its description, keywords, licence, publisher and home, and the names of those SDKs.

The Python SDK's component provider writes none of it: its schema has a name, a version, a display
name equal to the name, the types and `language` options it sets itself
(pulumi/provider/experimental/schema.py, `generate_schema` and `PackageSpec`), and
`component_provider_host` takes only the components, a name, a namespace and a version
(experimental/host.py). gpu_nodes/package/provider.py adds this module's `PACKAGE_METADATA` and
`LANGUAGES` to the inferred schema (`describe_package`).
"""

from __future__ import annotations

import importlib.metadata
from typing import Any
from urllib.parse import urlsplit

# Where the project lives. It has no public repository yet, so this is a placeholder under
# example.com, a name reserved for examples (RFC 2606) that no reader takes for a real address.
# It is the one place to change once the repository is public: the schema's homepage and
# repository and the Go SDK's import path follow it.
REPOSITORY = "https://example.com/gpu-nodes"

# pyproject.toml's description, licence and keywords, as the installed distribution has them (its
# metadata, read as gpu_nodes/package/provider.py reads the version): one place for both indexes.
_DISTRIBUTION = importlib.metadata.metadata("gpu-nodes")
DESCRIPTION: str = _DISTRIBUTION["Summary"]
# The keywords a Pulumi registry files a component package under, before the distribution's own.
REGISTRY_KEYWORDS = ["kind/component", "category/infrastructure"]

PACKAGE_METADATA: dict[str, Any] = {
    "displayName": "GPU Nodes",
    "description": DESCRIPTION,
    "keywords": [*REGISTRY_KEYWORDS, *_DISTRIBUTION["Keywords"].split(",")],
    "homepage": REPOSITORY,
    "repository": REPOSITORY,
    "license": _DISTRIBUTION["License-Expression"],
    "publisher": "gpu-nodes",
}

# The Go SDK's import path, where Pulumi's Go generator puts a package of this repository when
# `pulumi package add` generates it (pkg/codegen/go/gen.go, ExtractModulePath and
# ExtractImportBasePath: `<repository's host and path>/sdk/go/<package>`), written out so that
# `pulumi package gen-sdk` gives the same path. Its module is the path without the last element.
GO_IMPORT_BASE_PATH = f"{urlsplit(REPOSITORY).netloc}{urlsplit(REPOSITORY).path}/sdk/go/gpunodes"
GO_MODULE_PATH = GO_IMPORT_BASE_PATH.rsplit("/", 1)[0]
# An npm name of the project's own scope: left unset, Node.js's generator would name the SDK
# `@pulumi/gpu-nodes`, in Pulumi's own scope (pkg/codegen/nodejs/gen.go, genNPMPackageMetadata).
NPM_PACKAGE = "@gpu-nodes/gpu-nodes"
# A Python SDK of the schema, were one generated; left unset it would be `pulumi_gpu_nodes`
# (pkg/codegen/python/gen.go, PyPack). A Python program imports `gpu_nodes` itself and needs none.
PYTHON_PACKAGE = "gpu_nodes_sdk"

# Each language's options, merged into those the component provider sets (`respectSchemaVersion`).
LANGUAGES: dict[str, dict[str, Any]] = {
    "nodejs": {"packageName": NPM_PACKAGE, "packageDescription": DESCRIPTION},
    "go": {"importBasePath": GO_IMPORT_BASE_PATH},
    "python": {"packageName": PYTHON_PACKAGE},
}
