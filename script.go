package countersign

import (
	"encoding/json"
	"time"
)

// ScriptStatus is where a script's journal stands.
type ScriptStatus string

// Script journal statuses.
const (
	// ScriptPending: the first run collected calls into a batch; the
	// journal waits for the run after approval.
	ScriptPending ScriptStatus = "pending"
	// ScriptRunning: a run after approval holds the journal (Owner, until
	// LeaseUntil).
	ScriptRunning ScriptStatus = "running"
	// ScriptCompleted: the run after approval finished; Result holds its value.
	ScriptCompleted ScriptStatus = "completed"
	// ScriptFailed: the run after approval failed; Error says why.
	ScriptFailed ScriptStatus = "failed"
)

// ScriptRun is the header of a script's journal (code mode): the script,
// who ran it, and how its run after approval ended. Its ID is the id of the
// batch confirmation of the calls it collected; the calls are ScriptCall
// records, large values ScriptPart records.
type ScriptRun struct {
	ID string `json:"id"`
	// Credential is the credential that submitted the script, as it was
	// then (without its key hash or last client): the run after approval
	// decides new calls for it.
	Credential Credential `json:"credential"`
	Source     string     `json:"source"`
	// SourceHash is the hex SHA-256 of Source.
	SourceHash string `json:"source_hash"`
	// Seed seeds Math.random, and StartedAt starts Date's clock, on every
	// run, so that a script replays the same way.
	Seed      int64        `json:"seed"`
	StartedAt time.Time    `json:"started_at"`
	Status    ScriptStatus `json:"status"`
	// Owner and LeaseUntil name the run holding the journal (ScriptRunning).
	Owner      string     `json:"owner,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	// Attempts counts the runs after approval that took the journal.
	Attempts int `json:"attempts"`
	// Result is the script's value as JSON (ScriptCompleted); when
	// ResultParts is set it is in that many parts under the key "result/".
	Result      json.RawMessage `json:"result,omitempty"`
	ResultParts int             `json:"result_parts,omitempty"`
	// Error is why the run after approval failed (ScriptFailed).
	Error *ScriptError `json:"error,omitempty"`
	// Logs are the console.log lines of the last run that ended.
	Logs []string `json:"logs,omitempty"`
	// Reached is how many calls the last run that ended made: the
	// journal's first Reached calls are that run's.
	Reached    int        `json:"reached"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	// Version is the optimistic-concurrency counter; see UpdateScriptRun.
	Version int64 `json:"version"`
	// TTL is when the store may delete the record (unix seconds).
	TTL int64 `json:"ttl"`
}

// ScriptError is a script's failure: a fault code, the reason, and where
// in the script (1-based; 0 when unknown).
type ScriptError struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// ScriptCallState is the state of a journaled call.
type ScriptCallState string

// Journaled call states.
const (
	// ScriptCallRan: the call ran (or failed to reach the upstream); Value
	// is what call() returned.
	ScriptCallRan ScriptCallState = "ran"
	// ScriptCallPending: the call needs confirmation and was collected into
	// the batch as operation Operation.
	ScriptCallPending ScriptCallState = "pending"
	// ScriptCallRejected: collected, and cleared by the approver.
	ScriptCallRejected ScriptCallState = "rejected"
	// ScriptCallDenied: refused by policy; nothing ran.
	ScriptCallDenied ScriptCallState = "denied"
	// ScriptCallClaimed: a run after approval is about to run a call the
	// first run did not make (written before the upstream call); a run that
	// finds it claimed never runs it again.
	ScriptCallClaimed ScriptCallState = "claimed"
)

// ScriptCall is one call() of a script, in call order.
type ScriptCall struct {
	RunID string `json:"run_id"`
	// Index is the call's position in call order, from 0.
	Index      int    `json:"index"`
	Connection string `json:"connection"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	// Binding is the canonical binding of the call (canon.Binding): a
	// replay must make the same call at the same position.
	Binding string          `json:"binding"`
	State   ScriptCallState `json:"state"`
	// Operation is the index of the batch's operation (collected calls),
	// -1 for the others.
	Operation int `json:"operation"`
	// Rerun is set when the call ran in a run after approval (an approved
	// operation, or a call the first run did not make).
	Rerun bool `json:"rerun,omitempty"`
	// Value is what call() returned, as JSON; a large one is in ValueParts
	// parts under the key "call/<index>/" and Value is empty.
	Value      json.RawMessage `json:"value,omitempty"`
	ValueParts int             `json:"value_parts,omitempty"`
	// Version is the optimistic-concurrency counter; see PutScriptCall.
	Version int64 `json:"version"`
	TTL     int64 `json:"ttl"`
}

// ScriptPart is one piece of a large value of a script's journal (a
// call's value, the result), kept in its own record so that every record
// stays within DynamoDB's 400 KB item size.
type ScriptPart struct {
	RunID string `json:"run_id"`
	// Key orders the parts of one value, e.g. "call/00000003/0001".
	Key  string `json:"key"`
	Data []byte `json:"data"`
	TTL  int64  `json:"ttl"`
}
