package calls

import (
	"testing"
	"time"
)

func TestRateLimiter(t *testing.T) {
	var r rateLimiter
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if ok, _ := r.allow("a", 3, t0); !ok {
			t.Fatalf("call %d refused", i)
		}
	}
	ok, retry := r.allow("a", 3, t0)
	if ok || retry != 20 {
		t.Fatalf("4th call: ok %v retry %d, want refused, retry 20 s", ok, retry)
	}
	if ok, _ := r.allow("b", 3, t0); !ok {
		t.Fatal("another credential shares the bucket")
	}
	if ok, _ := r.allow("a", 3, t0.Add(19*time.Second)); ok {
		t.Fatal("a token came back early")
	}
	if ok, _ := r.allow("a", 3, t0.Add(20*time.Second)); !ok {
		t.Fatal("no token after 20 s")
	}
	// Idle buckets are swept once they would be full again.
	r.allow("c", 3, t0.Add(5*time.Minute))
	if _, kept := r.buckets["b"]; kept {
		t.Error("an idle, refilled bucket was kept")
	}
}
