package httpapi

import "strings"

// commonHeaders are the header names most requests carry, in net/http's
// canonical form. Their lower-case (API Gateway's) forms are kept here, so
// translating them does not build a new string each time.
var commonHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Cache-Control", "Connection",
	"Content-Encoding", "Content-Length", "Content-Type", "Cookie", "Countersign-Confirmation", "Date",
	"Etag", "Host", "Idempotency-Key", "Idempotent-Replayed", "Keep-Alive", "Last-Modified", "Location",
	"Origin", "Prefer", "Referer", "Set-Cookie", "Traceparent", "Transfer-Encoding", "User-Agent", "Vary",
	"X-Forwarded-For", "X-Forwarded-Proto", "X-Request-Id",
}

// lowerNames maps the canonical names to lower case.
var lowerNames = func() map[string]string {
	m := make(map[string]string, len(commonHeaders))
	for _, h := range commonHeaders {
		m[h] = strings.ToLower(h)
	}
	return m
}()

// lowerName is strings.ToLower(name), without building a string for a
// common (canonical) name.
func lowerName(name string) string {
	if l, ok := lowerNames[name]; ok {
		return l
	}
	return strings.ToLower(name)
}
