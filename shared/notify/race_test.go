//go:build race

package notify

// raceSlowdown scales the time limits of the bounded-rendering tests: the
// race detector makes every memory access many times slower.
const raceSlowdown = 20
