package script_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/script"
)

// TestMemoryLimitCountsTheScript: the memory limit measures what the
// script holds, not the process: a script well under its 64 MiB succeeds
// while another goroutine of the process takes and holds 200 MiB during
// its run, and scripts that build a huge array, string or list fail with
// the memory error all the same, also when they build it deep in
// callbacks (a limit of 16 MiB, to be quick).
func TestMemoryLimitCountsTheScript(t *testing.T) {
	e := newEnv(t, quick)

	t.Run("another goroutine's memory", func(t *testing.T) {
		var held [][]byte
		done, release := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(200 * time.Millisecond) // the script is running
			for range 200 {
				b := make([]byte, 1<<20)
				for i := 0; i < len(b); i += 4096 {
					b[i] = 1
				}
				held = append(held, b)
				time.Sleep(time.Millisecond)
			}
			<-release
		}()
		// About 4 MiB kept, for two seconds.
		res, err := e.run(t, "runner", `
const keep = [];
for (let i = 0; i < 4096; i++) keep.push('x'.repeat(1000) + i);
const t0 = Date.now();
let n = 0;
while (Date.now() - t0 < 2000) { n += JSON.stringify({n}).length }
keep.length`)
		close(release)
		<-done
		if err != nil {
			t.Fatalf("the script failed while another goroutine held %d MiB: %v", len(held), err)
		}
		if string(res.Value) != "4096" {
			t.Fatalf("result %s", res.Value)
		}
	})

	// The time limit is far away so that only memory can stop these
	// scripts: under -race on a busy machine the deep-callback case has
	// taken more than 20 s to grow past 16 MiB.
	e16 := newEnv(t, script.Limits{Time: 90 * time.Second, Calls: 20, ScriptBytes: 64 << 10, ResultBytes: 64 << 10, Memory: 16 << 20})
	for name, src := range map[string]string{
		"array":                   "const keep = [];\nwhile (true) { keep.push('x'.repeat(100) + keep.length) }",
		"string":                  "let s = 'x'.repeat(1 << 10);\nwhile (true) { s = s + s + '' }",
		"objects":                 "let l = null;\nwhile (true) { l = {next: l, v: 'v' + Math.random()} }",
		"array deep in callbacks": "const keep = [];\nconst f = d => d ? [1].map(() => f(d - 1)) : (() => { while (true) keep.push('y'.repeat(100) + keep.length) })();\nf(12)",
	} {
		t.Run(name, func(t *testing.T) {
			se := e16.failure(t, "runner", src, fault.ScriptLimit)
			// Measured, or, when the script grows faster than a measurement
			// (a busy machine), stopped by the process's guard.
			if !strings.Contains(se.Reason, "the script used more than 16 MiB of memory (scripts.memory_mib)") &&
				!strings.Contains(se.Reason, "the gateway's memory grew by more than 256 MiB while the script ran") {
				t.Fatalf("reason %q", se.Reason)
			}
		})
	}
}
