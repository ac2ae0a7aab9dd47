package script

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/script/journal"
)

const (
	// maxInline is the largest value kept in a call's own record; a larger
	// one goes in parts, so every record stays within DynamoDB's 400 KB.
	maxInline = 32 << 10
	// partSize is the size of one part.
	partSize = 256 << 10
)

// The values call() returns, as JSON.
var (
	pendingValue  = json.RawMessage(`{"pending":true}`)
	rejectedValue = json.RawMessage(`{"rejected":true}`)
)

// ranValue is {status, body} of a call that ran ({error, reason} when the
// upstream could not be reached), with the notice of an ask_agent call.
func ranValue(out countersign.Outcome, notice bool, reason string) json.RawMessage {
	if out.Error == string(fault.ResourceChanged) {
		// The recheck stopped it: nothing was sent.
		b, _ := json.Marshal(struct {
			Error  string `json:"error"`
			Reason string `json:"reason"`
		}{string(fault.ResourceChanged), "what it acts on changed after the person saw it; nothing was sent. Ask the person again"})
		return b
	}
	if out.Error != "" {
		b, _ := json.Marshal(struct {
			Error  string `json:"error"`
			Reason string `json:"reason"`
		}{string(fault.UpstreamUnreachable), out.Error})
		return b
	}
	v := struct {
		Status    int             `json:"status"`
		Body      json.RawMessage `json:"body"`
		Truncated bool            `json:"truncated,omitempty"`
		Notice    *struct {
			RequiresConfirmation bool   `json:"requires_confirmation"`
			Reason               string `json:"reason"`
		} `json:"notice,omitempty"`
	}{Status: out.Status, Body: out.Body, Truncated: out.Truncated}
	if len(v.Body) == 0 {
		v.Body = json.RawMessage("null")
	}
	if notice {
		v.Notice = &struct {
			RequiresConfirmation bool   `json:"requires_confirmation"`
			Reason               string `json:"reason"`
		}{true, reason}
	}
	b, _ := json.Marshal(v)
	return b
}

// outcomeOf is an upstream answer as call() returns it: a JSON body as
// the upstream sent it (compacted, its keys in their order, so that a
// replay iterates them the same way), any other text as a JSON string.
func outcomeOf(r *calls.Response) countersign.Outcome {
	out := countersign.Outcome{Status: r.Status}
	body := bytes.TrimSpace(r.Body)
	if len(body) == 0 {
		return out
	}
	if ct := r.Header.Get("Content-Type"); strings.Contains(ct, "json") && json.Valid(body) {
		var b bytes.Buffer
		if json.Compact(&b, body) == nil {
			out.Body = b.Bytes()
			return out
		}
	}
	out.Body, _ = json.Marshal(strings.ToValidUTF8(string(r.Body), "\uFFFD"))
	return out
}

// errorValue is {error, reason} of a call the pipeline could not make.
func errorValue(err error) json.RawMessage {
	b, _ := json.Marshal(struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}{string(fault.CodeOf(err)), fault.ReasonOf(err)})
	return b
}

// deniedValue is {denied, code, reason} of a call policy refused.
func deniedValue(code fault.Code, reason string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Denied bool   `json:"denied"`
		Code   string `json:"code"`
		Reason string `json:"reason"`
	}{true, string(code), reason})
	return b
}

// shown lists a run's entries.
func shown(entries []*entry) []Call {
	out := make([]Call, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.call)
	}
	return journal.Bounded(out)
}

// set records what became of the call.
func (e *entry) set(state countersign.ScriptCallState, shownAs CallState, v json.RawMessage) {
	e.state, e.value = string(state), v
	e.call.State, e.call.Response = shownAs, journal.Listed(v)
}

// entryOf is a journaled call as a replay starts from (its value not loaded).
func entryOf(r *countersign.ScriptCall) *entry {
	return &entry{index: r.Index, call: journal.ViewOf(r, true), binding: r.Binding, state: string(r.State), rerun: r.Rerun, version: r.Version, parts: r.ValueParts}
}

// saveCall writes an entry: its value in parts first when large, then its
// record (created, or replaced at its version).
func (s *Service) saveCall(ctx context.Context, runID string, ttl int64, e *entry) error {
	rec := &countersign.ScriptCall{RunID: runID, Index: e.index, Connection: e.call.Connection, Method: e.call.Method, Path: e.call.Path,
		Binding: e.binding, State: countersign.ScriptCallState(e.state), Operation: -1, Rerun: e.rerun, Version: e.version, TTL: ttl}
	if e.call.Operation != nil {
		rec.Operation = *e.call.Operation
	}
	if len(e.value) > maxInline {
		n, err := s.saveParts(ctx, runID, journal.CallKey(rec.Index), ttl, e.value)
		if err != nil {
			return err
		}
		rec.ValueParts = n
	} else {
		rec.Value = e.value
	}
	if err := s.Store.PutScriptCall(ctx, rec); err != nil {
		return fmt.Errorf("journal call %d: %w", rec.Index, err)
	}
	e.version, e.parts = rec.Version, rec.ValueParts
	return nil
}

// saveParts writes a large value in parts under prefix and returns how many.
func (s *Service) saveParts(ctx context.Context, runID, prefix string, ttl int64, v []byte) (int, error) {
	n := 0
	for off := 0; off < len(v); off += partSize {
		p := &countersign.ScriptPart{RunID: runID, Key: fmt.Sprintf("%s%04d", prefix, n), Data: v[off:min(off+partSize, len(v))], TTL: ttl}
		if err := s.Store.PutScriptPart(ctx, p); err != nil {
			return 0, fmt.Errorf("journal part %s: %w", p.Key, err)
		}
		n++
	}
	return n, nil
}

// valueOf is a journaled call's value, from its record or its parts.
func (s *Service) valueOf(ctx context.Context, r *countersign.ScriptCall) (json.RawMessage, error) {
	if r.ValueParts == 0 {
		if len(r.Value) == 0 {
			return json.RawMessage("null"), nil
		}
		return r.Value, nil
	}
	return s.journal().LoadParts(ctx, r.RunID, journal.CallKey(r.Index), r.ValueParts)
}

// saveResult puts the script's result on the run, in parts when large.
func (s *Service) saveResult(ctx context.Context, run *countersign.ScriptRun, v json.RawMessage) error {
	if len(v) <= maxInline {
		run.Result, run.ResultParts = v, 0
		return nil
	}
	n, err := s.saveParts(ctx, run.ID, journal.ResultKey, run.TTL, v)
	if err != nil {
		return err
	}
	run.Result, run.ResultParts = nil, n
	return nil
}
