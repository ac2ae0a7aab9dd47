package countersign

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
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

// maxLabelField bounds each field a Sentence quotes from the resource.
const maxLabelField = 80

// Label names the resource as its answer does: its "name" (or "title")
// and its "email", as "John McCarthy <john@example.com>"; empty when the
// answer is not a JSON object with one of them. Each field is cut at
// maxLabelField characters. The caller escapes it for where it shows it.
func (c *Current) Label() string {
	if c == nil || c.Error != "" || len(c.Body) == 0 || c.Body[0] != '{' {
		return ""
	}
	var f struct {
		Name  any `json:"name"`
		Title any `json:"title"`
		Email any `json:"email"`
	}
	if json.Unmarshal(c.Body, &f) != nil {
		return ""
	}
	name, _ := f.Name.(string)
	if name == "" {
		name, _ = f.Title.(string)
	}
	email, _ := f.Email.(string)
	name, email = clipRunes(name, maxLabelField), clipRunes(email, maxLabelField)
	switch {
	case name != "" && email != "":
		return name + " <" + email + ">"
	case name != "":
		return name
	}
	return email
}

func clipRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i] + "…"
		}
		n--
	}
	return s
}

// Sentence says in words what op will do, for the person to read first:
// "Delete contact 12, John McCarthy <john@example.com>" (the verb from
// the method, the thing from the path, the name from what the show read
// answered), "Update contact 12, ..." for a PUT or PATCH, or the method
// and path when the path says nothing plainer. A resource that could not
// be read, or that answered 4xx, says so. The caller escapes it.
func (op *Operation) Sentence() string {
	s := op.Method + " " + op.Path
	segs := strings.Split(strings.Trim(op.Path, "/"), "/")
	verb := map[string]string{"DELETE": "Delete", "PUT": "Update", "PATCH": "Update", "POST": "Create", "GET": "Read"}[op.Method]
	last := segs[len(segs)-1]
	isValue := false
	for _, v := range op.Args.Path {
		if v != "" && (v == last || url.PathEscape(v) == last) {
			isValue = true
		}
	}
	switch {
	case verb == "":
	case isValue && len(segs) >= 2:
		s = verb + " " + singular(segs[len(segs)-2]) + " " + last
	case !isValue && op.Method == "POST" && last != "":
		s = "Create " + singular(last)
		if len(segs) >= 3 {
			s += " in " + singular(segs[len(segs)-3]) + " " + segs[len(segs)-2]
		}
	}
	c := op.Current
	switch {
	case c == nil:
	case c.Error != "":
		s += " (it could not be read: " + c.Error + ")"
	case c.Status >= 300:
		s += fmt.Sprintf(" (reading it answered %d)", c.Status)
	default:
		if l := c.Label(); l != "" {
			s += ", " + l
		}
	}
	return s
}

// singular is a plural path segment's singular: contacts, companies,
// addresses.
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 3:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 1:
		return w[:len(w)-1]
	}
	return w
}
