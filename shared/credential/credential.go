// Package credential holds what every way of making a key shares (the
// command line's countersign keys, the operator API and page): the key's
// form, the credential id's form, and the one-line description the audit
// trail records.
package credential

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/countersign/countersign"
)

// NewKey returns a new key: "cs_" and 40 characters of lower-case base32,
// 200 bits from crypto/rand. Only its SHA-256 (config.HashKey) is stored.
func NewKey() string {
	b := make([]byte, 25)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return "cs_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// validID accepts ids of letters, digits and . _ @ - (they appear in logs
// and in upstream Idempotency-Keys as "<credential id>:<key>"), starting
// with a letter or digit, at most 64 bytes: what
// ^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$ matches. A loop, not that regexp:
// compiled at package init, its {0,63} cost every function's cold start
// 60 KB of allocations and a quarter of a millisecond.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '@' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// CheckID says why id is not a credential id, or nil.
func CheckID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("the credential's id is required")
	case !validID(id):
		return fmt.Errorf("%q is not a credential id: use letters, digits, '.', '_', '@' and '-' (starting with a letter or digit), at most 64", clip(id))
	}
	return nil
}

// Describe says what a credential may do, e.g. "choice refuse, origin
// operator, read-only": the audit trail's reason for a created key.
func Describe(c countersign.Credential) string {
	parts := []string{"choice " + c.Choice.String(), "origin " + c.Origin.String()}
	if c.ReadOnly {
		parts = append(parts, "read-only")
	}
	if c.Operator {
		parts = append(parts, "operator")
	}
	if len(c.Connections) > 0 {
		parts = append(parts, "connections "+strings.Join(c.Connections, ","))
	}
	return strings.Join(parts, ", ")
}

// clip shortens what an error quotes back.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
