#!/usr/bin/env bash
# Runs make test's stages one after the other, saying before each what it
# runs and what it may install, and after each how long it took; at the end
# (or at the first failure) a table of every stage that ran.
#
#   scripts/stages.sh [GO]          every stage
#   STAGES="vet unit" scripts/stages.sh   only these, in this order
#
# Stages (docs/testing.md says more about each):
#   vet      gofmt and go vet, go vet of the bench/ module (its own go.mod,
#            so ./... at the root does not reach it: make bench-compare
#            builds only if bench/ does), and staticcheck at a pinned
#            version (staticcheck.conf: unused code, deprecated names, bugs)
#   lambdas  every function's bootstrap for linux/arm64 under bin/, and their
#            sizes (scripts/lambda-sizes.sh fails past a ceiling)
#   asl      the state machines against the ASL schema (npm ci of the pinned
#            asl-validator under infra/asl on first use)
#   mcpclients  npm ci of the pinned MCP clients under infra/mcpclients (the
#            TypeScript SDKs, the conformance suites, Claude Code's CLI, and
#            Node 22 for the conformance suites) on first use; the race stage
#            runs them
#   race     go test -race of every package but infra/awstest, with dynalite on
#            loopback (npm ci of the pinned dynalite under infra/dynalite on first
#            use); TestBrowser runs headless Chromium and, run as root without
#            it, installs it with apt-get
#   allocs   the tests that bound allocations, without -race (the race stage
#            skips those the race detector changes: raceflag.SkipAllocationBound)
#   awstest  the AWS path (infra/awstest), verbose; go install of the pinned
#            Lambda runtime interface emulator into a temporary directory;
#            skips, saying so, without moto_server
#   fuzz     every fuzz target for TEST_FUZZTIME (2s) each
set -uo pipefail
GO=${1:-go}
# staticcheck, pinned: go run fetches this version from the module proxy on
# first use and caches it; it changes nothing in go.mod.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_FUZZTIME=${TEST_FUZZTIME:-2s}
STAGES=${STAGES:-vet lambdas asl mcpclients race allocs awstest fuzz}
cd "$(dirname "$0")/.."

describe() {
  case $1 in
  vet) echo "gofmt, go vet, go vet of the bench/ module (build only), staticcheck (go run of the pinned $STATICCHECK)" ;;
  lambdas) echo "build every Lambda bootstrap for linux/arm64 (bin/), fail if one is over its size ceiling" ;;
  asl) echo "validate statemachines/*.asl.json (installs infra/asl's pinned asl-validator with npm ci on first use)" ;;
  mcpclients) echo "install infra/mcpclients' pinned MCP clients (npm ci on first use: the TypeScript SDKs, the conformance suites, Claude Code's CLI, Node 22 for the suites)" ;;
  race) echo "go test -race, every package but infra/awstest, dynalite on loopback (installs infra/dynalite with npm ci on first use; TestBrowser may apt-get install chromium when run as root)" ;;
  allocs) echo "the tests that bound allocations (testing.AllocsPerRun), without -race: the race stage skips those the race detector changes" ;;
  awstest) echo "the AWS path on moto_server, dynalite and the bootstraps under the Lambda emulator (go install of the emulator; skips without moto_server)" ;;
  fuzz) echo "every fuzz target for $TEST_FUZZTIME" ;;
  *) return 1 ;;
  esac
}

run_stage() {
  case $1 in
  vet) make --no-print-directory vet GO="$GO" && (cd bench && "$GO" vet ./...) && "$GO" run "$STATICCHECK" ./... ;;
  lambdas) make --no-print-directory lambdas GO="$GO" ;;
  asl) ./infra/asl/check.sh ;;
  mcpclients) ./infra/mcpclients/install.sh ;;
  race) ./scripts/test-with-dynalite.sh sh -c "$GO test -race -count=1 \$($GO list ./... | grep -v /infra/awstest)" ;;
  allocs) "$GO" test -count=1 -run 'Alloc' $(grep -rl --include='*_test.go' 'AllocsPerRun' shared infra internal | xargs -n1 dirname | sort -u | sed 's|^|./|' | grep -v /infra/awstest) ;;
  awstest) ./scripts/test-with-dynalite.sh "$GO" test -count=1 -v -timeout 20m ./infra/awstest/ ;;
  fuzz) FUZZTIME=$TEST_FUZZTIME ./scripts/fuzz.sh "$GO" ;;
  esac
}

summary=()
total=$SECONDS
report() {
  echo
  echo "make test: stage    time     result"
  for line in "${summary[@]}"; do echo "make test: $line"; done
  echo "make test: total    $(fmt $((SECONDS - total)))"
}
fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

n=0
count=$(wc -w <<<"$STAGES")
for stage in $STAGES; do
  n=$((n + 1))
  if ! what=$(describe "$stage"); then
    echo "make test: unknown stage $stage (known: vet lambdas asl mcpclients race allocs awstest fuzz)" >&2
    exit 2
  fi
  echo "==> [$n/$count] $stage: $what"
  t0=$SECONDS
  if run_stage "$stage"; then
    took=$((SECONDS - t0))
    echo "<== [$n/$count] $stage ok in $(fmt $took)"
    summary+=("$(printf '%-8s %-8s ok' "$stage" "$(fmt $took)")")
  else
    took=$((SECONDS - t0))
    echo "<== [$n/$count] $stage FAILED after $(fmt $took)"
    summary+=("$(printf '%-8s %-8s FAILED' "$stage" "$(fmt $took)")")
    report
    exit 1
  fi
done
report
