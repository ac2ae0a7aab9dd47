//go:build race

package raceflag

// Enabled reports whether the race detector is on.
const Enabled = true
