package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/operatorpage"
)

// A user's OAuth grants on the operator surface (docs/operators.md,
// People and their OAuth grants): GET
// /v1/operator/credentials/<id>/oauth-grants lists a page of them (limit,
// cursor), DELETE /v1/operator/oauth-grants/<id> revokes one, and the page
// shows a user's grants on their credential's page, each revoked by a
// POST /operator/oauth-grants/<id> form with a confirmation box.

// OAuthGranter is the pipeline's side of it (calls.Service).
type OAuthGranter interface {
	OAuthGrants(ctx context.Context, op *countersign.Credential, id string, q countersign.ListQuery) ([]*countersign.OAuthGrant, string, error)
	RevokeOAuthGrant(ctx context.Context, op *countersign.Credential, id string) (*countersign.OAuthGrant, error)
}

var _ OAuthGranter = (*calls.Service)(nil)

// oauthGrantView is an OAuth grant as the API shows it (never its refresh
// token's hash).
type oauthGrantView struct {
	ID         string    `json:"id"`
	Credential string    `json:"credential"`
	ClientID   string    `json:"client_id"`
	ClientName string    `json:"client_name,omitempty"`
	Resource   string    `json:"resource"`
	Scope      string    `json:"scope,omitempty"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// oauthGrantState is "revoked", "expired" or "active".
func oauthGrantState(g *countersign.OAuthGrant, now time.Time) string {
	switch {
	case g.Revoked:
		return "revoked"
	case !now.Before(g.ExpiresAt):
		return "expired"
	}
	return "active"
}

func viewOAuthGrants(gs []*countersign.OAuthGrant, now time.Time) []oauthGrantView {
	out := make([]oauthGrantView, 0, len(gs))
	for _, g := range gs {
		out = append(out, oauthGrantView{ID: g.ID, Credential: g.Credential, ClientID: g.ClientID, ClientName: g.ClientName, Resource: g.Resource,
			Scope: g.Scope, Status: oauthGrantState(g, now), CreatedAt: g.CreatedAt.UTC(), ExpiresAt: g.ExpiresAt.UTC()})
	}
	return out
}

// oauthGranter is the pipeline as an OAuthGranter, or nil.
func (o *Operator) oauthGranter() OAuthGranter {
	g, _ := o.Calls.(OAuthGranter)
	return g
}

// oauthGrants serves the JSON routes; ok is false for any other route.
func (o *Operator) oauthGrants(ctx context.Context, r *http.Request, cred *countersign.Credential, rest string) (reply, bool) {
	m := method(r)
	if id, ok := strings.CutPrefix(rest, "oauth-grants/"); ok {
		id, err := url.PathUnescape(id)
		if err != nil || id == "" || strings.Contains(id, "/") {
			return codeError(fault.NotFound, "no OAuth grant "+rest), true
		}
		if m != http.MethodDelete {
			return codeError(fault.MethodNotAllowed, "use DELETE /v1/operator/oauth-grants/<id>"), true
		}
		og := o.oauthGranter()
		if og == nil {
			return codeError(fault.Internal, "this deployment cannot manage OAuth grants"), true
		}
		g, err := og.RevokeOAuthGrant(ctx, cred, id)
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusOK, struct {
			Revoked oauthGrantView `json:"revoked"`
		}{Revoked: viewOAuthGrants([]*countersign.OAuthGrant{g}, o.now())[0]}), true
	}
	inner, ok := strings.CutPrefix(rest, "credentials/")
	if !ok {
		return reply{}, false
	}
	escaped, ok := strings.CutSuffix(inner, "/oauth-grants")
	if !ok {
		return reply{}, false
	}
	id, err := url.PathUnescape(escaped)
	if err != nil || id == "" || strings.Contains(id, "/") {
		return codeError(fault.NotFound, "no credential "+escaped), true
	}
	if m != http.MethodGet {
		return codeError(fault.MethodNotAllowed, "use GET /v1/operator/credentials/<id>/oauth-grants"), true
	}
	og := o.oauthGranter()
	if og == nil {
		return codeError(fault.Internal, "this deployment cannot manage OAuth grants"), true
	}
	name := "oauth-grants:" + id
	q, err := o.listQuery(name, r.URL.RawQuery, false, false)
	if err != nil {
		return errorOf(err), true
	}
	gs, next, err := og.OAuthGrants(ctx, cred, id, q)
	if err != nil {
		return errorOf(err), true
	}
	return jsonReply(http.StatusOK, struct {
		Grants []oauthGrantView `json:"oauth_grants"`
		Next   string           `json:"next_cursor,omitempty"`
	}{Grants: viewOAuthGrants(gs, o.now()), Next: o.sealCursor(name, q, next)}), true
}

// oauthGrantRows are a user's OAuth grants as their credential's page
// shows them.
func oauthGrantRows(gs []*countersign.OAuthGrant, now time.Time) []operatorpage.OAuthGrant {
	out := make([]operatorpage.OAuthGrant, 0, len(gs))
	for _, g := range gs {
		client := g.ClientName
		if client == "" {
			client = g.ClientID
		}
		out = append(out, operatorpage.OAuthGrant{ID: g.ID, Client: client, Resource: g.Resource, Status: oauthGrantState(g, now),
			CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt})
	}
	return out
}

// revokeOAuthGrantForm serves POST /operator/oauth-grants/<id> (its
// confirmation box ticked); ok is false for any other path.
func (o *Operator) revokeOAuthGrantForm(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims, sub string, form url.Values) (reply, bool) {
	id, ok := pathID(sub, "/oauth-grants/")
	if !ok {
		return reply{}, false
	}
	back := form.Get("credential")
	if form.Get("confirm") != "yes" {
		if back != "" {
			return o.credentialPage(ctx, r, cred, cl, back, http.StatusBadRequest, "Tick the box to confirm the revocation; nothing was revoked.", true, ""), true
		}
		return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, "Tick the box to confirm the revocation; nothing was revoked.", true), true
	}
	og := o.oauthGranter()
	if og == nil {
		return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, "This deployment cannot manage OAuth grants.", true), true
	}
	g, err := og.RevokeOAuthGrant(ctx, cred, id)
	if err != nil {
		return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err)+" Nothing was revoked.", true), true
	}
	return o.credentialPage(ctx, r, cred, cl, g.Credential, http.StatusOK, "Revoked OAuth grant "+g.ID+": its tokens are refused from the next call.", false, ""), true
}
