package awsenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/config"
)

// secretResolver resolves the configuration's secret references (see
// config.SecretRef) through Secrets Manager, each
// reference once per configuration loaded. Its errors name the reference
// and the service's reason, never a value.
type secretResolver struct {
	ctx    context.Context
	sm     SecretsAPI
	prefix string

	mu   sync.Mutex
	seen map[config.SecretRef]string
}

func newSecretResolver(ctx context.Context, sm SecretsAPI, prefix string) *secretResolver {
	return &secretResolver{ctx: ctx, sm: sm, prefix: prefix, seen: map[config.SecretRef]string{}}
}

// resolve is a config.LoadOptions.Secrets.
func (r *secretResolver) resolve(ref config.SecretRef) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.seen[ref]; ok {
		return v, nil
	}
	name := ref.Name
	if i := strings.Index(name, ":secret:"); i >= 0 {
		name = name[i+len(":secret:"):]
	}
	if r.prefix != "" && !strings.HasPrefix(name, r.prefix) {
		return "", fmt.Errorf("the deployed functions may read only secrets named %s... (the template grants no other): create it under that name", r.prefix)
	}
	var v string
	switch ref.Store {
	case config.SecretsManager:
		out, err := r.sm.GetSecretValue(r.ctx, &awslite.GetSecretValueInput{SecretId: ref.Name})
		if err != nil {
			return "", reason(err)
		}
		if out.SecretString == nil {
			return "", errors.New("the secret holds binary data, not a string")
		}
		v = *out.SecretString
	default:
		return "", fmt.Errorf("unknown store %q", ref.Store)
	}
	r.seen[ref] = v
	return v, nil
}

// reason is an AWS error without the request's details: its code and
// message.
func reason(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s", ae.ErrorCode(), ae.ErrorMessage())
	}
	return err
}
