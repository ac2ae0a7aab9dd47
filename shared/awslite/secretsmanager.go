package awslite

import "context"

// SecretsManager reads secrets: GetSecretValue (the JSON 1.1 protocol). It
// is safe for concurrent use.
type SecretsManager struct{ c client }

// NewSecretsManager returns a Secrets Manager client.
func NewSecretsManager(o Options) *SecretsManager {
	return &SecretsManager{c: newClient("secretsmanager", o)}
}

// GetSecretValueInput names the secret (its name or ARN); its current
// version is read.
type GetSecretValueInput struct {
	SecretId string `json:"SecretId"`
}

// GetSecretValueOutput is the secret's value: SecretString, or when the
// secret holds binary data, SecretBinary.
type GetSecretValueOutput struct {
	ARN          string  `json:"ARN"`
	Name         string  `json:"Name"`
	SecretString *string `json:"SecretString"`
	SecretBinary []byte  `json:"SecretBinary"`
}

// GetSecretValue reads a secret. A missing one is the error
// ResourceNotFoundException.
func (s *SecretsManager) GetSecretValue(ctx context.Context, in *GetSecretValueInput) (*GetSecretValueOutput, error) {
	out := new(GetSecretValueOutput)
	if err := s.c.jsonCall(ctx, "1.1", "secretsmanager", "GetSecretValue", in, out); err != nil {
		return nil, err
	}
	return out, nil
}
