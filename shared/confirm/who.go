package confirm

import (
	"context"
	"fmt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/policy"
)

// Who may answer a confirmation is decided here, for every answer from
// every surface (the approval page, the MCP card, an answer given in the
// client's dialog, a run_script answer): the surfaces say who is answering
// (Answer.Person, Answer.Approver, Answer.Credential) and translate the
// error, a forbidden fault whose reason speaks to that person. The rules
// are the ones the record kept when the call paused (Required,
// SeparateApprover, Rules); a person is their (issuer, subject), and an
// e-mail matches an approvers list only when the provider verified it
// (the surface gives no other).

// Credentials reads the credential that made a call (store.Store), for
// four eyes and the link given to the person who made it.
type Credentials interface {
	GetCredential(ctx context.Context, id string) (countersign.Credential, error)
}

// rulesOf is c's recorded rules, else (a record made before they were
// recorded) the ones the caller read from the policy in force.
func rulesOf(c *countersign.Confirmation, fallback *countersign.ApprovalRules) countersign.ApprovalRules {
	switch {
	case c.Rules != nil:
		return *c.Rules
	case fallback != nil:
		return *fallback
	}
	return countersign.ApprovalRules{}
}

// OutOfBand reports a confirmation only its approvers decide, through
// their links, never the client that made the call: four eyes, a quorum,
// an approvers list or approval.out_of_band_only, as recorded when it
// paused. fallback stands for the rules of a record made before they were
// recorded (nil: none).
func OutOfBand(c *countersign.Confirmation, fallback *countersign.ApprovalRules) bool {
	r := rulesOf(c, fallback)
	return c.SeparateApprover || c.Required > 1 || len(r.Approvers) > 0 || r.OutOfBandOnly || r.Passkey
}

// NeedsPerson reports whether only a person signed in may answer c: its
// rules name approvers, keep four eyes, count a quorum or ask for a passkey.
func NeedsPerson(c *countersign.Confirmation, fallback *countersign.ApprovalRules) bool {
	r := rulesOf(c, fallback)
	return c.SeparateApprover || c.Required > 1 || len(r.Approvers) > 0 || r.Passkey
}

// NeedsPasskey reports whether an approval of c must carry a verified
// passkey assertion (approval.passkey, as recorded when it paused).
func NeedsPasskey(c *countersign.Confirmation, fallback *countersign.ApprovalRules) bool {
	return rulesOf(c, fallback).Passkey
}

// MayAnswer reports why d may not answer c (a forbidden fault), or nil
// when it may. It reads the credential that made the call when a rule
// needs it (four eyes, the link given to its person).
func (s *Service) MayAnswer(ctx context.Context, c *countersign.Confirmation, d Answer) error {
	return s.mayAnswer(ctx, c, d, &callerCache{})
}

// callerCache reads the calling credential once per answer, however many
// times a lost race re-checks it.
type callerCache struct {
	read bool
	cred *countersign.Credential
	err  error
}

func (s *Service) caller(ctx context.Context, c *countersign.Confirmation, cc *callerCache) (*countersign.Credential, error) {
	if !cc.read {
		cc.read = true
		if s.Credentials == nil {
			cc.err = fmt.Errorf("no credential reader")
		} else if cred, err := s.Credentials.GetCredential(ctx, c.Credential); err != nil {
			cc.err = err
		} else {
			cc.cred = &cred
		}
	}
	return cc.cred, cc.err
}

func forbidden(format string, args ...any) error {
	return fault.Errorf(fault.Forbidden, format, args...)
}

