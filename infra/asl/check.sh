#!/usr/bin/env bash
# Validates the state machine definitions (statemachines/*.asl.json) with the
# pinned asl-validator: the Amazon States Language schema, transitions
# (every Next/Default target exists, every state is reachable) and JSONPath
# expressions. Installs the pinned npm package first if needed. Exits non-zero
# on the first invalid file or if there is nothing to check.
#
# The files carry ${NotifyFunctionArn}, ${ExecuteFunctionArn} and
# ${FinalizeFunctionArn} in Parameters.FunctionName, filled in by the
# template's DefinitionSubstitutions. asl-validator accepts them as they are
# (Parameters values are free-form strings), so each file is checked twice:
# as written, and with every placeholder replaced by a dummy Lambda ARN, the
# shape Step Functions receives. A placeholder other than those three fails
# the check: template.yaml would leave it unsubstituted.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$dir/../.." && pwd)
validator="$dir/node_modules/.bin/asl-validator"

if [ ! -x "$validator" ]; then
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

shopt -s nullglob
files=("$root"/statemachines/*.asl.json)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-asl: no statemachines/*.asl.json found" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
for f in "${files[@]}"; do
  name=$(basename "$f")
  # Substitute the known placeholders; list any left over.
  node - "$f" "$tmp/$name" <<'JS' || status=1
const fs = require("fs");
const [src, dst] = process.argv.slice(2);
const known = new Set(["NotifyFunctionArn", "ExecuteFunctionArn", "FinalizeFunctionArn"]);
const text = fs.readFileSync(src, "utf8");
const unknown = new Set();
const out = text.replace(/\$\{([^}]*)\}/g, (m, name) => {
  if (!known.has(name)) { unknown.add(name); return m; }
  return `arn:aws:lambda:us-east-1:123456789012:function:countersign-${name.replace(/FunctionArn$/, "").toLowerCase()}`;
});
if (unknown.size > 0) {
  console.error(`✕ ${src}: unknown substitution(s) ${[...unknown].map((n) => "${" + n + "}").join(", ")}; template.yaml's DefinitionSubstitutions map only ${[...known].join(", ")}`);
  process.exit(1);
}
fs.writeFileSync(dst, out);
JS
  if ! "$validator" --json-path "$f"; then
    status=1
  elif [ -f "$tmp/$name" ] && ! out=$("$validator" --json-path "$tmp/$name" 2>&1); then
    echo "✕ $name is invalid once its substitutions are filled in with dummy ARNs:" >&2
    echo "$out" >&2
    status=1
  fi
done
exit $status
