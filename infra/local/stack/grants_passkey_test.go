package stack

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// passkeyRememberPolicy is a connection whose every approval is a
// passkey's and whose DELETE also names a remember rule: a grant cannot
// carry an assertion, so remember is never offered there.
const passkeyRememberPolicy = `{
  "base_url": "%UPSTREAM%",
  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "approval": {"remember": {"max_minutes": 30, "max_calls": 3}}}],
  "approval": {"passkey": true}
}`

// TestRememberNotOfferedWhereAPasskeyIsNeeded: the approval page offers
// "Approve and allow for" on a plain remember endpoint, never on a
// passkey endpoint with remember configured; nor, once the configuration
// drops the passkey, on a confirmation that paused needing one (its
// stored rules still need it), where a remember POST is 400
// invalid_remember and decides nothing.
func TestRememberNotOfferedWhereAPasskeyIsNeeded(t *testing.T) {
	h := newHarness(t, harnessOptions{localhost: true, files: map[string]string{
		"connections/vault/policy.json":    passkeyRememberPolicy,
		"connections/remember/policy.json": rememberPolicy,
	}})
	const offer = `id="remember-approve"`
	_, plain := h.pause("cs_test_ask", delRemember(1))
	if page := h.do(http.MethodGet, plain, "", nil, nil); page.status != http.StatusOK || !strings.Contains(string(page.body), offer) {
		t.Fatalf("a plain remember endpoint's page offers no remember: %d\n%s", page.status, page.body)
	}
	id, link := pauseVault(h, "vault", "1")
	ada := h.person("ada@example.com")
	ada.register()
	if page := ada.get(link); page.status != http.StatusOK || !strings.Contains(page.text(), `id="passkey-status"`) || strings.Contains(page.text(), offer) {
		t.Fatalf("a passkey endpoint's page: %d\n%s", page.status, page.body)
	}

	// The configuration drops the passkey; the paused call's stored rules keep it.
	h.stop()
	p := filepath.Join(h.configDir, "connections", "vault", "policy.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"approval": {"passkey": true}`, `"approval": {}`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	_, plain2 := pauseVault(h, "vault", "2")
	ada = h.person("ada@example.com")
	if page := ada.get(plain2); !strings.Contains(page.text(), offer) {
		t.Fatalf("without a passkey the endpoint's page offers no remember:\n%s", page.body)
	}
	if page := ada.get(link); page.status != http.StatusOK || !strings.Contains(page.text(), `id="passkey-`) || strings.Contains(page.text(), offer) {
		t.Fatalf("the page of a call paused needing a passkey: %d\n%s", page.status, page.body)
	}
	f := form(t, link, "approve")
	f.Set("csrf", ada.approveCSRF(link))
	f.Set("remember", "10")
	r := ada.post(strings.SplitN(link, "?", 2)[0], f, true)
	expect(t, r, http.StatusBadRequest, "invalid_remember")
	if st := h.statusOf("cs_test_program", id); st != "pending" || h.upstream.Count("DELETE", "/contacts/1") != 0 {
		t.Fatalf("a refused remember decided %s", st)
	}
}
