package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/oauth"
)

// pendingCall creates a confirmation through the gateway, attaches the task
// token as the notify task would, and returns it with a signed link.
func (e *env) pendingCall(tb testing.TB) (*countersign.Confirmation, links.Link) {
	tb.Helper()
	r := invoke(tb, e.gateway, loadEvent(tb, "calls-delete-contact.json"))
	expect(tb, r, 202, "")
	id := get(r.json, "confirmation", "id").(string)
	if _, ok, err := e.svc.AttachToken(e.ctx, id, "tok:"+id); err != nil || !ok {
		tb.Fatalf("attach token: %v %v", ok, err)
	}
	c := e.stored(tb, id)
	return c, e.signer.Sign(id, "ops", c.ExpiresAt)
}

// approveEvent builds the API Gateway event of a request to /approve/<id>.
func approveEvent(method, id, query, body string, headers map[string]string) Request {
	h := map[string]string{"host": "gw.example.test", "user-agent": "Mozilla/5.0"}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	path := "/approve/" + url.PathEscape(id)
	return Request{
		Version: "2.0", RouteKey: "$default", RawPath: path, RawQueryString: query, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.9", Protocol: "HTTP/1.1"},
		},
	}
}

func form(l links.Link, fields ...string) string {
	v := l.Query()
	for i := 0; i+1 < len(fields); i += 2 {
		v.Add(fields[i], fields[i+1])
	}
	return v.Encode()
}

var formHeaders = map[string]string{"content-type": "application/x-www-form-urlencoded"}

func wantPageHeaders(tb testing.TB, r response) {
	tb.Helper()
	csp := r.Headers["Content-Security-Policy"]
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		tb.Errorf("Content-Security-Policy %q", csp)
	}
	if r.Headers["Referrer-Policy"] != "no-referrer" {
		tb.Errorf("Referrer-Policy %q, want no-referrer", r.Headers["Referrer-Policy"])
	}
	if !strings.HasPrefix(r.Headers["Content-Type"], "text/html") {
		tb.Errorf("Content-Type %q", r.Headers["Content-Type"])
	}
}

func TestApproverShow(t *testing.T) {
	e := newEnv(t)
	c, l := e.pendingCall(t)
	tests := []struct {
		name     string
		method   string
		query    string
		status   int
		wantBody []string
	}{
		{name: "GET renders the page", method: "GET", query: l.Query().Encode(), status: 200,
			wantBody: []string{"Approve this operation?", "DELETE", "/contacts/12", "Test Co", "#0f766e", "Approve", "Reject all", `name="decision"`}},
		{name: "HEAD has the status and no body", method: "HEAD", query: l.Query().Encode(), status: 200},
		{name: "GET with a tampered signature", method: "GET", status: 403, wantBody: []string{"This link is not valid"},
			query: func() string { q := l.Query(); q.Set("sig", strings.Repeat("A", 43)); return q.Encode() }()},
		{name: "GET with a changed expiry", method: "GET", status: 403,
			query: func() string { q := l.Query(); q.Set("exp", "9999999999"); return q.Encode() }()},
		{name: "GET with another approver's name", method: "GET", status: 403,
			query: func() string { q := l.Query(); q.Set("a", "console"); return q.Encode() }()},
		{name: "GET with no link fields", method: "GET", status: 403},
		{name: "HEAD with a tampered signature", method: "HEAD", status: 403,
			query: func() string { q := l.Query(); q.Set("sig", strings.Repeat("A", 43)); return q.Encode() }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.stored(t, c.ID)
			r := invoke(t, e.approver, approveEvent(tt.method, c.ID, tt.query, "", nil))
			if r.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", r.StatusCode, tt.status, r.Body)
			}
			wantPageHeaders(t, r)
			if tt.method == "HEAD" && r.Body != "" {
				t.Errorf("HEAD body %q, want empty", r.Body)
			}
			for _, s := range tt.wantBody {
				if !strings.Contains(r.Body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if diff := cmp.Diff(before, e.stored(t, c.ID)); diff != "" {
				t.Errorf("%s changed the record (-before +after):\n%s", tt.method, diff)
			}
			if n := len(e.wf.told()); n != 0 {
				t.Errorf("%s told the workflow %d times", tt.method, n)
			}
		})
	}
	t.Run("GET after expiry", func(t *testing.T) {
		e := newEnv(t)
		c, l := e.pendingCall(t)
		e.clock.Advance(600 * time.Second)
		r := invoke(t, e.approver, approveEvent("GET", c.ID, l.Query().Encode(), "", nil))
		if r.StatusCode != 410 || !strings.Contains(r.Body, "This confirmation expired") {
			t.Errorf("status %d, body %s", r.StatusCode, r.Body)
		}
	})
	t.Run("PUT is not allowed", func(t *testing.T) {
		r := invoke(t, e.approver, approveEvent("PUT", c.ID, l.Query().Encode(), "", nil))
		if r.StatusCode != 405 || r.Headers["Allow"] != "GET, HEAD, POST" {
			t.Errorf("status %d, Allow %q", r.StatusCode, r.Headers["Allow"])
		}
	})
}

