package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

func open(t *testing.T) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(filepath.Join(t.TempDir(), "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Many writers append to the same chain at once: every record lands, in
// one unbroken chain, and the head names the last.
func TestConcurrentAppendsMakeOneChain(t *testing.T) {
	st := open(t)
	tr := &audit.Trail{Store: st}
	const writers, each = 20, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := tr.Append(context.Background(), countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "agent",
					Action: "call.denied", Reason: fmt.Sprintf("writer %d call %d", w, i)})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := audit.Verify(context.Background(), st)
	if err != nil || !rep.OK() || len(rep.Chains) != 1 || rep.Chains[0].Records != writers*each || rep.Chains[0].Head.Seq != writers*each {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

// The configuration load is recorded once per digest, before the first
// record a process appends.
func TestConfigLoadedOncePerDigest(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	for _, digest := range []string{"sha256:a", "sha256:a", "sha256:b"} {
		tr := &audit.Trail{Store: st, ConfigDigest: digest, Now: func() time.Time { return time.Unix(1700000000, 0) }}
		if _, err := tr.Append(ctx, countersign.AuditRecord{Chain: audit.System, Actor: "cli", Action: "key.created"}); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.Config})
	var got []string
	for _, r := range recs {
		got = append(got, r.Subject)
	}
	if strings.Join(got, ",") != "sha256:a,sha256:b" {
		t.Fatalf("config loads %v, want a then b", got)
	}
}

// A nil trail records nothing and does not fail.
func TestNilTrail(t *testing.T) {
	var tr *audit.Trail
	tr.Record(context.Background(), countersign.AuditRecord{Chain: "x", Action: "y"})
	tr.ConfigLoaded(context.Background())
}

// TestInvalidUTF8Verifies: a record whose text is not UTF-8 is stored as
// valid text, so it hashes the same read back from JSON and its chain
// verifies.
func TestInvalidUTF8Verifies(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	tr := &audit.Trail{Store: st}
	if _, err := tr.Append(ctx, countersign.AuditRecord{Chain: "cred:x", Actor: "a\xff", Action: "confirmation.rejected", Reason: "no \xfe way",
		Hook: &countersign.AuditHook{Decision: "deny", Reason: "\xc0\xaf"}}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: "cred:x"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	b, err := json.Marshal(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var back countersign.AuditRecord
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if audit.Hash(&back) != back.Hash || back.Reason != "no \uFFFD way" || back.Hook.Reason != "\uFFFD" {
		t.Fatalf("read back from JSON: %+v", back)
	}
}
