#!/usr/bin/env bash
# Runs every benchmark of the repository and writes one markdown report to
# standard output and to bench/RESULTS.md (make bench):
#
#   1. the in-process benchmarks (shared/policy, shared/canon,
#      shared/store/embedded, infra/local/stack), BENCH_PASSES separate
#      passes of -benchtime BENCH_INPROC_TIME each, medians per benchmark
#      (bench/cmd/medians), with the gateway's cost next to a bare proxy's;
#   2. the hop and the confirmed path (bench/cmd/hop: the demo upstream, a
#      bare reverse proxy and the built local stack each in its own process;
#      then handshakes on the local stack), HOP_ROUNDS and HS_ROUNDS rounds;
#   3. the decision next to OPA and cedar-go (make bench-compare: the
#      agreement test first), BENCH_COUNT passes;
#   4. the gateway's cold start next to an empty handler under the Lambda
#      runtime interface emulator (BenchmarkInit);
#   5. every bootstrap's size (make lambdas).
#
# Bounded: each step runs under timeout (about 6 minutes in all on a 2-core
# machine; the timeouts add up to 10). Every figure is relative to a
# baseline measured in the same run, in interleaved passes or blocks, and
# the 1-minute load average is printed beside each table: on a shared
# machine, rerun when the load is low.
set -euo pipefail
GO=${1:-go}
BENCH_PASSES=${BENCH_PASSES:-6}
BENCH_INPROC_TIME=${BENCH_INPROC_TIME:-300ms}
HOP_ROUNDS=${HOP_ROUNDS:-6}
HS_ROUNDS=${HS_ROUNDS:-4}
cd "$(dirname "$0")/.."

out=bench/RESULTS.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?"; }

echo "building ..." >&2
"$GO" build -o "$work/countersign-local" ./infra/local
(cd bench && "$GO" build -o "$work/hop" ./cmd/hop && "$GO" build -o "$work/medians" ./cmd/medians)
"$GO" test -c -o "$work/tier.test" ./shared/policy
"$GO" test -c -o "$work/canon.test" ./shared/canon
"$GO" test -c -o "$work/embedded.test" ./shared/store/embedded
"$GO" test -c -o "$work/stack.test" ./infra/local/stack
"$GO" test -c -o "$work/script.test" ./shared/script

{
  echo "# countersign benchmarks"
  echo
  echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') at commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') by \`make bench\`."
  echo "Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || echo '?')), $("$GO" version | cut -d' ' -f3-); 1-minute, 5-minute and 15-minute load average at the start: $(loadavg)."
  echo
} > "$work/head.md"

# 1. In-process: separate passes, so a burst of load falls on one sample of
# each benchmark rather than on every sample of a few.
echo "in-process benchmarks: $BENCH_PASSES passes ..." >&2
run_pass() {
  local dir=$1 bin=$2 pattern=$3
  (cd "$dir" && timeout 120 "$work/$bin" -test.run '^$' -test.bench "$pattern" -test.benchmem -test.benchtime "$BENCH_INPROC_TIME")
}
for i in $(seq "$BENCH_PASSES"); do
  echo "loadavg: $(cat /proc/loadavg 2>/dev/null)"
  run_pass shared/policy tier.test .
  run_pass shared/canon canon.test .
  run_pass shared/store/embedded embedded.test .
  run_pass infra/local/stack stack.test 'BenchmarkAutoCall|BenchmarkHandshake'
  run_pass shared/script script.test .
done > "$work/inproc.out"
{
  echo "## In-process benchmarks"
  echo
  echo "\`go test -bench\`, $BENCH_PASSES passes of \`-benchtime $BENCH_INPROC_TIME\`. cpu-ns/op is the whole process's CPU time per call (client, gateway and upstream share it). BenchmarkAutoCall's rows are the same GET of the demo upstream: directly, through a bare \`httputil.ReverseProxy\`, through \`/v1/rest\`, through \`/v1/calls\`; BenchmarkHandshake is one whole confirmation at c=1."
  echo
  "$work/medians" -ratio 'BenchmarkAutoCall/rest=BenchmarkAutoCall/proxy,BenchmarkAutoCall/gateway=BenchmarkAutoCall/proxy,BenchmarkCommit/grouped=BenchmarkCommit/one-commit-each' "$work/inproc.out"
  echo
} > "$work/inproc.md"

# 2. The hop and the confirmed path.
echo "the hop and the confirmed path ..." >&2
{
  echo "## The hop and the confirmed path"
  echo
  timeout 240 "$work/hop" -local "$work/countersign-local" -rounds "$HOP_ROUNDS" -block 1s -hs-rounds "$HS_ROUNDS" -hs-block 2s \
    | sed -e 's/^Machine:/Hop machine:/'
  echo
} > "$work/hop.md"

# 3. The decision next to OPA and cedar-go.
echo "the decision next to OPA and cedar-go ..." >&2
{
  echo "## The decision next to OPA and cedar-go"
  echo
  echo "\`make bench-compare\` (bench/README.md): the agreement test, then the table."
  echo
  timeout 300 make --no-print-directory -s bench-compare GO="$GO" 2>&1 | sed -n '/^BenchmarkDecide, /,$p'
} > "$work/compare.md"

# 4. The gateway's cold start next to an empty aws-lambda-go handler, both
# under the Lambda runtime interface emulator (infra/awstest/initbench_test.go).
echo "cold starts under the Lambda runtime interface emulator ..." >&2
{
  echo "## Cold start"
  echo
  echo "\`go test -bench BenchmarkInit -benchtime 20x ./infra/awstest/\`: 20 cold starts of the gateway's bootstrap and of an empty aws-lambda-go handler built the same way, under the emulator, against in-process fakes of the AWS services."
  echo
  echo '```'
  timeout 300 "$GO" test -run '^$' -bench BenchmarkInit -benchtime 20x ./infra/awstest/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)' || true
  echo '```'
} > "$work/init.md"

# 5. What each bootstrap weighs (make lambdas: linux/arm64, stripped, as sam
# build makes them; it fails past a ceiling, scripts/lambda-sizes.sh).
echo "bootstrap sizes ..." >&2
{
  echo
  echo "## Bootstrap sizes"
  echo
  echo "\`make lambdas\` (linux/arm64, \`-tags lambda.norpc -trimpath -ldflags=\"-s -w\" -gcflags='<pkg>=-l'\` for the AWS SDK and the passkey libraries, NOINLINE in the Makefile); the ceiling is 15 MB, 30 MB for the scripts function (goja, the MCP SDK and OpenTelemetry)."
  echo
  echo '```'
  timeout 300 make --no-print-directory -s lambdas GO="$GO" 2>&1 | sed -n '/^function /,$p'
  echo '```'
} > "$work/sizes.md"

{
  cat "$work/head.md" "$work/inproc.md" "$work/hop.md" "$work/compare.md" "$work/init.md" "$work/sizes.md"
  echo
  echo "Load average at the end: $(loadavg)."
} > "$out"
cat "$out"
