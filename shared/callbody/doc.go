// Package callbody is the one rule for reading the body of an agent's call
// and the envelope of POST /v1/calls (issue 11, item 1).
//
// ParseJSON reads one JSON value strictly and only once, walking the tokens
// of github.com/go-json-experiment/json/jsontext (the future
// encoding/json/jsontext), which checks the grammar, UTF-8 and duplicate
// names; the depth limit, the number rule and the messages are ours. It
// refuses what an upstream could read differently from the threshold and
// the binding:
//
//   - duplicate object keys at any depth (after unescaping, so "a" and
//     "\u0061" are the same key);
//   - nesting deeper than Options.MaxDepth (DefaultMaxDepth, 64);
//   - numbers that do not survive a round trip through a 64-bit float: the
//     exact decimal value written must equal the exact decimal value of the
//     shortest representation of the nearest double, so 9007199254740993,
//     1.00000000000000000001 and 1e400 are refused and 0.1, 1.0, 1e3 and -0
//     are read; numbers longer than MaxNumberLen bytes are refused before
//     any arithmetic;
//   - strings that are not valid Unicode: invalid UTF-8, unpaired UTF-16
//     surrogate escapes and unescaped control characters (Go decoders turn
//     the first two into U+FFFD, so two different bodies would look alike);
//   - anything after the value but white space, and a byte order mark.
//
// Every refusal is an *Error naming the problem, the JSON path ($.items[3])
// and the byte offset. An accepted value is built from map[string]any,
// []any, json.Number (the literal as written), string, bool and nil: the
// form shared/policy reads thresholds from and shared/canon canonicalises.
// Because every accepted number round-trips, the RFC 8785 form of the value
// binds exactly what the upstream receives: two accepted bodies bind the same
// approval only when they are equal as JSON values.
//
// Keys that differ only in case ({"amount":5,"Amount":99999}) are different
// keys in JSON and are accepted, kept and bound as written: an upstream in
// another language may treat them as two fields. But Go's encoding/json
// struct decoder, and many others, match field names case-insensitively, so
// shared/policy matches threshold paths against every case variant
// (strings.EqualFold, the folding encoding/json uses) and fails closed: any
// variant above the limit, or not a number, escalates.
//
// Read applies the content type of the request: JSON media types
// (application/json, application/*+json, case-insensitive, UTF-8 only) give
// the JSON value; application/x-www-form-urlencoded gives form values, parsed
// strictly; anything else with a body is Unreadable, with a reason a
// threshold can report.
//
// DecodeStrict decodes the /v1/calls envelope into a struct with JSON v2
// (github.com/go-json-experiment/json) rejecting unknown members and
// matching names exactly, so it also refuses what encoding/json silently
// accepts: duplicate keys, and keys that match a field only when case is
// ignored ("Intent" for the tag intent, reported as such).
package callbody
