package links

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/raceflag"
)

// TestPooledMACMatchesSpec: the pooled HMAC signs and verifies exactly the
// documented MAC input under each key of a rotation, also when many
// goroutines share the pool.
func TestPooledMACMatchesSpec(t *testing.T) {
	spec := func(k Key, l Link) string {
		h := hmac.New(sha256.New, k.Secret)
		h.Write([]byte("countersign-approve-v1\n" + l.ID + "\n" + l.Approver + "\n" + strconv.FormatInt(l.Exp, 10) + "\n" + l.KID))
		return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	}
	old := newSigner(t, keyB)
	s := newSigner(t, keyA, keyB)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				id := "c_" + strconv.Itoa(g) + "_" + strconv.Itoa(i)
				for _, tc := range []struct {
					signer *Signer
					key    Key
				}{{s, keyA}, {old, keyB}} {
					l := tc.signer.Sign(id, "ops", expires.Add(time.Duration(i)*time.Second))
					if want := spec(tc.key, l); l.Sig != want {
						t.Errorf("Sign(%s) under %s: sig %s, want %s", id, tc.key.ID, l.Sig, want)
					}
					if err := s.Verify(l, now); err != nil {
						t.Errorf("Verify(%s) under %s: %v", id, tc.key.ID, err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestSignVerifyAllocs bounds a link's signing (base64's buffer and string) and
// checking (the decoded signature): the key's HMAC comes from the pool.
func TestSignVerifyAllocs(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	s := newSigner(t, keyA, keyB)
	l := s.Sign("c_1", "ops", expires)
	if n := testing.AllocsPerRun(100, func() { s.Sign("c_1", "ops", expires) }); n > 2 {
		t.Errorf("Sign: %v allocations, want ≤ 2", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.Verify(l, now); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("Verify: %v allocations, want ≤ 1", n)
	}
}