func (s *Service) mayAnswer(ctx context.Context, c *countersign.Confirmation, d Answer, cc *callerCache) error {
	if c.Kind == countersign.KindReview {
		return nil // the operators' (Transition refuses an answer)
	}
	if c.Rules == nil && d.Rules == nil && s.RulesInForce != nil {
		d.Rules = s.RulesInForce(c.Operations)
	}
	r := rulesOf(c, d.Rules)
	p := d.Person
	if d.Credential != "" {
		// Answered in the client that made the call (the card, its dialog,
		// a run_script answer): the caller is answering.
		if d.Credential != c.Credential {
			return forbidden("this answer was given with another credential than the one that made the call")
		}
		if !d.Approve {
			// The caller may always withdraw their own call (an MCP task's
			// cancellation, a decline): nothing runs, so no rule is bent.
			return nil
		}
		if OutOfBand(c, d.Rules) {
			return forbidden("%s is decided by its approvers only, through their links; the person who made the call cannot decide it here", c.ID)
		}
		return nil
	}
	if d.Approver == links.PrincipalApprover {
		// The link given to the person who made the call decides only for
		// that person, signed in, never for the link alone.
		if p == nil {
			return forbidden("Sign in to decide: this link decides only for the person who made the call.")
		}
		cred, err := s.caller(ctx, c, cc)
		if err != nil {
			return forbidden("This link decides only for the person who made the call, and who made it could not be read; try again.")
		}
		if !isCaller(cred, p) {
			return forbidden("You are signed in as %s, who did not make this call; this link decides only for the person who did.", p.Label())
		}
	}
	if p == nil {
		if NeedsPerson(c, d.Rules) {
			return forbidden("Sign in to decide: approvers of this call must sign in.")
		}
		return nil
	}
	if d.Approve && r.Passkey && !d.proved {
		// Only Answer sets proved, after the assertion verified: no
		// surface can claim it.
		return forbidden("Approving %s needs your passkey: approve it on its page, where your device signs what you approve. Nothing was approved.", c.ID)
	}
	for _, list := range r.Approvers {
		if !approverListOf(list).Allows(p.Email, d.Groups) {
			return forbidden("You are signed in as %s, who is not among the approvers of %s; only they may decide it.", p.Label(), list.Where)
		}
	}
	for _, a := range c.Approvals {
		if a.Person.Same(p) {
			return forbidden("You approved this already; it needs %d approvals from different people.", max(c.Required, d.Required))
		}
	}
	if c.SeparateApprover {
		cred, err := s.caller(ctx, c, cc)
		if err != nil {
			return forbidden("This call needs an approver other than the person who made it, and who made it could not be read; try again.")
		}
		if isCaller(cred, p) {
			return forbidden("You made this call, and it needs another person's approval (four eyes).")
		}
	}
	return nil
}

// MayRunReview reports why operator may not run review item c (a
// forbidden fault), or nil when it may: under four eyes, as recorded when
// the call was made, the operator must be neither the credential that
// made it nor its person (an operator who signed in as a person and made
// the call through their client). Dismissing stays open to them: nothing
// runs.
func (s *Service) MayRunReview(ctx context.Context, c *countersign.Confirmation, operator *countersign.Credential) error {
	if !c.SeparateApprover {
		return nil
	}
	if operator == nil || operator.ID == c.Credential {
		return forbidden("You made this call, and it needs another operator to run it (four eyes); nothing ran.")
	}
	p := operator.Person()
	if p == nil {
		return nil // a key is nobody's
	}
	cred, err := s.caller(ctx, c, &callerCache{})
	if err != nil {
		return forbidden("This call needs an operator other than the person who made it, and who made it could not be read; nothing ran, try again.")
	}
	if isCaller(cred, p) {
		return forbidden("You made this call, and it needs another operator to run it (four eyes); nothing ran.")
	}
	return nil
}

// isCaller reports whether p is the person of the calling credential: the
// same subject at the same issuer. A configured user not yet bound to a
// subject (credentials.json "user", before their first verified sign-in
// under this rule) is matched by their verified e-mail instead, so that
// four eyes holds for them too. A key is nobody's.
func isCaller(cred *countersign.Credential, p *countersign.Person) bool {
	if cred.Subject != "" {
		return cred.Person().Same(p)
	}
	return cred.Email != "" && policy.SameEmail(cred.Email, p.Email)
}

func approverListOf(l countersign.ApproverList) *policy.Approvers {
	return &policy.Approvers{Emails: l.Emails, Domains: l.Domains, Groups: l.Groups}
}

// RulesOf are the approval rules of ops in policy set, to record on their
// confirmation: each operation's approvers list (its endpoint's, else its
// connection's), and out of band only if any operation's rules say so.
func RulesOf(set *policy.Set, ops []countersign.Operation) *countersign.ApprovalRules {
	r := &countersign.ApprovalRules{}
	for _, op := range ops {
		conn := set.Connection(op.Connection)
		if conn == nil {
			continue
		}
		m, ok := set.Resolve(op.Connection, op.Method, op.Path)
		list := conn.Approvers
		if ok && m.Endpoint != nil && m.Endpoint.Approvers != nil {
			list = m.Endpoint.Approvers
		}
		if list != nil {
			r.Approvers = append(r.Approvers, countersign.ApproverList{Where: op.Connection + " " + op.Method + " " + op.Endpoint,
				Emails: list.Emails, Domains: list.Domains, Groups: list.Groups})
		}
		pr := set.RulesOf(op.Connection, op.Method, op.Path)
		r.OutOfBandOnly = r.OutOfBandOnly || pr.OutOfBandOnly
		r.Passkey = r.Passkey || pr.Passkey
	}
	return r
}
