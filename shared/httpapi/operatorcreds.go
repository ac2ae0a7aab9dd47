package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
)

// CredentialManager is what managing credentials asks of the pipeline
// (calls.Service): create a key, change or revoke a credential, read one.
type CredentialManager interface {
	CreateCredential(ctx context.Context, op *countersign.Credential, n calls.NewCredential) (countersign.Credential, string, error)
	ChangeCredential(ctx context.Context, op *countersign.Credential, id string, ch calls.CredentialChange) (countersign.Credential, error)
	RevokeCredential(ctx context.Context, op *countersign.Credential, id string) (countersign.Credential, error)
	CredentialDetail(ctx context.Context, op *countersign.Credential, id string) (calls.CredentialDetail, error)
}

var _ CredentialManager = (*calls.Service)(nil)

// credentialBody is the body of POST /v1/operator/credentials.
type credentialBody struct {
	ID          string   `json:"id"`
	Choice      string   `json:"choice"`
	ReadOnly    bool     `json:"read_only"`
	Connections []string `json:"connections"`
}

// credentialPatch is the body of PATCH /v1/operator/credentials/<id>: a
// field left out (or null) is left as it is.
type credentialPatch struct {
	Choice      *string   `json:"choice"`
	ReadOnly    *bool     `json:"read_only"`
	Connections *[]string `json:"connections"`
}

// credentialDetailView is GET /v1/operator/credentials/<id>.
type credentialDetailView struct {
	credentialView
	Origin      string       `json:"origin"`
	Source      string       `json:"source,omitempty"`
	Person      string       `json:"person,omitempty"`
	Pending     []reviewView `json:"pending"`
	PendingMore bool         `json:"pending_more,omitempty"`
	Grants      []*grantView `json:"grants"`
	// OAuthGrants are a user's first page of OAuth grants; more are
	// listed by GET /v1/operator/credentials/<id>/oauth-grants.
	OAuthGrants     []oauthGrantView `json:"oauth_grants,omitempty"`
	OAuthGrantsMore bool             `json:"oauth_grants_more,omitempty"`
}

// credentialManager is the pipeline as a CredentialManager, or nil.
func (o *Operator) credentialManager() CredentialManager {
	m, _ := o.Calls.(CredentialManager)
	return m
}

// credentials serves POST /v1/operator/credentials and GET, PATCH and
// DELETE /v1/operator/credentials/<id>; ok is false for any other route
// (GET /v1/operator/credentials lists them, in api).
func (o *Operator) credentials(ctx context.Context, r *http.Request, b []byte, cred *countersign.Credential, rest string) (reply, bool) {
	m := method(r)
	if rest == "credentials" && m != http.MethodPost {
		return reply{}, false
	}
	if rest != "credentials" && !strings.HasPrefix(rest, "credentials/") {
		return reply{}, false
	}
	mgr := o.credentialManager()
	if mgr == nil {
		return codeError(fault.Internal, "this deployment cannot manage credentials"), true
	}
	if rest == "credentials" {
		var body credentialBody
		if err := callbody.DecodeStrict(b, &body, nil); err != nil {
			return codeError(fault.InvalidRequest, "malformed JSON body: "+err.Error()+"; nothing was created"), true
		}
		c, key, err := mgr.CreateCredential(ctx, cred, calls.NewCredential(body))
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusCreated, struct {
			Key        string         `json:"key"`
			Credential credentialView `json:"credential"`
		}{Key: key, Credential: viewCredential(c)}), true
	}
	id, err := url.PathUnescape(strings.TrimPrefix(rest, "credentials/"))
	if err != nil || id == "" || strings.Contains(id, "/") {
		return codeError(fault.NotFound, "no credential "+rest), true
	}
	switch m {
	case http.MethodGet:
		d, err := mgr.CredentialDetail(ctx, cred, id)
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusOK, viewCredentialDetail(d, time.Now())), true
	case http.MethodPatch:
		var p credentialPatch
		if err := callbody.DecodeStrict(b, &p, nil); err != nil {
			return codeError(fault.InvalidRequest, "malformed JSON body: "+err.Error()+"; nothing was changed"), true
		}
		c, err := mgr.ChangeCredential(ctx, cred, id, calls.CredentialChange(p))
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusOK, viewCredential(c)), true
	case http.MethodDelete:
		c, err := mgr.RevokeCredential(ctx, cred, id)
		if err != nil {
			return errorOf(err), true
		}
		return jsonReply(http.StatusOK, struct {
			Revoked credentialView `json:"revoked"`
		}{Revoked: viewCredential(c)}), true
	}
	return codeError(fault.MethodNotAllowed, "use GET, PATCH or DELETE /v1/operator/credentials/<id>"), true
}

func viewCredentialDetail(d calls.CredentialDetail, now time.Time) credentialDetailView {
	c := d.Credential
	v := credentialDetailView{credentialView: viewCredential(c), Origin: c.Origin.String(), Source: c.Source,
		Pending: []reviewView{}, PendingMore: d.PendingMore, Grants: viewGrants(d.Grants, now)}
	if p := c.Person(); p != nil {
		v.Person = p.Label()
		v.OAuthGrants, v.OAuthGrantsMore = viewOAuthGrants(d.OAuthGrants, now), d.OAuthGrantsNext != ""
	}
	for _, st := range d.Pending {
		v.Pending = append(v.Pending, viewReview(st))
	}
	return v
}
