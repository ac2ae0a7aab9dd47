package script

import (
	"testing"
	"time"

	"github.com/dop251/goja"
)

// BenchmarkSandboxBuild: what building one sandbox costs (the prelude and
// the bounded built-ins force most of goja's lazily built built-ins),
// against a bare goja runtime. Runs take sandboxes built ahead (warm).
func BenchmarkSandboxBuild(b *testing.B) {
	b.ReportAllocs()
	var bare, built time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		_ = goja.New()
		t1 := time.Now()
		if _, err := newSandbox(DefaultLimits); err != nil {
			b.Fatal(err)
		}
		bare, built = bare+t1.Sub(t0), built+time.Since(t1)
	}
	b.ReportMetric(float64(built.Nanoseconds())/float64(b.N), "sandbox-ns/op")
	b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(built)/float64(bare), "x-baseline")
}
