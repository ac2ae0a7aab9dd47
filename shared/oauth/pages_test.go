package oauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPagesEscape: the hand-written pages escape what a client or a
// person supplies: a registered client's name on the consent page, the
// development page's people and errors.
func TestPagesEscape(t *testing.T) {
	ts := newTestServer(t, false)
	const evil = `<script>alert(1)</script>" onmouseover="x`
	_, reg := ts.register(t, `{"client_name": "`+strings.ReplaceAll(evil, `"`, `\"`)+`", "redirect_uris": ["`+redirect+`"]}`)
	resp, err := ts.http.Get(ts.authorizeURL(reg["client_id"].(string), verifier, nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(body), "<script>") || strings.Contains(string(body), `" onmouseover`) ||
		!strings.Contains(string(body), "&lt;script&gt;") {
		t.Fatalf("consent page: %d, the client's name is not escaped:\n%s", resp.StatusCode, body)
	}
	if ts.consent(t, ts.authorizeURL(reg["client_id"].(string), verifier, nil)).Get("code") == "" {
		t.Fatal("the consent page's form gives no code")
	}

	d := &DevSignIn{Issuer: "http://127.0.0.1/oauth/dev-signin", Key: NewKey(), People: []string{evil}}
	w := httptest.NewRecorder()
	d.page(w, http.StatusBadRequest, "c", "/oauth/authorize?a=1&b=2", evil)
	if s := w.Body.String(); strings.Contains(s, "<script>") || strings.Contains(s, `" onmouseover`) || !strings.Contains(s, "a=1&amp;b=2") {
		t.Fatalf("development page not escaped:\n%s", s)
	}
	w = httptest.NewRecorder()
	(&Server{}).page(w, http.StatusBadRequest, evil)
	if s := w.Body.String(); strings.Contains(s, "<script>") || !strings.Contains(s, "&lt;script&gt;") {
		t.Fatalf("error page not escaped:\n%s", s)
	}

	// A name that reorders itself (bidi) or hides characters is shown
	// with them marked, so the person reads the name the client sent.
	_, reg = ts.register(t, `{"client_name": "Claude\u202e edoC\u200b", "redirect_uris": ["`+redirect+`"]}`)
	resp, err = ts.http.Get(ts.authorizeURL(reg["client_id"].(string), verifier, nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "\u202e") || strings.Contains(string(body), "\u200b") {
		t.Fatalf("consent page shows the client's name with its bidi and zero-width characters raw:\n%s", body)
	}
}
