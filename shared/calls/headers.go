package calls

import (
	"strings"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/upstream"
)

// Limits on the headers a call forwards: they are bound, stored with an
// approval and shown to a person, so they are bounded like a body is.
const (
	maxForwardedValue = 4 << 10
	maxForwardedTotal = 16 << 10
)

// negotiationKeys are upstream.DefaultForward in lower case, as events
// carry header names.
var negotiationKeys = func() (keys [len(upstream.DefaultForward)]string) {
	for i, name := range upstream.DefaultForward {
		keys[i] = strings.ToLower(name)
	}
	return keys
}()

// readHeaders picks the headers the call forwards out of the agent's
// request, by the connection's allow-list: the content negotiation
// defaults (sent and replayed, not bound) and the connection's
// forward_headers (bound, shown, replayed), each by its canonical name.
// Nothing else the agent sent reaches the upstream: a name spelled with "_"
// or any other character matches no listed name. A header sent on several
// lines arrives joined with commas (API Gateway and the local stack join
// them), which is the one value bound, shown and sent on one line, so every
// upstream reads the same value. An empty value is not forwarded, nor
// respond-async in a listed Prefer (countersign's own). A value with
// control characters, or past the limits, is refused with 400.
func (p *prepared) readHeaders() error {
	if len(p.Forward) == 0 {
		return nil
	}
	conn := p.cfg.Connections[p.Connection]
	if conn == nil {
		return nil // an unknown connection is denied; nothing is sent
	}
	total := 0
	take := func(name, key string, into *map[string]string) error {
		v := p.Forward[key]
		if key == "prefer" {
			v = withoutRespondAsync(v)
		}
		if v == "" {
			return nil
		}
		if len(v) > maxForwardedValue {
			return fault.Errorf(fault.InvalidRequest, "header %s is %d bytes: a forwarded header may be at most %d", name, len(v), maxForwardedValue)
		}
		if total += len(name) + len(v); total > maxForwardedTotal {
			return fault.Errorf(fault.InvalidRequest, "the forwarded headers are over %d bytes", maxForwardedTotal)
		}
		if !validValue(v) {
			return fault.Errorf(fault.InvalidRequest, "header %s has a control character", name)
		}
		if *into == nil {
			*into = map[string]string{}
		}
		(*into)[name] = v
		return nil
	}
	for i, name := range upstream.DefaultForward {
		if err := take(name, negotiationKeys[i], &p.negotiation); err != nil {
			return err
		}
	}
	for _, name := range conn.ForwardHeaders {
		if err := take(name, strings.ToLower(name), &p.headers); err != nil {
			return err
		}
	}
	return nil
}

// withoutRespondAsync is a Prefer value without respond-async, which asks
// countersign to wait for a person (REST) and is not the upstream's to read.
func withoutRespondAsync(v string) string {
	if !strings.Contains(strings.ToLower(v), "respond-async") {
		return v
	}
	var kept []string
	for pref := range strings.SplitSeq(v, ",") {
		token, _, _ := strings.Cut(pref, ";")
		if strings.EqualFold(strings.TrimSpace(token), "respond-async") {
			continue
		}
		if pref = strings.TrimSpace(pref); pref != "" {
			kept = append(kept, pref)
		}
	}
	return strings.Join(kept, ", ")
}

// validValue reports a header value without control characters other than
// tab.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// forwarded is what an operation sends of the agent's headers: the bound
// ones and the content negotiation ones.
func forwarded(bound, negotiation map[string]string) map[string]string {
	switch {
	case len(negotiation) == 0:
		return bound
	case len(bound) == 0:
		return negotiation
	}
	out := make(map[string]string, len(bound)+len(negotiation))
	for k, v := range negotiation {
		out[k] = v
	}
	for k, v := range bound {
		out[k] = v
	}
	return out
}
