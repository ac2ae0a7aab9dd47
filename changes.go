package countersign

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Bounds of what Changes keeps: the record must fit a store item whatever
// the resource holds.
const (
	maxChanges     = 100
	maxChangeValue = 512
)

// Changes is what a PUT or PATCH with JSON body changes in the resource
// as the show read answered it (current): each changed leaf by its dotted
// path, From what it is now (absent when the write adds it), To what the
// write makes it (absent when a PUT leaves it out). A PATCH is read as a
// JSON merge patch (RFC 7396): a member it leaves out is unchanged, null
// removes one. Objects are compared member by member; arrays and other
// values whole. Anything else (another method, a body or an answer that
// is not a JSON object) has no changes: nil.
func Changes(method string, body, current json.RawMessage) []Change {
	if method != "PUT" && method != "PATCH" {
		return nil
	}
	to, ok1 := decodeObject(body)
	from, ok2 := decodeObject(current)
	if !ok1 || !ok2 {
		return nil
	}
	var out []Change
	diffObjects(&out, "", from, to, method == "PATCH")
	return out
}

func decodeObject(raw json.RawMessage) (map[string]any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func diffObjects(out *[]Change, prefix string, from, to map[string]any, patch bool) {
	keys := make([]string, 0, len(from)+len(to))
	for k := range to {
		keys = append(keys, k)
	}
	if !patch {
		for k := range from {
			if _, ok := to[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(*out) >= maxChanges {
			return
		}
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		old, had := from[k]
		nv, has := to[k]
		if patch && nv == nil {
			has = false // null removes the member
			if !had {
				continue
			}
		}
		fo, fok := old.(map[string]any)
		to2, tok := nv.(map[string]any)
		switch {
		case had && has && fok && tok:
			diffObjects(out, path, fo, to2, patch)
		case had && has && equalJSON(old, nv):
		case patch && !had && has && tok:
			// A new object member of a merge patch adds each of its leaves.
			diffObjects(out, path, map[string]any{}, to2, patch)
		default:
			c := Change{Field: path}
			if had {
				c.From = boundedValue(old)
			}
			if has {
				c.To = boundedValue(nv)
			}
			*out = append(*out, c)
		}
	}
}

func equalJSON(a, b any) bool {
	x, err1 := marshal(a)
	y, err2 := marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// marshal is json.Marshal without HTML escaping (the values are shown
// as they are; every page escapes them itself), with map keys sorted.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// boundedValue is v's JSON, or the beginning of it as a string when it is
// longer than maxChangeValue.
func boundedValue(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	if len(b) <= maxChangeValue {
		return b
	}
	text, ok := v.(string) // a string is cut in its text, anything else in its JSON
	if !ok {
		text = string(b)
	}
	cut := text[:min(len(text), maxChangeValue-5)]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	s, _ := marshal(cut + "…")
	return s
}
