package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// Issue 15 finding 11, over the real routes: denials of a 100 KB id each
// store a bounded record (512 bytes of the path, with its length and
// SHA-256), and 100 identical ones within the window are the first record
// and one summary counting the 99 more; the trail verifies.
func TestAuditDenialsAreBoundedAndCounted(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	huge := strings.Repeat("9", 100_000)
	for range 100 {
		expect(t, h.do(http.MethodDelete, "/v1/rest/crm/accounts/"+huge, "cs_test_run", nil, nil), http.StatusForbidden, "blocked")
	}
	for i := range 10 {
		expect(t, h.do(http.MethodDelete, fmt.Sprintf("/v1/rest/crm/accounts/%d%s", i, huge), "cs_test_run", nil, nil), http.StatusForbidden, "blocked")
	}
	if n := len(h.upstream.Requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
	h.stop() // writes the open window's count

	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	recs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.CallsChainOf("runner")})
	if err != nil {
		t.Fatal(err)
	}
	size, total := 0, int64(0)
	var summary *countersign.AuditRecord
	for _, r := range recs {
		if r.Count > 0 {
			summary = r
		}
		b, _ := json.Marshal(r)
		size += len(b)
		total += max(r.Count, 1)
		if len(r.Path) > audit.MaxPath || r.PathBytes < 100_000 || r.PathSHA256 == "" || r.TTL == 0 || r.Action != "call.denied" {
			t.Fatalf("record %d: path %d bytes of %d, ttl %d, action %s", r.Seq, len(r.Path), r.PathBytes, r.TTL, r.Action)
		}
	}
	if len(recs) != 12 || summary == nil || summary.Count != 99 || summary.First != 1 || total != 110 {
		t.Fatalf("%d records (summary %+v), %d denials in all; want 12: the first, 10 others, and a summary of 99 more after record 1", len(recs), summary, total)
	}
	if size > 12*2048 {
		t.Fatalf("110 denials of a 100 KB id take %d bytes of the trail", size)
	}
	if kept, _ := st.ListAudit(ctx, countersign.AuditQuery{Chain: audit.ChainOf("runner")}); len(kept) != 0 {
		t.Fatalf("denials on the chain that stays: %d records", len(kept))
	}
	rep, err := audit.Verify(ctx, st)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep.Breaks(), err)
	}
}
