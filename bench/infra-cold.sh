#!/usr/bin/env bash
# Cold provisioning: every cache empty (binaries, Go module + build caches, pip cache), so each
# binary is downloaded from the registries and compiled. Takes ~10 minutes on 2 cores.
# Usage: bash bench/infra-cold.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
export DO_CACHE_DIR="$scratch/do-cache" GOMODCACHE="$scratch/gomod" GOCACHE="$scratch/gobuild" PIP_CACHE_DIR="$scratch/pip"
export PATH=$(echo "$PATH" | tr ':' '\n' | grep -v durable-operators | paste -sd:)
start=$(date +%s)
npx tsx src/cli/main.ts infra provision
end=$(date +%s)
echo "cold provisioning: $((end - start)) s ($(nproc) cores)"
