package calls

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/credential"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// Managing credentials (the operator API and page, docs/operators.md):
// create a key, change what a credential does, revoke it, and read one
// credential with what is pending for it. Every change is on the
// credential's audit chain with the operator as actor.

// CredentialStore is what managing credentials writes (the store adapters).
type CredentialStore interface {
	CreateCredential(ctx context.Context, c countersign.Credential) error
	// UpdateCredential replaces the credential only if it is still stored
	// with the same key hash (store.ErrNotFound, store.ErrConflict).
	UpdateCredential(ctx context.Context, c countersign.Credential) error
	DeleteCredential(ctx context.Context, id string) error
}

// NewCredential is what an operator asks for a new key: an id, the choice
// at the confirm tier ("" starts on refuse, an operator-made key's
// default), read-only, and the connections it may use (none: all). The
// key made is never an operator's: role operator is given on the command
// line only.
type NewCredential struct {
	ID          string
	Choice      string
	ReadOnly    bool
	Connections []string
}

// CredentialChange changes a credential; a nil field is left as it is.
// Connections set to an empty list means all connections.
type CredentialChange struct {
	Choice      *string
	ReadOnly    *bool
	Connections *[]string
}

// maxPendingPages bounds how many pages of pending confirmations a
// credential's page reads to find its own (CredentialDetail).
const maxPendingPages = 4

// CredentialDetail is one credential as its page shows it.
type CredentialDetail struct {
	Credential countersign.Credential
	// Pending are its pending confirmations among the first
	// maxPendingPages pages of pending ones (oldest first); PendingMore
	// says there were more pages not read.
	Pending     []Status
	PendingMore bool
	// Grants are its remembered approvals (spent and expired included
	// until deleted).
	Grants []*countersign.ApprovalGrant
	// OAuthGrants are a user's first page of OAuth grants (the MCP
	// clients the person authorized, revoked ones marked); OAuthGrantsNext
	// the cursor of the next page (OAuthGrants).
	OAuthGrants     []*countersign.OAuthGrant
	OAuthGrantsNext string
}

func (s *Service) credentialStore() (CredentialStore, error) {
	cs, ok := s.Store.(CredentialStore)
	if !ok {
		return nil, fault.New(fault.Internal, "this deployment's store cannot change credentials")
	}
	return cs, nil
}

// parseChoice reads a choice's wire name; "" is refuse when empty is allowed.
func parseChoice(v string) (countersign.Choice, error) {
	ch, ok := countersign.ParseChoice(v)
	if !ok {
		return 0, fault.Errorf(fault.InvalidRequest, "choice %s is not a choice: use refuse, ask_person, ask_agent or run_without_asking", strconv.Quote(clipText(v)))
	}
	return ch, nil
}

