package calls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// countRates counts the call in the current window of each of its
// endpoint's rate rules (escalate[] "rate") and returns the counts for the
// decision (policy.Input.Counts). Windows are fixed: a window of a rule
// is [k*per_seconds, (k+1)*per_seconds) in unix seconds, and its count is
// one store record that each call adds one to atomically (store.Counts),
// per credential, endpoint and rule, so every instance counts the same
// calls. Only endpoints with a rate rule are counted: the auto path of
// every other endpoint writes nothing.
func (s *Service) countRates(ctx context.Context, cred *countersign.Credential, m *policy.Match) ([]int64, error) {
	now := s.now().Unix()
	counts := make([]int64, len(m.Endpoint.Rates))
	for i := range m.Endpoint.Rates {
		r := &m.Endpoint.Rates[i]
		window, end := r.Window(now)
		n, err := s.Store.AddCount(ctx, rateKey(cred.ID, m, i, r, window), time.Unix(end, 0))
		if err != nil {
			s.logger().ErrorContext(ctx, "call not counted", "credential", cred.ID, "rule", r.Rule, "error", err)
			return nil, fault.Wrap(err, "the call could not be counted against its rate rules; nothing ran, try again")
		}
		counts[i] = n
	}
	return counts, nil
}

// rateKey names the count of one credential, endpoint, rule and window: a
// digest, so that it stays short whatever the names.
func rateKey(credential string, m *policy.Match, i int, r *policy.Rate, window int64) string {
	h := sha256.New()
	for _, part := range []string{credential, m.Connection.Name, m.Endpoint.Method, m.Endpoint.Path, strconv.Itoa(i),
		strconv.FormatInt(r.Calls, 10), strconv.FormatInt(r.PerSeconds, 10)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "rate:" + hex.EncodeToString(h.Sum(nil)[:16]) + ":" + strconv.FormatInt(window, 10)
}
