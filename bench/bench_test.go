package bench

import "testing"

// BenchmarkDecide times each engine on each call of the mix:
// BenchmarkDecide/<engine>/<case>. The engines run case by case, so a
// change in the machine's load falls on all three alike.
func BenchmarkDecide(b *testing.B) {
	bn := loadBench(b)
	for _, c := range Mix() {
		cred := bn.Credentials[c.Credential]
		for _, e := range bn.Engines {
			call := c.Call
			if got, err := e.Decide(&call, cred); err != nil || got != c.Want {
				b.Fatalf("%s/%s: got %v (%v), want %v", e.Name(), c.Name, got, err, c.Want)
			}
			b.Run(e.Name()+"/"+c.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					e.Decide(&call, cred)
				}
			})
		}
	}
}
