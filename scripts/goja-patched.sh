#!/usr/bin/env bash
# Writes DIR/go.mod, a copy of the module's go.mod (and DIR/go.sum) that
# replaces goja with a copy of it under DIR/goja with
# scripts/goja.patch applied, and the MCP SDK with a copy under
# DIR/mcp-go-sdk with scripts/mcp-sdk.patch applied, and prints the path of
# DIR/go.mod.
# make lambdas and sam build (LAMBDA_FLAGS: -modfile) and the AWS path test
# build every bootstrap with it; only the scripts function links goja. (go
# build -overlay cannot replace a file of the module cache, hence the copy.)
#
# Why: goja lists a Go value's methods through reflection
# (reflect.Type.Method in buildMethodsInfo, reflect.Value.Method in
# _getMethod) so that a script can call them. A reachable call of either
# makes the linker keep every exported method of every type that may be
# converted to an interface, in the whole binary: every operation of every
# AWS client, among others. That was 7.7 MB of the scripts function's 27.7
# (linux/arm64, stripped). Code mode hands its scripts plain values only
# (strings, numbers, maps, slices and its own goja.FunctionCall functions),
# so the patch, which shows a script no Go method, changes nothing a script
# can see. It also takes out goja's execution-time profiler (profiler.go),
# which nothing starts: its profile format, github.com/google/pprof/profile,
# compiles a dozen regexps at package init (150 KB of every cold start of
# the scripts function). And it takes out localeCompare's collation
# (golang.org/x/text/collate's tables, 1.4 MB): code mode gives every
# runtime its own localeCompare (shared/script, collate.go), on the local
# stack's unpatched goja as here, so a script orders strings the same on
# both. Nor does it register the typed array and ArrayBuffer globals, which
# code mode's prelude deletes from every runtime anyway (0.26 MB). The
# patch names the lines it replaces: when a goja
# upgrade moves them, patch fails and so does the build, rather than
# linking goja whole.
#
# The MCP SDK's patch writes its pagination cursors ("uid:" and the last
# item's name, in base64) without encoding/gob, whose package
# initialisation was the largest of the scripts function's cold start
# (0.21 ms, 369 allocations) and which was linked for nothing else (0.26 MB
# of the bootstrap). A cursor stays opaque to clients; one the server did
# not write is refused, as before. It also decodes with
# github.com/go-json-experiment/json (encoding/json's semantics, with object
# members matched by their exact names only, as it asked of segmentio's
# decoder), which every function links already, rather than linking
# github.com/segmentio/encoding too (0.13 MB of the scripts function).
#
#   scripts/goja-patched.sh DIR
set -euo pipefail
GO=${GO:-go}
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$(cd "$here/.." && pwd)
src=$(cd "$root" && "$GO" list -m -f '{{.Dir}}' github.com/dop251/goja)
if [ -z "$src" ] || [ ! -f "$src/object_goreflect.go" ]; then
  echo "goja-patched: goja's source is not in the module cache (go mod download github.com/dop251/goja)" >&2
  exit 1
fi
if ! command -v patch > /dev/null; then
  echo "goja-patched: the patch tool is missing (apt-get install patch, or your system's package)" >&2
  exit 1
fi
rm -rf "$dir/goja"
cp -R "$src" "$dir/goja"
chmod -R u+w "$dir/goja"
if ! patch --quiet --forward --no-backup-if-mismatch -r - -d "$dir/goja" -p1 < "$here/goja.patch" >&2; then
  echo "goja-patched: scripts/goja.patch does not apply to $src (goja was upgraded?): update the patch" >&2
  exit 1
fi
mcp=$(cd "$root" && "$GO" list -m -f '{{.Dir}}' github.com/modelcontextprotocol/go-sdk)
if [ -z "$mcp" ] || [ ! -f "$mcp/mcp/server.go" ]; then
  echo "goja-patched: the MCP SDK's source is not in the module cache (go mod download github.com/modelcontextprotocol/go-sdk)" >&2
  exit 1
fi
rm -rf "$dir/mcp-go-sdk"
cp -R "$mcp" "$dir/mcp-go-sdk"
chmod -R u+w "$dir/mcp-go-sdk"
if ! patch --quiet --forward --no-backup-if-mismatch -r - -d "$dir/mcp-go-sdk" -p1 < "$here/mcp-sdk.patch" >&2; then
  echo "goja-patched: scripts/mcp-sdk.patch does not apply to $mcp (the MCP SDK was upgraded?): update the patch" >&2
  exit 1
fi
cp "$root/go.sum" "$dir/go.sum"
{
  cat "$root/go.mod"
  echo
  echo "replace github.com/dop251/goja => $dir/goja"
  echo "replace github.com/modelcontextprotocol/go-sdk => $dir/mcp-go-sdk"
} > "$dir/go.mod"
echo "$dir/go.mod"
