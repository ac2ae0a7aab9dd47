#!/usr/bin/env bash
# Checks the size of every Lambda bootstrap under DIR (make lambdas runs it on
# bin/, linux/arm64 stripped, as sam build makes them): a table of the sizes,
# and a failure naming every bootstrap over its ceiling. A bootstrap's size
# is what its cold start loads and what the linker kept; the ceiling is
# 13 MB (13,000,000 bytes) for each, LAMBDA_MAX_BYTES to change it: the
# largest, approve, is 12.2 MB, the target 15 MB. Except the scripts
# function's, 15 MB, the target (it is 14.9 MB, 14,942,370 bytes): it is
# the one that links the JavaScript engine (goja, built with
# scripts/goja.patch so that its reflection over Go values no longer keeps
# every exported method of every linked type, and without its collation
# tables and typed arrays) and the MCP SDK (scripts/mcp-sdk.patch: no
# encoding/gob, and go-json-experiment's JSON rather than segmentio's), and
# serves code mode's routes alone (httpapi.Gateway.CodeMode), so that it
# links no other route's handler (docs/performance.md, Sizes and cold
# start); LAMBDA_MAX_BYTES_SCRIPTS.
#
#   scripts/lambda-sizes.sh DIR FUNCTION...
set -euo pipefail
dir=$1
shift
max=${LAMBDA_MAX_BYTES:-13000000}
max_scripts=${LAMBDA_MAX_BYTES_SCRIPTS:-15000000}
over=()
printf '%-10s %12s %9s %9s\n' function bytes MB ceiling
for f in "$@"; do
  b="$dir/$f/bootstrap"
  if [ ! -f "$b" ]; then
    echo "lambda-sizes: $b is missing (make lambdas builds it)" >&2
    exit 1
  fi
  size=$(wc -c < "$b")
  limit=$max
  [ "$f" = scripts ] && limit=$max_scripts
  printf '%-10s %12d %9s %9s\n' "$f" "$size" "$(awk -v s="$size" 'BEGIN{printf "%.1f", s/1e6}')" "$(awk -v s="$limit" 'BEGIN{printf "%.1f", s/1e6}')"
  if [ "$size" -gt "$limit" ]; then
    over+=("$f ($size bytes > $limit)")
  fi
done
if [ ${#over[@]} -gt 0 ]; then
  echo "lambda-sizes: over the ceiling: ${over[*]}" >&2
  exit 1
fi
