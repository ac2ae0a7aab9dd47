package stack

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/reqlog"
)

// TestAutoCallAllocations bounds what the gateway allocates on the auto
// path, at the default log level (reqlog's JSON at info, one line a
// call): the allocations of a call through /v1/rest and /v1/calls beyond
// those of the same read made directly (the client's and the upstream's,
// all in this process). A bare reverse proxy adds about 75; BenchmarkAutoCall
// times the same calls.
func TestAutoCallAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	h := newHarness(t, harnessOptions{limits: benchLimits, logger: slog.New(reqlog.NewJSONHandler(io.Discard, nil))})
	client := &http.Client{}
	conn := h.stack.Config.Connections["crm"]
	do := func(method, url string, body []byte) func() {
		return func() {
			var rd io.Reader
			if body != nil {
				rd = bytes.NewReader(body)
			}
			req, _ := http.NewRequest(method, url, rd)
			if url != conn.BaseURL+"/contacts/12" {
				req.Header.Set("Authorization", "Bearer cs_test_ask")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s: status %d", method, url, resp.StatusCode)
			}
		}
	}
	direct := testing.AllocsPerRun(200, do(http.MethodGet, conn.BaseURL+"/contacts/12", nil))
	for _, tt := range []struct {
		route string
		call  func()
		max   float64
	}{
		{"/v1/rest", do(http.MethodGet, h.stack.URL+"/v1/rest/crm/contacts/12", nil), maxRESTAllocs},
		{"/v1/calls", do(http.MethodPost, h.stack.URL+"/v1/calls", []byte(`{"connection":"crm","method":"GET","path":"/contacts/12","intent":"read"}`)), maxCallsAllocs},
	} {
		n := testing.AllocsPerRun(200, tt.call)
		t.Logf("%s: %.0f allocations beyond a direct call's %.0f", tt.route, n-direct, direct)
		if n-direct > tt.max {
			t.Errorf("%s: %.0f allocations beyond a direct call's, want at most %.0f", tt.route, n-direct, tt.max)
		}
	}
}

// The bounds, measured on go1.26 with a margin of about 5: before the
// round that set them (the credential decoded on every call, encoding/json
// writing the answer, http.Client's header copies, the log line's record
// copied) they were 144 and 186; 129 and 142 before the upstream call went
// out on the handler's goroutine (shared/upstream's directTransport), 113
// and 126 after; 100 and 113 once a credential found by its key hash was
// kept until a credential is written (no read transaction a call) and the
// upstream's JSON compacted by jsontext; 94 and 107 once the upstream
// call's context made no timer (shared/upstream's callContext).
const (
	maxRESTAllocs  = 100
	maxCallsAllocs = 113
)
