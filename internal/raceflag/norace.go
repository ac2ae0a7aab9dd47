//go:build !race

// Package raceflag tells tests whether the race detector is on: it changes
// what allocates (more values escape, sync.Pool drops items at random), so
// tests that bound allocations skip under it.
package raceflag

// Enabled reports whether the race detector is on.
const Enabled = false
