package awstest

import (
	"net/http"
	"strings"
)

// rememberConnection's DELETE offers approve and remember (2 calls within
// 5 minutes); its GET has a rate rule of 2 calls a day.
const rememberConnection = "remember"

func rememberPolicy(upstream string) map[string]any {
	return map[string]any{
		"base_url": upstream,
		"endpoints": []any{
			map[string]any{"method": "DELETE", "path": "/contacts/{id}", "confirm": true,
				"approval": map[string]any{"remember": map[string]any{"max_minutes": 5, "max_calls": 2}}},
			map[string]any{"method": "GET", "path": "/contacts/{id}",
				"escalate": []any{map[string]any{"rate": map[string]any{"calls": 2, "per_seconds": 86400}, "escalate": "review"}}},
		},
	}
}

// approveAndRemember: the approve function creates the grant (the POST
// goes to it), the gateway function consumes it: the next call runs at
// once under it; GET /v1/grants lists it; the operator function revokes
// it and the next call pauses. The rate rule's third read is escalated,
// counted in the table.
func approveAndRemember(f *flow) {
	id := f.pauseAs(askKey, rememberConnection, "DELETE", "/contacts/701")
	link := f.link(id)
	if st, page := f.page(link); st != http.StatusOK || !strings.Contains(page, "Approve and allow for") {
		f.Fatalf("GET approval page: %d, want the remember offer\n%s", st, page)
	}
	form := link.Query()
	form.Set("decision", "approve")
	form.Set("remember", "5")
	a := f.do(http.MethodPost, link.Path, http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {"application/json"},
	}, form.Encode())
	f.expect("POST approve with remember=5", a, http.StatusOK, "approved")
	g, _ := a.Body["grant"].(map[string]any)
	grant, _ := g["id"].(string)
	if !strings.HasPrefix(grant, "gr_") || g["calls_left"] != float64(2) {
		f.Fatalf("approval with remember: %s", a.Raw)
	}
	r := f.callAs(askKey, rememberConnection, "DELETE", "/contacts/702", "write", "")
	f.expect("the next DELETE, under the grant", r, http.StatusOK, "executed")
	if r.str("grant") != grant {
		f.Fatalf("the call ran without naming grant %s: %s", grant, r.Raw)
	}
	if hits := f.s.Upstream.Hits("DELETE /contacts/702 "); len(hits) != 1 {
		f.Fatalf("upstream got %q, want one DELETE /contacts/702", hits)
	}
	mine := f.do(http.MethodGet, "/v1/grants", http.Header{"Authorization": {"Bearer " + askKey}}, "")
	if mine.Status != http.StatusOK || !strings.Contains(mine.Raw, grant) || !strings.Contains(mine.Raw, `"calls_left":1`) {
		f.Fatalf("GET /v1/grants: %d %s", mine.Status, mine.Raw)
	}
	rv := f.do(http.MethodDelete, "/v1/operator/grants/"+grant, http.Header{"Authorization": {"Bearer " + operatorKey}}, "")
	if rv.Status != http.StatusOK {
		f.Fatalf("DELETE /v1/operator/grants/%s: %d %s", grant, rv.Status, rv.Raw)
	}
	// moto's Step Functions start no second execution of a machine that
	// ran one (see showExecute): a fresh machine for the call that pauses.
	f.s.resetWorkflows(f.ctx)
	f.expect("the next DELETE after revocation", f.callAs(askKey, rememberConnection, "DELETE", "/contacts/703", "write", ""),
		http.StatusAccepted, "confirmation_required")

	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusForbidden} {
		r := f.callAs(askKey, rememberConnection, "GET", "/contacts/704", "read", "")
		if r.Status != want {
			f.Fatalf("read %d under a rate of 2 a day: %d %s", i+1, r.Status, r.Raw)
		}
		if want == http.StatusForbidden && (r.str("code") != "review_required" || r.Body["escalated"] != true) {
			f.Fatalf("the third read: %s, want review_required, escalated", r.Raw)
		}
	}
}
