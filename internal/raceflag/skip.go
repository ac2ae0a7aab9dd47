package raceflag

import "testing"

// SkipAllocationBound skips a test that bounds allocations when the race
// detector is on, naming what the test needs: a build without -race. make
// test's allocs stage runs these tests without it, so a bound is never left
// unchecked by the race stage's skip.
func SkipAllocationBound(tb testing.TB) {
	tb.Helper()
	if Enabled {
		tb.Skip("needs a build without -race (the race detector changes what allocates and drops sync.Pool items); make test's allocs stage runs it")
	}
}
