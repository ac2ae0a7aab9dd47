package awstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/oauth"
)

// The people flows: approvers sign in at the template's identity provider
// (zitadel's, standing in for the Cognito user pool) through the approve
// function and the gateway's /oauth/callback; a quorum of two and four
// eyes are decided through the approve function's two execution
// environments and the confirm state machine on moto.

// peopleSettings leave approvers.sign_in out of settings.json: with the
// template's provider, approvers must sign in.
var peopleSettings = settings{CallSeconds: 60, ScriptSeconds: 60, RedeemSeconds: 60, SignInByDefault: true}

// The people flows' connections (configDir): the same upstream as crm.
const (
	quorumConnection   = "quorum"   // approval.required 2
	fourEyesConnection = "foureyes" // approval.separate_approver
)

// browser is one person's browser: its own cookie jar, redirects followed
// by the walk (oidctest.Provider.Walk), every request bounded. It records
// the requests it made.
type browser struct {
	f    *flow
	user string // the username at the provider (oidctest.People)
	c    *http.Client

	mu   sync.Mutex
	seen []string // "METHOD host/path"
	// csrfs are the approval pages' CSRF tokens this browser saw, by
	// link path (open keeps them, so a decision needs no GET of its own).
	csrfs map[string]string
}

// recorder is a browser's transport: it notes every request.
type recorder struct{ b *browser }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.b.mu.Lock()
	r.b.seen = append(r.b.seen, req.Method+" "+req.URL.Host+req.URL.Path)
	r.b.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (f *flow) browser(user string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{f: f, user: user}
	b.c = &http.Client{Jar: jar, Timeout: 60 * time.Second, Transport: recorder{b},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return b
}

// callbacks counts the browser's visits to the gateway's /oauth/callback:
// one per sign-in completed at countersign.
func (b *browser) callbacks() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	front, _ := url.Parse(b.f.s.front.URL)
	n := 0
	for _, s := range b.seen {
		if s == "GET "+front.Host+oauth.PathCallback {
			n++
		}
	}
	return n
}

// open opens the approval link as this browser: a browser without a
// session goes through the approve function's redirect, the provider's
// login form (signing in as b.user) and the gateway's /oauth/callback
// back to the link. It returns the page, and whether the provider's login
// form was on the way.
func (b *browser) open(link *url.URL) (status int, page string, signedIn bool) {
	b.f.Helper()
	// The walk stops at the first page that is neither a redirect nor the
	// login form: the approval page. No address starts with "never:".
	_, signedIn = b.f.s.provider.Walk(b.f, b.c, b.f.s.front.URL+link.RequestURI(), b.user, "never:", func(_ *url.URL, st int, body []byte) *url.URL {
		status, page = st, string(body)
		return nil
	})
	if m := csrfField.FindStringSubmatch(page); m != nil {
		b.mu.Lock()
		if b.csrfs == nil {
			b.csrfs = map[string]string{}
		}
		b.csrfs[link.Path] = html.UnescapeString(m[1])
		b.mu.Unlock()
	}
	return status, page, signedIn
}

// decide posts the page's form (the link's fields and the decision) with
// the browser's session cookie, asking for the JSON answer. It reports
// errors instead of failing the test, so races may call it from their
// goroutines.
func (b *browser) decide(link *url.URL, decision string) (answer, error) {
	form := link.Query()
	form.Set("decision", decision)
	if tok, err := b.csrf(link); err != nil {
		return answer{}, err
	} else if tok != "" {
		form.Set("csrf", tok)
	}
	req, err := http.NewRequestWithContext(b.f.ctx, http.MethodPost, b.f.s.front.URL+link.Path, strings.NewReader(form.Encode()))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := b.c.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s: POST %s: %w", b.user, link.Path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{Status: resp.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &a.Body)
	return a, nil
}

// csrfField is the approval form's CSRF token (shared/approvalpage).
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the approval page as this browser saw it
// (open), else as it sees it now (one GET, no redirect followed): the
// page of a browser with a session carries one, bound to that session;
// "" otherwise.
func (b *browser) csrf(link *url.URL) (string, error) {
	b.mu.Lock()
	tok, ok := b.csrfs[link.Path]
	b.mu.Unlock()
	if ok {
		return tok, nil
	}
	req, err := http.NewRequestWithContext(b.f.ctx, http.MethodGet, b.f.s.front.URL+link.RequestURI(), nil)
	if err != nil {
		return "", err
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: GET %s: %w", b.user, link.Path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if m := csrfField.FindSubmatch(raw); m != nil {
		return html.UnescapeString(string(m[1])), nil
	}
	return "", nil
}

