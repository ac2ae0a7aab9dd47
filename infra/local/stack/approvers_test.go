package stack

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approverBrowser is an approver's browser on the local stack: it keeps
// its cookies, follows the stack's redirects itself and, when the
// development sign-in page asks, signs in as email.
type approverBrowser struct {
	t       testing.TB
	h       *harness
	email   string
	client  *http.Client
	signIns int
	// cookie is the session cookie the sign-in set, as sent.
	cookie *http.Cookie
}

func newApproverBrowser(h *harness, email string) *approverBrowser {
	jar, _ := cookiejar.New(nil)
	return &approverBrowser{t: h.t, h: h, email: email, client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// open GETs path on the stack, following redirects and signing in on the
// way; it returns the last page.
func (b *approverBrowser) open(path string) result {
	b.t.Helper()
	next := b.h.stack.URL + path
	for range 8 {
		resp, err := b.client.Get(next)
		if err != nil {
			b.t.Fatalf("GET %s: %v", next, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		base, _ := url.Parse(next)
		switch {
		case resp.StatusCode/100 == 3:
			loc, err := base.Parse(resp.Header.Get("Location"))
			if err != nil {
				b.t.Fatal(err)
			}
			next = loc.String()
		case base.Path == oauth.PathDevSignIn && csrfRE.Match(body):
			f := url.Values{"csrf": {formValue(csrfRE, body)}, "return_to": {formValue(returnRE, body)}, "email": {b.email}}
			resp, err := b.client.PostForm(base.String(), f)
			if err != nil {
				b.t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				b.t.Fatalf("sign-in as %s: HTTP %d", b.email, resp.StatusCode)
			}
			for _, c := range resp.Cookies() {
				b.cookie = c
			}
			b.signIns++
			loc, _ := base.Parse(resp.Header.Get("Location"))
			next = loc.String()
		default:
			return result{status: resp.StatusCode, header: resp.Header, body: body}
		}
	}
	b.t.Fatalf("GET %s: more than 8 redirects", path)
	return result{}
}

// press submits the page's form as this browser.
func (b *approverBrowser) press(page result, button string) result {
	b.t.Helper()
	action, form := pageForm(b.t, page, button)
	resp, err := b.client.PostForm(b.h.stack.URL+action, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: body}
}

// pauseForApprovers makes a call that the approvers' links decide (a key
// on ask_person that does not ask in its client) and returns its id and link.
func pauseForApprovers(h *harness) (string, string) {
	h.t.Helper()
	r := h.call("cs_test_program", deleteContact12)
	expect(h.t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	return id, h.approvalLink(id)
}

// TestApproverSignsInAndIsRecorded: with approvers.sign_in "required", an
// approval link leads a browser without a session through the sign-in
// (no decision possible before), back to the page that names who is signed
// in; the approval records the person in GET /v1/confirmations/<id>
// (decided_by), in the decided webhook, and as the actor of the audit
// trail, which verifies.
func TestApproverSignsInAndIsRecorded(t *testing.T) {
	h := newHarness(t, harnessOptions{approverSignIn: "required"})
	id, link := pauseForApprovers(h)

	// Without a session, GET sends the browser to the sign-in, and back to the link.
	anon := newApproverBrowser(h, "")
	resp, err := anon.client.Get(h.stack.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Path != oauth.PathDevSignIn || loc.Query().Get("return_to") != link {
		t.Fatalf("GET link without a session: %d Location %q, want 303 to the sign-in returning to the link", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Nor can it decide: the link alone is refused and changes nothing.
	expect(t, h.post(link, "approve", nil, "application/json"), http.StatusForbidden, "forbidden")
	if got := h.statusOf("cs_test_program", id); got != "pending" {
		t.Fatalf("status after a refused POST = %s, want pending", got)
	}

	ada := newApproverBrowser(h, "ada@example.com")
	page := ada.open(link)
	expect(t, page, http.StatusOK, "")
	if ada.signIns != 1 {
		t.Fatalf("signed in %d times, want once", ada.signIns)
	}
	if c := ada.cookie; c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		t.Errorf("session cookie %+v, want HttpOnly, SameSite=Lax, Path=/", c)
	}
	if shown := visibleText(page.body); !strings.Contains(shown, "Signed in as ada@example.com") {
		t.Errorf("the page does not say who is signed in:\n%s", shown)
	}
	// Opening it again changes nothing (GET never decides) and needs no new sign-in.
	page = ada.open(link)
	if ada.signIns != 1 || h.statusOf("cs_test_program", id) != "pending" {
		t.Fatalf("a second GET signed in again (%d) or decided", ada.signIns)
	}
	done := ada.press(page, "approve")
	expect(t, done, http.StatusOK, "")
	if shown := visibleText(done.body); !strings.Contains(shown, "Approved by ada@example.com") {
		t.Errorf("the decided page does not name the approver:\n%s", shown)
	}

	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	expect(t, st, http.StatusOK, "")
	if st.str("decided_by.kind") != "person" || st.str("decided_by.email") != "ada@example.com" || st.str("decided_by.subject") != "ada@example.com" ||
		!strings.HasSuffix(st.str("decided_by.issuer"), oauth.PathDevSignIn) || st.str("decided_by.channel") != "ops" {
		t.Errorf("decided_by = %v, want the person ada@example.com at the development issuer, through ops", st.get("decided_by"))
	}
	ev := h.webhook.waitEvent(t, notify.TypeDecided, id)
	if by := ev.Confirmation.DecidedBy; by == nil || by.Kind != "person" || by.Email != "ada@example.com" {
		t.Errorf("decided event decided_by = %+v, want ada@example.com", by)
	}

	h.stop()
	st2, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	ctx := context.Background()
	recs, err := st2.ListAudit(ctx, countersign.AuditQuery{Chain: audit.ChainOf("program")})
	if err != nil {
		t.Fatal(err)
	}
	actor := ""
	for _, r := range recs {
		if r.Action == "confirmation.approved" && r.Subject == id {
			actor = r.Actor
		}
	}
	if actor != "person:ada@example.com" {
		t.Errorf("the trail's approval actor = %q, want person:ada@example.com", actor)
	}
	if rep, err := audit.Verify(ctx, st2); err != nil || !rep.OK() {
		t.Errorf("audit verify: %v, breaks %v", err, rep.Breaks())
	}
}

// TestApproverWithoutSignInNamesTheChannel: with no identity provider and
// no approvers.sign_in, a link decides as before, and decided_by names the
// channel whose link was used.
func TestApproverWithoutSignInNamesTheChannel(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := pauseForApprovers(h)
	page := h.do(http.MethodGet, link, "", nil, nil)
	expect(t, page, http.StatusOK, "")
	if strings.Contains(visibleText(page.body), "Signed in as") {
		t.Errorf("the page names someone signed in without sign-in")
	}
	expect(t, h.press(page, "reject"), http.StatusOK, "")
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("decided_by.kind") != "channel" || st.str("decided_by.channel") != "ops" || st.str("decided_by.email") != "" {
		t.Errorf("decided_by = %v, want the channel ops", st.get("decided_by"))
	}
}

// TestApproverSignInOptional: with "optional", the page decides without
// sign-in (the channel is recorded) and, signed in, records the person.
func TestApproverSignInOptional(t *testing.T) {
	h := newHarness(t, harnessOptions{approverSignIn: "optional"})
	id, link := pauseForApprovers(h)
	anon := newApproverBrowser(h, "")
	page := anon.open(link)
	expect(t, page, http.StatusOK, "")
	if anon.signIns != 0 {
		t.Fatalf("optional sign-in sent the browser to sign in")
	}
	expect(t, anon.press(page, "approve"), http.StatusOK, "")
	if st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil); st.str("decided_by.kind") != "channel" {
		t.Errorf("decided_by = %v, want the channel", st.get("decided_by"))
	}

	// The page offers sign-in; following it signs in and comes back to the
	// same link, and the decision names the person.
	id, link = pauseForApprovers(h)
	ada := newApproverBrowser(h, "ada@example.com")
	page = ada.open(link)
	m := signInLinkRE.FindSubmatch(page.body)
	if m == nil || !strings.Contains(visibleText(page.body), "Not signed in") {
		t.Fatalf("the page offers no sign-in:\n%s", page.body)
	}
	signIn := strings.ReplaceAll(string(m[1]), "&amp;", "&")
	if u, err := url.Parse(signIn); err != nil || u.Path != "/approve/"+id || u.Query().Get("signin") != "1" || u.Query().Get("sig") == "" {
		t.Fatalf("sign-in link %q, want the same link with signin=1", signIn)
	}
	page = ada.open(signIn)
	if ada.signIns != 1 || !strings.Contains(visibleText(page.body), "Signed in as ada@example.com") {
		t.Fatalf("after following the sign-in link (%d sign-ins):\n%s", ada.signIns, visibleText(page.body))
	}
	if h.statusOf("cs_test_program", id) != "pending" {
		t.Fatal("signing in decided something")
	}
	expect(t, ada.press(page, "approve"), http.StatusOK, "")
	if st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil); st.str("decided_by.kind") != "person" || st.str("decided_by.email") != "ada@example.com" {
		t.Errorf("decided_by = %v, want ada", st.get("decided_by"))
	}
}

var signInLinkRE = regexp.MustCompile(`<a id="signin" href="([^"]+)"`)

// teamPolicy is a connection whose approvals come from named people: its
// DELETE from ada or anyone at finance.example.com, its POST /payments
// from cy only (the endpoint's list replaces the connection's).
const teamPolicy = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [
    {"method": "DELETE", "path": "/contacts/{id}", "confirm": true},
    {"method": "POST", "path": "/payments", "confirm": true, "approval": {"approvers": ["cy@example.com"]}}
  ],
  "approval": {"approvers": ["ada@example.com", "@finance.example.com"]}
}`

// refusedPost posts the approval form of link as browser b (the fields a
// page would post, though the page shows no buttons).
func (b *approverBrowser) refusedPost(link, decision string) result {
	b.t.Helper()
	u, _ := url.Parse(link)
	form := u.Query()
	form.Set("decision", decision)
	resp, err := b.client.PostForm(b.h.stack.URL+u.Path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: body}
}

// TestOnlyListedApproversDecide: approval.approvers names who may decide.
// Someone else, signed in, sees the page without buttons and is told why;
// their POST is refused (403) and changes nothing. A listed e-mail or
// domain decides; an endpoint's own list replaces the connection's. The
// list asks for sign-in even where approvers.sign_in is not set.
func TestOnlyListedApproversDecide(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": teamPolicy}})
	r := h.call("cs_test_program", map[string]any{"connection": "team", "method": "DELETE", "path": "/contacts/12", "intent": "write"})
	expect(t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	link := h.approvalLink(id)

	// The link alone decides nothing.
	expect(t, h.post(link, "approve", nil, "application/json"), http.StatusForbidden, "forbidden")

	bob := newApproverBrowser(h, "bob@example.com")
	page := bob.open(link)
	expect(t, page, http.StatusOK, "")
	shown := visibleText(page.body)
	if bob.signIns != 1 || strings.Contains(string(page.body), `name="decision"`) || !strings.Contains(shown, "not among the approvers") {
		t.Fatalf("bob's page (signed in %d times) has buttons or does not say why:\n%s", bob.signIns, shown)
	}
	if got := bob.refusedPost(link, "approve"); got.status != http.StatusForbidden {
		t.Fatalf("bob's POST: %d, want 403", got.status)
	}
	if got := bob.refusedPost(link, "reject"); got.status != http.StatusForbidden {
		t.Fatalf("bob's rejection: %d, want 403", got.status)
	}
	if st := h.statusOf("cs_test_program", id); st != "pending" {
		t.Fatalf("after bob's refused POSTs: %s, want pending", st)
	}

	eve := newApproverBrowser(h, "eve@finance.example.com")
	expect(t, eve.press(eve.open(link), "approve"), http.StatusOK, "")
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "approved" || st.str("decided_by.email") != "eve@finance.example.com" {
		t.Fatalf("after eve approved: %s", st.body)
	}

	// POST /payments: only cy, not ada of the connection's list.
	r = h.call("cs_test_program", map[string]any{"connection": "team", "method": "POST", "path": "/payments", "body": map[string]any{"amount": 5}, "intent": "write"})
	expect(t, r, http.StatusAccepted, "")
	id = r.str("confirmation.id")
	link = h.approvalLink(id)
	ada := newApproverBrowser(h, "ada@example.com")
	if page := ada.open(link); strings.Contains(string(page.body), `name="decision"`) {
		t.Fatalf("ada may approve POST /payments, whose endpoint names only cy")
	}
	cy := newApproverBrowser(h, "cy@example.com")
	expect(t, cy.press(cy.open(link), "reject"), http.StatusOK, "")
	if st := h.statusOf("cs_test_program", id); st != "rejected" {
		t.Fatalf("after cy rejected: %s", st)
	}
}

// TestFourEyes: under approval.separate_approver the person who made a
// call is not asked in their client (the approvers decide), cannot approve
// it on the page (no buttons; a POST is 403 and changes nothing), and
// another person's approval runs it once.
func TestFourEyes(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"separate_approver": true}
}`}})
	s, asked := h.askingPerson("ann@example.com", "Ann's client")
	res := callTool(t, s, "team__delete_contacts_by_id", map[string]any{"id": "77"}, nil)
	if *asked != 0 {
		t.Fatalf("ann's client was asked %d times under four eyes", *asked)
	}
	id, _ := structured(t, res)["confirmation_id"].(string)
	if id == "" || h.upstream.Count("DELETE", "/contacts/77") != 0 {
		t.Fatalf("result %q, want paused for the approvers with nothing run", text(res))
	}
	link := h.approvalLink(id)

	ann := newApproverBrowser(h, "ann@example.com")
	page := ann.open(link)
	if strings.Contains(string(page.body), `name="decision"`) || !strings.Contains(visibleText(page.body), "You made this call") {
		t.Fatalf("ann's own page offers the decision or does not say why:\n%s", visibleText(page.body))
	}
	if got := ann.refusedPost(link, "approve"); got.status != http.StatusForbidden {
		t.Fatalf("ann's own approval: %d, want 403", got.status)
	}
	if n := h.upstream.Count("DELETE", "/contacts/77"); n != 0 {
		t.Fatalf("ann's own approval ran the call %d times", n)
	}

	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	for deadline := time.Now().Add(10 * time.Second); h.upstream.Count("DELETE", "/contacts/77") == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := h.upstream.Count("DELETE", "/contacts/77"); n != 1 {
		t.Fatalf("after bob approved, DELETE ran %d times, want once", n)
	}
}

