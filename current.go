package countersign

import (
	"encoding/json"
	"time"
)

// Show is the read an operation's endpoint names (policy.json "show"),
// resolved for the call: the concrete path of an auto-tier GET of the same
// connection. The pipeline sets it when it binds the operation; the
// lifecycle reads it when the confirmation is created (Current) and again
// right before the write (Recheck). It is not part of the binding.
type Show struct {
	// Path is the concrete path in its escaped (wire) form, e.g. /contacts/12.
	Path string `json:"path"`
	// Recheck reads it again before the write and runs nothing if it changed.
	Recheck bool `json:"recheck,omitempty"`
}

// Current is the resource as it was when the person was asked: the answer
// of the operation's show read, or why it could not be read.
type Current struct {
	// Status is the read's HTTP status (2xx, 3xx or 4xx).
	Status int `json:"status,omitempty"`
	// Body is the answer: its JSON when it was JSON, else its text as a
	// JSON string; cut to its share of the record when long (Truncated).
	Body json.RawMessage `json:"body,omitempty"`
	// Truncated is set when Body holds only the beginning of the answer.
	Truncated bool       `json:"truncated,omitempty"`
	ReadAt    *time.Time `json:"read_at,omitempty"`
	// Error says why it could not be read (a timeout, a 5xx, an answer
	// over the size limit); the person is still asked.
	Error string `json:"error,omitempty"`
	// SHA256 (hex, of the whole answer's bytes) and ETag are what the
	// recheck compares; kept with the record, never shown (Shown).
	SHA256 string `json:"sha256,omitempty"`
	ETag   string `json:"etag,omitempty"`
}

// Shown is c as the API, the webhook and the pages show it: without what
// only the recheck needs. Nil stays nil.
func (c *Current) Shown() *Current {
	if c == nil {
		return nil
	}
	v := *c
	v.SHA256, v.ETag = "", ""
	return &v
}

// Read reports whether the read answered (the recheck has something to
// compare with).
func (c *Current) Read() bool { return c != nil && c.Error == "" && (c.SHA256 != "" || c.ETag != "") }

// Change is one changed leaf of the resource: what it is now (From,
// absent when the write adds it) and what the write makes it (To, absent
// when the write removes it).
type Change struct {
	// Field is the dotted JSON path, e.g. "address.city".
	Field string          `json:"field"`
	From  json.RawMessage `json:"from,omitempty"`
	To    json.RawMessage `json:"to,omitempty"`
}
