package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
	"go.etcd.io/bbolt"
)

// clock is a settable time for a trail and for verification.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const day = 24 * time.Hour

// denial is a denied call of agent on its expiring chain, kept a day.
func denial(c *clock, path string) countersign.AuditRecord {
	return countersign.AuditRecord{Chain: audit.CallsChainOf("agent"), Actor: "agent", Credential: "agent", Action: audit.ActionDenied,
		Connection: "crm", Method: "DELETE", Path: path, Outcome: "blocked", Reason: "never: " + path,
		At: c.Now(), TTL: c.Now().Add(day).Unix()}
}

func verifyOK(t *testing.T, st audit.Store, now time.Time) *audit.Report {
	t.Helper()
	rep, err := audit.VerifyAt(context.Background(), st, now)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep.Breaks(), err)
	}
	return rep
}

// Issue 15 finding 11: ten denials of a 100 KB id once added 1 MB to the
// trail. A record now holds at most MaxPath bytes of the path and
// MaxReason of the reason, with the whole one's length and SHA-256.
func TestAuditDenialOfAHugeIDIsBounded(t *testing.T) {
	st := open(t)
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tr := &audit.Trail{Store: st, Now: c.Now}
	path := "/contacts/" + strings.Repeat("9", 100_000)
	for range 10 {
		c.Add(2 * time.Minute) // each its own window
		tr.Record(context.Background(), denial(c, path))
	}
	recs, _ := st.ListAudit(context.Background(), countersign.AuditQuery{Chain: audit.CallsChainOf("agent")})
	if len(recs) != 10 {
		t.Fatalf("%d records, want 10", len(recs))
	}
	sum := sha256.Sum256([]byte(path))
	size := 0
	for _, r := range recs {
		b, _ := json.Marshal(r)
		size += len(b)
		if len(r.Path) > audit.MaxPath || len(r.Reason) > audit.MaxReason || r.PathBytes != len(path) || r.PathSHA256 != hex.EncodeToString(sum[:]) ||
			r.ReasonBytes != len("never: "+path) || !strings.HasPrefix(r.Path, "/contacts/999") {
			t.Fatalf("record %d: path %d bytes (%d, %s), reason %d bytes (%d)", r.Seq, len(r.Path), r.PathBytes, r.PathSHA256, len(r.Reason), r.ReasonBytes)
		}
	}
	if size > 10*4096 {
		t.Fatalf("ten denials take %d bytes", size)
	}
	verifyOK(t, st, c.Now())
}

// Issue 15 finding 11: 100 identical denials within the window are one
// record written at once and one summary with the count of the 99 more
// (the hash chain covers it); a different denial in between is its own
// record and does not break the count.
func TestAuditRepeatedDenialsAreCounted(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tr := &audit.Trail{Store: st, Now: c.Now}
	for i := range 100 {
		c.Add(100 * time.Millisecond)
		tr.Record(ctx, denial(c, "/contacts/all"))
		if i == 50 {
			tr.Record(ctx, denial(c, "/contacts/other"))
		}
	}
	chain := audit.CallsChainOf("agent")
	recs, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if len(recs) != 2 {
		t.Fatalf("%d records before the window ends, want the first of each denial", len(recs))
	}
	c.Add(audit.DefaultWindow)
	tr.Record(ctx, countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "agent", Action: "call.paused"}) // any record flushes a window that ended
	recs, _ = st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if len(recs) != 3 {
		t.Fatalf("%d records after the window, want 3", len(recs))
	}
	summary := recs[2]
	total := int64(0)
	for _, r := range recs {
		if r.Path == "/contacts/all" {
			total += max(r.Count, 1)
		}
	}
	if summary.Path != "/contacts/all" || summary.Count != 99 || summary.First != 1 || summary.Since == nil || !summary.Since.Equal(recs[0].At) ||
		!summary.At.After(*summary.Since) || total != 100 {
		t.Fatalf("summary %+v; total %d, want 99 more after record 1, 100 in all", summary, total)
	}
	verifyOK(t, st, c.Now())

	// Editing the count breaks the chain.
	rec := *summary
	rec.Count = 1
	if err := rawPut(st, &rec); err != nil {
		t.Fatal(err)
	}
	if rep, _ := audit.VerifyAt(ctx, st, c.Now()); rep.OK() {
		t.Fatal("a summary whose count was edited verifies")
	}
}

