package httpapi

import (
	"net/http"
	"strings"
)

// commonHeaders are the header names most requests and responses carry.
// Their lower-case (API Gateway's) and canonical (net/http's) forms are
// kept here, so translating them does not build a new string each time.
var commonHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language", "Authorization", "Cache-Control", "Connection",
	"Content-Encoding", "Content-Length", "Content-Type", "Cookie", "Countersign-Confirmation", "Date",
	"Etag", "Host", "Idempotency-Key", "Idempotent-Replayed", "Keep-Alive", "Last-Modified", "Location",
	"Origin", "Prefer", "Referer", "Set-Cookie", "Traceparent", "Transfer-Encoding", "User-Agent", "Vary",
	"X-Forwarded-For", "X-Forwarded-Proto", "X-Request-Id",
}

var (
	lowerNames     = make(map[string]string, len(commonHeaders)) // canonical → lower case
	canonicalNames = make(map[string]string, len(commonHeaders)) // lower case → canonical
)

func init() {
	for _, h := range commonHeaders {
		lowerNames[h] = strings.ToLower(h)
		canonicalNames[strings.ToLower(h)] = h
	}
}

// lowerName is strings.ToLower(name), without building a string for a
// common (canonical) name.
func lowerName(name string) string {
	if l, ok := lowerNames[name]; ok {
		return l
	}
	return strings.ToLower(name)
}

// canonicalName is http.CanonicalHeaderKey(name), without building a
// string for a common (lower-case) name.
func canonicalName(name string) string {
	if c, ok := canonicalNames[name]; ok {
		return c
	}
	return http.CanonicalHeaderKey(name)
}