// checkConnections returns the connections, each once, refusing one the
// configuration in force does not have.
func checkConnections(cfg *config.Config, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if cfg.Connections[n] == nil {
			return nil, fault.Errorf(fault.InvalidRequest, "connection %s is not configured (configured: %s)", strconv.Quote(clipText(n)), strings.Join(configuredNames(cfg), ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func configuredNames(cfg *config.Config) []string {
	var out []string
	for n := range cfg.Connections {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// CreateCredential makes a key for an operator: the key is returned once,
// only its SHA-256 is stored. An id in use is credential_exists (409).
func (s *Service) CreateCredential(ctx context.Context, op *countersign.Credential, n NewCredential) (countersign.Credential, string, error) {
	if err := RequireOperator(op); err != nil {
		return countersign.Credential{}, "", err
	}
	if err := credential.CheckID(n.ID); err != nil {
		return countersign.Credential{}, "", fault.New(fault.InvalidRequest, err.Error())
	}
	c := countersign.Credential{ID: n.ID, Origin: countersign.OriginOperator, ReadOnly: n.ReadOnly, Choice: countersign.DefaultChoice(countersign.OriginOperator)}
	if n.Choice != "" {
		ch, err := parseChoice(n.Choice)
		if err != nil {
			return countersign.Credential{}, "", err
		}
		c.Choice = ch
	}
	conns, err := checkConnections(s.Current(), n.Connections)
	if err != nil {
		return countersign.Credential{}, "", err
	}
	c.Connections = conns
	cs, err := s.credentialStore()
	if err != nil {
		return countersign.Credential{}, "", err
	}
	key := credential.NewKey()
	c.KeyHash = config.HashKey(key)
	if err := cs.CreateCredential(ctx, c); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return countersign.Credential{}, "", fault.Errorf(fault.CredentialExists, "credential %s already exists: revoke it first to replace its key, or choose another id", c.ID)
		}
		s.logger().ErrorContext(ctx, "credential not created", "credential", c.ID, "error", err)
		return countersign.Credential{}, "", fault.Wrap(err, "the credential could not be created; try again")
	}
	s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(c.ID), Actor: operatorActor(op), Action: "key.created", Subject: c.ID,
		Credential: c.ID, Reason: credential.Describe(c)})
	return c, key, nil
}

// getCredential reads a credential for an operator: not_found if none.
func (s *Service) getCredential(ctx context.Context, id string) (countersign.Credential, error) {
	c, err := s.Store.GetCredential(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, fault.New(fault.NotFound, "there is no credential "+strconv.Quote(clipText(id)))
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "credential not read", "credential", id, "error", err)
		return c, fault.Wrap(err, "the credential could not be read; try again")
	}
	return c, nil
}

// ChangeCredential changes a credential's choice, read-only or
// connections. The whole change is checked before anything is written; a
// change that changes nothing writes nothing and records nothing.
func (s *Service) ChangeCredential(ctx context.Context, op *countersign.Credential, id string, ch CredentialChange) (countersign.Credential, error) {
	if err := RequireOperator(op); err != nil {
		return countersign.Credential{}, err
	}
	var choice countersign.Choice
	if ch.Choice != nil {
		v, err := parseChoice(*ch.Choice)
		if err != nil {
			return countersign.Credential{}, err
		}
		choice = v
	}
	var conns []string
	if ch.Connections != nil {
		v, err := checkConnections(s.Current(), *ch.Connections)
		if err != nil {
			return countersign.Credential{}, err
		}
		conns = v
	}
	cs, err := s.credentialStore()
	if err != nil {
		return countersign.Credential{}, err
	}
	c, err := s.getCredential(ctx, id)
	if err != nil {
		return c, err
	}
	var changes []string
	if ch.Choice != nil && c.Choice != choice {
		changes = append(changes, "choice "+c.Choice.String()+" -> "+choice.String())
		c.Choice = choice
	}
	if ch.ReadOnly != nil && c.ReadOnly != *ch.ReadOnly {
		changes = append(changes, fmt.Sprintf("read_only %v -> %v", c.ReadOnly, *ch.ReadOnly))
		c.ReadOnly = *ch.ReadOnly
	}
	if ch.Connections != nil && !slices.Equal(c.Connections, conns) {
		changes = append(changes, "connections "+connsText(c.Connections)+" -> "+connsText(conns))
		c.Connections = conns
	}
	if len(changes) == 0 {
		return c, nil
	}
	// The write is conditional on the key read: a change racing a
	// revocation (or a revocation and a new key under the same id) fails
	// rather than bring the old key back. The gateway's last-client write
	// can only be lost if it lands in the same instant, and is redone on a
	// later call.
	switch err := cs.UpdateCredential(ctx, c); {
	case errors.Is(err, store.ErrNotFound):
		return countersign.Credential{}, fault.New(fault.NotFound, "credential "+c.ID+" was revoked meanwhile; nothing was changed")
	case errors.Is(err, store.ErrConflict):
		return countersign.Credential{}, fault.New(fault.CredentialExists, "credential "+c.ID+" was replaced meanwhile (a new key); nothing was changed: look at it again")
	case err != nil:
		s.logger().ErrorContext(ctx, "credential not changed", "credential", id, "error", err)
		return countersign.Credential{}, fault.Wrap(err, "the credential could not be changed; try again")
	}
	s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(c.ID), Actor: operatorActor(op), Action: "key.changed", Subject: c.ID,
		Credential: c.ID, Reason: strings.Join(changes, "; ")})
	return c, nil
}

