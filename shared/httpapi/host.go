package httpapi

import (
	"net/http"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/webguard"
)

// HostGuard refuses, before next sees it, a request that names a host
// this server does not answer (webguard.ForeignHost: a page that rebound
// its own name to 127.0.0.1, on the local stack) with 403 forbidden and
// the gateway's error body; publicURLs returns the public URLs whose host
// is accepted. The body is left unread.
func HostGuard(next http.Handler, publicURLs func() []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := webguard.ForeignHost(r, publicURLs()...); why != "" {
			writeUnread(w, r, codeError(fault.Forbidden, why+"; nothing was done"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