func TestApproverDecideRefused(t *testing.T) {
	tests := []struct {
		name   string
		body   func(l links.Link) string
		accept string
		status int
		code   string
	}{
		{name: "page form with no operation ticked", status: 400, code: "invalid_request",
			body: func(l links.Link) string { return form(l, "decision", "approve", "selection", "explicit") }},
		{name: "decision maybe", status: 400, code: "invalid_request",
			body: func(l links.Link) string { return form(l, "decision", "maybe") }},
		{name: "no decision", status: 400, code: "invalid_request",
			body: func(l links.Link) string { return form(l) }},
		{name: "op is not an index", status: 400, code: "invalid_request",
			body: func(l links.Link) string { return form(l, "decision", "approve", "op", "first") }},
		{name: "op out of range", status: 400, code: "invalid_request",
			body: func(l links.Link) string { return form(l, "decision", "approve", "op", "1") }},
		{name: "bad signature", status: 403, code: "bad_signature",
			body: func(l links.Link) string {
				q := l.Query()
				q.Set("sig", strings.Repeat("A", 43))
				q.Set("decision", "approve")
				return q.Encode()
			}},
		{name: "link fields only in the query string do not count", status: 403, code: "bad_signature",
			body: func(l links.Link) string { return "decision=approve" }},
	}
	for _, tt := range tests {
		for _, accept := range []string{"application/json", "text/html"} {
			t.Run(tt.name+" "+accept, func(t *testing.T) {
				e := newEnv(t)
				c, l := e.pendingCall(t)
				h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": accept}
				r := invoke(t, e.approver, approveEvent("POST", c.ID, l.Query().Encode(), tt.body(l), h))
				if r.StatusCode != tt.status {
					t.Fatalf("status %d, want %d: %s", r.StatusCode, tt.status, r.Body)
				}
				if accept == "application/json" {
					if r.json["code"] != tt.code {
						t.Errorf("code %v, want %s: %s", r.json["code"], tt.code, r.Body)
					}
				} else {
					wantPageHeaders(t, r)
				}
				if st := e.stored(t, c.ID); st.Status != countersign.StatusPending || st.DecidedAt != nil {
					t.Errorf("record %s decided at %v, want still pending", st.Status, st.DecidedAt)
				}
				if n := len(e.wf.told()); n != 0 {
					t.Errorf("the workflow was told %d times", n)
				}
			})
		}
	}
}

func TestApproverDecide(t *testing.T) {
	t.Run("approve, JSON answer, then already decided", func(t *testing.T) {
		e := newEnv(t)
		c, l := e.pendingCall(t)
		h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
		r := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve", "selection", "explicit", "op", "0"), h))
		expect(t, r, 200, "")
		want := map[string]any{"status": "approved", "operations": []any{map[string]any{
			"connection": "crm", "method": "DELETE", "path": "/contacts/12", "endpoint": "/contacts/{id}", "selected": true, "outcome": nil}}}
		if diff := cmp.Diff(want, r.json); diff != "" {
			t.Errorf("JSON answer (-want +got):\n%s", diff)
		}
		st := e.stored(t, c.ID)
		if st.Status != countersign.StatusApproved || st.DecidedBy != "ops" {
			t.Errorf("stored %s by %q", st.Status, st.DecidedBy)
		}
		if diff := cmp.Diff([]string{"success tok:" + c.ID + ` {"approved":true,"execute":false}`}, e.wf.told()); diff != "" {
			t.Errorf("workflow (-want +got):\n%s", diff)
		}
		again := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "reject"), h))
		expect(t, again, 409, string(fault.ConfirmationDecided))
		if e.stored(t, c.ID).Status != countersign.StatusApproved || len(e.wf.told()) != 1 {
			t.Error("a second decision changed something")
		}
		// The link still shows the decision, without buttons.
		page := invoke(t, e.approver, approveEvent("GET", c.ID, l.Query().Encode(), "", nil))
		if page.StatusCode != 200 || !strings.Contains(page.Body, "Approved") || strings.Contains(page.Body, "Reject all") {
			t.Errorf("decided page: %d %s", page.StatusCode, page.Body)
		}
	})
	t.Run("reject, HTML answer", func(t *testing.T) {
		e := newEnv(t)
		c, l := e.pendingCall(t)
		r := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "reject", "selection", "explicit"), formHeaders))
		if r.StatusCode != 200 || !strings.Contains(r.Body, "Rejected") {
			t.Fatalf("status %d: %s", r.StatusCode, r.Body)
		}
		wantPageHeaders(t, r)
		if st := e.stored(t, c.ID).Status; st != countersign.StatusRejected {
			t.Errorf("stored %s", st)
		}
		if diff := cmp.Diff([]string{"failure tok:" + c.ID + " Rejected"}, e.wf.told()); diff != "" {
			t.Errorf("workflow (-want +got):\n%s", diff)
		}
	})
	t.Run("approve with no op and no selection field approves all", func(t *testing.T) {
		e := newEnv(t)
		c, l := e.pendingCall(t)
		h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
		r := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve"), h))
		expect(t, r, 200, "")
		if st := e.stored(t, c.ID); st.Status != countersign.StatusApproved || !st.Operations[0].Selected {
			t.Errorf("stored %+v", st)
		}
	})
	t.Run("expired link", func(t *testing.T) {
		e := newEnv(t)
		c, l := e.pendingCall(t)
		e.clock.Advance(601 * time.Second)
		h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
		r := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve"), h))
		expect(t, r, 410, string(fault.ConfirmationExpired))
		if len(e.wf.told()) != 0 {
			t.Error("the workflow was told")
		}
	})
}

