package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/store"
)

// confirmationView is the JSON of a confirmation (API.md section 4).
type confirmationView struct {
	ID         string          `json:"id"`
	Status     store.Status    `json:"status"`
	Kind       store.Kind      `json:"kind"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	DecidedAt  *time.Time      `json:"decided_at"`
	Operations []operationView `json:"operations"`
	Result     json.RawMessage `json:"result,omitempty"`
}

type operationView struct {
	Connection string         `json:"connection"`
	Method     string         `json:"method"`
	Path       string         `json:"path"`
	Endpoint   string         `json:"endpoint"`
	Selected   bool           `json:"selected"`
	Outcome    *store.Outcome `json:"outcome"`
}

// viewConfirmation shows the effective status, never a stale stored one.
func viewConfirmation(c *store.Confirmation, now time.Time) confirmationView {
	v := confirmationView{ID: c.ID, Status: confirm.Effective(c, now), Kind: c.Kind, CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt,
		DecidedAt: c.DecidedAt, Result: c.Result, Operations: make([]operationView, 0, len(c.Operations))}
	for _, op := range c.Operations {
		v.Operations = append(v.Operations, operationView{Connection: op.Connection, Method: op.Method, Path: op.Path,
			Endpoint: op.Endpoint, Selected: op.Selected, Outcome: op.Outcome})
	}
	return v
}

// maxWait bounds ?wait= (API Gateway answers within 30 s).
const maxWait = 25

// maxPoll is the longest pause between two reads of a waited-on record.
const maxPoll = time.Second

// status handles GET /v1/confirmations/<id>[?wait=<seconds>]. Only the
// credential that created a confirmation may read it; others get 404.
func (g *Gateway) status(ctx context.Context, req *Request, cred *store.Credential, id string) Response {
	q, err := url.ParseQuery(req.RawQueryString)
	if err != nil {
		return codeError("invalid_request", "malformed query string")
	}
	wait := 0
	if s := q.Get("wait"); s != "" {
		if wait, err = strconv.Atoi(s); err != nil || wait < 0 {
			return codeError("invalid_request", "wait must be a whole number of seconds from 0 to 25")
		}
		wait = min(wait, maxWait)
	}
	c, err := g.Store.GetConfirmation(ctx, id)
	if err != nil || c.Credential != cred.ID {
		return codeError(string(confirm.CodeUnknown), "no confirmation "+id)
	}
	if wait > 0 && confirm.Effective(c, g.now()) == store.StatusPending {
		c = g.waitDecided(ctx, c, time.Duration(wait)*time.Second)
	}
	return jsonResponse(http.StatusOK, viewConfirmation(c, g.now()))
}

// waitDecided re-reads the record until its effective status leaves pending,
// the time passes, or the request goes away.
func (g *Gateway) waitDecided(ctx context.Context, c *store.Confirmation, d time.Duration) *store.Confirmation {
	interval := g.PollInterval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	// The record expires by the clock even if nothing writes to it.
	if until := c.ExpiresAt.Sub(g.now()); until < d {
		deadline.Reset(max(until, 0))
	}
	// The interval grows to maxPoll: a decision is seen within a second,
	// and a 25 s wait costs a few dozen reads, not hundreds.
	tick := time.NewTimer(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return c
		case <-g.Stopping:
			return c
		case <-deadline.C:
			if fresh, err := g.Store.GetConfirmation(ctx, c.ID); err == nil {
				return fresh
			}
			return c
		case <-tick.C:
			if fresh, err := g.Store.GetConfirmation(ctx, c.ID); err == nil {
				c = fresh
				if confirm.Effective(c, g.now()) != store.StatusPending {
					return c
				}
			}
			interval = min(interval*3/2, maxPoll)
			tick.Reset(interval)
		}
	}
}
