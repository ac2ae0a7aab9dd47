package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/operatorpage"
	"github.com/countersign/countersign/shared/policy"
)

// The operations page (GET /operator/operations, docs/operators.md): each
// connection's endpoints with their tier and every rule that can change it
// or how its calls are approved, read from the live configuration; with
// ?credential=<id>, the outcome of a plain call (calls.SampleCall) to each
// for that credential, as the pipeline's Explain decides it (the same
// decision as countersign explain: nothing is re-encoded here). It only
// reads: the configuration is changed by pushing it.

// Explainer decides a call for a credential without running it
// (calls.Service.Explain).
type Explainer interface {
	Explain(cred *countersign.Credential, c *calls.Call) (policy.Input, policy.Decision, []policy.Check, error)
}

var _ Explainer = (*calls.Service)(nil)

// operationsPage renders GET /operator/operations.
func (o *Operator) operationsPage(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims) reply {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q["credential"]) > 1 || len(q) > 1 || len(q) == 1 && !q.Has("credential") {
		return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, "The operations page takes one parameter, credential, once.", true)
	}
	p := operatorpage.Page{Operator: operatorLabel(cred), Person: cred.IsPerson(), CSRF: o.csrfToken(cl.ID)}
	ops := &operatorpage.OperationsPage{Credential: q.Get("credential")}
	// The credentials to choose from: the first page, and the chosen one.
	creds, _, err := o.Calls.Credentials(ctx, cred, countersign.ListQuery{Limit: countersign.MaxPageSize})
	if err != nil {
		return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err), true)
	}
	for _, c := range creds {
		ops.Credentials = append(ops.Credentials, c.ID)
	}
	var chosen *countersign.Credential
	if id := ops.Credential; id != "" {
		ex, ok := o.Calls.(Explainer)
		if !ok || o.Sessions == nil {
			return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, "This deployment cannot explain decisions.", true)
		}
		c, err := o.Sessions.GetCredential(ctx, id)
		if err != nil {
			p.Message, p.Error = "There is no credential "+strconv.Quote(id)+".", true
			ops.Credential = ""
			p.Operations = ops
			operationRows(ops, o.Calls.Current().Policy, nil, nil)
			return o.render(http.StatusNotFound, p, nil)
		}
		chosen = &c
		if !containsString(ops.Credentials, c.ID) {
			ops.Credentials = append(ops.Credentials, c.ID)
		}
		operationRows(ops, o.Calls.Current().Policy, chosen, ex)
	} else {
		operationRows(ops, o.Calls.Current().Policy, nil, nil)
	}
	p.Operations = ops
	return o.render(http.StatusOK, p, nil)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// operationRows fills ops with every connection of set, and with cred
// and ex, each endpoint's outcome for cred.
func operationRows(ops *operatorpage.OperationsPage, set *policy.Set, cred *countersign.Credential, ex Explainer) {
	if set == nil {
		return
	}
	for _, conn := range set.Connections() {
		oc := operatorpage.OperationsConnection{Name: conn.Name}
		if conn.Hooked {
			oc.Rules = append(oc.Rules, "hooks: asked on every call; a hook may deny a call, ask for confirmation or raise its tier")
		}
		if conn.EscalateDelegated {
			oc.Rules = append(oc.Rules, "delegations: a delegated call at the confirm tier is raised to review")
		}
		for _, ep := range conn.Endpoints {
			op := operatorpage.Operation{Method: ep.Method, Path: ep.Path, Tier: ep.Tier.String(), Rules: endpointRules(conn, ep)}
			if cred != nil {
				_, d, _, err := ex.Explain(cred, calls.SampleCall(conn.Name, ep))
				if err != nil {
					op.Outcome, op.Rule = "not decided: "+fault.ReasonOf(err), string(fault.CodeOf(err))
				} else {
					op.Outcome, op.Rule = calls.DecisionText(d)+": "+d.Reason, d.Rule
				}
			}
			oc.Operations = append(oc.Operations, op)
		}
		ops.Connections = append(ops.Connections, oc)
	}
}

// endpointRules are the rules that can change ep's tier or how its calls
// are approved, each a sentence, in the order the decision reads them.
func endpointRules(conn *policy.Connection, ep *policy.Endpoint) []string {
	var rs []string
	if ep.Rule != "" {
		rs = append(rs, "tier: "+ep.Rule)
	}
	if ep.OperatorOnly {
		rs = append(rs, "operator-gated: runs only from the operator surface")
	}
	if ep.Hidden {
		rs = append(rs, "hidden: agents cannot see or call it")
	}
	for _, t := range ep.Escalate {
		rule := t.Rule
		if rule == "" {
			rule = t.Field + " above " + strconv.FormatFloat(t.Above, 'f', -1, 64) + ": " + t.Escalate.String()
		}
		rs = append(rs, "threshold: "+rule)
	}
	for _, rt := range ep.Rates {
		rs = append(rs, "velocity: "+rt.Rule)
	}
	if ep.Show != nil {
		s := "show: the approver sees GET " + ep.Show.Path
		if ep.Show.Recheck {
			s += ", read again right before the write"
		}
		rs = append(rs, s)
	}
	if len(ep.Editable) > 0 {
		rs = append(rs, "editable: the approver may change "+strings.Join(ep.Editable, ", "))
	}
	if rm := conn.RememberFor(ep); rm != nil {
		rs = append(rs, "remember: an approver may allow later calls for up to "+strconv.Itoa(rm.MaxMinutes)+" minutes and "+strconv.Itoa(rm.MaxCalls)+" calls")
	}
	approvers := conn.Approvers
	if ep.Approvers != nil {
		approvers = ep.Approvers
	}
	if approvers != nil {
		rs = append(rs, "approvers: "+approvers.String())
	}
	rules := conn.RulesFor(ep)
	if rules.Required > 1 {
		rs = append(rs, "quorum: "+strconv.Itoa(rules.Required)+" distinct people approve each call")
	}
	if rules.SeparateApprover {
		rs = append(rs, "four eyes: the person who made a call may not approve it")
	}
	if rules.Passkey {
		rs = append(rs, "passkey: each approval is a signed-in person's passkey assertion")
	}
	if rules.OutOfBandOnly {
		rs = append(rs, "out of band: approved on the approval page, never in the agent's client")
	}
	return rs
}