// headerSignIn is a sign-in for tests: the person is named by the
// X-Test-Subject header; Start sends the browser to /signin.
type headerSignIn struct{}

func (headerSignIn) Person(r *http.Request) (oauth.Person, bool) {
	sub := r.Header.Get("X-Test-Subject")
	if sub == "" {
		return oauth.Person{}, false
	}
	return oauth.Person{Issuer: "https://idp.example.test", Subject: sub, Email: sub + "@example.com", EmailVerified: true,
		Session: r.Header.Get("X-Test-Session")}, true
}

func (headerSignIn) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	http.Redirect(w, r, "/signin?return_to="+url.QueryEscape(returnTo), http.StatusSeeOther)
}

// TestApproverSignInRequiredWithDeploymentProvider: when the deployment
// names an identity provider (Approver.Provider: the template's user pool
// or SignInIssuer) and settings.json gives no approvers.sign_in, sign-in
// is required: the link alone is sent to sign in and its POST refused,
// changing nothing; a person signed in decides and is recorded.
// approvers.sign_in "optional" lets the link alone decide again.
func TestApproverSignInRequiredWithDeploymentProvider(t *testing.T) {
	h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
	t.Run("default required", func(t *testing.T) {
		e := newEnv(t)
		e.approver.Provider, e.approver.SignIn = true, headerSignIn{}
		c, l := e.pendingCall(t)
		page := invoke(t, e.approver, approveEvent("GET", c.ID, l.Query().Encode(), "", nil))
		if page.StatusCode != http.StatusSeeOther || !strings.HasPrefix(page.Headers["Location"], "/signin?") {
			t.Fatalf("GET the link without sign-in: %d %v, want 303 to the sign-in", page.StatusCode, page.Headers)
		}
		r := invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve"), h))
		expect(t, r, http.StatusForbidden, string(fault.Forbidden))
		if st := e.stored(t, c.ID); st.Status != countersign.StatusPending || len(e.wf.told()) != 0 {
			t.Fatalf("a refused POST left %s, told the workflow %v", st.Status, e.wf.told())
		}
		signed := map[string]string{"x-test-subject": "ada", "x-test-session": "s-ada"}
		for k, v := range h {
			signed[k] = v
		}
		tok := pageCSRF(t, e.approver, c.ID, l, signed)
		expect(t, invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve", "csrf", tok), signed)), http.StatusOK, "")
		if st := e.stored(t, c.ID); st.Status != countersign.StatusApproved || st.DecidedByPerson == nil || st.DecidedByPerson.Subject != "ada" {
			t.Fatalf("after ada approved: %s by %+v", st.Status, st.DecidedByPerson)
		}
	})
	t.Run("optional given", func(t *testing.T) {
		e := newEnv(t)
		e.approver.Provider, e.approver.SignIn = true, headerSignIn{}
		e.cfg.Settings.Approvers.SignIn = config.ApproverSignInOptional
		c, l := e.pendingCall(t)
		expect(t, invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve"), h)), http.StatusOK, "")
		if st := e.stored(t, c.ID); st.Status != countersign.StatusApproved || st.DecidedByPerson != nil || st.DecidedBy != "ops" {
			t.Fatalf("after the link alone approved: %s by %q %+v", st.Status, st.DecidedBy, st.DecidedByPerson)
		}
	})
}
