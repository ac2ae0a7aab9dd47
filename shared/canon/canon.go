package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Transform rewrites JSON text into its RFC 8785 canonical form: object keys
// sorted by UTF-16 code units, numbers in their shortest ECMAScript form,
// strings with the minimal escapes, no insignificant white space.
func Transform(data []byte) ([]byte, error) {
	out, err := jcs.Transform(data)
	if err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return out, nil
}

// Marshal encodes v as JSON (encoding/json rules, json.RawMessage kept as
// is) and returns its canonical form.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return Transform(buf.Bytes())
}

// bindingVersion separates binding hashes from any other use of the same
// canonical bytes, and lets the scheme change without ambiguity.
const bindingVersion = "countersign-binding-v1"

// Binding returns the lowercase hex SHA-256 over the canonical JSON array
// [version, credential, connection, method, endpoint, args]: an approval of
// one binding approves nothing else. endpoint is the path template
// (/contacts/{id}); the concrete path parameters live in args.
func Binding(credential, connection, method, endpoint string, args any) (string, error) {
	if b, ok := plainBinding(credential, connection, method, endpoint, args); ok {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:]), nil
	}
	b, err := Marshal([]any{bindingVersion, credential, connection, method, endpoint, args})
	if err != nil {
		return "", fmt.Errorf("binding: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// plainBinding builds Binding's canonical array without encoding and
// re-parsing the four strings, when each is printable ASCII without a
// quote or backslash (the credential, connection, method and endpoint
// template always are): encoding/json and RFC 8785 both write such a
// string as is between quotes, and the canonical form of an array is its
// elements' canonical forms, so the bytes are those of Marshal's array
// (TestPlainBindingMatchesArray, FuzzPlainBinding). Anything else, an
// error included, is left to the general path.
func plainBinding(credential, connection, method, endpoint string, args any) ([]byte, bool) {
	for _, s := range [...]string{credential, connection, method, endpoint} {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return nil, false
			}
		}
	}
	a, err := Marshal(args)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(bindingVersion)+len(credential)+len(connection)+len(method)+len(endpoint)+len(a)+16)
	b = append(b, `["`+bindingVersion+`","`...)
	b = append(b, credential...)
	b = append(b, `","`...)
	b = append(b, connection...)
	b = append(b, `","`...)
	b = append(b, method...)
	b = append(b, `","`...)
	b = append(b, endpoint...)
	b = append(b, `",`...)
	b = append(b, a...)
	return append(b, ']'), true
}
