package oauth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/webguard"
)

// Client registration is open (MCP clients register themselves), and so
// bounded. Every new client, registered (RFC 7591) or described by a
// metadata document fetched for the first time, counts against its
// address's hourly rate and against a cap on the clients not yet used;
// a registered client nobody signs in with expires after unusedClientTTL
// (the store's TTL deletes it), and one that is used lives as long as
// its grants. The counts are the store's exact quotas (store.TakeQuota),
// so they hold across instances; every limit fails closed.
const (
	// DefaultClientsPerAddress is how many new clients one address (an
	// IPv6 /64) may add in registrationWindow.
	DefaultClientsPerAddress = 20
	// DefaultMaxUnusedClients is how many clients added within
	// unusedClientTTL may be stored, used or not.
	DefaultMaxUnusedClients = 1000
	registrationWindow      = time.Hour
	unusedClientTTL         = 24 * time.Hour
)

// addrKey carries the client address a request came from.
type addrKey struct{}

// errTooManyClients is a refusal of a new client: the rate or the cap.
type errTooManyClients struct {
	why        string
	retryAfter time.Duration
}

func (e *errTooManyClients) Error() string { return e.why }

// admitClient counts one new client from the request's address, or says
// why not (an *errTooManyClients, or the store's error).
func (s *Server) admitClient(ctx context.Context) error {
	now := s.now()
	addr, _ := ctx.Value(addrKey{}).(string)
	full := func(err error, why string) error {
		var q *store.QuotaFullError
		if errors.As(err, &q) {
			return &errTooManyClients{why: why, retryAfter: q.Free.Sub(now)}
		}
		return fmt.Errorf("the client count could not be read: %w", err)
	}
	if err := s.store.TakeQuota(ctx, "oauth-clients/addr/"+addr, s.o.ClientsPerAddress, now, now.Add(registrationWindow)); err != nil {
		return full(err, fmt.Sprintf("this address added %d clients within the hour; try later", s.o.ClientsPerAddress))
	}
	if err := s.store.TakeQuota(ctx, "oauth-clients/all", s.o.MaxUnusedClients, now, now.Add(unusedClientTTL)); err != nil {
		return full(err, "this server holds as many new clients as it keeps; try later")
	}
	return nil
}

// writeAdmitError answers a refused registration: 429 with Retry-After
// for a limit, 500 for a store that could not count.
func (s *Server) writeAdmitError(w http.ResponseWriter, r *http.Request, err error) {
	var tm *errTooManyClients
	if errors.As(err, &tm) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(tm.retryAfter.Seconds())))))
		writeError(w, http.StatusTooManyRequests, "temporarily_unavailable", tm.why)
		return
	}
	s.o.Logger.ErrorContext(r.Context(), "oauth: client count", "error", err)
	writeError(w, http.StatusInternalServerError, "server_error", "the client could not be counted; try again")
}

// keepClient keeps a registered client that was used at least as long as
// the grant's expiry: its expiry moves past the grant's, by RefreshTTL,
// so a grant refreshed now and then writes it once per RefreshTTL. A
// metadata document's copy is left alone (it is fetched again when
// stale); a client without an expiry never expires.
func (s *Server) keepClient(ctx context.Context, c countersign.OAuthClient, until time.Time) {
	if c.ExpiresAt.IsZero() || isDocumentID(c.ID) || c.ExpiresAt.After(until) {
		return
	}
	c.ExpiresAt = until.Add(s.o.RefreshTTL)
	if err := s.store.PutOAuthClient(ctx, c); err != nil {
		s.o.Logger.WarnContext(ctx, "oauth: client expiry not extended", "client_id", c.ID, "error", err)
	}
}

// withAddr records the request's client address for admitClient.
func withAddr(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), addrKey{}, webguard.AddrKey(r.RemoteAddr)))
}
