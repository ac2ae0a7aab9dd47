package awsenv_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/awsenv"
	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/links"
)

// fakeSecrets is a SecretsAPI holding one secret.
type fakeSecrets struct {
	id     string
	out    *awslite.GetSecretValueOutput
	err    error
	called int
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *awslite.GetSecretValueInput) (*awslite.GetSecretValueOutput, error) {
	f.called++
	if in.SecretId != f.id {
		return nil, errors.New("ResourceNotFoundException: Secrets Manager can't find the specified secret")
	}
	return f.out, f.err
}

func TestLoadSigningKey(t *testing.T) {
	const id = "countersign/signing-key"
	secret := []byte("0123456789abcdef0123456789abcdef!") // 33 bytes
	b64 := base64.StdEncoding.EncodeToString(secret)
	raw := base64.RawStdEncoding.EncodeToString(secret)
	short := base64.StdEncoding.EncodeToString([]byte("too-short-secret-value-31-bytes"))
	str := func(s string) *awslite.GetSecretValueOutput {
		return &awslite.GetSecretValueOutput{SecretString: &s}
	}
	tests := []struct {
		name     string
		secretID string
		out      *awslite.GetSecretValueOutput
		err      error
		want     links.Key
		wantErr  string // substring of the error; "" for success
	}{
		{name: "good", out: str(`{"kid": "k1a2b3c4", "secret": "` + b64 + `"}`), want: links.Key{ID: "k1a2b3c4", Secret: secret}},
		{name: "unpadded base64", out: str(`{"kid":"k1","secret":"` + raw + `"}`), want: links.Key{ID: "k1", Secret: secret}},
		{name: "extra fields ignored", out: str(`{"kid":"k1","secret":"` + b64 + `","note":"rotated"}`), want: links.Key{ID: "k1", Secret: secret}},
		{name: "secret binary", out: &awslite.GetSecretValueOutput{SecretBinary: []byte(`{"kid":"k1","secret":"` + b64 + `"}`)}, want: links.Key{ID: "k1", Secret: secret}},
		{name: "malformed JSON", out: str(`{"kid":"k1","secret":"` + b64 + `"`), wantErr: "not valid JSON"},
		{name: "plain secret, not JSON", out: str(b64), wantErr: "not valid JSON"},
		{name: "not an object", out: str(`"` + b64 + `"`), wantErr: "not a JSON object"},
		{name: "secret not a string", out: str(`{"kid":"k1","secret":12345}`), wantErr: "field secret: want a string"},
		{name: "short secret", out: str(`{"kid":"k1","secret":"` + short + `"}`), wantErr: "field secret: 31 bytes, want at least 32"},
		{name: "secret not base64", out: str(`{"kid":"k1","secret":"` + b64 + `*"}`), wantErr: "field secret: not standard base64"},
		{name: "missing secret", out: str(`{"kid":"k1"}`), wantErr: "field secret: missing"},
		{name: "missing kid", out: str(`{"secret":"` + b64 + `"}`), wantErr: "field kid: missing"},
		{name: "bad kid", out: str(`{"kid":"k 1","secret":"` + b64 + `"}`), wantErr: "field kid:"},
		{name: "empty secret string", out: str(""), wantErr: "the secret is empty"},
		{name: "no secret id", secretID: "-", wantErr: "no secret id"},
		{name: "API error", err: errors.New("AccessDeniedException: not allowed"), wantErr: "AccessDeniedException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secretID := id
			if tt.secretID == "-" {
				secretID = ""
			}
			api := &fakeSecrets{id: id, out: tt.out, err: tt.err}
			got, err := awsenv.LoadSigningKey(context.Background(), api, secretID)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadSigningKey: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("LoadSigningKey (-want +got):\n%s", diff)
				}
				if _, err := links.NewSigner(got); err != nil {
					t.Errorf("the key does not make a signer: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadSigningKey = %+v, want an error containing %q", got, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
			if secretID != "" && !strings.Contains(err.Error(), secretID) {
				t.Errorf("error = %q does not name the secret %s", err, secretID)
			}
			for _, leak := range []string{b64[:8], raw[:8], short[:8], string(secret[:8])} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error = %q shows the secret", err)
				}
			}
			if got.ID != "" || got.Secret != nil {
				t.Errorf("LoadSigningKey returned %+v with an error", got)
			}
		})
	}
}