// Flush writes the counts of windows still open (a stopping process).
func TestAuditFlushWritesOpenWindows(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tr := &audit.Trail{Store: st, Now: c.Now}
	for range 5 {
		tr.Record(ctx, denial(c, "/contacts/all"))
	}
	tr.Flush(ctx)
	recs, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.CallsChainOf("agent")})
	if len(recs) != 2 || recs[1].Count != 4 {
		t.Fatalf("records %+v, want the first and a summary of 4 more", recs)
	}
	verifyOK(t, st, c.Now())
}

// Issue 15 finding 11: denials expire after the retention while what
// stays (the credential's chain) stays; the expiring chain verifies from
// its oldest surviving record, also once every record is gone and it goes
// on from its head; deleting a record that has not expired, or editing a
// survivor, still breaks it.
func TestAuditExpiryKeepsTheTrailVerifiable(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	tr := &audit.Trail{Store: st, Now: c.Now}
	chain := audit.CallsChainOf("agent")
	for i := range 5 {
		c.Add(2 * time.Minute)
		tr.Record(ctx, denial(c, "/contacts/"+string(rune('a'+i))))
		tr.Record(ctx, countersign.AuditRecord{Chain: audit.ChainOf("agent"), Actor: "agent", Action: "call.paused", At: c.Now()})
	}
	c.Add(2 * day)
	for i := range 3 {
		c.Add(2 * time.Minute)
		tr.Record(ctx, denial(c, "/contacts/new"+string(rune('a'+i))))
	}
	n, err := st.Sweep(c.Now())
	if err != nil || n != 5 {
		t.Fatalf("Sweep = %d, %v; want the 5 old denials", n, err)
	}
	rep := verifyOK(t, st, c.Now())
	for _, cr := range rep.Chains {
		switch cr.Chain {
		case chain:
			if cr.From != 6 || cr.Records != 3 {
				t.Fatalf("expiring chain: %+v, want 3 records verified from record 6", cr)
			}
		case audit.ChainOf("agent"):
			if cr.From != 0 || cr.Records != 5 {
				t.Fatalf("kept chain: %+v, want its 5 records from the first", cr)
			}
		}
	}
	// A retention shortened later never lets a newer record expire first.
	shorter := denial(c, "/contacts/short")
	shorter.TTL = c.Now().Add(time.Hour).Unix()
	stored, err := tr.Append(ctx, shorter)
	if err != nil || stored.TTL < stored.PrevTTL {
		t.Fatalf("append with a shorter retention: %+v, %v", stored, err)
	}

	// Tampering with what survives still breaks the chain.
	recs, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain})
	if err := rawDelete(st, chain, recs[1].Seq); err != nil { // not expired
		t.Fatal(err)
	}
	if rep, _ := audit.VerifyAt(ctx, st, c.Now()); rep.OK() || !strings.Contains(rep.Breaks()[0].Problem, "had not expired") {
		t.Fatalf("deleting a record that had not expired: %v", rep.Breaks())
	}
	if err := st.AppendAudit(ctx, recs[1]); err != nil { // put it back
		t.Fatal(err)
	}
	verifyOK(t, st, c.Now())
	edited := *recs[0]
	edited.Path = "/contacts/innocent"
	if err := rawPut(st, &edited); err != nil {
		t.Fatal(err)
	}
	if rep, _ := audit.VerifyAt(ctx, st, c.Now()); rep.OK() {
		t.Fatal("an edited survivor verifies")
	}
	if err := rawPut(st, recs[0]); err != nil {
		t.Fatal(err)
	}

	// Everything expires: the head alone remains, and the chain goes on.
	c.Add(3 * day)
	if _, err := st.Sweep(c.Now()); err != nil {
		t.Fatal(err)
	}
	if recs, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: chain}); len(recs) != 0 {
		t.Fatalf("%d records left", len(recs))
	}
	verifyOK(t, st, c.Now())
	head, _ := st.AuditHead(ctx, chain)
	tr.Record(ctx, denial(c, "/contacts/later"))
	next, _ := st.LastAudit(ctx, chain)
	if next.Seq != head.Seq+1 || next.Prev != head.Hash {
		t.Fatalf("after expiry the chain went on at %d (prev %.8s), want %d after the head %.8s", next.Seq, next.Prev, head.Seq+1, head.Hash)
	}
	verifyOK(t, st, c.Now())
}

// rawPut and rawDelete change the store's file behind its back, as
// someone with write access to it could.
func rawPut(st *embedded.Store, r *countersign.AuditRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return st.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("store_audit")).Put(fmt.Appendf(nil, "%s\x00%020d", r.Chain, r.Seq), b)
	})
}

func rawDelete(st *embedded.Store, chain string, seq int64) error {
	return st.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("store_audit")).Delete(fmt.Appendf(nil, "%s\x00%020d", chain, seq))
	})
}
