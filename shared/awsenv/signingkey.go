package awsenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/links"
)

// SecretsAPI is the subset of *awslite.SecretsManager LoadSigningKey uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *awslite.GetSecretValueInput) (*awslite.GetSecretValueOutput, error)
}

var _ SecretsAPI = (*awslite.SecretsManager)(nil)

// secretKey is the JSON form of the key in the secret, the same as the local
// stack's key file (links.LoadOrCreateKey).
type secretKey struct {
	KID    string `json:"kid"`
	Secret string `json:"secret"`
}

// LoadSigningKey reads the current version of the secret secretID and
// returns the link signing key it holds: a JSON object
// {"kid": "<key id>", "secret": "<standard base64 of at least
// links.MinSecretLen bytes>"} in the secret string (or, failing that, the
// secret binary). The errors name the secret and the faulty field but never
// include the secret's value.
func LoadSigningKey(ctx context.Context, api SecretsAPI, secretID string) (links.Key, error) {
	fail := func(format string, args ...any) (links.Key, error) {
		return links.Key{}, fmt.Errorf("awsenv: load signing key %s: "+format, append([]any{secretID}, args...)...)
	}
	if secretID == "" {
		return fail("no secret id")
	}
	out, err := api.GetSecretValue(ctx, &awslite.GetSecretValueInput{SecretId: secretID})
	if err != nil {
		return fail("%w", err)
	}
	var raw []byte
	switch {
	case out == nil:
		return fail("empty response")
	case out.SecretString != nil:
		raw = []byte(*out.SecretString)
	default:
		raw = out.SecretBinary
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return fail("the secret is empty")
	}

	var f secretKey
	if err := json.Unmarshal(raw, &f); err != nil {
		// The JSON errors quote the offending character of the input,
		// which here is the secret: report only where and what.
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fail(`not valid JSON (at byte %d); want {"kid": "...", "secret": "<base64>"}`, syn.Offset)
		case errors.As(err, &typ) && typ.Field != "":
			return fail("field %s: want a string", typ.Field)
		default:
			return fail(`not a JSON object {"kid": "...", "secret": "<base64>"}`)
		}
	}
	if f.KID == "" {
		return fail("field kid: missing")
	}
	if f.Secret == "" {
		return fail("field secret: missing")
	}
	secret, err := base64.StdEncoding.DecodeString(f.Secret)
	if err != nil {
		if secret, err = base64.RawStdEncoding.DecodeString(f.Secret); err != nil {
			return fail("field secret: not standard base64")
		}
	}
	if len(secret) < links.MinSecretLen {
		return fail("field secret: %d bytes, want at least %d", len(secret), links.MinSecretLen)
	}
	k := links.Key{ID: f.KID, Secret: secret}
	// NewSigner checks the key id's length and characters; its errors name
	// the key id and the secret's length, not the secret.
	if _, err := links.NewSigner(k); err != nil {
		return fail("field kid: %w", err)
	}
	return k, nil
}
