package calls

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// planEdits checks an approval's edits (approval.editable) and decides
// each edited call again, before anything is decided: the edits must name
// listed fields of a pending confirmation that one person decides, keep
// each value's JSON type, and leave a body within the limits
// (invalid_edit); the edited call, decided by the same policy (its
// thresholds and hooks; not counted again against its rate rules: the
// call was counted when it was made), must still pause at the confirm
// tier, else the approval is refused with edit_escalated. It fills
// a.Edited with the edited operations, bound as the agent's are, for the
// lifecycle to store with the approval.
func (s *Service) planEdits(ctx context.Context, id string, a *confirm.Answer) error {
	refuse := func(why string) error { return fault.New(fault.InvalidEdit, why+"; nothing was decided") }
	switch {
	case !a.Approve:
		return refuse("edits go with approve, not reject")
	case a.Remember != 0:
		return refuse("an approval that is remembered carries no edits: approve the edited call alone")
	}
	c, err := s.Confirm.Get(ctx, id)
	if err != nil {
		return lifecycleError(ctx, s, err)
	}
	if st := confirm.Effective(c, s.now()); st != countersign.StatusPending || c.Kind == countersign.KindReview {
		return refuse("confirmation " + c.ID + " is " + string(st) + ": only a pending confirmation can be edited")
	}
	if c.Required > 1 || a.Required > 1 {
		return refuse("confirmation " + c.ID + " needs more than one approval (approval.required); a quorum approves the call as it was made, so it cannot be edited")
	}
	if confirm.NeedsPasskey(c, nil) {
		return refuse("confirmation " + c.ID + " is approved with a passkey, which signs the call as it was made, so it cannot be edited")
	}
	groups, err := confirm.GroupEdits(c, a.Edits)
	if err != nil {
		return err
	}
	cred, err := s.Store.GetCredential(ctx, c.Credential)
	if err != nil {
		s.logger().ErrorContext(ctx, "credential not read for an edit", "confirmation", c.ID, "error", err)
		return fault.Wrap(err, "the credential that made the call could not be read; nothing was decided, try again")
	}
	a.Edited = a.Edited[:0]
	for _, i := range slices.Sorted(maps.Keys(groups)) {
		e, err := s.editOne(ctx, &cred, c, i, groups[i])
		if err != nil {
			return err
		}
		if len(e.Fields) > 0 {
			a.Edited = append(a.Edited, e)
		}
	}
	if len(a.Edited) == 0 {
		a.Edits = nil // every value was the agent's: a plain approval
	}
	return nil
}

// editOne edits operation i of c, decides the edited call again and binds it.
func (s *Service) editOne(ctx context.Context, cred *countersign.Credential, c *countersign.Confirmation, i int, edits []confirm.EditRequest) (confirm.Edited, error) {
	op := &c.Operations[i]
	if op.EditedCall != nil {
		return confirm.Edited{}, fault.Errorf(fault.InvalidEdit, "operation %d of %s was edited already; nothing was decided", i, c.ID)
	}
	args, fields, err := confirm.EditedArgs(op, edits)
	if err != nil || len(fields) == 0 {
		return confirm.Edited{}, err
	}
	call := &Call{Connection: op.Connection, Method: op.Method, Path: op.Path, Query: confirm.QueryValues(args.Query),
		RawQuery: op.RawQuery, Body: op.Body(), ContentType: op.ContentType}
	if policy.IsMutating(op.Method) {
		// It paused, so the agent declared its write.
		call.Intent = policy.IntentWrite
	}
	for f := range fields {
		switch {
		case strings.HasPrefix(f, "query."):
			call.RawQuery = "" // the edited query is sent from its arguments
		case strings.HasPrefix(f, "body."):
			call.Body = args.Body
		}
	}
	invalid := func(err error) error {
		return fault.Errorf(fault.InvalidEdit, "the edited call is not valid: %s; nothing was decided", fault.ReasonOf(err))
	}
	if err := call.Validate(); err != nil {
		return confirm.Edited{}, invalid(err)
	}
	p, err := prepare(call, s.Current())
	if err != nil {
		return confirm.Edited{}, invalid(err)
	}
	if err := s.holdable(p); err != nil {
		return confirm.Edited{}, invalid(err)
	}
	m, ok := p.cfg.Policy.Resolve(p.Connection, p.Method, p.Path)
	in := policy.Input{Call: &p.tier, Credential: tierCredential(cred)}
	if ok && m.Connection.Hooked && !m.Endpoint.Hidden {
		in.Hook = s.askHooks(ctx, cred, p, &m)
		p.hook = &in.Hook
	}
	d := policy.Decide(m, ok, in)
	if d.Outcome != policy.Pause || d.Tier != policy.Confirm {
		return confirm.Edited{}, fault.Errorf(fault.EditEscalated,
			"the edited call would no longer pause for an approval at the confirm tier (%s, %s: %s); the approval was refused and nothing changed",
			d.Tier, d.Outcome, d.Reason)
	}
	edited, err := p.operationWith(cred, &d.Match, op.Args.Headers)
	if err != nil {
		return confirm.Edited{}, err
	}
	return confirm.Edited{Index: i, From: op.Binding, Op: edited, Fields: fields}, nil
}
