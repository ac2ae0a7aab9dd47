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
	m, ok := s.object(p, raw, "rate", "escalate")
	if !ok {
		return r, false
	}
	good := len(m) == 2
	if rm, ok := s.object(field(p, "rate"), m["rate"], "calls", "per_seconds"); !ok {
		good = false
	} else {
		bound := func(key string, max int) int64 {
			v, ok := rm[key]
			if !ok {
				s.errf(field(p, "rate."+key), "missing: a rate is {\"calls\": N, \"per_seconds\": S}")
				good = false
				return 0
			}
			n, ok := s.integer(field(p, "rate."+key), v)
			if ok && (n < 1 || n > max) {
				s.errf(field(p, "rate."+key), "%d is out of range: use a whole number from 1 to %d", n, max)
				ok = false
			}
			good = good && ok
			return int64(n)
		}
		r.Calls = bound("calls", policy.MaxRateCalls)
		r.PerSeconds = bound("per_seconds", policy.MaxRatePerSeconds)
	}
	if t, ok := s.escalateTo(p, m); ok {
		r.Escalate = t
	} else {
		good = false
	}
	return r, good
}

// connectionRates reads a connection's escalate[]: rate rules only (a
// threshold names a field of one endpoint's calls).
func (s *src) connectionRates(rel string, raw json.RawMessage) []policy.Rate {
	items, ok := s.array("escalate", raw)
	if !ok {
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
	m, ok := s.object(p, raw, "max_minutes", "max_calls")
	if !ok {
		return nil
	}
	r := &policy.Remember{}
	good := true
	for _, f := range []struct {
		key string
		max int
		to  *int
	}{{"max_minutes", policy.MaxRememberMinutes, &r.MaxMinutes}, {"max_calls", policy.MaxRememberCalls, &r.MaxCalls}} {
		v, ok := m[f.key]
		if !ok {
			s.errf(field(p, f.key), "missing: remember needs max_minutes and max_calls, e.g. {\"max_minutes\": 60, \"max_calls\": 20}")
			good = false
			continue
		}
		n, ok := s.integer(field(p, f.key), v)
		if ok && (n < 1 || n > f.max) {
			s.errf(field(p, f.key), "%d is out of range: use a whole number from 1 to %d", n, f.max)
			ok = false
		}
		*f.to = n
		good = good && ok
	}
	if !good {
		return nil
	}
	return r
}
