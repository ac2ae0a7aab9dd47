package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// countersign shadow --config LIVE DIR tries a candidate configuration
// offline, without a store or a running candidate_config: every endpoint
// of either configuration, called plainly (calls.SampleCall) by every
// credential of the live one, is decided by both with the pipeline's own
// decision (calls.Service.Explain, no I/O) and printed where the outcome,
// tier or rule would differ (calls.ShadowDiffers, as the gateway records
// policy.shadow_differs). A problem in DIR is reported as the server
// reports a configuration it will not load: file, field, what is wrong.

// shadowDiff is one call the candidate decides otherwise.
type shadowDiff struct {
	Credential string `json:"credential"`
	Connection string `json:"connection"`
	Method     string `json:"method"`
	Endpoint   string `json:"endpoint"`
	Live       string `json:"live"`
	Candidate  string `json:"candidate"`
	LiveRule   string `json:"live_rule"`
	// CandidateRule is the rule that decided in the candidate.
	CandidateRule string `json:"candidate_rule"`
}

// shadowReport is what --json prints.
type shadowReport struct {
	Live        string       `json:"live"`
	Candidate   string       `json:"candidate"`
	Calls       int          `json:"calls"`
	Differences []shadowDiff `json:"differences"`
}

// shadowDir compares the candidate in dir with the live configuration in
// liveDir, for the credential credID ("": all of the live one's).
func shadowDir(liveDir, dir, credID string, asJSON bool, stdout io.Writer) error {
	live, err := config.Load(liveDir, nil)
	if err != nil {
		return err
	}
	cand, err := config.Load(dir, nil)
	if err != nil {
		// Unwrapped: file, field and problem, as validate prints them.
		return err
	}
	creds := live.Credentials
	if credID != "" {
		c, err := configCredential(live, credID)
		if err != nil {
			return err
		}
		creds = []countersign.Credential{*c}
	}
	rep := shadowReport{Live: live.Dir, Candidate: cand.Dir, Differences: []shadowDiff{}}
	ls, cs := (&calls.Service{}).WithConfig(live), (&calls.Service{}).WithConfig(cand)
	for _, call := range sampleCalls(live.Policy, cand.Policy) {
		for i := range creds {
			cred := &creds[i]
			rep.Calls++
			ld, lok := decideOffline(ls, cred, call)
			cd, cok := decideOffline(cs, cred, call)
			if lok == cok && !calls.ShadowDiffers(ld.d, cd.d) && ld.text == cd.text {
				continue
			}
			rep.Differences = append(rep.Differences, shadowDiff{Credential: cred.ID, Connection: call.Connection, Method: call.Method,
				Endpoint: call.endpoint, Live: ld.text, Candidate: cd.text, LiveRule: ld.d.Rule, CandidateRule: cd.d.Rule})
		}
	}
	if asJSON {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%d of %d calls (each endpoint of %s or %s, called plainly by each of %d credentials) the candidate would decide otherwise\n",
		len(rep.Differences), rep.Calls, rep.Live, rep.Candidate, len(creds))
	if len(rep.Differences) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCREDENTIAL\tENDPOINT\tLIVE\tCANDIDATE\tCANDIDATE RULE\tLIVE RULE")
	for _, d := range rep.Differences {
		fmt.Fprintf(tw, "%s\t%s %s on %s\t%s\t%s\t%s\t%s\n", d.Credential, d.Method, d.Endpoint, d.Connection, d.Live, d.Candidate, d.CandidateRule, d.LiveRule)
	}
	return tw.Flush()
}

// sampleCall is a plain call of one endpoint, with its template.
type sampleCall struct {
	*calls.Call
	endpoint string
}

// sampleCalls is one plain call of each endpoint of either policy, live's
// first, each (connection, method, template) once.
func sampleCalls(sets ...*policy.Set) []sampleCall {
	var out []sampleCall
	seen := map[[3]string]bool{}
	for _, set := range sets {
		if set == nil {
			continue
		}
		for _, conn := range set.Connections() {
			for _, ep := range conn.Endpoints {
				k := [3]string{conn.Name, ep.Method, ep.Path}
				if seen[k] {
					continue
				}
				seen[k] = true
				out = append(out, sampleCall{Call: calls.SampleCall(conn.Name, ep), endpoint: ep.Path})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b sampleCall) int { return strings.Compare(a.Connection, b.Connection) })
	return out
}

// offlineDecision is a decision and how a difference shows it.
type offlineDecision struct {
	d    policy.Decision
	text string
}

// decideOffline decides call for cred as the gateway does without asking
// a hook; ok is false when the call is refused before a decision (its
// connection or path is not the configuration's).
func decideOffline(s *calls.Service, cred *countersign.Credential, call sampleCall) (offlineDecision, bool) {
	c := *call.Call
	_, d, _, err := s.Explain(cred, &c)
	if err != nil {
		return offlineDecision{text: "refused " + string(fault.CodeOf(err))}, false
	}
	return offlineDecision{d: d, text: calls.DecisionText(d)}, true
}
