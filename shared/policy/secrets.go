package policy

import (
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
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

var (
	secretsManagerName = regexp.MustCompile(`^(arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:)?[A-Za-z0-9/_+=.@-]{1,512}$`)
)

// checkRef reports what is wrong with a reference's name, or "".
func checkRef(r SecretRef) string {
	switch r.Store {
	case SecretsManager:
		if !secretsManagerName.MatchString(r.Name) {
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
	if kind(raw) != "an object" {
		v, ok := s.str(path, raw)
		return v, SecretRef{}, ok
	}
	m, ok := s.object(path, raw, SecretsManager)
	if !ok {
		return "", SecretRef{}, false
	}
	if len(m) != 1 {
		s.errf(path, `a secret reference names its secret: {"secretsmanager": "NAME"}`)
		return "", SecretRef{}, false
	}
	for store, v := range m {
		name, ok := s.str(field(path, store), v)
		if !ok {
			return "", SecretRef{}, false
		}
		ref = SecretRef{Store: store, Name: name}
	}
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
