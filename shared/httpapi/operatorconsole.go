package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/operatorpage"
)

// The operator page's console (docs/operators.md, Managing credentials):
// GET /operator/credentials/<id> is a credential's page; its forms, all
// POSTs with the session's CSRF token (checked by page before these run),
// create a key (POST /operator/credentials), change a credential's choice
// or revoke it (POST /operator/credentials/<id>, action change or revoke,
// revoke only with its confirm box ticked), and revoke a grant (POST
// /operator/grants/<id>). Each goes through the same pipeline methods as
// the JSON routes; a refused form changes nothing.

// consoleGet serves the console's GET pages; ok is false for any other path.
func (o *Operator) consoleGet(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims, sub string) (reply, bool) {
	switch sub {
	case "/shadow":
		return o.shadowPage(ctx, r, cred, cl), true
	case "/operations":
		return o.operationsPage(ctx, r, cred, cl), true
	}
	id, ok := pathID(sub, "/credentials/")
	if !ok {
		return reply{}, false
	}
	return o.credentialPage(ctx, r, cred, cl, id, http.StatusOK, "", false, ""), true
}

// pathID reads the one escaped segment after prefix.
func pathID(sub, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(sub, prefix)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	id, err := url.PathUnescape(rest)
	return id, err == nil && id != ""
}

// consoleForm serves the console's POST forms; ok is false for any other path.
func (o *Operator) consoleForm(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims, sub string, form url.Values) (reply, bool) {
	isCreate := sub == "/credentials"
	credID, isCred := pathID(sub, "/credentials/")
	grantID, isGrant := pathID(sub, "/grants/")
	_, isOAuthGrant := pathID(sub, "/oauth-grants/")
	if !isCreate && !isCred && !isGrant && !isOAuthGrant {
		return reply{}, false
	}
	if isOAuthGrant {
		return o.revokeOAuthGrantForm(ctx, r, cred, cl, sub, form)
	}
	mgr := o.credentialManager()
	if mgr == nil {
		return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, "This deployment cannot manage credentials.", true), true
	}
	switch {
	case isCreate:
		n := calls.NewCredential{ID: strings.TrimSpace(form.Get("id")), Choice: form.Get("choice")}
		switch form.Get("read_only") {
		case "":
		case "true":
			n.ReadOnly = true
		default:
			return o.dashboard(ctx, r, cred, cl, http.StatusBadRequest, `read_only must be "true" or absent; nothing was created.`, true), true
		}
		for c := range strings.SplitSeq(form.Get("connections"), ",") {
			if c = strings.TrimSpace(c); c != "" {
				n.Connections = append(n.Connections, c)
			}
		}
		c, key, err := mgr.CreateCredential(ctx, cred, n)
		if err != nil {
			return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err)+" Nothing was created.", true), true
		}
		return o.credentialPage(ctx, r, cred, cl, c.ID, http.StatusOK, "Created the key of "+c.ID+".", false, key), true
	case isCred:
		switch form.Get("action") {
		case "change":
			choice := form.Get("choice")
			c, err := mgr.ChangeCredential(ctx, cred, credID, calls.CredentialChange{Choice: &choice})
			if err != nil {
				return o.credentialPage(ctx, r, cred, cl, credID, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err)+" Nothing was changed.", true, ""), true
			}
			return o.credentialPage(ctx, r, cred, cl, c.ID, http.StatusOK, c.ID+" is on "+c.Choice.String()+" from its next call.", false, ""), true
		case "revoke":
			if form.Get("confirm") != "yes" {
				return o.credentialPage(ctx, r, cred, cl, credID, http.StatusBadRequest, "Tick the box to confirm the revocation; nothing was revoked.", true, ""), true
			}
			c, err := mgr.RevokeCredential(ctx, cred, credID)
			if err != nil {
				return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err), true), true
			}
			return o.dashboard(ctx, r, cred, cl, http.StatusOK, "Revoked "+c.ID+": its key is refused from its next call.", false), true
		}
		return o.credentialPage(ctx, r, cred, cl, credID, http.StatusBadRequest, `action must be "change" or "revoke"; nothing was done.`, true, ""), true
	}
	g, err := o.Calls.RevokeGrant(ctx, cred, grantID)
	if err != nil {
		return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), fault.ReasonOf(err), true), true
	}
	return o.credentialPage(ctx, r, cred, cl, g.Credential, http.StatusOK, "Revoked grant "+g.ID+".", false, ""), true
}

