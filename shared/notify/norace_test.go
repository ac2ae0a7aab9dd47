//go:build !race

package notify

// raceSlowdown scales the time limits of the bounded-rendering tests (see
// race_test.go).
const raceSlowdown = 1