// mustDecide is decide, failing the flow on a transport error.
func (b *browser) mustDecide(link *url.URL, decision string) answer {
	b.f.Helper()
	a, err := b.decide(link, decision)
	if err != nil {
		b.f.Fatal(err)
	}
	return a
}

// signIn opens link as b and checks that it went through the provider's
// login form and the gateway's callback back to the approval page, which
// names the person signed in.
func (b *browser) signIn(link *url.URL, email string) string {
	b.f.Helper()
	st, page, signedIn := b.open(link)
	if st != http.StatusOK || !signedIn || b.callbacks() != 1 {
		b.f.Fatalf("%s opening the link: %d, provider's login form seen %v, %d callbacks; want 200 after one sign-in\n%s", b.user, st, signedIn, b.callbacks(), page)
	}
	if !strings.Contains(page, "Signed in as") || !strings.Contains(page, email) {
		b.f.Fatalf("%s's approval page does not say who is signed in:\n%s", b.user, page)
	}
	b.f.Logf("%s opened the link: the provider's login form, %s, back to the page (signed in as %s)", b.user, oauth.PathCallback, email)
	return page
}

// atOnce runs the functions each in its own goroutine, released together,
// and waits for them all; each request they make is bounded by its
// browser's timeout.
func atOnce(fns ...func()) {
	var wg sync.WaitGroup
	release := make(chan struct{})
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			fn()
		}()
	}
	close(release)
	wg.Wait()
}

// served is how many invocations each of the approve function's execution
// environments has run.
func (f *flow) served() []int64 {
	var out []int64
	for _, env := range f.s.emulator("approve").environments() {
		out = append(out, env.served.Load())
	}
	return out
}

// race runs the two decisions at once, each in its own goroutine released
// together, and returns their answers. Their writes of the confirmation
// meet: the approve function's proxy holds the first write of its state
// until the second comes (within 20 s), so each POST has read the record
// before either writes it, whichever environment started first; the
// store's conditional writes must then let one through and make the other
// read again. It checks that the two POSTs ran in the approve function's
// two execution environments, one each, and that the writes met.
func (f *flow) race(id string, first, second func() (answer, error)) (answer, answer) {
	f.Helper()
	before := f.served()
	proxy := f.s.emulator("approve").aws
	state := []byte(`{"S":"CONF#` + id + `"}`)
	m := proxy.meet(2, 20*time.Second, func(action string, body []byte) bool {
		return (action == "dynamodb:UpdateItem" || action == "dynamodb:PutItem") && bytes.Contains(body, state) && bytes.Contains(body, []byte(`{"S":"STATE"}`))
	})
	defer proxy.meet(0, 0, nil)
	var a, b answer
	var errA, errB error
	atOnce(func() { a, errA = first() }, func() { b, errB = second() })
	for _, err := range []error{errA, errB} {
		if err != nil {
			f.Fatal(err)
		}
	}
	after := f.served()
	var delta []int64
	for i := range after {
		delta = append(delta, after[i]-before[i])
	}
	if !slices.Equal(delta, []int64{1, 1}) {
		f.Fatalf("the two POSTs ran %v times in the approve function's environments, want [1 1]: they did not run at once", delta)
	}
	if !m.met() {
		f.Fatalf("the two POSTs' writes of %s did not meet: one of them did not write its state (answers %d %s, %d %s)", id, a.Status, a.Raw, b.Status, b.Raw)
	}
	f.Logf("the two POSTs ran at once, one in each of the approve function's execution environments, and both read %s before either wrote it", id)
	return a, b
}

// taskCalls is how many times the approve function told the workflow
// (SendTaskSuccess, SendTaskFailure) so far.
func (f *flow) taskCalls() (success, failure int) {
	n := f.s.emulator("approve").aws.count()
	return n["states:SendTaskSuccess"], n["states:SendTaskFailure"]
}

