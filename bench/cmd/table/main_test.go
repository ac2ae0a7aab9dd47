package main

import (
	"strings"
	"testing"
)

const sample = `loadavg: 1.50 1.20 0.90 2/300 1234
loadavg: 3.30 1.20 0.90 2/300 1234
goos: linux
goarch: amd64
pkg: github.com/countersign/countersign/bench
cpu: Test CPU
BenchmarkDecide/countersign/read-2         	 1000000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDecide/opa/read-2                 	    1556	     50000 ns/op	   13017 B/op	     181 allocs/op
BenchmarkDecide/cedar/read-2               	   21423	      5000 ns/op	    1136 B/op	      19 allocs/op
BenchmarkDecide/countersign/read-2         	 1000000	       300.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDecide/opa/read-2                 	    1556	     70000 ns/op	   13017 B/op	     181 allocs/op
BenchmarkDecide/cedar/read-2               	   21423	      3000 ns/op	    1136 B/op	      19 allocs/op
BenchmarkDecide/countersign/read-2         	 1000000	       200.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDecide/opa/read-2                 	    1556	     60000 ns/op	   13017 B/op	     181 allocs/op
BenchmarkDecide/cedar/read-2               	   21423	      4000 ns/op	    1136 B/op	      19 allocs/op
BenchmarkDecide/countersign/escalated-2    	 1000000	       400.0 ns/op	      64 B/op	       2 allocs/op
BenchmarkDecide/opa/escalated-2            	    1556	     80000 ns/op	   13017 B/op	     266 allocs/op
BenchmarkDecide/cedar/escalated-2          	   21423	      6000 ns/op	    1136 B/op	      35 allocs/op
BenchmarkDecide/countersign/unknown_path-2 	 1000000	       100.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDecide/opa/unknown_path-2         	 1000000	        70.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkDecide/cedar/unknown_path-2       	 1000000	        70.0 ns/op	       0 B/op	       0 allocs/op
PASS
ok  	github.com/countersign/countersign/bench	12.347s
`

func TestTable(t *testing.T) {
	r, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"median of 3 runs per cell; linux/amd64, Test CPU, GOMAXPROCS 2; 1-minute load average 1.5 to 3.3.",
		"| read | 200 ns | 0 | 60.0 µs | 181 | 300× | 4.0 µs | 19 | 20× |",
		"| escalated | 400 ns | 2 | 80.0 µs | 266 | 200× | 6.0 µs | 35 | 15× |",
		"| unknown_path | 100 ns | 0 | 70 ns | 0 | router only | 70 ns | 0 | router only |",
		"faster than OPA on every case: **met** (lowest 200×, escalated)",
		"reaches Cedar: **missed** on escalated 15×",
		"allocation per countersign decision: **missed** on escalated 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "PASS\n", "no BenchmarkDecide results"},
		{"failed", sample + "--- FAIL: TestAgreement (0.00s)\nFAIL\n", "the benchmark run failed"},
		{"no benchmem", "BenchmarkDecide/countersign/read-2 100 100.0 ns/op\n", "-benchmem"},
		{"missing engine", "BenchmarkDecide/countersign/read-2 100 100.0 ns/op 0 B/op 0 allocs/op\n", "has no opa result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
