package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// TestLoginThrottle: an address is throttled after maxFailures within the
// window and free again after it; failures from many addresses slow every
// sign-in (never refuse one from an address that is not throttled); IPv6
// addresses count by their /64.
func TestLoginThrottle(t *testing.T) {
	var l loginThrottle
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i := range maxFailures {
		if w := l.wait("192.0.2.1", now); w != 0 {
			t.Fatalf("failure %d: wait %d", i, w)
		}
		l.fail("192.0.2.1", now)
	}
	if w := l.wait("192.0.2.1", now); w != 60 {
		t.Fatalf("after %d failures: wait %d, want 60", maxFailures, w)
	}
	if w := l.wait("192.0.2.1", now.Add(failureWindow)); w != 0 {
		t.Fatalf("after the window: wait %d", w)
	}
	for a := range 11 {
		for range maxFailures {
			l.fail(fmt.Sprintf("198.51.100.%d", a), now)
		}
	}
	if w := l.wait("203.0.113.7", now); w != 0 {
		t.Fatalf("a new address waits %d after failures from others", w)
	}
	if d := l.slow(now); d != globalDelay {
		t.Fatalf("past the global budget: slow %v, want %v", d, globalDelay)
	}
	if d := l.slow(now.Add(failureWindow)); d != 0 {
		t.Fatalf("after the window: slow %v", d)
	}
	for range maxFailures {
		l.fail("2001:db8:1:2::1", now)
	}
	if w := l.wait("2001:db8:1:2:ffff::9", now); w == 0 {
		t.Fatal("another address of the same /64 is not throttled")
	}
	if w := l.wait("2001:db8:1:3::1", now); w != 0 {
		t.Fatal("another /64 is throttled")
	}
}

// TestLoginThrottleMemoryIsBounded: a spray of addresses never grows the
// table past maxTrackedAddrs, each holding maxFailures times; addresses
// that stopped counting are forgotten.
func TestLoginThrottleMemoryIsBounded(t *testing.T) {
	var l loginThrottle
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 * maxTrackedAddrs {
		l.fail(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), now.Add(time.Duration(i)*time.Microsecond))
	}
	if n := l.tracked(); n != maxTrackedAddrs {
		t.Fatalf("%d addresses tracked, bound %d", n, maxTrackedAddrs)
	}
	later := now.Add(failureWindow + time.Second)
	l.fail("192.0.2.200", later)
	if n := l.tracked(); n != 1 {
		t.Fatalf("%d addresses tracked once the others' window ended, want 1", n)
	}
	if w := l.wait("192.0.2.200", later); w != 0 {
		t.Fatalf("one failure: wait %d", w)
	}
}
