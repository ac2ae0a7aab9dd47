package oauth

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestPageHeaders (finding 15): every page the server writes (consent,
// the development sign-in page, the error pages, the callback's failure)
// is sent with nosniff, a Referrer-Policy and no framing.
func TestPageHeaders(t *testing.T) {
	ts := newTestServer(t, false)
	_, reg := ts.register(t, `{"client_name": "Test client", "redirect_uris": ["`+redirect+`"]}`)
	dev := &DevSignIn{Issuer: ts.url + PathDevSignIn, Key: NewKey()}
	devServer, err := New(ts.store, Options{PublicURL: func() string { return ts.url }, SignIn: dev, SessionKey: NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(devServer)
	t.Cleanup(hs.Close)
	pages := []struct{ name, url string }{
		{"consent", ts.authorizeURL(reg["client_id"].(string), verifier, nil)},
		{"error page", ts.url + PathAuthorize + "?client_id=nobody"},
		{"development sign-in", hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape("/approve/cf_1")},
		{"development sign-in refusal", hs.URL + PathDevSignIn + "?return_to=" + url.QueryEscape("https://evil.example/")},
		{"callback without its flow", hs.URL + PathCallback},
	}
	for _, p := range pages {
		resp, err := ts.http.Get(p.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: %d %v, want nosniff, Referrer-Policy no-referrer, X-Frame-Options DENY", p.name, resp.StatusCode, h)
		}
	}
}
