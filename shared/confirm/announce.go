package confirm

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/store"
)

// Auditor appends records to the audit trail (audit.Trail). Record never
// fails the caller: the transition it records has happened.
type Auditor interface {
	Record(ctx context.Context, r countersign.AuditRecord)
}

// alongAuditor is an Auditor that can write a record in the same
// transaction as a confirmation write (audit.Trail.Along).
type alongAuditor interface {
	Along(ctx context.Context, build func(c *countersign.Confirmation) (countersign.AuditRecord, bool)) (context.Context, *store.Along)
}

// Events sends approver events (notify.Dispatcher).
type Events interface {
	// Notify sends in the background.
	Notify(ev notify.Event)
	// NotifyWait sends and waits, bounded by ctx.
	NotifyWait(ctx context.Context, ev notify.Event) error
}

// syncEventBudget bounds how long a synchronous event delivery may hold a response.
const syncEventBudget = 3 * time.Second

// emit announces a transition to the approver channels: in the background,
// or before returning (bounded) when events are synchronous (Lambda).
func (s *Service) emit(ctx context.Context, ev notify.Event) {
	if s.Events == nil {
		return
	}
	if !s.SyncEvents {
		s.Events.Notify(ev)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncEventBudget)
	defer cancel()
	_ = s.Events.NotifyWait(ctx, ev)
}

// emitWait announces a transition a workflow task observed, before the
// task returns, bounded by the task's context.
func (s *Service) emitWait(ctx context.Context, ev notify.Event) {
	if s.Events == nil {
		return
	}
	if err := s.Events.NotifyWait(ctx, ev); err != nil {
		s.logger().WarnContext(ctx, "event not delivered everywhere", "confirmation", ev.Confirmation.ID, "type", ev.Type, "error", err)
	}
}

// write appends r to the audit trail, if there is one, at the time of
// the transition.
func (s *Service) write(ctx context.Context, r countersign.AuditRecord) {
	if s.Audit != nil {
		r.At = s.now()
		s.Audit.Record(ctx, r)
	}
}

// record writes what actor did to c (action), on its credential's chain
// that stays: its status after, and the operation of a single call.
func (s *Service) record(ctx context.Context, actor, action string, c *countersign.Confirmation, reason string) {
	if s.Audit == nil || c == nil {
		return
	}
	s.write(ctx, recordOf(actor, action, c, reason))
}

// along returns ctx carrying the audit record of the transition that the
// next confirmation write made with ctx stores, built by build from the
// record as stored (see record), to be written in the same transaction
// where the store can (audit.Trail.Along). When the returned Along is not
// Done after the write, the caller records on its own.
func (s *Service) along(ctx context.Context, build func(c *countersign.Confirmation) (countersign.AuditRecord, bool)) (context.Context, *store.Along) {
	a, ok := s.Audit.(alongAuditor)
	if !ok {
		return ctx, nil
	}
	return a.Along(ctx, func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
		r, ok := build(c)
		r.At = s.now()
		return r, ok
	})
}

// recordOf is the record of what actor did to c (record).
func recordOf(actor, action string, c *countersign.Confirmation, reason string) countersign.AuditRecord {
	r := countersign.AuditRecord{Chain: audit.ChainOf(c.Credential), Actor: actor, Action: action, Subject: c.ID,
		Credential: c.Credential, Outcome: string(c.Status), Reason: reason}
	if len(c.Operations) == 1 {
		op := c.Operations[0]
		r.Connection, r.Method, r.Path, r.Binding = op.Connection, op.Method, op.Path, op.Binding
		if op.Outcome != nil && op.Outcome.Error == "" && action != "confirmation.approved" {
			r.Outcome += " (" + strconv.Itoa(op.Outcome.Status) + ")"
		}
	}
	return r
}

// recordOperation writes that operation index of c ran after approval,
// with its outcome: the upstream status, or why it could not be reached.
func (s *Service) recordOperation(ctx context.Context, c *countersign.Confirmation, index int, out countersign.Outcome) {
	op := c.Operations[index]
	r := countersign.AuditRecord{Chain: audit.ChainOf(c.Credential), Actor: "system", Action: "script.operation", Subject: c.ID + "#" + strconv.Itoa(index),
		Credential: c.Credential, Connection: op.Connection, Method: op.Method, Path: op.Path, Binding: op.Binding,
		Outcome: strconv.Itoa(out.Status) + " " + http.StatusText(out.Status)}
	if out.Error != "" {
		r.Outcome, r.Reason = string(fault.UpstreamUnreachable), out.Error
	}
	s.write(ctx, r)
}