// credentialPage renders one credential's page (with the key just made,
// when newKey is set).
func (o *Operator) credentialPage(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims, id string, status int, msg string, isErr bool, newKey string) reply {
	p := operatorpage.Page{Operator: operatorLabel(cred), Person: cred.IsPerson(), CSRF: o.csrfToken(cl.ID), Message: msg, Error: isErr}
	mgr := o.credentialManager()
	if mgr == nil {
		return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, "This deployment cannot manage credentials.", true)
	}
	d, err := mgr.CredentialDetail(ctx, cred, id)
	if err != nil {
		if isErr {
			msg = msg + " " + fault.ReasonOf(err)
		} else {
			msg = fault.ReasonOf(err)
		}
		return o.dashboard(ctx, r, cred, cl, httpStatus(fault.CodeOf(err)), msg, true)
	}
	if newKey != "" {
		p.NewKey, p.NewKeyFor = newKey, d.Credential.ID
	}
	c := d.Credential
	cp := &operatorpage.CredentialPage{Credential: credentialRow(c), Origin: c.Origin.String(), PendingMore: d.PendingMore}
	if pr := c.Person(); pr != nil {
		cp.Person = pr.Label()
	}
	for _, st := range d.Pending {
		row := operatorpage.Confirmation{ID: st.ID, Kind: string(st.Kind), Credential: st.Credential, Status: string(st.Effective), ExpiresAt: st.ExpiresAt}
		for _, op := range st.Operations {
			row.Operations = append(row.Operations, op.Method+" "+op.Path+" on "+op.Connection)
		}
		cp.Pending = append(cp.Pending, row)
	}
	cp.Grants = grantRows(d.Grants, o.now())
	cp.User = c.IsPerson()
	cp.OAuthGrants = oauthGrantRows(d.OAuthGrants, o.now())
	cp.OAuthGrantsMore = d.OAuthGrantsNext != ""
	p.Detail = cp
	return o.render(status, p, nil)
}

// credentialRow is a credential as the page's tables show it.
func credentialRow(c countersign.Credential) operatorpage.Credential {
	row := operatorpage.Credential{ID: c.ID, Choice: c.Choice.String(), ReadOnly: c.ReadOnly, Operator: c.Operator, Connections: "all"}
	if len(c.Connections) > 0 {
		row.Connections = strings.Join(c.Connections, ", ")
	}
	if pr := c.Person(); pr != nil {
		row.Person = pr.Label()
	}
	if lc := c.LastClient; lc != nil {
		row.HasClient, row.Client, row.ClientCanAsk, row.ClientSeen = true, strings.TrimSpace(lc.Name+" "+lc.Version), lc.CanAsk, lc.SeenAt
	}
	return row
}

// shadowPage renders the policy trial (GET /operator/shadow): the same
// summary as GET /v1/operator/shadow.
func (o *Operator) shadowPage(ctx context.Context, r *http.Request, cred *countersign.Credential, cl *sessionClaims) reply {
	if err := calls.RequireOperator(cred); err != nil {
		return o.dashboard(ctx, r, cred, cl, http.StatusForbidden, fault.ReasonOf(err), true)
	}
	if o.Audit == nil {
		return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, "This deployment reads no audit trail.", true)
	}
	sum, err := o.shadowSummary(ctx)
	if err != nil {
		o.logger().ErrorContext(ctx, "shadow summary not read", "error", err)
		return o.dashboard(ctx, r, cred, cl, http.StatusInternalServerError, "The audit trail could not be read; try again.", true)
	}
	sp := &operatorpage.ShadowPage{Candidate: sum.Candidate, Digest: sum.CandidateDigest, Differences: sum.Differences, Older: sum.Older, Truncated: sum.Truncated}
	if sp.Candidate == "" {
		sp.Candidate = "(none configured now)"
	}
	for _, e := range sum.Examples {
		sp.Examples = append(sp.Examples, operatorpage.ShadowExample{At: e.At, Credential: e.Credential, Endpoint: e.Endpoint,
			Differs: e.Differs, Rule: e.Candidate, Count: e.Count})
	}
	p := operatorpage.Page{Operator: operatorLabel(cred), Person: cred.IsPerson(), CSRF: o.csrfToken(cl.ID), Shadow: sp}
	return o.render(http.StatusOK, p, nil)
}
