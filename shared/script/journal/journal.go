// Package journal reads a script's journal as its owner is shown it: the
// calls a run reached, its logs, and its result or failure. It is the part
// of code mode (shared/script, which writes the journal) that needs no
// JavaScript engine, so that the gateway function answers the status of a
// script batch (GET /v1/confirmations/{id}) without linking goja.
package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/views"
)

// Store is what reading a journal needs (store/embedded and
// store/dynamostore).
type Store interface {
	GetScriptRun(ctx context.Context, id string) (*countersign.ScriptRun, error)
	ScriptCalls(ctx context.Context, runID string) ([]*countersign.ScriptCall, error)
	ScriptParts(ctx context.Context, runID, prefix string) ([]*countersign.ScriptPart, error)
}

// Reader reads journals from Store.
type Reader struct {
	Store Store
}

// Describe returns the script of a script batch, for its status.
func (j Reader) Describe(ctx context.Context, conf *countersign.Confirmation) (*views.ScriptResult, error) {
	run, err := j.Store.GetScriptRun(ctx, conf.ID)
	if err != nil {
		return nil, fault.Wrap(err, "the script's journal could not be read")
	}
	return j.Outcome(ctx, run)
}

// Outcome returns run as its owner reads it: the calls it reached, its
// logs, and its value or failure once it ended (Status ScriptDone and
// Value once its run after approval completed, Error once it failed, and
// the calls and logs of its last run that ended: the first run's until
// then).
func (j Reader) Outcome(ctx context.Context, run *countersign.ScriptRun) (*views.ScriptResult, error) {
	recs, err := j.Store.ScriptCalls(ctx, run.ID)
	if err != nil {
		return nil, fault.Wrap(err, "the script's journal could not be read")
	}
	out := &views.ScriptResult{Logs: run.Logs, Error: run.Error}
	finished := run.Status == countersign.ScriptCompleted || run.Status == countersign.ScriptFailed
	for _, r := range recs {
		if r.Index >= run.Reached {
			break
		}
		out.Calls = append(out.Calls, ViewOf(r, finished))
	}
	out.Calls = Bounded(out.Calls)
	if run.Status == countersign.ScriptCompleted {
		out.Status = views.ScriptDone
		if out.Value, err = j.ResultOf(ctx, run); err != nil {
			return nil, fault.Wrap(err, "the script's result could not be read")
		}
		if len(out.Value) == 0 {
			// A completed script always has a value (undefined is null),
			// whatever a store made of a stored null.
			out.Value = json.RawMessage("null")
		}
	}
	return out, nil
}

// ViewOf shows a journaled call; after the run after approval, calls of
// the first run that ran are replayed.
func ViewOf(r *countersign.ScriptCall, afterApproval bool) views.ShownCall {
	c := views.ShownCall{Connection: r.Connection, Method: r.Method, Path: r.Path, Response: Listed(r.Value)}
	if r.ValueParts > 0 {
		c.Response = json.RawMessage(`{"truncated":true}`)
	}
	if r.Operation >= 0 {
		k := r.Operation
		c.Operation = &k
	}
	switch r.State {
	case countersign.ScriptCallRan:
		c.State = views.ShownRan
		if afterApproval && !r.Rerun {
			c.State = views.ShownReplayed
		}
	case countersign.ScriptCallRejected:
		c.State = views.ShownRejected
	case countersign.ScriptCallDenied:
		c.State = views.ShownDenied
	default:
		c.State = views.ShownPending
	}
	return c
}

// MaxListed is the largest response shown in a listing of calls.
const MaxListed = 32 << 10

// Listed is a response as a listing shows it.
func Listed(v json.RawMessage) json.RawMessage {
	if len(v) > MaxListed {
		return json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(v)))
	}
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// MaxListing bounds the responses of one listing of calls together, so
// that an answer stays well within a Lambda response (6 MB) whatever
// scripts.max_calls allows; past it responses are shown as markers.
const MaxListing = 2 << 20

// Bounded keeps a listing's responses within MaxListing.
func Bounded(cs []views.ShownCall) []views.ShownCall {
	total := 0
	for i := range cs {
		if total += len(cs[i].Response); total > MaxListing && len(cs[i].Response) > 64 {
			cs[i].Response = json.RawMessage(fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(cs[i].Response)))
		}
	}
	return cs
}

// CallKey is the prefix of a call's value parts.
func CallKey(index int) string { return fmt.Sprintf("call/%08d/", index) }

// ResultKey is the prefix of a run's result parts.
const ResultKey = "result/"

// LoadParts reads a value stored in n parts under prefix.
func (j Reader) LoadParts(ctx context.Context, runID, prefix string, n int) (json.RawMessage, error) {
	parts, err := j.Store.ScriptParts(ctx, runID, prefix)
	if err != nil {
		return nil, err
	}
	if len(parts) < n {
		return nil, fmt.Errorf("journal %s%s: %d parts stored, %d expected", runID, prefix, len(parts), n)
	}
	var b bytes.Buffer
	for _, p := range parts[:n] {
		b.Write(p.Data)
	}
	if !json.Valid(b.Bytes()) {
		return nil, fmt.Errorf("journal %s%s: the parts do not make JSON", runID, prefix)
	}
	return b.Bytes(), nil
}

// ResultOf is the run's result.
func (j Reader) ResultOf(ctx context.Context, run *countersign.ScriptRun) (json.RawMessage, error) {
	if run.ResultParts == 0 {
		return run.Result, nil
	}
	return j.LoadParts(ctx, run.ID, ResultKey, run.ResultParts)
}
