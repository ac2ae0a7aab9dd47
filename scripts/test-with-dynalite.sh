#!/usr/bin/env bash
# Runs a command with a DynamoDB-compatible server (dynalite, pinned under
# infra/dynalite) listening on 127.0.0.1, and COUNTERSIGN_TEST_DYNAMODB_ENDPOINT
# pointing at it. Installs the pinned npm package first if needed. The server
# is stopped when the command ends, whatever its outcome.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/infra/dynalite"

if [ ! -x "$dir/node_modules/.bin/dynalite" ]; then
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
log=$(mktemp)
"$dir/node_modules/.bin/dynalite" --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"' EXIT

for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "dynalite did not start:"; cat "$log"; exit 1; fi
  sleep 0.1
done
echo "dynalite on 127.0.0.1:$port"
export COUNTERSIGN_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
"$@"