func connsText(cs []string) string {
	if len(cs) == 0 {
		return "all"
	}
	return strings.Join(cs, ",")
}

// RevokeCredential deletes a credential: its key is refused (401) from the
// next call on, its OAuth access tokens too (they are checked against the
// credential on every call), the person it names is signed out, and its
// remembered approvals are deleted so that a credential made later with
// the same id inherits none.
func (s *Service) RevokeCredential(ctx context.Context, op *countersign.Credential, id string) (countersign.Credential, error) {
	if err := RequireOperator(op); err != nil {
		return countersign.Credential{}, err
	}
	cs, err := s.credentialStore()
	if err != nil {
		return countersign.Credential{}, err
	}
	c, err := s.getCredential(ctx, id)
	if err != nil {
		return c, err
	}
	if err := cs.DeleteCredential(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return countersign.Credential{}, fault.New(fault.NotFound, "there is no credential "+strconv.Quote(clipText(id)))
		}
		s.logger().ErrorContext(ctx, "credential not revoked", "credential", id, "error", err)
		return countersign.Credential{}, fault.Wrap(err, "the credential could not be revoked; try again")
	}
	reason := "its key is refused from the next call on"
	gs, err := s.Store.ApprovalGrantsOf(ctx, id)
	if err == nil {
		for _, g := range gs {
			if _, derr := s.Store.DeleteApprovalGrant(ctx, g.ID); derr != nil && !errors.Is(derr, store.ErrNotFound) {
				err = derr
			}
		}
		if len(gs) > 0 {
			reason += fmt.Sprintf("; %d remembered approvals deleted", len(gs))
		}
	}
	if err != nil {
		// The credential is gone, so its grants cover nothing it can call;
		// say so rather than undo the revocation.
		s.logger().ErrorContext(ctx, "revoked credential's grants not all deleted", "credential", id, "error", err)
		reason += "; its remembered approvals were not all deleted (" + err.Error() + ")"
	}
	s.record(ctx, countersign.AuditRecord{Chain: audit.ChainOf(id), Actor: operatorActor(op), Action: "key.revoked", Subject: id,
		Credential: id, Reason: reason})
	return c, nil
}

// CredentialDetail reads one credential, its pending confirmations and
// its grants, for an operator.
func (s *Service) CredentialDetail(ctx context.Context, op *countersign.Credential, id string) (CredentialDetail, error) {
	if err := RequireOperator(op); err != nil {
		return CredentialDetail{}, err
	}
	c, err := s.getCredential(ctx, id)
	if err != nil {
		return CredentialDetail{}, err
	}
	d := CredentialDetail{Credential: c, Pending: []Status{}}
	now := s.now()
	q := countersign.ListQuery{Status: countersign.StatusPending, Limit: countersign.MaxPageSize}
	for page := 0; ; page++ {
		if page == maxPendingPages {
			d.PendingMore = true
			break
		}
		p, err := s.Store.ListConfirmations(ctx, q)
		if err != nil {
			return CredentialDetail{}, s.listError(ctx, "pending confirmations", err)
		}
		for _, pc := range p.Items {
			if pc.Credential == id {
				d.Pending = append(d.Pending, Status{Confirmation: pc, Effective: confirm.Effective(pc, now)})
			}
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	gs, err := s.Store.ApprovalGrantsOf(ctx, id)
	if err != nil {
		s.logger().ErrorContext(ctx, "grants not read", "credential", id, "error", err)
		return CredentialDetail{}, fault.Wrap(err, "the grants could not be read; try again")
	}
	d.Grants = gs
	if ogs, ok := s.Store.(OAuthGrantStore); ok && c.IsPerson() {
		p, err := ogs.ListOAuthGrants(ctx, id, countersign.ListQuery{Limit: countersign.MaxPageSize})
		if err != nil {
			return CredentialDetail{}, s.listError(ctx, "OAuth grants", err)
		}
		d.OAuthGrants, d.OAuthGrantsNext = p.Items, p.Next
	}
	return d, nil
}
