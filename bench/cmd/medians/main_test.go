package main

import (
	"strings"
	"testing"
)

const sample = `loadavg: 1.50 1.2 1.0 1/100 1
goos: linux
BenchmarkAutoCall/proxy-2   100   150000 ns/op   170000 cpu-ns/op   47000 B/op   157 allocs/op
BenchmarkAutoCall/gateway-2 100   160000 ns/op   180000 cpu-ns/op   23000 B/op   246 allocs/op
BenchmarkHandshake-2          50  5000000 ns/op   8.00 commits/op   8.00 writes/op
PASS
loadavg: 2.50 1.2 1.0 1/100 1
BenchmarkAutoCall/proxy-2   100   170000 ns/op   190000 cpu-ns/op   47000 B/op   157 allocs/op
BenchmarkAutoCall/gateway-2 100   140000 ns/op   160000 cpu-ns/op   23000 B/op   246 allocs/op
BenchmarkAutoCall/gateway-2 100   150000 ns/op   170000 cpu-ns/op   23000 B/op   246 allocs/op
`

func TestTable(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.write(&b, map[string]string{"BenchmarkAutoCall/gateway": "BenchmarkAutoCall/proxy"})
	got := b.String()
	for _, want := range []string{
		"| benchmark | passes | ns/op | cpu-ns/op | B/op | allocs/op | commits/op | writes/op | vs |",
		"| `BenchmarkAutoCall/gateway` | 3 | 150.0 µs | 170.0 µs | 23000 | 246 |  |  | 0.94× ns, 0.94× cpu-ns of `AutoCall/proxy` |",
		"| `BenchmarkHandshake` | 1 | 5.00 ms |  |  |  | 8.00 | 8.00 |  |",
		"load average 1.50 to 2.50",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if _, err := parse(strings.NewReader("--- FAIL: BenchmarkX\n")); err == nil {
		t.Error("a failure was not reported")
	}
	if _, err := parse(strings.NewReader("nothing\n")); err == nil {
		t.Error("no results was not reported")
	}
}
