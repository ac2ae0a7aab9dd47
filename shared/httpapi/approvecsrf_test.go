package httpapi_test

import (
	"html"
	"net/http"
	"regexp"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/httpapi"
	"github.com/countersign/countersign/shared/links"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// pageCSRF opens the approval page with headers and returns its form's
// CSRF token.
func pageCSRF(t testing.TB, a *httpapi.Approver, id string, l links.Link, headers map[string]string) string {
	t.Helper()
	page := invoke(t, a, approveEvent("GET", id, l.Query().Encode(), "", headers))
	m := csrfField.FindStringSubmatch(page.Body)
	if page.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET the page signed in: %d, no csrf field:\n%s", page.StatusCode, page.Body)
	}
	return html.UnescapeString(m[1])
}

// TestApprovalCSRF (finding 8): a POST that rides a signed-in approver's
// session needs the page's CSRF token, bound to that session and this
// confirmation, and no POST from another site decides; a POST with the
// link alone and no session (the JSON client of docs/api.md) needs no token.
func TestApprovalCSRF(t *testing.T) {
	jsonForm := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
	with := func(extra ...string) map[string]string {
		m := map[string]string{}
		for k, v := range jsonForm {
			m[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	ada := with("x-test-subject", "ada", "x-test-session", "s-ada")
	tests := []struct {
		name    string
		headers map[string]string
		token   func(e *env, id string, l links.Link) string
		status  int
	}{
		{"signed in, the page's token", ada, func(e *env, id string, l links.Link) string { return pageCSRF(t, e.approver, id, l, ada) }, 200},
		{"signed in, no token", ada, func(*env, string, links.Link) string { return "" }, 403},
		{"signed in, another session's token", ada, func(e *env, id string, l links.Link) string {
			return pageCSRF(t, e.approver, id, l, with("x-test-subject", "ada", "x-test-session", "s-other"))
		}, 403},
		{"signed in, a token for another confirmation", ada, func(e *env, id string, l links.Link) string {
			c2, l2 := e.pendingCall(t)
			return pageCSRF(t, e.approver, c2.ID, l2, ada)
		}, 403},
		{"signed in, the page's token, from another site", with("x-test-subject", "ada", "x-test-session", "s-ada", "origin", "https://evil.example"),
			func(e *env, id string, l links.Link) string { return pageCSRF(t, e.approver, id, l, ada) }, 403},
		{"signed in without a session id", with("x-test-subject", "ada"), func(*env, string, links.Link) string { return "" }, 403},
		{"the link alone, from another site", with("sec-fetch-site", "cross-site"), func(*env, string, links.Link) string { return "" }, 403},
		{"the link alone (curl)", jsonForm, func(*env, string, links.Link) string { return "" }, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.approver.SignIn = headerSignIn{}
			e.cfg.Settings.Approvers.SignIn = config.ApproverSignInOptional
			c, l := e.pendingCall(t)
			r := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve", "csrf", tt.token(e, c.ID, l)), tt.headers))
			if r.StatusCode != tt.status {
				t.Fatalf("%d %s, want %d", r.StatusCode, r.Body, tt.status)
			}
			want := countersign.StatusPending
			if tt.status == 200 {
				want = countersign.StatusApproved
			}
			if st := e.stored(t, c.ID); st.Status != want {
				t.Errorf("stored %s, want %s", st.Status, want)
			}
		})
	}
}
