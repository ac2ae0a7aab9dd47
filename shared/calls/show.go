package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/upstream"
)

// ShowMaxBody bounds a show read's answer: a larger one is not kept, and
// the person is told so.
const ShowMaxBody = 1 << 20

// showClient makes the show reads: bounded in time and size, and, like
// every upstream call, it never follows a redirect (a 3xx is the answer).
var showClient = &upstream.Client{Timeout: confirm.ShowTimeout, MaxBody: ShowMaxBody}

// showRead is the endpoint's show read for a call with the path
// parameters params: the template with each parameter's value escaped.
func showRead(sh *policy.Show, params map[string]string) *countersign.Show {
	segs := strings.Split(sh.Path, "/")
	for i, seg := range segs {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			segs[i] = url.PathEscape(params[strings.TrimSuffix(name, "}")])
		}
	}
	return &countersign.Show{Path: strings.Join(segs, "/"), Recheck: sh.Recheck}
}

// ShowReader makes operations' show reads (confirm.Reader) as their
// connection: a GET of the show path against the connection the
// configuration in force names, with its configured headers and nothing
// of the agent's, never through a hook, bounded (confirm.ShowTimeout,
// ShowMaxBody, no redirects).
type ShowReader struct {
	// Config returns the configuration in force.
	Config func() *config.Config
	// Client makes the reads; nil means one bounded as above.
	Client *upstream.Client
}

var _ confirm.Reader = ShowReader{}

// Read makes op's show read. An answer of 2xx, 3xx or 4xx is a Current
// with its status and body (its JSON when it is JSON, else its text), the
// SHA-256 of its bytes and its ETag; a timeout, a 5xx or an answer too
// large is a Current with Error.
func (r ShowReader) Read(ctx context.Context, op countersign.Operation) countersign.Current {
	if op.Show == nil {
		return countersign.Current{Error: "the endpoint has no show read"}
	}
	conn := r.Config().Connections[op.Connection]
	if conn == nil {
		return countersign.Current{Error: fmt.Sprintf("connection %q is no longer configured", op.Connection)}
	}
	client := r.Client
	if client == nil {
		client = showClient
	}
	resp, err := client.Do(ctx, upstream.Request{BaseURL: conn.BaseURL, Headers: conn.Headers,
		Method: "GET", Path: op.Show.Path, Connection: op.Connection})
	switch {
	case errors.Is(err, upstream.ErrResponseTooLarge):
		return countersign.Current{Error: fmt.Sprintf("the answer is larger than %d KiB", ShowMaxBody>>10)}
	case errors.Is(err, context.DeadlineExceeded):
		return countersign.Current{Error: fmt.Sprintf("no answer within %s", confirm.ShowTimeout)}
	case err != nil:
		return countersign.Current{Error: "the upstream could not be reached"}
	case resp.Status >= 500:
		return countersign.Current{Error: fmt.Sprintf("the upstream answered %d %s", resp.Status, http.StatusText(resp.Status))}
	}
	sum := sha256.Sum256(resp.Body)
	cur := countersign.Current{Status: resp.Status, SHA256: hex.EncodeToString(sum[:]), ETag: resp.Header.Get("ETag")}
	if raw, ok := resp.RawJSON(); ok {
		cur.Body = raw
	} else if len(resp.Body) > 0 {
		text := resp.Body
		if !utf8.Valid(text) {
			text = []byte(strings.ToValidUTF8(string(text), "\uFFFD"))
		}
		cur.Body, _ = json.Marshal(string(text))
	}
	return cur
}

// ReadCurrent makes the show reads of ops (confirm.Service.ReadCurrent):
// the surfaces that ask a person without creating a confirmation first
// (the client's dialog) show what they read.
func (s *Service) ReadCurrent(ctx context.Context, ops []countersign.Operation) {
	s.Confirm.ReadCurrent(ctx, ops)
}

// Observe stores the show reads of the pending confirmation id, once
// (confirm.Service.Observe: the first reads stored stand), and returns the
// record that holds them. A surface that shows a paused confirmation, or
// links to it, does so from this record and never from a read of its
// own: the person sees exactly what the recheck before the write compares
// with.
func (s *Service) Observe(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.Confirm.Observe(ctx, id)
	if err != nil && fault.As(err) == nil {
		return nil, fault.Wrap(err, "what the person is to see of the resources could not be stored; nobody was asked")
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}
