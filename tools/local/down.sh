#!/usr/bin/env bash
# Stops the local cluster and the fake machines. Stack state under .state/pulumi is kept;
# after the next local-up, `pulumi refresh` reconciles it with the new cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/fakehost/down.sh
tools/cluster/down.sh
