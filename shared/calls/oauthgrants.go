package calls

import (
	"context"
	"errors"
	"strconv"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// A user's OAuth grants (each MCP client a person authorized) for
// operators: listed a page at a time (a query of the store's list index,
// never a scan) and revoked. A revoked grant's access and refresh tokens
// are refused from the next call on (shared/oauth checks the grant on every
// call); the revocation is on the user's audit chain with the operator as
// actor. These are not remembered approvals (approvalgrants.go).

// OAuthGrantStore is what the operator's OAuth grant routes need of the
// store (both adapters).
type OAuthGrantStore interface {
	ListOAuthGrants(ctx context.Context, credentialID string, q countersign.ListQuery) (countersign.Page[*countersign.OAuthGrant], error)
	OAuthGrant(ctx context.Context, id string) (*countersign.OAuthGrant, error)
	UpdateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error
}

func (s *Service) oauthGrantStore() (OAuthGrantStore, error) {
	gs, ok := s.Store.(OAuthGrantStore)
	if !ok {
		return nil, fault.New(fault.Internal, "this deployment's store keeps no OAuth grants")
	}
	return gs, nil
}

// OAuthGrants lists a page of credential id's OAuth grants (revoked ones
// too, marked) and the cursor of the next page; not_found when there is
// no such credential.
func (s *Service) OAuthGrants(ctx context.Context, op *countersign.Credential, id string, q countersign.ListQuery) ([]*countersign.OAuthGrant, string, error) {
	if err := RequireOperator(op); err != nil {
		return nil, "", err
	}
	if err := checkPage(q); err != nil {
		return nil, "", err
	}
	gs, err := s.oauthGrantStore()
	if err != nil {
		return nil, "", err
	}
	if _, err := s.getCredential(ctx, id); err != nil {
		return nil, "", err
	}
	p, err := gs.ListOAuthGrants(ctx, id, q)
	if err != nil {
		return nil, "", s.listError(ctx, "OAuth grants", err)
	}
	return p.Items, p.Next, nil
}

// RevokeOAuthGrant revokes a user's OAuth grant: its tokens are refused
// from the next call on. A grant already revoked is returned as it is and
// nothing more is recorded; not_found when there is no such grant.
func (s *Service) RevokeOAuthGrant(ctx context.Context, op *countersign.Credential, id string) (*countersign.OAuthGrant, error) {
	if err := RequireOperator(op); err != nil {
		return nil, err
	}
	gs, err := s.oauthGrantStore()
	if err != nil {
		return nil, err
	}
	// Each refresh rotates the grant under us: on a conflict, read it
	// again and retry, a bounded number of times.
	for attempt := 0; ; attempt++ {
		g, err := gs.OAuthGrant(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.New(fault.NotFound, "there is no OAuth grant "+strconv.Quote(clipText(id)))
		}
		if err != nil {
			s.logger().ErrorContext(ctx, "oauth grant not read", "grant", id, "error", err)
			return nil, fault.Wrap(err, "the grant could not be read; try again")
		}
		if g.Revoked {
			return g, nil
		}
		g.Revoked = true
		err = gs.UpdateOAuthGrant(ctx, g)
		if errors.Is(err, store.ErrConflict) && attempt < 5 {
			continue
		}
		if err != nil {
			s.logger().ErrorContext(ctx, "oauth grant not revoked", "grant", id, "error", err)
			return nil, fault.Wrap(err, "the grant could not be revoked; try again")
		}
		client := g.ClientName
		if client == "" {
			client = g.ClientID
		}
		s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(g.Credential), Actor: operatorActor(op), Action: "oauth_grant.revoked", Subject: g.ID,
			Credential: g.Credential, Reason: "the OAuth grant of client " + strconv.Quote(clipText(client)) + ": its tokens are refused from the next call"})
		return g, nil
	}
}
