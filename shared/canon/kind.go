package canon

import (
	"bytes"
	"encoding/json"
)

// Kind names the JSON type of a raw value in words, for messages: "an
// object", "an array", "a string", "a boolean", "null", "a number", or
// "nothing" when it is empty.
func Kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
