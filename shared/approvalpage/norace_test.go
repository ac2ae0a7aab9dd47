//go:build !race

package approvalpage

// raceSlowdown scales the time limits of the bounded-rendering tests (see
// race_test.go).
const raceSlowdown = 1
