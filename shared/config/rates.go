package config

import (
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/shared/policy"
)

// isRate reports whether an escalate[] item is a rate rule (it has "rate")
// rather than a threshold.
func isRate(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m["rate"]
	return ok
}

// rate reads {"rate": {"calls": 20, "per_seconds": 600}, "escalate": "review"}.
func (s *src) rate(p string, raw json.RawMessage) (policy.Rate, bool) {
	var r policy.Rate
	var doc struct {
		Rate *struct {
			Calls      *int `json:"calls"`
			PerSeconds *int `json:"per_seconds"`
		} `json:"rate"`
		Escalate *string `json:"escalate"`
	}
	if !s.decode(p, raw, &doc) {
		return r, false
	}
	good := doc.Rate != nil
	if good {
		bound := func(key string, n *int, max int) int64 {
			switch {
			case n == nil:
				s.errf(field(p, "rate."+key), "missing: a rate is {\"calls\": N, \"per_seconds\": S}")
			case *n < 1 || *n > max:
				s.errf(field(p, "rate."+key), "%d is out of range: use a whole number from 1 to %d", *n, max)
			default:
				return int64(*n)
			}
			good = false
			return 0
		}
		r.Calls = bound("calls", doc.Rate.Calls, policy.MaxRateCalls)
		r.PerSeconds = bound("per_seconds", doc.Rate.PerSeconds, policy.MaxRatePerSeconds)
	}
	if t, ok := s.escalateTo(p, doc.Escalate); ok {
		r.Escalate = t
	} else {
		good = false
	}
	return r, good
}

// connectionRates reads a connection's escalate[]: rate rules only (a
// threshold names a field of one endpoint's calls).
func (s *src) connectionRates(rel string, raw json.RawMessage) []policy.Rate {
	var items []json.RawMessage
	if !s.decode("escalate", raw, &items) {
		return nil
	}
	var out []policy.Rate
	for i, item := range items {
		p := index("escalate", i)
		if !isRate(item) {
			s.errf(p, `a connection's escalate[] takes rate rules only ({"rate": {"calls": N, "per_seconds": S}, "escalate": "review"}); a threshold goes on its endpoint`)
			continue
		}
		if r, ok := s.rate(p, item); ok {
			r.Rule = fmt.Sprintf("%s %s rate %d calls per %d s: %s", rel, p, r.Calls, r.PerSeconds, r.Escalate)
			out = append(out, r)
		}
	}
	return out
}

// remember reads approval.remember: {"max_minutes": 60, "max_calls": 20}.
func (s *src) remember(p string, raw json.RawMessage) *policy.Remember {
	var doc struct {
		MaxMinutes *int `json:"max_minutes"`
		MaxCalls   *int `json:"max_calls"`
	}
	if !s.decode(p, raw, &doc) {
		return nil
	}
	r := &policy.Remember{}
	good := true
	for _, f := range []struct {
		key string
		max int
		n   *int
		to  *int
	}{{"max_minutes", policy.MaxRememberMinutes, doc.MaxMinutes, &r.MaxMinutes}, {"max_calls", policy.MaxRememberCalls, doc.MaxCalls, &r.MaxCalls}} {
		switch {
		case f.n == nil:
			s.errf(field(p, f.key), "missing: remember needs max_minutes and max_calls, e.g. {\"max_minutes\": 60, \"max_calls\": 20}")
			good = false
		case *f.n < 1 || *f.n > f.max:
			s.errf(field(p, f.key), "%d is out of range: use a whole number from 1 to %d", *f.n, f.max)
			good = false
		default:
			*f.to = *f.n
		}
	}
	if !good {
		return nil
	}
	return r
}
