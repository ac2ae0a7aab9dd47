package webguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ForeignHost says why r names a host this server does not answer, or "".
// On a loopback listener (the local stack) the Host must name this machine
// (localhost, *.localhost, a loopback address) or the host of one of
// publicURLs (settings.json public_url, behind a reverse proxy): a page
// that points its own name at 127.0.0.1 (DNS rebinding) names its own
// host and is refused. Elsewhere (API Gateway) the Host is the gateway's
// own and nothing is refused here.
func ForeignHost(r *http.Request, publicURLs ...string) string {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || la == nil || !loopbackAddr(la.String()) {
		return ""
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if LoopbackHost(host) {
		return ""
	}
	for _, p := range publicURLs {
		if u, err := url.Parse(p); err == nil && u.Hostname() != "" && strings.EqualFold(strings.TrimSuffix(host, "."), u.Hostname()) {
			return ""
		}
	}
	return "the Host header " + quote(r.Host) + " does not name this machine (a page that points its own name at 127.0.0.1 is refused)"
}

// LoopbackHost reports a host name that names this machine: localhost, a
// name under .localhost, or a loopback address.
func LoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// CrossSite reports a request the browser says came from another site:
// Sec-Fetch-Site other than same-origin or none, or an Origin (other than
// the opaque "null") whose host is not the request's Host. A request
// without either (curl, a program) is not cross-site: it carries no
// browser's cookies unless its author put them there.
func CrossSite(r *http.Request) bool {
	if s := joined(r, "Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return true
	}
	if origin := joined(r, "Origin"); origin != "" && origin != "null" {
		u, err := url.Parse(origin)
		return err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
	}
	return false
}

// joined is a header's values joined with commas, as API Gateway joins a
// repeated header: two Origins are one value no host matches.
func joined(r *http.Request, name string) string { return strings.Join(r.Header.Values(name), ",") }

// PageHeaders are the headers of every HTML page the server writes: no
// MIME sniffing, no Referer (a page's address can hold a signed link or an
// authorization request), never framed.
var PageHeaders = map[string]string{
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
}

// SetPageHeaders sets PageHeaders on h.
func SetPageHeaders(h http.Header) {
	for k, v := range PageHeaders {
		h.Set(k, v)
	}
}

// Token is a per-form CSRF token: an HMAC with key over the purpose, the
// browser's binding (a session id, or a nonce in a cookie of its own) and
// an expiry, which it carries. A form posted from another site cannot
// know the binding of the victim's browser, and a token lifted from one
// browser does not work with another's binding.
func Token(key []byte, purpose, binding string, exp time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(exp.Unix()))
	return base64.RawURLEncoding.EncodeToString(b[:]) + "." + base64.RawURLEncoding.EncodeToString(mac(key, purpose, binding, b[:]))
}

// TokenOK checks a Token for the purpose and binding at now, in constant
// time. An empty binding never matches.
func TokenOK(key []byte, purpose, binding, token string, now time.Time) bool {
	e, m, ok := strings.Cut(token, ".")
	if !ok || binding == "" {
		return false
	}
	eb, err1 := base64.RawURLEncoding.DecodeString(e)
	got, err2 := base64.RawURLEncoding.DecodeString(m)
	if err1 != nil || err2 != nil || len(eb) != 8 {
		return false
	}
	if now.Unix() > int64(binary.BigEndian.Uint64(eb)) {
		return false
	}
	return hmac.Equal(got, mac(key, purpose, binding, eb))
}

func mac(key []byte, purpose, binding string, exp []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(binding))
	m.Write([]byte{0})
	m.Write(exp)
	return m.Sum(nil)
}

// AddrKey is what a client address ("192.0.2.7:5000", or an address
// alone) is counted by in a rate limit: the address, or its /64 for IPv6
// (one host has many), or the text itself (clipped) when it does not
// parse.
func AddrKey(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		addr = h
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		if len(addr) > 64 {
			addr = addr[:64]
		}
		return addr
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