// toldOnce checks that since (success, failure) the workflow was told
// once, with success when approved, and the decided webhook came once,
// saying decision.
func (f *flow) toldOnce(id string, success0, failure0 int, decision string) hookEvent {
	f.Helper()
	ev := f.s.Hooks.wait(f, "confirmation.decided", id, 10*time.Second)
	// Any second delivery would come within a moment.
	time.Sleep(500 * time.Millisecond)
	if n := f.s.Hooks.count("confirmation.decided", id); n != 1 {
		f.Fatalf("%d confirmation.decided webhooks for %s, want one", n, id)
	}
	if ev.Decision != decision {
		f.Fatalf("the decided webhook says %q, want %q", ev.Decision, decision)
	}
	success, failure := f.taskCalls()
	want := [2]int{1, 0}
	if decision == "rejected" {
		want = [2]int{0, 1}
	}
	if got := [2]int{success - success0, failure - failure0}; got != want {
		f.Fatalf("the approve function sent SendTaskSuccess, SendTaskFailure %v times, want %v", got, want)
	}
	f.Logf("the workflow was told once (SendTask%s) and the decided webhook came once", map[string]string{"approved": "Success", "rejected": "Failure"}[decision])
	return ev
}

// confirmation is GET /v1/confirmations/<id> with token.
func (f *flow) confirmation(token, id string) answer {
	f.Helper()
	a := f.do(http.MethodGet, "/v1/confirmations/"+id, http.Header{"Authorization": {"Bearer " + token}}, "")
	if a.Status != http.StatusOK {
		f.Fatalf("GET /v1/confirmations/%s: %d %s", id, a.Status, a.Raw)
	}
	return a
}

