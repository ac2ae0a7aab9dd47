package stack

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestShowBatchStoresWhatItShows: the client's dialog about a script's
// batch shows each resource as the batch stores it for the recheck
// before the write. The contact answers differently at every read (the
// gate changes it before each), so a question built from a read of its
// own, while the workflow stores another, shows something else than
// what the recheck compares with: whichever read comes first, the
// company in the dialog is not the stored one. Here they are the same,
// and the write, whose recheck reads a changed contact, is not sent.
func TestShowBatchStoresWhatItShows(t *testing.T) {
	var up atomic.Pointer[harness]
	var reads atomic.Int32
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/shown/policy.json": showPolicy},
		gate: func(r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/contacts/12" {
				return
			}
			change := httptest.NewRequest(http.MethodPatch, "/contacts/12", strings.NewReader(fmt.Sprintf(`{"company":"Read %d"}`, reads.Add(1))))
			change.Header.Set("Content-Type", "application/json")
			up.Load().upstream.ServeHTTP(httptest.NewRecorder(), change)
		}})
	up.Store(h)
	var mu sync.Mutex
	var message string
	s := h.mcpSession("cs_test_ask", clientKind{name: "Claude Code", elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		message = r.Params.Message
		mu.Unlock()
		return accept(true)(r)
	}}, nil)
	src := `const a = call('shown', 'PATCH', '/contacts/12', {body: {company: 'Stanford'}}); ({a: a.status, ae: a.error})`
	r := runScript(t, s, src, "", nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if id == "" {
		t.Fatalf("no batch: %q", text(r))
	}
	mu.Lock()
	m := regexp.MustCompile(`company: "([^"]*)" → "Stanford"`).FindStringSubmatch(message)
	mu.Unlock()
	if m == nil {
		t.Fatalf("the dialog shows no change of the company:\n%s", message)
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	expect(t, st, 200, "")
	if stored := st.str("operations.0.current.body.company"); stored != m[1] {
		t.Errorf("the dialog showed the company %q, the batch stores %q for the recheck (%d reads)", m[1], stored, reads.Load())
	}
	if c, _ := h.upstream.Contact(12); c.Company == "Stanford" {
		t.Errorf("the write was sent although the contact changed after the person saw it")
	}
	if !strings.Contains(text(r), `"ae":"resource_changed"`) {
		t.Errorf("the script's result does not mark the changed operation: %q", text(r))
	}
}

// TestShowCardStoresBeforeItShows: the card asked for before the
// workflow's notify task stored the read (the gate holds that read until
// another one comes) shows the contact as stored, read before the card,
// not a record without it; the read the card showed is the one the
// recheck compares with, and the unchanged contact is deleted once.
func TestShowCardStoresBeforeItShows(t *testing.T) {
	gate, release := holdFirstRead("/contacts/12")
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/shown/policy.json": showPolicy}, gate: gate})
	t.Cleanup(release) // before the upstream closes: it waits for the held read
	s := h.mcpSession("cs_test_ask", clientKind{name: "Card Host", apps: true}, nil)
	r := callTool(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"}, nil)
	id, _ := structured(t, r)["confirmation_id"].(string)
	if id == "" {
		t.Fatalf("paused notice %q", text(r))
	}
	rp := callTool(t, s, "review_pending", map[string]any{"confirmation_id": id}, nil)
	release()
	op := fmt.Sprint(structured(t, rp)["operations"])
	for _, want := range []string{"Delete contact 12, John McCarthy", "inv_103", "this will be gone"} {
		if !strings.Contains(op, want) {
			t.Errorf("the card lacks %q: %s", want, op)
		}
	}
	st := h.do(http.MethodGet, "/v1/confirmations/"+id, "cs_test_ask", nil, nil)
	expect(t, st, 200, "")
	at, err := time.Parse(time.RFC3339Nano, st.str("operations.0.current.read_at"))
	if err != nil || !strings.Contains(op, "Read at "+at.UTC().Format(time.DateTime)+" UTC") {
		t.Errorf("the card does not show the stored read (read at %q, %v): %s", st.str("operations.0.current.read_at"), err, op)
	}
	d := callTool(t, s, "card_decide", map[string]any{"confirmation_id": id, "token": cardToken(t, rp), "decision": "approve"}, nil)
	if d.IsError || !strings.Contains(text(d), "ran: the upstream answered 204") {
		t.Errorf("approve unchanged: %q", text(d))
	}
	if n := h.upstream.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

// TestShowPageStoresBeforeItsLink: the approval page a URL elicitation
// links, opened before the workflow's notify task stored the read (the
// gate holds that read until another one comes), shows the contact as
// stored: the read is stored before the link is given.
func TestShowPageStoresBeforeItsLink(t *testing.T) {
	gate, release := holdFirstRead("/contacts/12")
	h := newHarness(t, harnessOptions{files: map[string]string{"connections/shown/policy.json": showPolicy}, gate: gate})
	t.Cleanup(release) // before the upstream closes: it waits for the held read
	s, _ := h.oauthSession(newSignInBrowser(t, "dana@example.com"), "URL client", clientKind{url: true, protocol: "2025-11-25"})
	e := urlElicitationOf(t, s, "shown__delete_contacts_by_id", map[string]any{"id": "12"})
	dana := newApproverBrowser(h, "dana@example.com")
	page := dana.open(h.link(e.URL))
	release()
	for _, want := range []string{"Delete contact 12, John McCarthy", "inv_103", "this will be gone"} {
		if !strings.Contains(visibleText(page.body), want) {
			t.Errorf("the page lacks %q:\n%s", want, visibleText(page.body))
		}
	}
}

// holdFirstRead is an upstream gate that holds the first GET of path
// until a second one comes, or release is called: the workflow's notify
// task, alone, leaves its read unstored while the test looks.
func holdFirstRead(path string) (gate func(*http.Request), release func()) {
	var mu sync.Mutex
	reads := 0
	another := make(chan struct{})
	release = sync.OnceFunc(func() { close(another) })
	return func(r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != path {
			return
		}
		mu.Lock()
		reads++
		first := reads == 1
		mu.Unlock()
		if first {
			<-another
			return
		}
		release()
	}, release
}
