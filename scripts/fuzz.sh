#!/usr/bin/env bash
# Runs every fuzz target of the repository for a bounded time each.
#
#   scripts/fuzz.sh [GO]                 each target for FUZZTIME (default 4s)
#   FUZZTIME=1m scripts/fuzz.sh          longer, to look for new failures
#   FUZZ_MATCH=callbody scripts/fuzz.sh  only targets whose package or name contains it
#   FUZZPARALLEL=2                       fuzzing workers per target (default 2: the
#                                        machine has two cores)
#
# go test -fuzz runs one target per invocation, so each target gets its own run,
# one after the other. The seeds under each package's testdata/fuzz/ run first
# (they also run as plain tests in go test). New inputs the fuzzer finds go to
# the Go build cache, not the repository; minimising each is capped at 50
# executions, or a slow target would spend its time minimising. A failing input
# is written to <package>/testdata/fuzz/<Target>/ by go test: keep it as a
# regression seed once fixed. The script runs every target, then fails if any did.
#
# Go 1.26's fuzz coordinator can fail a target at the end of -fuzztime with a bare
# "context deadline exceeded" and no failing input (golang/go#75804, fixed in Go
# 1.27): the script runs such a target once more, and only warns if it happens again.
set -euo pipefail
GO=${1:-go}
FUZZTIME=${FUZZTIME:-4s}
FUZZPARALLEL=${FUZZPARALLEL:-2}
FUZZ_MATCH=${FUZZ_MATCH:-}
cd "$(dirname "$0")/.."

# "./package Target" for every func FuzzXxx in a _test.go file.
targets=$(grep -rl --include='*_test.go' '^func Fuzz' shared infra functions 2>/dev/null | sort |
  while read -r f; do
    grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |./$(dirname "$f") |"
  done)
if [ -n "$FUZZ_MATCH" ]; then
  targets=$(printf '%s\n' "$targets" | grep -- "$FUZZ_MATCH" || true)
fi
if [ -z "$targets" ]; then
  echo "fuzz: no targets" >&2
  exit 1
fi

start=$SECONDS
failed=()
n=0
flaked=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run PKG TARGET: one bounded fuzzing run; prints ok, flake or fail.
run() {
  if "$GO" test -run '^$' -fuzz "^${2}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime 50x \
    -parallel "$FUZZPARALLEL" "$1" >"$log" 2>&1; then
    echo ok
  elif grep -q 'Failing input written to' "$log" || ! grep -qx '    context deadline exceeded' "$log"; then
    echo fail
  else
    echo flake # golang/go#75804: the deadline leaked, nothing was found
  fi
}

while read -r pkg target; do
  n=$((n + 1))
  t0=$SECONDS
  result=$(run "$pkg" "$target")
  if [ "$result" = flake ]; then
    result=$(run "$pkg" "$target")
  fi
  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 || true)
  case $result in
  ok)
    printf 'ok    %-32s %-22s %3ds  %s\n' "$pkg" "$target" $((SECONDS - t0)) "${execs:-}"
    ;;
  flake)
    printf 'warn  %-32s %-22s %3ds  context deadline exceeded twice, no failing input (golang/go#75804)\n' \
      "$pkg" "$target" $((SECONDS - t0))
    flaked+=("$pkg $target")
    ;;
  *)
    printf 'FAIL  %-32s %-22s %3ds\n' "$pkg" "$target" $((SECONDS - t0))
    grep -v '^fuzz: elapsed' "$log" | sed 's/^/      /' | head -40
    failed+=("$pkg $target")
    ;;
  esac
done <<<"$targets"

echo "fuzz: $n targets, ${FUZZTIME} each, $((SECONDS - start))s in all${flaked:+, ${#flaked[@]} warned}"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
