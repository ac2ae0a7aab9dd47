package audit

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/countersign/countersign"
)

// The policy trial's summary (settings.json candidate_config): what the
// candidate policy would have decided otherwise, from the trail's
// policy.shadow_differs records, counted per endpoint and per credential
// (a summary record counts its repeats), with the newest examples. A
// difference names the candidate that made it (its Subject: the
// candidate's configuration digest), and only the candidate in force's
// are counted: after a change the older candidate's are left out (and
// counted as such). It
// reads at most ShadowChainPages pages of chains and the newest
// ShadowPerChain records of each: bounded, never a scan. The operator API
// (GET /v1/operator/shadow), the page and countersign shadow show it.
const (
	ShadowChainPages = 4
	ShadowPerChain   = 200
	ShadowExamples   = 20
)

// shadowReasonPrefix starts a difference's reason (calls.Service).
const shadowReasonPrefix = "the candidate's rule: "

// ShadowReader reads the trail (the store adapters).
type ShadowReader interface {
	AuditChains(ctx context.Context, q countersign.ListQuery) (countersign.Page[string], error)
	ListAudit(ctx context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error)
}

// ShadowExample is one recorded difference.
type ShadowExample struct {
	At         time.Time `json:"at"`
	Credential string    `json:"credential"`
	Endpoint   string    `json:"endpoint"`
	Differs    string    `json:"differs"`
	LiveRule   string    `json:"live_rule"`
	Candidate  string    `json:"candidate_rule"`
	Count      int       `json:"count"`
}

// ShadowSummary is the summary.
type ShadowSummary struct {
	// Candidate is the candidate_config in force ("" when none).
	Candidate string `json:"candidate"`
	// CandidateDigest is the digest of the candidate whose differences
	// are counted: the one in force, or, when the reader knows none, the
	// one of the newest difference.
	CandidateDigest string `json:"candidate_digest,omitempty"`
	Differences     int    `json:"differences"`
	// Older counts the differences read that other (earlier) candidates
	// made: left out of everything else.
	Older        int             `json:"older,omitempty"`
	ByEndpoint   map[string]int  `json:"by_endpoint"`
	ByCredential map[string]int  `json:"by_credential"`
	Examples     []ShadowExample `json:"examples"`
	// Truncated says there were more chains than were read.
	Truncated bool `json:"truncated,omitempty"`
}

// Shadow summarises the differences recorded in r by the candidate whose
// configuration digest is digest ("": the newest difference's); candidate
// is the candidate_config in force, as the summary names it.
func Shadow(ctx context.Context, r ShadowReader, candidate, digest string) (ShadowSummary, error) {
	sum := ShadowSummary{Candidate: candidate, CandidateDigest: digest, ByEndpoint: map[string]int{}, ByCredential: map[string]int{}, Examples: []ShadowExample{}}
	q := countersign.ListQuery{Limit: countersign.MaxPageSize}
	var found []*countersign.AuditRecord
	for page := 0; ; page++ {
		if page == ShadowChainPages {
			sum.Truncated = true
			break
		}
		chains, err := r.AuditChains(ctx, q)
		if err != nil {
			return sum, err
		}
		for _, c := range chains.Items {
			recs, err := r.ListAudit(ctx, countersign.AuditQuery{Chain: c, Limit: ShadowPerChain, Newest: true})
			if err != nil {
				return sum, err
			}
			for _, rec := range recs {
				if rec.Action == ActionShadowDiffers {
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
	if sum.CandidateDigest == "" && len(found) > 0 {
		sum.CandidateDigest = found[0].Subject
	}
	for _, rec := range found {
		n := int(max(rec.Count, 1))
		if rec.Subject != sum.CandidateDigest {
			sum.Older += n
			continue
		}
		endpoint := rec.Method + " " + rec.Path + " on " + rec.Connection
		sum.Differences += n
		sum.ByEndpoint[endpoint] += n
		sum.ByCredential[rec.Credential] += n
		if len(sum.Examples) < ShadowExamples {
			sum.Examples = append(sum.Examples, ShadowExample{At: rec.At.UTC(), Credential: rec.Credential, Endpoint: endpoint,
				Differs: rec.Outcome, LiveRule: rec.Rule, Candidate: strings.TrimPrefix(rec.Reason, shadowReasonPrefix), Count: n})
		}
	}
	return sum, nil
}

// ShadowReason is a difference's reason: the candidate's rule.
func ShadowReason(candidateRule string) string { return shadowReasonPrefix + candidateRule }
