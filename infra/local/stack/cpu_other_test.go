//go:build !unix

package stack

import "time"

// processCPU is not measured here: the benchmarks report 0 cpu-ns/op.
func processCPU() time.Duration { return 0 }
