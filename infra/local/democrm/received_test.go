package democrm_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/infra/local/democrm"
)

// TestReceivedShowsEachWriteOnce drives a delete, its replay with the same
// Idempotency-Key and a read, then reads GET /_received and the log: a
// person sees every request that arrived, in order, with its key, and the
// delete counted as done once.
func TestReceivedShowsEachWriteOnce(t *testing.T) {
	s := democrm.New()
	var log bytes.Buffer
	s.SetLog(&log)
	do(t, s, "DELETE", "/contacts/12", "", "Idempotency-Key", "cf_1:0")
	do(t, s, "DELETE", "/contacts/12", "", "Idempotency-Key", "cf_1:0")
	do(t, s, "GET", "/contacts/3?x=1", "")

	status, _, got := do(t, s, "GET", democrm.ReceivedPath, "")
	if status != http.StatusOK {
		t.Fatalf("GET /_received: %d", status)
	}
	reqs, _ := got["requests"].([]any)
	want := []map[string]any{
		{"method": "DELETE", "path": "/contacts/12", "idempotency_key": "cf_1:0", "replayed": false},
		{"method": "DELETE", "path": "/contacts/12", "idempotency_key": "cf_1:0", "replayed": true},
		{"method": "GET", "path": "/contacts/3", "query": "x=1", "replayed": false},
	}
	if len(reqs) != len(want) {
		t.Fatalf("requests = %v, want %d (the listing itself is not recorded)", reqs, len(want))
	}
	for i, w := range want {
		r := reqs[i].(map[string]any)
		for k, v := range w {
			if r[k] != v {
				t.Errorf("requests[%d].%s = %v, want %v", i, k, r[k], v)
			}
		}
	}
	writes, _ := got["writes"].(map[string]any)
	if len(writes) != 1 || writes["DELETE /contacts/12"] != float64(1) {
		t.Errorf("writes = %v, want the delete once", writes)
	}

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	wantLines := []string{
		"demo CRM received DELETE /contacts/12 (Idempotency-Key: cf_1:0)",
		"demo CRM received DELETE /contacts/12 (Idempotency-Key: cf_1:0), replayed from the idempotency cache: nothing done again",
		"demo CRM received GET /contacts/3?x=1",
	}
	if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), strings.Join(wantLines, "\n"))
	}
}

// TestReceivedRefusesWrites: /_received is read-only and a key that holds a
// control character is logged quoted, so it cannot forge a line.
func TestReceivedRefusesWrites(t *testing.T) {
	s := democrm.New()
	var log bytes.Buffer
	s.SetLog(&log)
	if status, h, _ := do(t, s, "DELETE", democrm.ReceivedPath, ""); status != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" {
		t.Fatalf("DELETE /_received: %d, Allow %q", status, h.Get("Allow"))
	}
	do(t, s, "POST", "/contacts", `{"name":"x"}`, "Idempotency-Key", "k\ndemo CRM received forged")
	if n := strings.Count(log.String(), "\n"); n != 1 || !strings.Contains(log.String(), `"k\ndemo CRM received forged"`) {
		t.Errorf("log = %q, want one line with the key quoted", log.String())
	}
}
