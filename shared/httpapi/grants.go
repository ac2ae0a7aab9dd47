package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/operatorpage"
	"github.com/countersign/countersign/shared/views"
)

// rememberer is a Decider that also creates the grant an approval with
// remember asks for (calls.Service.AnswerRemember).
type rememberer interface {
	AnswerRemember(ctx context.Context, id string, a confirm.Answer) (*countersign.Confirmation, *countersign.ApprovalGrant, error)
}

var _ rememberer = (*calls.Service)(nil)

// rememberMinutes reads the approve POST's remember field: absent or
// empty is 0 (only this call); otherwise one whole number of minutes from
// 1 (the policy's max_minutes is checked by the pipeline).
func rememberMinutes(form map[string][]string) (int, error) {
	vs := form[approvalpage.RememberField]
	switch {
	case len(vs) == 0 || len(vs) == 1 && vs[0] == "":
		return 0, nil
	case len(vs) > 1:
		return 0, errors.New("remember is given more than once; nothing was decided")
	}
	n, err := strconv.Atoi(vs[0])
	if err != nil || n < 1 {
		return 0, errors.New("remember must be a whole number of minutes from 1; nothing was decided")
	}
	return n, nil
}

// rememberOffer is what the page offers as "Approve and allow for N
// minutes" for c, or nil: one call, no quorum, four eyes or passkey
// recorded (a grant would be refused: calls.Service.AnswerRemember), and
// an endpoint whose approval.remember (in the policy in force) allows it.
func (a *Approver) rememberOffer(c *countersign.Confirmation) *approvalpage.Remember {
	if c == nil || c.Kind != countersign.KindCall || len(c.Operations) != 1 || c.Required > 1 || c.SeparateApprover || confirm.NeedsPasskey(c, nil) {
		return nil
	}
	op := c.Operations[0]
	m, ok := a.Calls.Current().Policy.Resolve(op.Connection, op.Method, op.Path)
	if !ok || m.Endpoint == nil {
		return nil
	}
	r := m.Connection.RememberFor(m.Endpoint)
	if r == nil {
		return nil
	}
	return &approvalpage.Remember{MaxMinutes: r.MaxMinutes, Calls: r.MaxCalls,
		What: op.Method + " " + m.Endpoint.Path + " on " + op.Connection + " by " + c.Credential}
}

// grantText tells the approver what their approval also allowed.
func grantText(g *countersign.ApprovalGrant) string {
	return "Up to " + strconv.Itoa(g.MaxCalls) + " more calls of " + g.Method + " " + g.Endpoint + " by " + g.Credential +
		" run without asking until " + g.ExpiresAt.UTC().Format("15:04 UTC") + " (grant " + g.ID + ")."
}

// grantView is a grant as the API shows it (docs/api.md, Approve and remember).
type grantView struct {
	ID           string         `json:"id"`
	Status       string         `json:"status"`
	Credential   string         `json:"credential"`
	Connection   string         `json:"connection"`
	Method       string         `json:"method"`
	Endpoint     string         `json:"endpoint"`
	Confirmation string         `json:"confirmation"`
	GrantedBy    *views.Decider `json:"granted_by,omitempty"`
	CreatedAt    time.Time      `json:"created_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	MaxCalls     int            `json:"max_calls"`
	CallsLeft    int            `json:"calls_left"`
}

func viewGrant(g *countersign.ApprovalGrant, now time.Time) *grantView {
	if g == nil {
		return nil
	}
	v := &grantView{ID: g.ID, Status: calls.GrantState(g, now), Credential: g.Credential, Connection: g.Connection, Method: g.Method,
		Endpoint: g.Endpoint, Confirmation: g.Confirmation, CreatedAt: g.CreatedAt.UTC(), ExpiresAt: g.ExpiresAt.UTC(),
		MaxCalls: g.MaxCalls, CallsLeft: max(g.CallsLeft, 0)}
	switch p := g.GrantedByPerson; {
	case p != nil:
		v.GrantedBy = &views.Decider{Kind: "person", Issuer: p.Issuer, Subject: p.Subject, Email: p.Email, Name: p.Name, Channel: g.GrantedBy}
	case g.GrantedBy != "":
		v.GrantedBy = &views.Decider{Kind: "channel", Channel: g.GrantedBy}
	}
	return v
}

func viewGrants(gs []*countersign.ApprovalGrant, now time.Time) []*grantView {
	out := make([]*grantView, 0, len(gs))
	for _, g := range gs {
		out = append(out, viewGrant(g, now))
	}
	return out
}

// grants is GET /v1/grants: the caller's own grants.
func (g *Gateway) grants(ctx context.Context, _ *http.Request, _ []byte, cred *countersign.Credential) reply {
	gs, err := g.Calls.GrantsOf(ctx, cred)
	if err != nil {
		return errorOf(err)
	}
	return jsonReply(http.StatusOK, struct {
		Grants []*grantView `json:"grants"`
	}{Grants: viewGrants(gs, time.Now())})
}

// grants serves GET /v1/operator/grants and DELETE
// /v1/operator/grants/<id>; ok is false for any other route.
func (o *Operator) grants(ctx context.Context, r *http.Request, cred *countersign.Credential, rest string) (reply, bool) {
	m := method(r)
	switch {
	case rest == "grants":
		if m != http.MethodGet {
			return codeError(fault.MethodNotAllowed, "use GET /v1/operator/grants"), true
		}
		q, err := o.listQuery("grants", r.URL.RawQuery, false, false)
		if err != nil {
			return errorOf(err), true
		}
		gs, next, err := o.Calls.Grants(ctx, cred, q)
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusOK, struct {
			Grants []*grantView `json:"grants"`
			Next   string       `json:"next_cursor,omitempty"`
		}{Grants: viewGrants(gs, time.Now()), Next: o.sealCursor("grants", q, next)}), true
	case strings.HasPrefix(rest, "grants/"):
		id, err := url.PathUnescape(strings.TrimPrefix(rest, "grants/"))
		if err != nil || id == "" || strings.Contains(id, "/") {
			return codeError(fault.NotFound, "no grant "+rest), true
		}
		if m != http.MethodDelete {
			return codeError(fault.MethodNotAllowed, "use DELETE /v1/operator/grants/<id>"), true
		}
		g, err := o.Calls.RevokeGrant(ctx, cred, id)
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusOK, struct {
			Revoked *grantView `json:"revoked"`
		}{Revoked: viewGrant(g, time.Now())}), true
	}
	return reply{}, false
}

// grantRows are the operator page's rows of grants.
func grantRows(gs []*countersign.ApprovalGrant, now time.Time) []operatorpage.Grant {
	out := make([]operatorpage.Grant, 0, len(gs))
	for _, g := range gs {
		by := g.GrantedBy
		if g.GrantedByPerson != nil {
			by = g.GrantedByPerson.Label()
		}
		out = append(out, operatorpage.Grant{ID: g.ID, Credential: g.Credential, What: g.Method + " " + g.Endpoint + " on " + g.Connection,
			GrantedBy: by, Status: calls.GrantState(g, now), CallsLeft: max(g.CallsLeft, 0), MaxCalls: g.MaxCalls, ExpiresAt: g.ExpiresAt})
	}
	return out
}