// approvals reads the approvals received and required from a GET
// /v1/confirmations/<id> answer.
func approvals(a answer) (received, required int, by []string) {
	ap, _ := a.Body["approvals"].(map[string]any)
	r1, _ := ap["received"].(float64)
	r2, _ := ap["required"].(float64)
	list, _ := ap["by"].([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		e, _ := m["email"].(string)
		by = append(by, e)
	}
	return int(r1), int(r2), by
}

// decidedBy checks decided_by of a GET /v1/confirmations/<id> answer: the
// person (subject, e-mail) at the template's provider, through ops' link.
func (f *flow) decidedBy(a answer, subject, email string) {
	f.Helper()
	by, _ := a.Body["decided_by"].(map[string]any)
	if by["kind"] != "person" || by["issuer"] != f.s.issuer || by["subject"] != subject || by["email"] != email || by["channel"] != approverName {
		f.Fatalf("decided_by %v, want the person %s (%s) at %s through %s", by, subject, email, f.s.issuer, approverName)
	}
}

// signedInApproval: with the template's provider and no approvers.sign_in,
// sign-in is required. The link alone is sent to the provider and its
// POST refused, changing nothing; ada signs in (the provider's login
// form, the gateway's /oauth/callback, back to the page), approves, and is
// recorded: decided_by in GET /v1/confirmations/<id>, the decided
// webhook, and the audit trail's actor; the trail verifies.
func signedInApproval(f *flow) {
	id := f.pause("DELETE", "/contacts/101")
	link := f.link(id)

	// The link alone: sent to sign in, and its POST refused.
	anon := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := anon.Get(f.s.front.URL + link.RequestURI())
	if err != nil {
		f.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || !strings.HasPrefix(loc, f.s.issuer+"/") {
		f.Fatalf("GET the link without a session: %d Location %q, want a redirect to the provider %s", resp.StatusCode, loc, f.s.issuer)
	}
	f.Logf("GET the link without a session: %d to the provider", resp.StatusCode)
	f.expect("POST approve with the link alone", f.decide(link, "approve"), http.StatusForbidden, "forbidden")
	if got := f.status(id); got != "pending" {
		f.Fatalf("status after the refused POST: %s, want pending", got)
	}
	if n := f.s.Hooks.count("confirmation.decided", id); n != 0 {
		f.Fatalf("the refused POST sent %d decided webhooks", n)
	}

	ada := f.browser("ada")
	ada.signIn(link, "ada@example.com")
	// Again: no new sign-in, nothing decided.
	if st, _, signedIn := ada.open(link); st != http.StatusOK || signedIn || ada.callbacks() != 1 || f.status(id) != "pending" {
		f.Fatalf("ada's second visit: %d, signed in again %v (%d callbacks), status %s", st, signedIn, ada.callbacks(), f.status(id))
	}
	success0, failure0 := f.taskCalls()
	f.expect("ada approves", ada.mustDecide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	f.decidedBy(f.confirmation(askKey, id), "id1", "ada@example.com")
	ev := f.toldOnce(id, success0, failure0, "approved")
	if by := ev.Confirmation.DecidedBy; by == nil || by.Kind != "person" || by.Subject != "id1" || by.Email != "ada@example.com" || by.Issuer != f.s.issuer {
		f.Fatalf("the decided webhook's decided_by %+v, want ada (id1) at %s", by, f.s.issuer)
	}
	f.Logf("GET /v1/confirmations/%s and the decided webhook: decided_by ada@example.com (id1) at the provider", id)
	f.expect("redeem", f.call("DELETE", "/contacts/101", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/101", id)
	f.auditActor(id, "confirmation.approved", "person:ada@example.com")
}

// auditActor reads the asking credential's chain with the operator's
// tool (countersign audit against the table) and checks that the record
// of action on confirmation id names actor; then `countersign audit
// --verify` passes over the whole trail.
func (f *flow) auditActor(id, action, actor string) {
	f.Helper()
	store := []string{"--table", f.s.table, "--endpoint", f.s.dynamoURL, "--region", region}
	out, errOut, err := f.s.tool(append([]string{"audit", "--chain", audit.ChainOf(askCredential), "--json"}, store...)...)
	if err != nil {
		f.Fatalf("countersign audit: %v\n%s", err, errOut)
	}
	got := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r countersign.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			f.Fatalf("countersign audit --json: %v\n%s", err, sc.Text())
		}
		if r.Action == action && r.Subject == id {
			got = r.Actor
		}
	}
	if got != actor {
		f.Fatalf("the trail's %s of %s names %q, want %s", action, id, got, actor)
	}
	out, errOut, err = f.s.tool(append([]string{"audit", "--verify"}, store...)...)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(out), "ok:") && !strings.Contains(out, "\nok:") {
		f.Fatalf("countersign audit --verify: %v\n%s%s", err, out, errOut)
	}
	f.Logf("audit: %s of %s by %s; countersign audit --verify: %s", action, id, actor, lastLine(out))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// quorumPause makes a call on the quorum connection as the agent, and
// opens its link as ada and grace, each signing in; the page counts 0 of 2.
func (f *flow) quorumPause(contact string) (id string, link *url.URL, ada, grace *browser) {
	f.Helper()
	id = f.pauseAs(askKey, quorumConnection, "DELETE", "/contacts/"+contact)
	link = f.link(id)
	ada, grace = f.browser("ada"), f.browser("grace")
	for _, b := range []*browser{ada, grace} {
		if page := b.signIn(link, b.user+"@example.com"); !strings.Contains(page, "0 of 2 approvals") {
			f.Fatalf("%s's page does not count the approvals:\n%s", b.user, page)
		}
	}
	return id, link, ada, grace
}

// quorumTwoAtOnce: a quorum of 2; ada and grace approve at once, in two
// execution environments of the approve function. Both are counted, one
// of them completes it: approved once, the workflow told once (the
// execution succeeds through Approved), one decided webhook, and the
// redeemed DELETE reaches the upstream once.
func quorumTwoAtOnce(f *flow) {
	id, link, ada, grace := f.quorumPause("111")
	success0, failure0 := f.taskCalls()
	var answers [2]answer
	answers[0], answers[1] = f.race(id, func() (answer, error) { return ada.decide(link, "approve") },
		func() (answer, error) { return grace.decide(link, "approve") })
	got := []string{answers[0].str("status"), answers[1].str("status")}
	if answers[0].Status != http.StatusOK || answers[1].Status != http.StatusOK || !slices.Contains(got, "pending") || !slices.Contains(got, "approved") {
		f.Fatalf("ada %d %s, grace %d %s: want both counted, one completing the quorum", answers[0].Status, answers[0].Raw, answers[1].Status, answers[1].Raw)
	}
	completer, subject := "ada", "id1"
	if got[1] == "approved" {
		completer, subject = "grace", "id2"
	}
	f.Logf("ada %s, grace %s: both counted, %s completed the quorum", got[0], got[1], completer)
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	st := f.confirmation(askKey, id)
	if received, required, by := approvals(st); st.str("status") != "approved" || received != 2 || required != 2 || len(by) != 2 {
		f.Fatalf("after both approved: %s", st.Raw)
	}
	f.decidedBy(st, subject, completer+"@example.com")
	f.toldOnce(id, success0, failure0, "approved")
	f.expect("redeem", f.call("DELETE", "/contacts/111", "confirmed_write", id), http.StatusForbidden, "confirmation_mismatch")
	f.expect("redeem on the quorum connection", f.callAs(askKey, quorumConnection, "DELETE", "/contacts/111", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/111", id)
	f.expect("redeem again", f.callAs(askKey, quorumConnection, "DELETE", "/contacts/111", "confirmed_write", id), http.StatusConflict, "confirmation_used")
	f.upstreamOnce("DELETE", "/contacts/111", id)
}

// quorumSameTwice: a quorum of 2; ada's two POSTs at once count once (the
// other is refused, 403) and it stays pending, the workflow not told; her
// page then says she approved already, without buttons; grace's approval
// completes it, and the workflow is told once.
func quorumSameTwice(f *flow) {
	id, link, ada, grace := f.quorumPause("112")
	success0, failure0 := f.taskCalls()
	var answers [2]answer
	answers[0], answers[1] = f.race(id, func() (answer, error) { return ada.decide(link, "approve") },
		func() (answer, error) { return ada.decide(link, "approve") })
	codes := []int{answers[0].Status, answers[1].Status}
	slices.Sort(codes)
	if !slices.Equal(codes, []int{http.StatusOK, http.StatusForbidden}) {
		f.Fatalf("ada twice at once: %d %s and %d %s; want one counted (200) and one refused (403)", answers[0].Status, answers[0].Raw, answers[1].Status, answers[1].Raw)
	}
	for _, a := range answers {
		if a.Status == http.StatusOK && a.str("status") != "pending" || a.Status == http.StatusForbidden && a.str("code") != "forbidden" {
			f.Fatalf("ada twice at once: %d %s", a.Status, a.Raw)
		}
	}
	f.Logf("ada twice at once: one counted (200, pending), one refused (403)")
	st := f.confirmation(askKey, id)
	if received, required, by := approvals(st); st.str("status") != "pending" || received != 1 || required != 2 || !slices.Equal(by, []string{"ada@example.com"}) {
		f.Fatalf("after ada twice: %s", st.Raw)
	}
	if success, failure := f.taskCalls(); success != success0 || failure != failure0 || f.s.Hooks.count("confirmation.decided", id) != 0 {
		f.Fatalf("one person's approval told the workflow (SendTask %d/%d) or sent a decided webhook", success-success0, failure-failure0)
	}
	if st, page, _ := ada.open(link); st != http.StatusOK || !strings.Contains(page, "You approved this already") || strings.Contains(page, `name="decision"`) {
		f.Fatalf("ada's page after her approval: %d\n%s", st, page)
	}
	if st, page, _ := grace.open(link); st != http.StatusOK || !strings.Contains(page, "1 of 2 approvals") || !strings.Contains(page, `name="decision"`) {
		f.Fatalf("grace's page after ada's approval: %d, want \"1 of 2 approvals\" and the buttons\n%s", st, page)
	}
	f.expect("grace approves", grace.mustDecide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	st = f.confirmation(askKey, id)
	if received, _, by := approvals(st); received != 2 || !slices.Equal(by, []string{"ada@example.com", "grace@example.com"}) {
		f.Fatalf("after grace approved: %s", st.Raw)
	}
	f.decidedBy(st, "id2", "grace@example.com")
	f.toldOnce(id, success0, failure0, "approved")
	f.expect("redeem", f.callAs(askKey, quorumConnection, "DELETE", "/contacts/112", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/112", id)
}

// quorumApproveReject: a quorum of 2; ada approves while grace rejects, at
// once. Either may land first: ada's approval is counted and grace's
// rejection then rejects, or the rejection lands first and ada's approval
// finds it decided (409). One approval never completes a quorum of 2, so
// it ends rejected either way: the execution ends through Rejected, the
// workflow told once, one decided webhook, nothing runs.
func quorumApproveReject(f *flow) {
	id, link, ada, grace := f.quorumPause("113")
	success0, failure0 := f.taskCalls()
	approve, reject := f.race(id, func() (answer, error) { return ada.decide(link, "approve") },
		func() (answer, error) { return grace.decide(link, "reject") })
	if reject.Status != http.StatusOK || reject.str("status") != "rejected" {
		f.Fatalf("grace's rejection: %d %s, want 200 rejected", reject.Status, reject.Raw)
	}
	switch {
	case approve.Status == http.StatusOK && approve.str("status") == "pending":
		f.Logf("ada's approval landed first (counted, 1 of 2), then grace's rejection rejected it")
	case approve.Status == http.StatusConflict && approve.str("code") == "confirmation_decided":
		f.Logf("grace's rejection landed first; ada's approval found it decided (409)")
	default:
		f.Fatalf("ada's approval: %d %s; want 200 pending (counted) or 409 confirmation_decided", approve.Status, approve.Raw)
	}
	f.execution("ConfirmStateMachine", id, "Rejected", 30*time.Second)
	st := f.confirmation(askKey, id)
	if st.str("status") != "rejected" {
		f.Fatalf("after the race: %s, want rejected", st.Raw)
	}
	f.decidedBy(st, "id2", "grace@example.com")
	f.toldOnce(id, success0, failure0, "rejected")
	f.expect("redeem", f.callAs(askKey, quorumConnection, "DELETE", "/contacts/113", "confirmed_write", id), http.StatusForbidden, "confirmation_rejected")
	if hits := f.s.Upstream.Hits("DELETE /contacts/113"); len(hits) != 0 {
		f.Fatalf("upstream called after a rejection: %v", hits)
	}
}

// quorumCompleteOrReject: a quorum of 2 that ada has approved; grace's
// approval, which would complete it, and mallory's rejection come at once.
// Either may win, never both: approved by grace (the workflow told
// SendTaskSuccess once, the redeemed DELETE run once) with mallory's
// rejection finding it decided (409), or rejected by mallory (told
// SendTaskFailure once, nothing run) with grace's approval finding it
// decided (409). One decided webhook either way.
func quorumCompleteOrReject(f *flow) {
	id, link, ada, grace := f.quorumPause("114")
	mallory := f.browser("mallory")
	mallory.signIn(link, "mallory@elsewhere.test")
	success0, failure0 := f.taskCalls()
	if a := ada.mustDecide(link, "approve"); a.Status != http.StatusOK || a.str("status") != "pending" {
		f.Fatalf("ada's approval: %d %s, want 200 pending (1 of 2)", a.Status, a.Raw)
	}
	approve, reject := f.race(id, func() (answer, error) { return grace.decide(link, "approve") },
		func() (answer, error) { return mallory.decide(link, "reject") })
	decided := func(a answer) bool { return a.Status == http.StatusConflict && a.str("code") == "confirmation_decided" }
	var want, last, subject, email string
	switch {
	case approve.Status == http.StatusOK && approve.str("status") == "approved" && decided(reject):
		want, last, subject, email = "approved", "Approved", "id2", "grace@example.com"
	case reject.Status == http.StatusOK && reject.str("status") == "rejected" && decided(approve):
		want, last, subject, email = "rejected", "Rejected", "id3", "mallory@elsewhere.test"
	default:
		f.Fatalf("grace's approval %d %s, mallory's rejection %d %s: want one decision and the other 409", approve.Status, approve.Raw, reject.Status, reject.Raw)
	}
	f.Logf("grace's completing approval and mallory's rejection at once: %s won, the other found it decided (409)", want)
	f.execution("ConfirmStateMachine", id, last, 30*time.Second)
	st := f.confirmation(askKey, id)
	if st.str("status") != want {
		f.Fatalf("after the race: %s, want %s", st.Raw, want)
	}
	f.decidedBy(st, subject, email)
	f.toldOnce(id, success0, failure0, want)
	redeem := f.callAs(askKey, quorumConnection, "DELETE", "/contacts/114", "confirmed_write", id)
	if want == "approved" {
		f.expect("redeem", redeem, http.StatusOK, "executed")
		f.upstreamOnce("DELETE", "/contacts/114", id)
		return
	}
	f.expect("redeem", redeem, http.StatusForbidden, "confirmation_rejected")
	if hits := f.s.Upstream.Hits("DELETE /contacts/114"); len(hits) != 0 {
		f.Fatalf("upstream called after a rejection: %v", hits)
	}
}

// accessToken signs the browser's person in from an MCP client, as
// oauthSignIn does: registration, /oauth/authorize, the provider's login
// form, the gateway's /oauth/callback, consent; it returns the access
// token for resource (front+"/mcp" for /mcp, front for /v1: RFC 8707),
// and the client it was issued to.
func (f *flow) accessToken(b *browser, resource string) (access, clientID string) {
	f.Helper()
	front := f.s.front.URL
	reg := f.do(http.MethodPost, oauth.PathRegister, http.Header{"Content-Type": {"application/json"}},
		`{"client_name": "awstest people", "redirect_uris": ["`+clientRedirect+`"], "token_endpoint_auth_method": "none"}`)
	clientID = reg.str("client_id")
	if reg.Status != http.StatusCreated || clientID == "" {
		f.Fatalf("register: %d %s", reg.Status, reg.Raw)
	}
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {clientRedirect}, "state": {"st8"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(pkceVerifier)}, "code_challenge_method": {"S256"}, "resource": {resource}}
	end, sawLogin := f.s.provider.Walk(f, b.c, front+oauth.PathAuthorize+"?"+q.Encode(), b.user, clientRedirect, func(at *url.URL, status int, body []byte) *url.URL {
		m := consentField.FindStringSubmatch(string(body))
		if m == nil {
			f.Fatalf("GET %s: %d %s", at, status, body)
		}
		req, _ := http.NewRequestWithContext(f.ctx, http.MethodPost, front+oauth.PathAuthorize, strings.NewReader(url.Values{"request": {m[1]}, "decision": {"allow"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := b.c.Do(req)
		if err != nil {
			f.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc
	})
	if e := end.Query().Get("error"); e != "" {
		f.Fatalf("refused: %s", end)
	}
	if iss := end.Query().Get("iss"); iss != front {
		f.Fatalf("authorization response iss %q, want %s (RFC 9207)", iss, front)
	}
	code := end.Query().Get("code")
	if !sawLogin || code == "" {
		f.Fatalf("%s's sign-in from the client: login form seen %v, ended at %s", b.user, sawLogin, end)
	}
	tok := f.do(http.MethodPost, oauth.PathToken, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, url.Values{
		"grant_type": {"authorization_code"}, "code": {code}, "client_id": {clientID}, "redirect_uri": {clientRedirect},
		"code_verifier": {pkceVerifier}, "resource": {resource}}.Encode())
	access = tok.str("access_token")
	if tok.Status != http.StatusOK || !strings.HasPrefix(access, oauth.AccessPrefix) {
		f.Fatalf("token: %d %s", tok.Status, tok.Raw)
	}
	return access, clientID
}

// fourEyes: ada signs in from her client (OAuth, at the template's
// provider) and calls DELETE on a connection with separate_approver. In
// her browser, already signed in, the approval page offers her no buttons
// and says why; her POST is refused (403) and changes nothing. grace
// approves; ada redeems with her token, once.
func fourEyes(f *flow) {
	ada := f.browser("ada")
	token, _ := f.accessToken(ada, f.s.front.URL) // she calls the JSON API
	id := f.pauseAs(token, fourEyesConnection, "DELETE", "/contacts/121")
	link := f.link(id)
	st, page, signedIn := ada.open(link)
	if st != http.StatusOK || signedIn || strings.Contains(page, `name="decision"`) || !strings.Contains(page, "You made this call") {
		f.Fatalf("ada's own approval page: %d (signed in again %v), want no buttons and why:\n%s", st, signedIn, page)
	}
	f.Logf("ada's page, signed in from her client's sign-in: no buttons, \"You made this call\"")
	success0, failure0 := f.taskCalls()
	f.expect("ada approves her own call", ada.mustDecide(link, "approve"), http.StatusForbidden, "forbidden")
	if got := f.confirmation(token, id).str("status"); got != "pending" {
		f.Fatalf("after ada's refused approval: %s, want pending", got)
	}
	if hits := f.s.Upstream.Hits("DELETE /contacts/121"); len(hits) != 0 {
		f.Fatalf("upstream called before approval: %v", hits)
	}
	grace := f.browser("grace")
	grace.signIn(link, "grace@example.com")
	f.expect("grace approves", grace.mustDecide(link, "approve"), http.StatusOK, "approved")
	f.execution("ConfirmStateMachine", id, "Approved", 30*time.Second)
	f.decidedBy(f.confirmation(token, id), "id2", "grace@example.com")
	f.toldOnce(id, success0, failure0, "approved")
	f.expect("ada redeems", f.callAs(token, fourEyesConnection, "DELETE", "/contacts/121", "confirmed_write", id), http.StatusOK, "executed")
	f.upstreamOnce("DELETE", "/contacts/121", id)
}
