package config

import (
	"encoding/json"
	"errors"
	"github.com/countersign/countersign/shared/canon"
	"net/url"
	"strings"
)

// SecretsManager is the secret store a reference names. (SSM Parameter
// Store is left out on purpose: its client would add 1.2 MB to every
// function's bootstrap, and Secrets Manager does the same job.)
const SecretsManager = "secretsmanager"

// SecretRef names a secret kept outside the configuration, so that a
// configuration uploaded to S3 (or committed) holds no secret: a Secrets
// Manager secret (its whole SecretString). In settings.json a webhook's
// url or secret may be {"secretsmanager": "NAME"}; in a connection's
// headers, ${secretsmanager:NAME}.
type SecretRef struct {
	// Store is SecretsManager.
	Store string
	// Name is the secret's name or ARN.
	Name string
}

// String returns "store:name", as a header writes it.
func (r SecretRef) String() string { return r.Store + ":" + r.Name }

// IsZero reports whether r names nothing (the value was given as it is).
func (r SecretRef) IsZero() bool { return r == SecretRef{} }

// ErrNoSecretStore is what resolving a reference gives without
// LoadOptions.Secrets: only a deployment reaches the secret stores.
var ErrNoSecretStore = errors.New("secret references are resolved only where the configuration is deployed (on AWS); the local stack takes the value itself (a plain string, or ${env:NAME} in headers)")

// validSecretName reports whether name is a Secrets Manager secret name
// (1 to 512 of A-Z a-z 0-9 / _ + = . @ -) or the ARN of one
// (arn:<partition>:secretsmanager:<region>:<12 digits>:secret:<name>).
func validSecretName(name string) bool {
	if p := strings.SplitN(name, ":", 7); len(p) == 7 && p[0] == "arn" {
		lower := func(c byte) bool { return 'a' <= c && c <= 'z' || c == '-' }
		if p[1] == "" || !allBytes(p[1], lower) || p[2] != "secretsmanager" || p[3] == "" ||
			!allBytes(p[3], func(c byte) bool { return lower(c) || isDigit(c) }) ||
			len(p[4]) != 12 || !allBytes(p[4], isDigit) || p[5] != "secret" {
			return false
		}
		name = p[6]
	}
	if name == "" || len(name) > 512 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/_+=.@-", c) >= 0) {
			return false
		}
	}
	return true
}

// checkRef reports what is wrong with a reference's name, or "".
func checkRef(r SecretRef) string {
	switch r.Store {
	case SecretsManager:
		if !validSecretName(r.Name) {
			return "is not a Secrets Manager secret name or ARN (1 to 512 of A-Z a-z 0-9 / _ + = . @ -)"
		}
	default:
		return `is not a secret store: use "secretsmanager"`
	}
	return ""
}

// resolve returns the value a reference names: through LoadOptions.Secrets,
// or "" with ok when references are only checked (KeepSecretRefs). Errors
// are reported at path; they never hold the value.
func (s *src) resolve(path string, r SecretRef) (string, bool) {
	if msg := checkRef(r); msg != "" {
		s.errf(path, "%s %q %s", r.Store, r.Name, msg)
		return "", false
	}
	if s.l.keepRefs {
		return "", true
	}
	if s.l.secrets == nil {
		s.errf(path, "%s: %v", r, ErrNoSecretStore)
		return "", false
	}
	v, err := s.l.secrets(r)
	if err != nil {
		s.errf(path, "%s: %v", r, err)
		return "", false
	}
	if v == "" {
		s.errf(path, "%s: the secret is empty", r)
		return "", false
	}
	return v, true
}

// secretOrRef reads a value that may be given as it is (a JSON string) or
// as a reference ({"secretsmanager": NAME}). ref is set
// for a reference; value is then the resolved value ("" when references are
// only checked).
func (s *src) secretOrRef(path string, raw json.RawMessage) (value string, ref SecretRef, ok bool) {
	if canon.Kind(raw) != "an object" {
		ok := s.decode(path, raw, &value)
		return value, SecretRef{}, ok
	}
	var doc struct {
		Name *string `json:"secretsmanager"` // SecretsManager
	}
	if !s.decode(path, raw, &doc) {
		return "", SecretRef{}, false
	}
	if doc.Name == nil {
		s.errf(path, `a secret reference names its secret: {"secretsmanager": "NAME"}`)
		return "", SecretRef{}, false
	}
	ref = SecretRef{Store: SecretsManager, Name: *doc.Name}
	value, ok = s.resolve(path, ref)
	return value, ref, ok
}

// secretURL checks a URL read from a secret store; its error does not
// quote the URL.
func secretURL(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("is not an absolute http:// or https:// URL")
	}
	return u, nil
}
