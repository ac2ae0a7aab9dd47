package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/views"
)

// unverifiedSignIn signs in the person of X-Test-Subject with an e-mail
// the provider did not verify.
type unverifiedSignIn struct{}

func (unverifiedSignIn) Person(r *http.Request) (oauth.Person, bool) {
	sub := r.Header.Get("X-Test-Subject")
	return oauth.Person{Issuer: "https://idp.example.test", Subject: sub, Email: "owner@example.com", Name: "Someone", Session: r.Header.Get("X-Test-Session")}, sub != ""
}

func (unverifiedSignIn) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	http.Redirect(w, r, "/signin?return_to="+url.QueryEscape(returnTo), http.StatusSeeOther)
}

// TestUnverifiedEmailIsNotRecorded: a person whose e-mail the provider
// did not verify decides as their subject; the e-mail is never recorded
// (decided_by.email) nor shown as who they are.
func TestUnverifiedEmailIsNotRecorded(t *testing.T) {
	e := newEnv(t)
	e.approver.Provider, e.approver.SignIn = true, unverifiedSignIn{}
	c, l := e.pendingCall(t)
	h := map[string]string{"content-type": "application/x-www-form-urlencoded", "accept": "application/json", "x-test-subject": "mallory", "x-test-session": "s-mallory"}
	expect(t, invoke(t, e.approver, approveEvent("POST", c.ID, "", form(l, "decision", "approve", "csrf", pageCSRF(t, e.approver, c.ID, l, h)), h)), http.StatusOK, "")
	st := e.stored(t, c.ID)
	want := countersign.Person{Issuer: "https://idp.example.test", Subject: "mallory", Name: "Someone"}
	if st.DecidedByPerson == nil || *st.DecidedByPerson != want {
		t.Fatalf("decided by %+v, want %+v (no unverified e-mail)", st.DecidedByPerson, want)
	}
	if v := views.DecidedBy(st); v == nil || v.Email != "" {
		t.Fatalf("decided_by %+v, want no e-mail", v)
	}
}
