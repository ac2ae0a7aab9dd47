package httpapi

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/fault"
)

// GET /v1/operator/shadow summarises what the candidate policy
// (settings.json candidate_config) would have decided otherwise: the
// policy.shadow_differs records of the audit trail, counted per endpoint
// and per credential (a record that sums a minute of repeats counts them
// all), with the newest examples. It reads at most shadowChainPages pages
// of chains and the newest shadowPerChain records of each: bounded, never
// a scan.
const (
	shadowChainPages = 4
	shadowPerChain   = 200
	shadowExamples   = 20
)

// shadowExample is one difference as the summary shows it.
type shadowExample struct {
	At         time.Time `json:"at"`
	Credential string    `json:"credential"`
	Endpoint   string    `json:"endpoint"`
	Differs    string    `json:"differs"`
	LiveRule   string    `json:"live_rule"`
	Candidate  string    `json:"candidate_rule"`
	Count      int       `json:"count"`
}

// shadowSummary is GET /v1/operator/shadow.
type shadowSummary struct {
	// Candidate is the candidate_config in force ("" when none).
	Candidate    string          `json:"candidate"`
	Differences  int             `json:"differences"`
	ByEndpoint   map[string]int  `json:"by_endpoint"`
	ByCredential map[string]int  `json:"by_credential"`
	Examples     []shadowExample `json:"examples"`
	// Truncated says there were more chains than were read.
	Truncated bool `json:"truncated,omitempty"`
}

func (o *Operator) shadowRoute(ctx context.Context, r *http.Request) reply {
	if method(r) != http.MethodGet {
		return codeError(fault.MethodNotAllowed, "use GET /v1/operator/shadow")
	}
	if r.URL.RawQuery != "" {
		return codeError(fault.InvalidRequest, "GET /v1/operator/shadow takes no query parameters")
	}
	if o.Audit == nil {
		return codeError(fault.Internal, "this deployment reads no audit trail")
	}
	sum, err := o.shadowSummary(ctx)
	if err != nil {
		o.logger().ErrorContext(ctx, "shadow summary not read", "error", err)
		return errorOf(fault.Wrap(err, "the audit trail could not be read; try again"))
	}
	return jsonReply(http.StatusOK, sum)
}

func (o *Operator) shadowSummary(ctx context.Context) (shadowSummary, error) {
	sum := shadowSummary{Candidate: o.Calls.Current().Settings.CandidateConfig, ByEndpoint: map[string]int{}, ByCredential: map[string]int{},
		Examples: []shadowExample{}}
	q := countersign.ListQuery{Limit: countersign.MaxPageSize}
	var found []*countersign.AuditRecord
	for page := 0; ; page++ {
		if page == shadowChainPages {
			sum.Truncated = true
			break
		}
		chains, err := o.Audit.AuditChains(ctx, q)
		if err != nil {
			return sum, err
		}
		for _, c := range chains.Items {
			recs, err := o.Audit.ListAudit(ctx, countersign.AuditQuery{Chain: c, Limit: shadowPerChain, Newest: true})
			if err != nil {
				return sum, err
			}
			for _, rec := range recs {
				if rec.Action == audit.ActionShadowDiffers {
					found = append(found, rec)
				}
			}
		}
		if chains.Next == "" {
			break
		}
		q.Cursor = chains.Next
	}
	sort.Slice(found, func(i, j int) bool { return found[i].At.After(found[j].At) })
	for _, rec := range found {
		n := int(max(rec.Count, 1))
		endpoint := rec.Method + " " + rec.Path + " on " + rec.Connection
		sum.Differences += n
		sum.ByEndpoint[endpoint] += n
		sum.ByCredential[rec.Credential] += n
		if len(sum.Examples) < shadowExamples {
			ex := shadowExample{At: rec.At.UTC(), Credential: rec.Credential, Endpoint: endpoint, Differs: rec.Outcome, LiveRule: rec.Rule, Count: n}
			if len(rec.Reason) > len("the candidate's rule: ") {
				ex.Candidate = rec.Reason[len("the candidate's rule: "):]
			}
			sum.Examples = append(sum.Examples, ex)
		}
	}
	return sum, nil
}
