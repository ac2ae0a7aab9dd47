#!/usr/bin/env bash
# Instructions per operation of a Go benchmark, counted by valgrind's
# cachegrind: a figure the machine's load does not move, for comparing two
# builds of a CPU-bound benchmark on a shared machine (wall time there
# moved by 2x between passes; instruction counts by under 0.5%).
#
#   bench/instructions.sh TESTBINARY BENCHMARK [N]
#
#   go test -c -o /tmp/policy.test ./shared/policy
#   bench/instructions.sh /tmp/policy.test 'BenchmarkEvaluate/auto_GET$'
#
# The benchmark runs N/5 and N/5+N times (-test.benchtime Nx, default N
# 100000), and the difference of the two totals over N is printed, so the
# program's start and the benchmark's setup cancel out. Run it from the
# directory the benchmark reads its files from (bench/ for BenchmarkDecide).
# One goroutine, no GC (an allocating benchmark's heap grows by N times its
# B/op) and no asynchronous preemption (callgrind and cachegrind mishandle
# its signals). Counts ignore what the instructions wait for (cache misses,
# allocation's effect on later work), so they say where the work went, not
# how long it took: time the result too, interleaved, as bench/README.md says.
set -euo pipefail
bin=$1
name=$2
n=${3:-100000}
count() {
  GODEBUG=asyncpreemptoff=1 GOGC=off GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no \
    --cachegrind-out-file=/dev/null "$bin" -test.run '^$' -test.bench "$name" -test.benchtime "${1}x" 2>&1 |
    awk '/I *refs/ {gsub(",", "", $4); print $4}'
}
a=$(count $((n / 5)))
b=$(count $((n / 5 + n)))
echo "$name $(((b - a) / n)) instructions/op"
