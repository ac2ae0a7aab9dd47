package stack

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestOperatorListingsPage: the operator routes page through the
// listings with a cursor (every confirmation once, newest first, a page
// at most the limit), filter by status, and refuse a bad cursor, a cursor
// of another listing or filter, a bad limit or an unknown parameter with
// 400 invalid_request. Non-operators get 403 (the routes check the role).
func TestOperatorListingsPage(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	var ids []string
	for range 3 {
		r := h.call("cs_test_ask", deleteContact12)
		expect(t, r, http.StatusAccepted, "")
		ids = append(ids, r.str("confirmation.id"))
	}
	expect(t, h.post(h.approvalLink(ids[0]), "approve", nil, "application/json"), http.StatusOK, "")

	get := func(path string) result { return h.do(http.MethodGet, path, "cs_test_op", nil, nil) }
	list := func(query string) (got []string, next string) {
		t.Helper()
		r := get("/v1/operator/confirmations?" + query)
		expect(t, r, http.StatusOK, "")
		for _, c := range r.get("confirmations").([]any) {
			got = append(got, c.(map[string]any)["id"].(string))
		}
		next, _ = r.get("next_cursor").(string)
		return got, next
	}
	var seen []string
	query := "limit=1"
	for range 10 {
		got, next := list(query)
		if len(got) > 1 {
			t.Fatalf("a page of %d with limit 1", len(got))
		}
		seen = append(seen, got...)
		if next == "" {
			break
		}
		query = "limit=1&cursor=" + url.QueryEscape(next)
	}
	if len(seen) != 3 || seen[0] != ids[2] || seen[2] != ids[0] {
		t.Errorf("paged through %v, want %v newest first", seen, ids)
	}
	pending, _ := list("status=pending")
	if len(pending) != 2 {
		t.Errorf("pending: %v, want the two not approved", pending)
	}
	approved, _ := list("status=approved&order=oldest")
	if len(approved) != 1 || approved[0] != ids[0] {
		t.Errorf("approved: %v, want %s", approved, ids[0])
	}

	_, next := list("limit=1")
	for name, path := range map[string]string{
		"garbage cursor":               "/v1/operator/confirmations?cursor=abc",
		"another filter's cursor":      "/v1/operator/confirmations?status=pending&cursor=" + url.QueryEscape(next),
		"another listing's cursor":     "/v1/operator/reviews?cursor=" + url.QueryEscape(next),
		"credentials with that cursor": "/v1/operator/credentials?cursor=" + url.QueryEscape(next),
		"limit 0":                      "/v1/operator/confirmations?limit=0",
		"limit 101":                    "/v1/operator/credentials?limit=101",
		"unknown parameter":            "/v1/operator/confirmations?page=2",
		"unknown status":               "/v1/operator/confirmations?status=maybe",
		"status on credentials":        "/v1/operator/credentials?status=pending",
		"a parameter twice":            "/v1/operator/confirmations?limit=1&limit=2",
	} {
		if r := get(path); r.status != http.StatusBadRequest || r.str("code") != "invalid_request" {
			t.Errorf("%s: %d %s, want 400 invalid_request", name, r.status, r.body)
		}
	}

	var creds []string
	query = "limit=2"
	for range 10 {
		r := get("/v1/operator/credentials?" + query)
		expect(t, r, http.StatusOK, "")
		for _, c := range r.get("credentials").([]any) {
			m := c.(map[string]any)
			if _, ok := m["key_hash"]; ok {
				t.Fatalf("a credential's key hash listed: %v", m)
			}
			creds = append(creds, m["id"].(string))
		}
		next, _ := r.get("next_cursor").(string)
		if next == "" {
			break
		}
		query = "limit=2&cursor=" + url.QueryEscape(next)
	}
	var configured []struct{ ID string }
	if err := json.Unmarshal([]byte(testCredentials), &configured); err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(configured))
	for i, c := range configured {
		want[i] = c.ID
	}
	slices.Sort(want)
	if !slices.Equal(creds, want) {
		t.Errorf("credentials %v, want the configured ones in id order %v", creds, want)
	}
	for _, path := range []string{"/v1/operator/confirmations", "/v1/operator/credentials"} {
		if r := h.do(http.MethodGet, path, "cs_test_ask", nil, nil); r.status != http.StatusForbidden {
			t.Errorf("%s with an agent's key: %d, want 403", path, r.status)
		}
	}
}