const quorumPolicy = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}],
  "approval": {"required": 2}
}`

// pauseQuorum makes a call to the quorum connection and returns its id and link.
func pauseQuorum(h *harness, contact string) (string, string) {
	h.t.Helper()
	r := h.call("cs_test_program", map[string]any{"connection": "team", "method": "DELETE", "path": "/contacts/" + contact, "intent": "write"})
	expect(h.t, r, http.StatusAccepted, "")
	id := r.str("confirmation.id")
	return id, h.approvalLink(id)
}

// decidedOnce waits for the decided event and checks, a moment later,
// that there was only one: the workflow was told once.
func decidedOnce(h *harness, id string) notify.Event {
	h.t.Helper()
	ev := h.webhook.waitEvent(h.t, notify.TypeDecided, id)
	time.Sleep(200 * time.Millisecond)
	if n := h.webhook.count(notify.TypeDecided, id); n != 1 {
		h.t.Fatalf("%d decided events for %s, want one", n, id)
	}
	return ev
}

// TestQuorumOfTwo: approval.required 2 stays pending after one person's
// approval ("1 of 2 approvals" on the page and in GET
// /v1/confirmations/<id>), the same person again counts nothing (no
// buttons, 403), and a second, distinct person approves it: decided_by
// names them, the approvals list both, and the workflow is told once.
func TestQuorumOfTwo(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": quorumPolicy}})
	id, link := pauseQuorum(h, "12")
	ada := newApproverBrowser(h, "ada@example.com")
	page := ada.open(link)
	if !strings.Contains(visibleText(page.body), "0 of 2 approvals") {
		t.Errorf("the page does not count approvals:\n%s", visibleText(page.body))
	}
	after := ada.press(page, "approve")
	expect(t, after, http.StatusOK, "")
	if shown := visibleText(after.body); !strings.Contains(shown, "1 of 2 approvals") || strings.Contains(string(after.body), `name="decision"`) {
		t.Errorf("after ada's approval the page says:\n%s", shown)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "pending" || st.get("approvals.required") != 2.0 || st.get("approvals.received") != 1.0 || st.str("approvals.by.0.email") != "ada@example.com" {
		t.Fatalf("after one approval: %s", st.body)
	}
	// Ada again: told so, refused, nothing counted.
	page = ada.open(link)
	if !strings.Contains(visibleText(page.body), "You approved this already") || strings.Contains(string(page.body), `name="decision"`) {
		t.Errorf("ada's second visit:\n%s", visibleText(page.body))
	}
	if got := ada.refusedPost(link, "approve"); got.status != http.StatusForbidden {
		t.Fatalf("ada's second approval: %d, want 403", got.status)
	}
	if st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil); st.str("status") != "pending" || st.get("approvals.received") != 1.0 {
		t.Fatalf("after ada's second approval: %s", st.body)
	}
	if n := h.webhook.count(notify.TypeDecided, id); n != 0 {
		t.Fatalf("the workflow was told after one approval (%d decided events)", n)
	}
	bob := newApproverBrowser(h, "bob@example.com")
	expect(t, bob.press(bob.open(link), "approve"), http.StatusOK, "")
	st = h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
	if st.str("status") != "approved" || st.str("decided_by.email") != "bob@example.com" || st.get("approvals.received") != 2.0 {
		t.Fatalf("after bob's approval: %s", st.body)
	}
	if ev := decidedOnce(h, id); ev.Decision != "approved" {
		t.Errorf("decided event %+v", ev)
	}
}

// TestQuorumRaces: two approvers at once complete a quorum of 2 exactly
// once (the workflow told once); one approver twice at once counts once
// and the confirmation stays pending; an approval and a rejection at once
// leave one decision, the winner's, told once.
func TestQuorumRaces(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": quorumPolicy}})

	t.Run("two approvers at once", func(t *testing.T) {
		id, link := pauseQuorum(h, "21")
		a, b := newApproverBrowser(h, "ada@example.com"), newApproverBrowser(h, "bob@example.com")
		pa, pb := a.open(link), b.open(link)
		codes := parallel(2, func(i int) int {
			if i == 0 {
				return a.press(pa, "approve").status
			}
			return b.press(pb, "approve").status
		})
		if codes[http.StatusOK] != 2 {
			t.Fatalf("answers %v, want both counted", codes)
		}
		st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
		if st.str("status") != "approved" || st.get("approvals.received") != 2.0 {
			t.Fatalf("after two approvers at once: %s", st.body)
		}
		decidedOnce(h, id)
	})

	t.Run("one approver twice at once", func(t *testing.T) {
		id, link := pauseQuorum(h, "22")
		a := newApproverBrowser(h, "ada@example.com")
		p1, p2 := a.open(link), a.open(link)
		codes := parallel(2, func(i int) int {
			if i == 0 {
				return a.press(p1, "approve").status
			}
			return a.press(p2, "approve").status
		})
		if codes[http.StatusOK] != 1 || codes[http.StatusForbidden] != 1 {
			t.Fatalf("answers %v, want one counted and one 403", codes)
		}
		st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
		if st.str("status") != "pending" || st.get("approvals.received") != 1.0 {
			t.Fatalf("after one approver twice: %s", st.body)
		}
		if n := h.webhook.count(notify.TypeDecided, id); n != 0 {
			t.Fatalf("%d decided events, want none", n)
		}
	})

	t.Run("an approval and a rejection at once", func(t *testing.T) {
		id, link := pauseQuorum(h, "23")
		ada := newApproverBrowser(h, "ada@example.com")
		expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")
		b, c := newApproverBrowser(h, "bob@example.com"), newApproverBrowser(h, "cy@example.com")
		pb, pc := b.open(link), c.open(link)
		var approve, reject int
		parallel(2, func(i int) int {
			if i == 0 {
				approve = b.press(pb, "approve").status
				return approve
			}
			reject = c.press(pc, "reject").status
			return reject
		})
		st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_program", nil, nil)
		switch {
		case approve == http.StatusOK && reject == http.StatusConflict:
			if st.str("status") != "approved" || st.str("decided_by.email") != "bob@example.com" {
				t.Fatalf("approval won but: %s", st.body)
			}
		case reject == http.StatusOK && approve == http.StatusConflict:
			if st.str("status") != "rejected" || st.str("decided_by.email") != "cy@example.com" {
				t.Fatalf("rejection won but: %s", st.body)
			}
		default:
			t.Fatalf("approve %d, reject %d: want one 200 and one 409", approve, reject)
		}
		ev := decidedOnce(h, id)
		if ev.Decision != st.str("status") {
			t.Errorf("decided event says %s, the record %s", ev.Decision, st.str("status"))
		}
	})
}

// TestListedApproversAreNotAskedInTheClient: a connection that names its
// approvers is decided by them through their links, signed in: a person
// calling from a client that could ask them in its own dialog is not
// asked there (they may not be among those named), and nothing runs until
// a listed approver approves.
func TestListedApproversAreNotAskedInTheClient(t *testing.T) {
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/team/policy.json": teamPolicy}})
	s, asked := h.askingPerson("zed@example.com", "Zed's client")
	res := callTool(t, s, "team__delete_contacts_by_id", map[string]any{"id": "88"}, nil)
	id, _ := structured(t, res)["confirmation_id"].(string)
	if *asked != 0 || id == "" || h.upstream.Count("DELETE", "/contacts/88") != 0 {
		t.Fatalf("asked in the client %d times, result %q; want paused for the listed approvers with nothing run", *asked, text(res))
	}
	link := h.approvalLink(id)
	zed := newApproverBrowser(h, "zed@example.com")
	if page := zed.open(link); strings.Contains(string(page.body), `name="decision"`) {
		t.Fatalf("zed, not listed, may decide on the page")
	}
	ada := newApproverBrowser(h, "ada@example.com")
	expect(t, ada.press(ada.open(link), "approve"), http.StatusOK, "")
	waitFor(t, func() bool { return h.upstream.Count("DELETE", "/contacts/88") == 1 })
}

// askingPerson connects email's MCP client with OAuth, a client that
// declares form elicitation and accepts whatever it is asked; the count
// says how often it was asked.
func (h *harness) askingPerson(email, client string) (*mcp.ClientSession, *int) {
	h.t.Helper()
	asked := new(int)
	s, _ := h.oauthSession(newSignInBrowser(h.t, email), client, clientKind{elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		*asked++
		return accept(true)(r)
	}})
	return s, asked
}
